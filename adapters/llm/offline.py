"""The offline provider: deterministic replies with no network and no language model.

It exists for the demo, for tests and for benchmarks of the engine's own overhead. A reply is
built from the character and the user's input only (``ChatRequest.metadata`` keys
``character`` and ``user`` when given, else the first system message and the last user
message), so the same request always gets the same reply. Per slot (``metadata["slot"]``):

* ``narrator`` (the default): a short in-character line that quotes the input;
* ``director``: a one-line instruction for the narrator;
* ``verifier``: the JSON ``{"verdict": "pass", "notes": ""}``;
* ``memory``: memory-agent JSON ops ``{"turn_summary": ..., "facts_add": [], "facts_update": [],
  "facts_deprecate": []}``.

Replies stream in a few chunks; ``chunk_delay_s`` (0 by default) slows them for demos.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator

from adapters.llm.streams import ReplyStream
from engine.ports import ChatChunk, ChatRequest, ChatResult, Usage

log = logging.getLogger(__name__)

OFFLINE_ANNOUNCEMENT = "offline model: replies are generated locally without a language model"
OFFLINE_CHUNKS = 4
"""A reply is streamed in at most this many chunks."""
MAX_QUOTE_CHARS = 200
"""At most this much of the user's input is quoted back."""
DEFAULT_CHARACTER = "The narrator"

_GESTURES = (
    "tilts their head",
    "smiles faintly",
    "leans closer",
    "glances at the window",
    "crosses their arms",
    "laughs softly",
)


def _digest(*parts: str) -> int:
    joined = "\x1f".join(parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(joined).digest()[:4], "big")


def _first_line(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _facts(request: ChatRequest) -> tuple[str, str, str]:
    """(character, user, input) for the request, from metadata or else the messages."""
    character = request.metadata.get("character", "")
    system = next((m.content for m in request.messages if m.role == "system"), "")
    if not character and system:
        character = _first_line(system, 40)
    user_input = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    return character or DEFAULT_CHARACTER, request.metadata.get("user", "") or "you", user_input


def offline_reply(request: ChatRequest) -> str:
    """The deterministic reply text for ``request``."""
    character, user, user_input = _facts(request)
    quoted = _first_line(user_input)
    slot = request.metadata.get("slot", "narrator")
    if slot == "memory":
        summary = f"{user} said: {quoted}" if quoted else f"{user} said nothing"
        ops = {
            "turn_summary": summary,
            "facts_add": [],
            "facts_update": [],
            "facts_deprecate": [],
        }
        return json.dumps(ops, ensure_ascii=False)
    if slot == "verifier":
        return json.dumps({"verdict": "pass", "notes": ""})
    if slot == "director":
        return f"Let {character} answer {user} briefly and stay in character."
    attempt = request.metadata.get("attempt", "1")
    seed = (
        (character, user, user_input) if attempt == "1" else (character, user, user_input, attempt)
    )
    gesture = _GESTURES[_digest(*seed) % len(_GESTURES)]
    take = "" if attempt == "1" else f" (take {attempt})"
    if not quoted:
        return f"{character} {gesture} and waits for {user} to speak.{take}"
    return f'{character} {gesture}. "You said: {quoted}" — {character} considers it, {user}.{take}'


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


class OfflineChatModel:
    """:class:`engine.ports.ChatModel` that answers locally and deterministically."""

    def __init__(self, *, chunk_delay_s: float = 0.0, announce: bool = True) -> None:
        if chunk_delay_s < 0:
            raise ValueError(f"chunk_delay_s must be >= 0, got {chunk_delay_s}")
        self.name = "offline"
        self.chunk_delay_s = chunk_delay_s
        if announce:
            # DEBUG (shown with -v): the front end says it where its user sees it, once (the
            # console's "*" line, a warning when ``run`` serves a platform).
            log.debug(OFFLINE_ANNOUNCEMENT)

    async def aclose(self) -> None:
        """Nothing to release; present so every model can be closed alike."""

    async def complete(self, request: ChatRequest) -> ChatResult:
        """The whole reply at once."""
        return _result(request, offline_reply(request))

    def stream(self, request: ChatRequest) -> OfflineChatStream:
        """The reply in up to :data:`OFFLINE_CHUNKS` chunks."""
        return OfflineChatStream(request, self.chunk_delay_s)


def _result(request: ChatRequest, text: str) -> ChatResult:
    prompt = sum(len(m.content.split()) for m in request.messages)
    return ChatResult(
        text=text, usage=Usage(prompt_tokens=prompt, completion_tokens=len(text.split()))
    )


class OfflineChatStream(ReplyStream):
    """A streamed offline reply (:class:`engine.ports.ChatStream`)."""

    def __init__(self, request: ChatRequest, chunk_delay_s: float) -> None:
        super().__init__()
        self._request = request
        self._delay = chunk_delay_s

    async def _run(self) -> AsyncIterator[ChatChunk]:
        text = offline_reply(self._request)
        for piece in _split(text, OFFLINE_CHUNKS):
            if self._closed:
                return
            if self._delay:
                await asyncio.sleep(self._delay)
            yield ChatChunk(text=piece)
        self._result = _result(self._request, text)
