"""LoCoMo sweep of the ways to join BM25 and embeddings, and of the recent-chat weight (issue 18).

Plays each path of ``bench/memory_locomo.py`` once (same conversation, questions, budget and
contenders), then, on the same played session and the same unit vectors, asks every question
again as a dry run under each variant and prints one table: the evidence share in the block
per variant and path, beside plain BM25's. Variants:

* ``recent=W``: BM25 alone (no embeddings), the recent-chat weight set to ``W``;
* ``MODE`` (``boost``, ``fill``, ``rrf``, ``rrf_scaled``, ``combmnz``) and ``convex a=A``: the
  embedding ranking joined as :class:`engine.memory.fusion.FusionMode` says, with the
  default recent-chat weight, and each again with the weight 0.

Run from the repository root: ``python bench/locomo_fusion.py [--paths fact] [--embeddings-url
URL --embeddings-model M]`` (without a URL: the fake server's embedding).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench.memory_locomo as locomo  # noqa: E402
import engine.memory.embedding as embedding  # noqa: E402
from bench.locomo_data import Question, load_conversation, sample_questions  # noqa: E402
from bench.locomo_embeddings import EmbeddingsChoice, fused_blocks  # noqa: E402
from bench.locomo_scoring import evidence_share, memory_block  # noqa: E402
from engine.memory.fusion import CONVEX_ALPHA, FusionMode, SemanticSignal  # noqa: E402
from engine.memory.injection import MEMORY_BUDGET_TOKENS, RECENT_TURN_WEIGHT  # noqa: E402
from engine.memory.service import MemoryService  # noqa: E402
from engine.turns.api import MAIN_BRANCH  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402
from tests.fakes.fake_embeddings import FAKE_EMBEDDING_MODEL  # noqa: E402

RECENT_WEIGHTS = (RECENT_TURN_WEIGHT, 0.05, 0.001, 0.0)
"""Recent-chat weights tried with BM25 alone (0.001: a tie break, as the importance one)."""
CONVEX_ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7)
SEMANTIC_RECENT = (RECENT_TURN_WEIGHT, 0.0)
"""Recent-chat weights each embeddings variant is tried with."""
_SIGNAL = "SemanticSignal"
"""The name the memory service's semantic ranking builds its signal by (swapped per variant)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """One way to rank: a fusion (None: BM25 alone) and a recent-chat weight."""

    mode: FusionMode | None
    recent: float
    alpha: float = 0.0

    @property
    def label(self) -> str:
        """How the table names it."""
        fusion = "bm25 alone" if self.mode is None else self.mode.value
        if self.mode is FusionMode.CONVEX:
            fusion += f" a={self.alpha:g}"
        return f"{fusion}, recent={self.recent:g}"


def variants() -> list[Variant]:
    """Every variant the sweep measures, BM25-alone ones first."""
    found = [Variant(None, w) for w in RECENT_WEIGHTS]
    for recent in SEMANTIC_RECENT:
        for mode in (
            FusionMode.BOOST,
            FusionMode.FILL,
            FusionMode.RRF,
            FusionMode.RRF_SCALED,
            FusionMode.COMBMNZ,
        ):
            found.append(Variant(mode, recent))
        found.extend(Variant(FusionMode.CONVEX, recent, a) for a in CONVEX_ALPHAS)
    return found


@contextmanager
def _ranked_as(memory: MemoryService, variant: Variant) -> Iterator[None]:
    """The memory service ranks as ``variant`` says while inside."""
    settings, signal = memory.settings, getattr(embedding, _SIGNAL)
    memory.settings = replace(
        settings, injection=replace(settings.injection, recent_turn_weight=variant.recent)
    )
    if variant.mode is not None:
        ranked = functools.partial(
            SemanticSignal, mode=variant.mode, alpha=variant.alpha or CONVEX_ALPHA
        )
        setattr(embedding, _SIGNAL, ranked)
    try:
        yield
    finally:
        memory.settings = settings
        setattr(embedding, _SIGNAL, signal)


