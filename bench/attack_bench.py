"""Benchmark: a bystander's reply time while another session attacks the bot (issue 12).

The attacker's session carries 24 backtracking regex scripts (``/(a|aa)+$/``), a world book of
200 backtracking regex keys, a card with 200 nested ``{{if}}`` blocks, and sends messages just
under ``MAX_INPUT_CHARS`` that make every one of those patterns backtrack, one turn after
another without pause. The bystander's session is plain. Both sessions live in one
``TavernService`` on SQLite and answer through the real ``openai`` client against the fake
server, which runs in its own process (as a real endpoint would) with ``LATENCY_S`` of latency.

Rounds alternate: the bystander plays ``--turns`` turns alone, then the same number while the
attacker attacks. Target: the bystander's median reply time under attack is at most 1.5x its
median alone. The attacker's turns must still commit, each with the regex budget's warning.

``--attackers N`` runs N attacking sessions at once (default 1).

Run from the repository root: ``python bench/attack_bench.py [--rounds N] [--turns N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.llm import ChatModelPool  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from engine.turns.api import SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import LLMProfile, NoSecretCipher  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402
from engine.turns.turns import MAX_INPUT_CHARS  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply  # noqa: E402

LATENCY_S = 0.2
TARGET = 1.5
EVIL = "/(a|aa)+$/"
GIANT = "a" * (MAX_INPUT_CHARS - 10) + "!"
EXHAUSTED = "regex budget exhausted"
ATTACKER = Speaker(id="m1", name="Mallory")
BYSTANDER = Speaker(id="b1", name="Bea")


def _reply(body: object) -> FakeReply:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return FakeReply(text=f"re: {last[-40:]}", latency_s=LATENCY_S)


async def serve(max_requests: int) -> None:
    """Child process: the fake server, until standard input closes."""
    async with FakeOpenAIServer(
        responder=_reply, max_requests=max_requests, lifetime_s=3600.0
    ) as fake:
        print(fake.base_url, flush=True)
        await asyncio.to_thread(sys.stdin.read)


def _scripts() -> bytes:
    return json.dumps(
        [
            {
                "scriptName": f"evil {i}",
                "findRegex": EVIL,
                "replaceString": "X",
                "placement": [1, 2],
                "promptOnly": i % 2 == 1,
            }
            for i in range(24)
        ]
    ).encode()


def _book() -> bytes:
    entries = {
        str(i): {"uid": i, "key": [f"/(a|aa)+(z{i})?$/"], "content": f"trap {i}"}
        for i in range(200)
    }
    return json.dumps({"entries": entries}).encode()


def _card() -> bytes:
    nested = "{{if 1}}" * 200 + "deep" + "{{/if}}" * 200
    data = {"name": "Trap", "description": nested, "first_mes": ""}
    return json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}).encode()


async def _bystander_turns(service: TavernService, key: SessionKey, turns: int) -> list[float]:
    took: list[float] = []
    for turn in range(turns):
        start = time.perf_counter()
        view = await service.respond(key, "main", [UserLine(speaker=BYSTANDER, text=f"hi {turn}")])
        took.append(time.perf_counter() - start)
        assert view.text.startswith("re:"), view.text
    return took


class Attack:
    """The attacker's turns, one after another until stopped."""

    def __init__(self, service: TavernService, key: SessionKey) -> None:
        self.service = service
        self.key = key
        self.stopped = False
        self.turns: list[float] = []
        self.failed = 0

    async def run(self) -> None:
        while not self.stopped:
            start = time.perf_counter()
            try:
                await self.service.respond(
                    self.key, "main", [UserLine(speaker=ATTACKER, text=GIANT)]
                )
            except Exception as exc:  # a failed turn is counted, the attack goes on
                self.failed += 1
                print(f"attacker's turn failed: {exc}", file=sys.stderr)
            self.turns.append(time.perf_counter() - start)


