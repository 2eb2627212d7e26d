"""``tavernbot memory``: list, search, forget and compact a console session's long-term memory;
list the background memory jobs and revive a dead-lettered one.

``--session NAME`` is the name given to ``tavernbot chat --session NAME`` (the console
platform, realm ``local``). Views are taken from the session's ``main`` branch at its newest
floor. ``compact`` runs the compactions that are due now (``--force`` also compacts a scope
whose triggers have not fired, when it has enough summaries), with the configured model or,
offline, the deterministic summariser.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from bot.cli_commands import Subcommands

if TYPE_CHECKING:  # the command's own imports are deferred: ``tavernbot --help`` stays fast
    from adapters.llm.factory import ClosableChatModel
    from adapters.storage import SqlStorage
    from bot.config import Settings
    from engine.memory.jobs import JobState
    from engine.memory.lineage import Viewpoint
    from engine.memory.records import MemoryRecord
    from engine.memory.service import MemoryService
    from engine.timeline.service import TimelineService

CONSOLE_PLATFORM: Final = "console"
CONSOLE_REALM: Final = "local"
MAX_LINE_CHARS: Final = 160
"""A listed memory's text is cut to this many characters (``--json`` prints it whole)."""
DEFAULT_SEARCH_LIMIT: Final = 20


def register(sub: Subcommands) -> None:
    """Add the ``memory`` command group."""
    parser = sub.add_parser("memory", help="inspect and maintain long-term memory")
    inner = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    listing = inner.add_parser("list", help="the session's memories")
    listing.add_argument("--session", required=True, help="console session name")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    listing.add_argument("--all", action="store_true", help="include compacted and deprecated")
    listing.set_defaults(handler=_run(_list))

    search = inner.add_parser("search", help="memories matching a query (BM25)")
    search.add_argument("--session", required=True, help="console session name")
    search.add_argument("query", help="words to look for")
    search.add_argument("--json", action="store_true", help="one JSON array")
    search.add_argument("--limit", type=int, default=DEFAULT_SEARCH_LIMIT, help="most hits")
    search.set_defaults(handler=_run(_search))

    forget = inner.add_parser("forget", help="deprecate one memory on every branch")
    forget.add_argument("--session", help="console session name the memory must belong to")
    forget.add_argument("id", help="memory id (from list)")
    forget.set_defaults(handler=_run(_forget))

    compact = inner.add_parser("compact", help="run due summary compaction now")
    compact.add_argument("--session", required=True, help="console session name")
    compact.add_argument("--force", action="store_true", help="compact even if not due")
    compact.set_defaults(handler=_run(_compact))

    jobs = inner.add_parser("jobs", help="the background memory jobs and their state")
    jobs.add_argument("--json", action="store_true", help="one JSON array")
    jobs.set_defaults(handler=_run(_jobs))

    revive = inner.add_parser("revive", help="take a dead-lettered job out of the dead letter")
    revive.add_argument("job", help="job as listed by 'memory jobs' (TYPE:SCOPE)")
    revive.set_defaults(handler=_run(_revive))


@dataclass
class _Opened:
    """The storage, services and the session's main-branch viewpoint for one command."""

    storage: SqlStorage
    timeline: TimelineService
    memory: MemoryService
    model: ClosableChatModel | None


Action = Callable[[argparse.Namespace, _Opened], Awaitable[int]]


def _run(action: Action) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        from bot.cli import settings_from

        settings = settings_from(args)
        return asyncio.run(_with_services(settings, args, action))

    return handler


async def _with_services(settings: Settings, args: argparse.Namespace, action: Action) -> int:
    from bot.scheduler import build_memory_service
    from bot.startup import open_database
    from engine.timeline.service import TimelineService

    storage = await open_database(settings.database.url)
    model: ClosableChatModel | None = None
    try:
        if not settings.uses_offline_model:
            from adapters.llm.factory import build_chat_model

            key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
            model = build_chat_model(
                "openai",
                settings.llm.base_url,
                key,
                settings.llm.model,
                settings.llm.timeout_s,
                settings.llm.max_retries,
            )
        memory = build_memory_service(storage, model=model, model_name=settings.llm.model)
        opened = _Opened(
            storage=storage, timeline=TimelineService(storage), memory=memory, model=model
        )
        return await action(args, opened)
    finally:
        if model is not None:
            await model.aclose()
        await storage.close()


async def _session_view(opened: _Opened, name: str) -> Viewpoint:
    from engine.errors import NotFoundError
    from engine.memory.scoping import viewpoint_for
    from engine.timeline.values import MAIN_BRANCH

    session = await opened.timeline.find_session(CONSOLE_PLATFORM, name)
    if session is None:
        raise NotFoundError(
            f"no console session named {name!r}; start it with: tavernbot chat --session {name}"
        )
    main = await opened.timeline.branch(session.id, MAIN_BRANCH)
    head = await opened.timeline.head(main.id)
    branches = await opened.timeline.branches(session.id)
    return viewpoint_for(session, main, branches, head)


