"""LoCoMo sweep of the importance mode's packing order (issue 18).

Plays each path of ``bench/memory_locomo.py`` once, then asks the same questions again as dry
runs with :func:`engine.memory.injection._by_value` swapped for each packing order below, both
with BM25 alone and with the embeddings' boost fusion, and prints the evidence share per
variant beside plain BM25's. Orders (pinned loops first and units with no relevance last in
all of them, as today):

* ``value k=E``: score / tokens ** E (today: E = ``PACK_TOKEN_EXPONENT``);
* ``score``: by score alone, skipping what does not fit (what plain BM25 does);
* ``bands w=W``: by score in bands W wide (of the best's 1), by value within a band;
* ``floor x=X k=E``: units scoring at least X (the best scores 1) first, then the rest, each
  by score / tokens ** E.

Run from the repository root: ``python bench/locomo_packing.py [--paths fact tag] [--seed S]
[--embeddings-url URL --embeddings-model M]`` (without a URL: the fake server's embedding).
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import engine.memory.injection as injection  # noqa: E402
from bench.locomo_data import Question  # noqa: E402
from bench.locomo_embeddings import fused_blocks  # noqa: E402
from bench.locomo_fusion import (  # noqa: E402
    Variant,
    _ranked_as,
    blocks_of_variant,
    run_sweep,
    sweep_arguments,
)
from engine.memory.fusion import FusionMode  # noqa: E402
from engine.memory.injection import (  # noqa: E402
    PACK_TOKEN_EXPONENT,
    RECENT_TURN_WEIGHT,
    InjectionPolicy,
    ScoredUnit,
    TokenCounter,
)
from engine.memory.service import MemoryService  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402

EXPONENTS = (PACK_TOKEN_EXPONENT, 0.5, 0.25)
BAND_WIDTHS = (0.05, 0.1, 0.2, 0.3)
FLOORS = (0.3, 0.4, 0.5, 0.7, 0.85)
FLOOR_EXPONENTS = (PACK_TOKEN_EXPONENT, 0.25, 0.0)
Key = Callable[[ScoredUnit, float], tuple[float, ...]]
"""A sort key from a unit and its own line's tokens (ascending)."""


@dataclass(frozen=True, slots=True)
class Packing:
    """One packing order of the importance mode."""

    label: str
    key: Key


def _value(item: ScoredUnit, tokens: float, exponent: float) -> float:
    cost: float = max(1.0, tokens) ** exponent
    return item.score / cost


def _by_exponent(exponent: float) -> Key:
    def key(item: ScoredUnit, tokens: float) -> tuple[float, ...]:
        return (-_value(item, tokens, exponent),)

    return key


def _by_score(item: ScoredUnit, tokens: float) -> tuple[float, ...]:
    return (-item.score,)


def _by_band(width: float) -> Key:
    def key(item: ScoredUnit, tokens: float) -> tuple[float, ...]:
        return (-math.floor(item.score / width), -_value(item, tokens, PACK_TOKEN_EXPONENT))

    return key


def _by_floor(floor: float, exponent: float) -> Key:
    def key(item: ScoredUnit, tokens: float) -> tuple[float, ...]:
        return (-float(item.score >= floor), -_value(item, tokens, exponent))

    return key


def packings() -> list[Packing]:
    """Every packing order the sweep measures, today's first."""
    found = [Packing(f"value k={e:g}", _by_exponent(e)) for e in EXPONENTS]
    found.append(Packing("score", _by_score))
    found.extend(Packing(f"bands w={w:g}", _by_band(w)) for w in BAND_WIDTHS)
    found.extend(
        Packing(f"floor x={x:g} k={e:g}", _by_floor(x, e)) for e in FLOOR_EXPONENTS for x in FLOORS
    )
    return found


def _order_by(packing: Packing) -> Any:
    """A stand-in for ``_by_value`` that orders as ``packing`` says."""

    def by(
        ranked: Sequence[ScoredUnit], policy: InjectionPolicy, count: TokenCounter
    ) -> tuple[list[ScoredUnit], int]:
        own = {
            id(item): injection._line_tokens(
                count, injection._line(item.unit, policy.max_item_chars)
            )
            for item in ranked
        }
        cheapest = min(own.values(), default=sys.maxsize)
        order = sorted(
            ranked,
            key=lambda item: (
                not item.pinned,
                item.relevance + item.recent <= 0,
                *packing.key(item, float(own[id(item)])),
            ),
        )
        return order, cheapest

    return by


@contextmanager
def _packed_as(packing: Packing) -> Iterator[None]:
    original = injection._by_value
    injection._by_value = _order_by(packing)
    try:
        yield
    finally:
        injection._by_value = original


RANKINGS = (Variant(None, RECENT_TURN_WEIGHT), Variant(FusionMode.BOOST, RECENT_TURN_WEIGHT))


def _sweeping(blocks_of: dict[str, list[str]]) -> Any:
    async def run(
        service: TavernService,
        memory: MemoryService,
        *,
        questions: Sequence[Question],
        **kwargs: Any,
    ) -> list[str]:
        embedded = await fused_blocks(service, memory, questions=questions, **kwargs)
        for packing in packings():
            for ranking in RANKINGS:
                with _packed_as(packing), _ranked_as(memory, ranking):
                    name = "bm25" if ranking.mode is None else "boost"
                    blocks_of[f"{packing.label}|{name}"] = await blocks_of_variant(
                        service, memory, ranking.mode, questions=questions, **kwargs
                    )
        return embedded

    return run


async def main(argv: Sequence[str] | None = None) -> int:
    args = sweep_arguments(__doc__.split("\n", 1)[0], argv)
    run = await run_sweep(args, _sweeping)
    columns = [f"{p}, {r}" for p in args.paths for r in ("bm25", "boost")]
    print(f"embeddings: {run.choice.label}; seed {args.seed}, {len(run.questions)} questions")
    print("| packing | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    print(
        "| plain BM25 | "
        + " | ".join(f"{run.bm25[p]:.3f}" for p in args.paths for _ in "xy")
        + " |"
    )
    for packing in packings():
        cells = [
            f"{run.table[f'{packing.label}|{r}'][p]:.3f}"
            for p in args.paths
            for r in ("bm25", "boost")
        ]
        print(f"| {packing.label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
