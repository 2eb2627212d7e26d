"""Discord front end under load: many channels, several users each, a slow fake model.

Runs the real discord.py client (through DiscordRunner) against the loopback FakeDiscord and an
in-memory service whose "model" sleeps ``--model-ms`` before answering. Every user of every
channel speaks at once, ``--rounds`` times. Checks that every message is answered, that the
streaming calls stay within the edit budget (per channel and overall), and that scripted 429s
were all retried; prints throughput and where the time went, and with ``--write`` records the
result in bench/results/discord.md.

With ``--real`` the service is the real engine (TavernService on a fresh SQLite file) and the
model the offline provider taking ``--model-ms`` over its streamed chunks.

    python -m bench.discord_bench [--real] [--channels 50] [--users 3] [--rounds 2]
        [--model-ms 200] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.discord.convert import session_key
from adapters.discord.options import DiscordOptions
from adapters.discord.runner import DiscordRunner
from adapters.llm import OfflineChatModel
from adapters.llm.offline import OFFLINE_CHUNKS, OfflineChatStream
from adapters.storage import open_storage
from engine.ports import ChatChunk, ChatRequest, ChatResult, Usage
from engine.turns.api import OnText, ReplyView, SessionKey, UserLine
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.discord.world import MANAGE_MESSAGES, MANAGE_WEBHOOKS, MEMBER_DEFAULT
from tests.fakes.roleplay import FakeRoleplayService

RESULTS = Path(__file__).resolve().parent / "results" / "discord.md"
STREAM_PATH = r"^/webhooks/\d+/[^/]+(/messages/\d+)?$"
RUN_LIMIT_S = 540.0
# Lifts the edit budget to measure what the bot itself costs (not for real Discord).
UNTHROTTLED = {"edit_interval_s": 0.0, "edit_rate_per_s": 10_000.0, "edit_burst": 10_000}
NOTES = """
## Reading the numbers

- Each channel gets one streaming call (post or edit) per second at most, and all channels
  share the global rate; a reply costs one post when its text is complete before its first
  slot comes, else a post and one or more edits. So throughput is bounded by the edit budget
  (about `rate` calls per second overall), not by the model: the share of time outside the
  model is nearly all waiting for budget slots and for earlier floors of the same channel.
- The quiet-period policy turns the three users of a channel into one floor per round, so it
  needs a third of the replies for the same conversation; its latency includes the 1 s of
  quiet the policy waits for before the floor starts.
- With the budget lifted, the same load shows the bot's own overhead: what is left outside
  the model is one generation at a time per channel (three users queue behind each other)
  and the REST round trips of posting and editing. Under that load (hundreds of calls per
  second in one process) the fake model's own sleeps overrun, so its measured time per
  floor is above 200 ms.
- CPU time is small (a few ms per reply for the bot, discord.py and the fake together): the
  time outside the model is waiting, not work.
- 429s are scripted on webhook posts (about 5% of them, `retry_after` 0.2 s); discord.py waits
  and re-sends, and the adapter retries past its attempts, so every reply still arrives.
"""


MEMORY_INTRO = (
    "# Discord front end benchmark\n\n"
    "`python -m bench.discord_bench --write`: the real discord.py client through DiscordRunner "
    "against the loopback fake (REST + gateway), the in-memory service with a slow fake model.\n\n"
)
REAL_MARKER = "\n# On the real engine\n"
REAL_INTRO = (
    "\n`python -m bench.discord_bench --real --write`: the same load through the real engine: "
    "TavernService (prompt assembly, macros, variables, commits) on a fresh SQLite file, the "
    "offline provider taking the model time over its streamed chunks; no long-term memory.\n\n"
)
REAL_NOTES = """
## Reading the real-engine numbers

- Every message is answered and every 429 retried on the real engine too; the edit budget
  holds (at most one slot per channel per second, within rate + burst overall).