async def blocks_of_variant(
    service: TavernService,
    memory: MemoryService,
    mode: FusionMode | None,
    *,
    questions: Sequence[Question],
    **kwargs: Any,
) -> list[str]:
    """The memory block of each question under the ranking in force: BM25 alone (``mode`` None:
    a plain dry run) or fused (the bench's own embedded dry runs)."""
    if mode is not None:
        return list(await fused_blocks(service, memory, questions=questions, **kwargs))
    blocks = []
    for q in questions:
        prompt = await service.dry_run(kwargs["key"], MAIN_BRANCH, q.text)
        blocks.append(memory_block(prompt["messages"]))
    return blocks


def _sweeping(blocks_of: dict[str, list[str]]) -> Any:
    """A stand-in for the bench's ``fused_blocks`` that reads the blocks of every variant."""

    async def run(
        service: TavernService,
        memory: MemoryService,
        *,
        questions: Sequence[Question],
        **kwargs: Any,
    ) -> list[str]:
        embedded = await fused_blocks(service, memory, questions=questions, **kwargs)
        for variant in variants():
            with _ranked_as(memory, variant):
                blocks_of[variant.label] = await blocks_of_variant(
                    service, memory, variant.mode, questions=questions, **kwargs
                )
        return embedded

    return run


def sweep_arguments(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """The options every LoCoMo sweep takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--questions", type=int, default=locomo.DEFAULT_QUESTIONS)
    parser.add_argument("--seed", type=int, default=locomo.DEFAULT_SEED)
    parser.add_argument("--budget", type=int, default=MEMORY_BUDGET_TOKENS)
    parser.add_argument("--paths", nargs="+", default=list(locomo.PATHS))
    parser.add_argument("--embeddings-url", default=None)
    parser.add_argument("--embeddings-model", default=None)
    return parser.parse_args(argv)


@dataclass(frozen=True)
class SweepRun:
    """A sweep's outcome: the evidence share per variant label and path, and plain BM25's."""

    questions: list[Question]
    choice: EmbeddingsChoice
    table: dict[str, dict[str, float]]
    bm25: dict[str, float]


async def run_sweep(
    args: argparse.Namespace, sweeping: Callable[[dict[str, list[str]]], Any]
) -> SweepRun:
    """Play each path once with ``sweeping(blocks_of)`` standing in for the bench's dry runs,
    then score every variant's blocks against the questions' evidence."""
    conversation = load_conversation()
    questions = sample_questions(conversation, args.questions, args.seed)
    model = args.embeddings_model or FAKE_EMBEDDING_MODEL
    choice = EmbeddingsChoice(url=args.embeddings_url, model=model)
    table: dict[str, dict[str, float]] = {}
    bm25: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.paths:
            blocks_of: dict[str, list[str]] = {}
            locomo.fused_blocks = sweeping(blocks_of)  # type: ignore[attr-defined]
            result = await locomo.run_path(
                conversation,
                questions,
                path=path,
                budget=args.budget,
                workdir=Path(tmp),
                embeddings=choice,
            )
            bm25[path] = result.mean("bm25")
            for label, blocks in blocks_of.items():
                shares = [
                    evidence_share(conversation.evidence(q), b)
                    for q, b in zip(questions, blocks, strict=True)
                ]
                table.setdefault(label, {})[path] = sum(shares) / len(shares)
    return SweepRun(questions=questions, choice=choice, table=table, bm25=bm25)


async def main(argv: Sequence[str] | None = None) -> int:
    args = sweep_arguments(__doc__.split("\n", 1)[0], argv)
    run = await run_sweep(args, _sweeping)
    print(f"embeddings: {run.choice.label}; seed {args.seed}, {len(run.questions)} questions")
    print("| variant | " + " | ".join(args.paths) + " |")
    print("|---|" + "---:|" * len(args.paths))
    print("| plain BM25 | " + " | ".join(f"{run.bm25[p]:.3f}" for p in args.paths) + " |")
    for label, row in run.table.items():
        print(f"| {label} | " + " | ".join(f"{row[p]:.3f}" for p in args.paths) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