async def _warned_pages(service: TavernService, keys: list[SessionKey]) -> tuple[int, int]:
    """(attackers' committed pages, those whose meta carries the regex budget's warning)."""
    branches = set()
    for key in keys:
        ids = await service.parts.sessions.ids(key)
        branches.add((await service.parts.sessions.branch(ids.session_id, "main")).id)
    async with service.storage.unit_of_work() as uow:
        floors = await uow.floors.in_state("committed")
        mine = [f.id for f in floors if f.branch_id in branches]
        pages: list[Any] = await uow.pages.of_floors(mine)
    warned = [p for p in pages if any(EXHAUSTED in w for w in p.meta.get("warnings", []))]
    return len(pages), len(warned)


async def run(url: str, rounds: int, turns: int, attackers: int) -> int:
    storage = await open_storage(url)
    pool = ChatModelPool()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        "100000",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    base_url = (await server.stdout.readline()).decode().strip()
    profile = LLMProfile(id="environment", model="fake-model", base_url=base_url, max_retries=0)
    service = TavernService(
        storage,
        model_for=lambda p: pool.for_profile(p, NoSecretCipher(), {}),
        default_profile=profile,
    )
    await service.start()
    bystander = SessionKey(platform="bench", realm="bystander", key="bystander")
    await service.open_session(bystander)
    keys = [SessionKey(platform="bench", realm="attacker", key=f"a{i}") for i in range(attackers)]
    for number, key in enumerate(keys):
        await service.open_session(key)
        if number == 0:  # realm assets: imported once, bound to every attacker's session
            await service.import_asset(key, "card", "trap.json", _card())
            await service.import_asset(key, "regex", "evil.json", _scripts())
            await service.import_asset(key, "worldbook", "trap.json", _book())
        else:
            await service.bind_asset(key, "card", "Trap")
            await service.bind_asset(key, "regex", "evil")
            await service.bind_asset(key, "worldbook", "trap")
    await _bystander_turns(service, bystander, 3)  # warm-up: tokenizer, caches, connections

    alone: list[float] = []
    attacked: list[float] = []
    attacks = [Attack(service, key) for key in keys]
    for _ in range(rounds):
        alone += await _bystander_turns(service, bystander, turns)
        async with asyncio.TaskGroup() as group:
            for attack in attacks:
                attack.stopped = False
                group.create_task(attack.run())
            await asyncio.sleep(0)  # the attackers' turns are under way first
            attacked += await _bystander_turns(service, bystander, turns)
            for attack in attacks:
                attack.stopped = True
    committed, warned = await _warned_pages(service, keys)
    server.stdin.close()
    await server.wait()
    await pool.aclose()
    await storage.close()

    ratio = statistics.median(attacked) / statistics.median(alone)
    print(
        f"{rounds} rounds x {turns} bystander turns, {attackers} attacker(s), "
        f"{LATENCY_S * 1000:.0f} ms model latency (fake server in its own process), SQLite"
    )
    print(
        f"bystander alone: median {statistics.median(alone) * 1000:.0f} ms, "
        f"max {max(alone) * 1000:.0f} ms"
    )
    print(
        f"bystander under attack: median {statistics.median(attacked) * 1000:.0f} ms, "
        f"max {max(attacked) * 1000:.0f} ms"
    )
    print(f"ratio under attack / alone: {ratio:.2f}x (target <= {TARGET}x)")
    turns_taken = [t for attack in attacks for t in attack.turns]
    failed = sum(attack.failed for attack in attacks)
    print(
        f"attackers: {len(turns_taken)} turns, median {statistics.median(turns_taken):.2f} s, "
        f"max {max(turns_taken):.2f} s; {failed} failed; {committed} committed pages, "
        f"{warned} with the regex budget's warning"
    )
    ok = ratio <= TARGET and failed == 0 and warned == committed > 0
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=10, help="bystander turns per round")
    parser.add_argument("--attackers", type=int, default=1, help="attacking sessions at once")
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return 0
    if args.db:
        return asyncio.run(run(args.db, args.rounds, args.turns, args.attackers))
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/bench.db"
        return asyncio.run(run(url, args.rounds, args.turns, args.attackers))


if __name__ == "__main__":
    sys.exit(main())