- The engine's cost per reply: CPU is about 15-22 ms per reply for the whole process (3.5 ms
  with the in-memory service) and the time inside `respond()` 0.26-0.47 s per floor against a
  0.2 s model. Before SQLite ran on the event loop's thread (with aiosqlite's driver thread)
  and before plain prompt text skipped macro evaluation, the same runs took 29-46 ms of CPU per
  reply and 1-2.3 s inside `respond()`.
- With the budget in place the throughput stays at the budget's pace (19 replies/s, as in
  memory). With the budget lifted the in-memory service reached 76 replies/s and the real
  engine 47-64 replies/s (four runs; it was 12-16 before the changes above). Numbers vary by
  about 30% between runs on a shared machine.
- "Share of time outside the model" counts everything but the model's own sleeps: queueing
  behind the channel's earlier floors, the edit budget, REST round trips and the engine.
"""


class SlowModelService(FakeRoleplayService):
    """The fake service with a model that takes ``delay_s`` and streams in pieces."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.model_s = 0.0
        self.finished = 0

    def generating_done(self, floors: int) -> bool:
        """True once ``floors`` generations have returned."""
        return self.finished >= floors

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
        **group: Any,
    ) -> ReplyView:
        started = time.monotonic()
        await asyncio.sleep(self.delay_s / 2)

        async def paced(text: str) -> None:
            if on_text is not None:
                await on_text(text)
            await asyncio.sleep(self.delay_s / 6)

        view = await super().respond(key, branch, lines, on_text=paced, **group)
        self.model_s += time.monotonic() - started
        self.finished += 1
        return view


TAG = re.compile(r"\[msg-[^\]]+\]")