def _as_json(record: MemoryRecord) -> dict[str, Any]:
    from engine.memory.records import tier_name

    return {
        "id": record.id,
        "kind": record.kind.value,
        "tier": tier_name(record.tier) if record.tier is not None else None,
        "scope": record.scope.value,
        "scope_id": record.scope_id,
        "key": record.key,
        "text": record.text,
        "importance": record.importance,
        "confidence": record.confidence,
        "lifecycle": record.lifecycle.value,
        "floor": record.created_floor,
        "coverage": [record.coverage_start, record.coverage_end]
        if record.coverage_start is not None
        else None,
        "source": record.provenance.source.value,
        "flags": list(record.flags),
    }


def _line(record: MemoryRecord, extra: str = "") -> str:
    from engine.memory.records import tier_name

    kind = record.kind.value
    if record.tier is not None:
        kind = f"{kind}/{tier_name(record.tier)}"
    state = "" if record.lifecycle.value == "active" else f" [{record.lifecycle.value}]"
    text = " ".join(record.display.split())
    if len(text) > MAX_LINE_CHARS:
        text = text[: MAX_LINE_CHARS - 1] + "…"
    return (
        f"{record.id}  {kind}  {record.scope.value}  floor {record.created_floor}  "
        f"importance {record.importance:.2f}{extra}{state}  {text}"
    )


async def _list(args: argparse.Namespace, opened: _Opened) -> int:
    view = await _session_view(opened, args.session)
    records = await opened.memory.list_records(
        view.realm_id, view.session_id, include_inactive=args.all
    )
    if args.json:
        print(json.dumps([_as_json(r) for r in records], ensure_ascii=False, indent=1))
    elif not records:
        print(f"no memories in session {args.session!r}")
    else:
        for record in records:
            print(_line(record))
    return 0


async def _search(args: argparse.Namespace, opened: _Opened) -> int:
    view = await _session_view(opened, args.session)
    hits = await opened.memory.search(view, args.query, limit=max(0, args.limit))
    if args.json:
        rows = [{**_as_json(h.record), "score": round(h.score, 4)} for h in hits]
        print(json.dumps(rows, ensure_ascii=False, indent=1))
    elif not hits:
        print(f"no memories match {args.query!r}")
    else:
        for hit in hits:
            print(_line(hit.record, f"  score {hit.score:.2f}"))
    return 0


async def _forget(args: argparse.Namespace, opened: _Opened) -> int:
    from engine.errors import NotFoundError

    if args.session is not None:
        # With a session named, the memory must be one of its own (as ``list --all`` shows).
        view = await _session_view(opened, args.session)
        owned = await opened.memory.list_records(
            view.realm_id, view.session_id, include_inactive=True
        )
        if args.id not in {r.id for r in owned}:
            raise NotFoundError(f"no memory with id {args.id!r} in session {args.session!r}")
    record = await opened.memory.forget(args.id, reason="forgotten by command")
    if record is None:
        raise NotFoundError(f"no memory with id {args.id!r}")
    print(f"forgotten: {_line(record)}")
    return 0


async def _compact(args: argparse.Namespace, opened: _Opened) -> int:
    from bot.scheduler import timeline_floors

    view = await _session_view(opened, args.session)
    floors = timeline_floors(opened.timeline)
    total = 0
    for scope in await opened.memory.summary_scopes(view.realm_id, view.session_id):
        head, barriers = await floors(scope)
        plans = await opened.memory.compact_now(
            scope, head_floor=head, barrier_floors=barriers, force=args.force
        )
        for plan in plans:
            for summary in plan.new_records:
                sources = len(plan.changes)
                print(f"compacted {sources} summaries into {_line(summary)}")
        total += len(plans)
    if not total:
        print("nothing to compact")
    return 0


def _job_json(state: JobState) -> dict[str, Any]:
    def stamp(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "job": state.key,
        "status": state.status.value,
        "attempts": state.attempts,
        "next_run_at": stamp(state.next_run_at),
        "lease_owner": state.lease_owner,
        "last_success_at": stamp(state.last_success_at),
        "last_error": state.last_error,
    }


async def _jobs(args: argparse.Namespace, opened: _Opened) -> int:
    states = await opened.memory.repo.list_jobs()
    if args.json:
        print(json.dumps([_job_json(s) for s in states], ensure_ascii=False, indent=1))
        return 0
    if not states:
        print("no memory jobs yet")
    for state in states:
        row = _job_json(state)
        error = f"  error: {row['last_error']}" if row["last_error"] else ""
        print(
            f"{row['job']}  {row['status']}  attempts {row['attempts']}  "
            f"next {row['next_run_at'] or '-'}{error}"
        )
    return 0


async def _revive(args: argparse.Namespace, opened: _Opened) -> int:
    from engine.errors import ConflictError, NotFoundError
    from engine.memory.jobs import JobType, revive

    kind, _, scope_key = args.job.partition(":")
    try:
        job_type = JobType(kind)
    except ValueError:
        raise NotFoundError(f"no memory job {args.job!r} (expected TYPE:SCOPE)") from None
    state = await opened.memory.repo.load_job(job_type, scope_key)
    if state is None:
        raise NotFoundError(f"no memory job {args.job!r}")
    revived = revive(state, now=opened.memory.clock.now())
    if not await opened.memory.repo.save_job(revived, expected_revision=state.revision):
        raise ConflictError(f"memory job {args.job!r} changed meanwhile; try again")
    print(f"revived: {revived.key} is due now")
    return 0