class QuotingStream(OfflineChatStream):
    """The offline stream, quoting every ``[msg-...]`` tag the floor's users wrote."""

    def __init__(self, model: TimedModel, request: ChatRequest) -> None:
        super().__init__(request, model.delay_s / OFFLINE_CHUNKS)
        self.model = model

    async def _run(self) -> AsyncIterator[ChatChunk]:
        started = time.monotonic()
        latest: list[str] = []
        for message in self._request.messages:
            if message.role == "assistant":
                latest = []
            elif message.role == "user":
                latest.extend(TAG.findall(message.content))
        text = "The innkeeper nods at " + " ".join(latest or ["nobody"]) + "."
        size = -(-len(text) // OFFLINE_CHUNKS)
        for start in range(0, len(text), size):
            await asyncio.sleep(self._delay)
            yield ChatChunk(text=text[start : start + size])
        usage = Usage(prompt_tokens=0, completion_tokens=len(text.split()))
        self._result = ChatResult(text=text, usage=usage)
        self.model.model_s += time.monotonic() - started
        self.model.finished += 1


class TimedModel(OfflineChatModel):
    """The offline provider taking ``delay_s`` per reply (over its chunks), timed."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(chunk_delay_s=delay_s / OFFLINE_CHUNKS, announce=False)
        self.delay_s = delay_s
        self.model_s = 0.0
        self.finished = 0

    def stream(self, request: ChatRequest) -> QuotingStream:
        """A timed stream quoting the floor's tags."""
        return QuotingStream(self, request)


@contextlib.asynccontextmanager
async def real_engine(model_ms: int) -> AsyncIterator[tuple[TavernService, TimedModel]]:
    """TavernService on a fresh SQLite file, answering with the timed offline model."""
    with tempfile.TemporaryDirectory() as folder:
        storage = await open_storage(f"sqlite+aiosqlite:///{folder}/bench.db")
        model = TimedModel(model_ms / 1000)
        service = TavernService(
            storage,
            model_for=lambda profile: model,
            default_profile=environment_profile(
                provider="offline", base_url=None, model="offline"
            ),
        )
        try:
            await service.start()
            yield service, model
        finally:
            await service.aclose()
            await storage.close()


@dataclass
class Result:
    channels: int
    users: int
    rounds: int
    model_ms: int
    messages: int
    answered: int
    wall_s: float
    rest_calls: int
    stream_calls: int
    max_per_channel_1s: int
    max_overall_1s: int
    slot_per_channel_1s: int
    slot_overall_1s: int
    min_channel_gap_s: float
    rate_limit: float
    burst: int
    scripted_429: int
    retried_ok: bool
    latency_p50: float
    latency_p95: float
    outside_model_share: float
    floor_s_mean: float
    webhooks: int
    policy: str
    floors: int
    cpu_s: float
    budget_wait_s: float
    held_s: float
    model_s: float
    real: bool = False
    service_s: float = 0.0


def _max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


async def run(
    channels: int,
    users: int,
    rounds: int,
    model_ms: int,
    policy: str = "every_message",
    unthrottled: bool = False,
    real: bool = False,
) -> Result:
    async with contextlib.AsyncExitStack() as stack:
        if real:
            service, timed = await stack.enter_async_context(real_engine(model_ms))
        else:
            service, timed = SlowModelService(model_ms / 1000), None
        return await _run(
            service, timed, channels, users, rounds, model_ms, policy, unthrottled, real
        )


async def _run(
    service: FakeRoleplayService | TavernService,
    timed: TimedModel | None,
    channels: int,
    users: int,
    rounds: int,
    model_ms: int,
    policy: str,
    unthrottled: bool,
    real: bool,
) -> Result:
    fake = await FakeDiscord(
        limits=Limits(max_lifetime_s=RUN_LIMIT_S + 60, max_requests=500_000)
    ).start()
    guild = fake.add_guild(
        "Bench", bot_permissions=MEMBER_DEFAULT | MANAGE_WEBHOOKS | MANAGE_MESSAGES
    )
    rooms = [fake.add_channel(guild, f"rp-{i}") for i in range(channels)]
    people = [[fake.add_member(guild, f"p{i}-{j}") for j in range(users)] for i in range(channels)]
    keys = [session_key(guild.id, room.id) for room in rooms]
    options = DiscordOptions(
        token=fake.token,
        api_base=fake.api_base,
        gateway_url=fake.gateway_url,
        reply_policy=policy,  # type: ignore[arg-type]
        quiet_period_s=1.0,
        guild_ready_timeout_s=0.05,
        channels={str(room.id): "Seraphina" for room in rooms},
        **(UNTHROTTLED if unthrottled else {}),
    )
    runner = DiscordRunner(service, options)
    runner.budget.slots = []  # record every grant of the shared budget
    said: dict[str, float] = {}

    def model_done(floors: int) -> bool:
        if timed is not None:
            return timed.finished >= floors
        assert isinstance(service, SlowModelService)
        return service.generating_done(floors)

    try:
        await runner.start()
        await runner.wait_ready(10)
        await fake.wait_for(lambda: all(runner.sessions.is_bound(k) for k in keys), 10, "bindings")
        scripted = max(5, channels * users * rounds // 20)
        fake.fail_next("POST", r"^/webhooks/\d+/", status=429, retry_after=0.2, times=scripted)
        started = time.monotonic()
        cpu_started = time.process_time()
        for round_no in range(rounds):
            speeches = []
            for room, members in zip(rooms, people, strict=True):
                for member in members:
                    text = f"msg-{member.name}-r{round_no}"
                    said[text] = time.monotonic()
                    speeches.append(fake.say(room, member, f"[{text}]"))
            await asyncio.gather(*speeches)
            if policy != "every_message":
                # Let the round's floor form before the next round speaks.
                await fake.wait_for(
                    lambda r=round_no: runner.turns.floors_done >= channels * (r + 1),
                    RUN_LIMIT_S,
                    "round floors",
                )
        expected = len(said) if policy == "every_message" else channels * rounds

        def settled() -> bool:
            done = runner.turns.floors_done >= expected and runner.tasks.running == 0
            return done and model_done(expected)

        await fake.wait_for(
            settled,
            RUN_LIMIT_S,
            "every floor delivered",
        )
        wall = time.monotonic() - started
        cpu = time.process_time() - cpu_started
    finally:
        await runner.close()
        await fake.stop()

    last_touch: dict[int, float] = {}
    per_channel: dict[int, list[float]] = defaultdict(list)
    overall: list[float] = []
    hook_channel = {w.id: w.channel_id for w in fake.webhooks.values()}
    for call in fake.calls:
        if call.status != 200 or not re.match(STREAM_PATH, call.path):
            continue
        hook_id = int(call.path.split("/")[2])
        per_channel[hook_channel.get(hook_id, 0)].append(call.at)
        overall.append(call.at)
        if call.method == "PATCH":
            last_touch[int(call.path.rsplit("/", 1)[-1])] = call.at
        elif isinstance(call.answer, dict) and "id" in call.answer:
            last_touch[int(call.answer["id"])] = call.at
    final_at: dict[str, float] = {}
    for message in fake.messages.values():
        if "webhook_id" not in message:
            continue
        for text in re.findall(r"\[(msg-[^\]]+)\]", message["content"]):
            final_at[text] = last_touch.get(int(message["id"]), 0.0)
    answered = sum(1 for text in said if text in final_at)
    latencies = [final_at[t] - said[t] for t in final_at if final_at[t] > 0]
    model_s = model_ms / 1000
    total = sum(latencies)
    outside = (total - model_s * len(latencies)) / total if total else 0.0
    statuses = [c.status for c in fake.calls]
    slots: dict[int, list[float]] = defaultdict(list)
    for channel_id, at in runner.budget.slots or []:
        slots[channel_id].append(at)
    gaps = [b - a for v in slots.values() for a, b in zip(sorted(v), sorted(v)[1:], strict=False)]
    return Result(
        slot_per_channel_1s=max(
            (_max_in_window(v, 1.0 - 1e-6) for v in slots.values()), default=0
        ),
        slot_overall_1s=_max_in_window([t for v in slots.values() for t in v], 1.0),
        min_channel_gap_s=min(gaps, default=0.0),
        channels=channels,
        users=users,
        rounds=rounds,
        model_ms=model_ms,
        messages=len(said),
        answered=answered,
        wall_s=wall,
        rest_calls=len(fake.calls),
        stream_calls=len(overall),
        max_per_channel_1s=max((_max_in_window(v, 1.0) for v in per_channel.values()), default=0),
        max_overall_1s=_max_in_window(overall, 1.0),
        rate_limit=options.edit_rate_per_s,
        burst=options.edit_burst,
        scripted_429=statuses.count(429),
        retried_ok=answered == len(said) and statuses.count(429) == scripted,
        latency_p50=statistics.median(latencies) if latencies else 0.0,
        latency_p95=statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else 0.0,
        outside_model_share=outside,
        floor_s_mean=runner.turns.floor_s / max(1, runner.turns.floors_done),
        webhooks=len(fake.webhooks),
        policy=policy,
        floors=runner.turns.floors_done,
        cpu_s=cpu,
        budget_wait_s=runner.budget.waited_s,
        held_s=runner.turns.held_s,
        model_s=timed.model_s if timed is not None else service.model_s,  # type: ignore[union-attr]
        real=real,
        service_s=runner.turns.service_s,
    )


def report(r: Result) -> str:
    """The result as markdown."""
    return "\n".join(
        [
            f"- setup: {r.channels} channels x {r.users} users x {r.rounds} rounds = "
            f"{r.messages} messages, policy {r.policy}, "
            + (
                f"TavernService on a SQLite file, offline model {r.model_ms} ms "
                f"({OFFLINE_CHUNKS} streamed chunks, one every {r.model_ms // OFFLINE_CHUNKS} ms)"
                if r.real
                else f"in-memory service, fake model {r.model_ms} ms "
                "(half before the first chunk, the rest over 3 streamed chunks)"
            ),
            f"- answered: {r.answered}/{r.messages} messages in {r.floors} floors; "
            f"webhooks created: {r.webhooks}",
            f"- wall time: {r.wall_s:.1f} s; throughput: {r.floors / r.wall_s:.1f} replies/s, "
            f"{r.messages / r.wall_s:.1f} user messages/s",
            f"- CPU time of the whole process (bot, discord.py and the fake server): "
            f"{r.cpu_s:.2f} s ({1000 * r.cpu_s / max(1, r.floors):.1f} ms per reply); "
            f"waiting for the edit budget: {r.budget_wait_s:.0f} s summed over replies",
            f"- REST calls: {r.rest_calls} (streaming posts and edits: {r.stream_calls})",
            f"- edit budget (slots granted): at most {r.slot_per_channel_1s} per channel in any "
            f"1 s window (smallest gap {r.min_channel_gap_s:.3f} s), at most "
            f"{r.slot_overall_1s} overall in any 1 s window (rate {r.rate_limit:g}/s + burst "
            f"{r.burst})",
            f"- as seen by the server (arrival times; a 429 retry delays a call into the next "
            f"slot's second): per channel {r.max_per_channel_1s}, overall {r.max_overall_1s} "
            "in any 1 s window",
            f"- 429s scripted on webhook posts: {r.scripted_429}, all retried: {r.retried_ok}",
            f"- latency from message to final reply: p50 {r.latency_p50:.2f} s, "
            f"p95 {r.latency_p95:.2f} s; mean floor (flush to delivered) {r.floor_s_mean:.2f} s",
            f"- share of time outside the model: {r.outside_model_share:.0%} of the time from "
            "message to final reply (queueing behind earlier floors of the channel and the "
            "shared edit budget); "
            f"{1 - r.model_s / r.held_s if r.held_s else 0:.0%} of the time a floor holds its "
            f"branch (mean {r.held_s / max(1, r.floors):.2f} s per floor, model "
            f"{r.model_s / max(1, r.floors):.2f} s)",
            f"- inside the service's respond() (engine and model, streaming callbacks included): "
            f"mean {r.service_s / max(1, r.floors):.2f} s per floor",
        ]
    )


def _write(real: bool, sections: list[str]) -> None:
    """Record the sections that ran, keeping the other part of the results file."""
    old = RESULTS.read_text() if RESULTS.exists() else ""
    memory_part, _, real_part = old.partition(REAL_MARKER)
    if real:
        real_part = REAL_INTRO + "\n".join(sections) + REAL_NOTES
    else:
        memory_part = MEMORY_INTRO + "\n".join(sections) + NOTES
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(memory_part + (REAL_MARKER + real_part if real_part else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--users", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model-ms", type=int, default=200)
    parser.add_argument(
        "--real", action="store_true", help="the real engine (TavernService on SQLite)"
    )
    parser.add_argument("--write", action="store_true", help="record in bench/results")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    sections, ok = [], True
    variants = [
        ("every_message", "every_message", False),
        ("quiet_period", "quiet_period", False),
        (
            "every_message, budget lifted (overhead only; never do this on Discord)",
            "every_message",
            True,
        ),
    ]
    for title, policy, unthrottled in variants:
        result = asyncio.run(
            run(
                args.channels,
                args.users,
                args.rounds,
                args.model_ms,
                policy,
                unthrottled,
                real=args.real,
            )
        )
        if args.real:
            title = f"real engine: {title}"
        text = report(result)
        print(f"## {title}\n{text}\n")
        sections.append(f"## {title}\n\n{text}\n")
        ok = ok and result.answered == result.messages and result.retried_ok
        if unthrottled:
            continue
        ok = ok and result.slot_per_channel_1s <= 1
        ok = ok and result.slot_overall_1s <= result.rate_limit + result.burst
    if args.write:
        _write(args.real, sections)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
