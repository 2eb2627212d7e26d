"""The memory service: what the turn workflow, the scheduler and the commands call.

It ties the pure planners to the ports: a :class:`~engine.memory.ports.MemoryRepository`, the
memory slot's :class:`~engine.ports.ChatModel`, the prompt's token counter, a clock and an event
sink. A turn uses it twice::

    view = viewpoint_for(session, branch, branches, floor_no)
    block = await memory.retrieve(view, user_text, recent_turns=[...])        # step 3
    ...  # assemble with block.text, generate, extract tags, commit the floor
    await memory.after_commit(view, user_text=..., reply_text=..., tag_summaries=[...])

``after_commit`` never raises an :class:`~engine.errors.EngineError`: the floor is already
committed, so a model failure, broken agent output or a storage conflict degrades to the
narrator's tag summaries (or nothing) plus a ``memory.*`` event. It also makes sure the
background jobs of the turn's scopes exist (compaction of the summary scope, decay of the
branch, expiry of the realm) and asks for a compaction run; the scheduler in ``bot`` runs
them through :mod:`engine.memory.worker`, calling :meth:`MemoryService.run_job`.

Ids: memory keeps the timeline's realm, session and branch ids as text (``str(branch.id)``);
:func:`viewpoint_for` does the conversion and builds a fork's lineage.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from engine.errors import EngineError, GenerationError
from engine.memory.agent_context import (
    AGENT_CONTEXT_TOKENS,
    build_agent_context,
    build_agent_messages,
    build_agent_request,
)
from engine.memory.agent_ops import AgentLimits
from engine.memory.agent_plan import (
    DEFAULT_AGENT_SCOPES,
    AgentTurn,
    plan_agent_turn,
    plan_tag_summaries,
)
from engine.memory.compaction import (
    CompactionPolicy,
    Summariser,
    plan_compaction,
    run_compaction,
)
from engine.memory.decay import DecayPolicy
from engine.memory.embedding import SemanticMemory
from engine.memory.errors import MemoryPolicyError
from engine.memory.injection import InjectionPolicy, InjectionResult, TokenCounter, select_memories
from engine.memory.jobs import JobState, JobType, request_run
from engine.memory.lineage import Viewpoint, scope_id_for
from engine.memory.maintenance import ExpiryPolicy, plan_decay, plan_expiry
from engine.memory.plan import (
    LifecycleChange,
    MutationPlan,
    committed_event,
    memory_event,
)
from engine.memory.ports import MemoryQuery, MemoryRepository
from engine.memory.recall_cache import RecallCache
from engine.memory.records import (
    IdFactory,
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
)
from engine.memory.revival import check_owned, plan_revive
from engine.memory.scoping import JobScope
from engine.memory.search import SEARCH_LIMIT, SearchHit, search_memories
from engine.memory.story_dates import STORY_DATE_VARIABLE, dated_plan
from engine.memory.summarisers import summariser_for
from engine.memory.worker import ensure_job
from engine.ports import ChatModel, Clock, Event, EventSink

MAX_COMPACTIONS_PER_RUN = 8
"""Compactions one job run may apply to a scope (a backlog drains over several runs)."""
MAX_LISTED_RECORDS = 1000
"""Records :meth:`MemoryService.list_records` returns at most."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings:
    """Every policy the service applies (defaults after the reference system)."""

    injection: InjectionPolicy = field(default_factory=InjectionPolicy)
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    expiry: ExpiryPolicy = field(default_factory=ExpiryPolicy)
    decay: DecayPolicy = field(default_factory=DecayPolicy)
    agent_limits: AgentLimits = field(default_factory=AgentLimits)
    agent_context_tokens: int = AGENT_CONTEXT_TOKENS
    allowed_scopes: frozenset[MemoryScope] = DEFAULT_AGENT_SCOPES
    summary_scope: MemoryScope = MemoryScope.BRANCH
    max_compactions_per_run: int = MAX_COMPACTIONS_PER_RUN
    story_date_variable: str = STORY_DATE_VARIABLE  # the chat variable holding the story date

    def __post_init__(self) -> None:
        if self.max_compactions_per_run < 1:
            raise MemoryPolicyError("memory max_compactions_per_run must be >= 1")
        if self.agent_context_tokens < 0:
            raise MemoryPolicyError("memory agent_context_tokens must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryTurnOutcome:
    """What :meth:`MemoryService.after_commit` stored (``plan``) and how it went."""

    plan: MutationPlan
    applied: bool
    degraded: bool = False


class _NullSink:
    def emit(self, event: Event) -> None:
        """Drop the event."""


def _new_id() -> str:
    return f"mem-{uuid.uuid4().hex}"


class MemoryService:
    """Long-term memory on the ports; see the module docstring for how a turn calls it."""

    def __init__(
        self,
        repo: MemoryRepository,
        *,
        count: TokenCounter,
        clock: Clock,
        model: ChatModel | None = None,
        model_name: str = "",
        events: EventSink | None = None,
        summariser: Summariser | None = None,
        settings: MemorySettings | None = None,
        new_id: IdFactory | None = None,
        semantic: SemanticMemory | None = None,
    ) -> None:
        self.repo = repo
        self.count = count
        self.clock = clock
        self.model = model
        self.model_name = model_name
        self.events: EventSink = events or _NullSink()
        self.summariser = summariser or summariser_for(model, model_name)
        self.settings = settings or MemorySettings()
        self.new_id: IdFactory = new_id or _new_id
        self.recall = RecallCache()  # what retrieval read, per viewpoint and realm revision
        # Embeddings configured: hybrid ranking and the embed job; None: BM25 alone.
        self.semantic = semantic

    # ------------------------------------------------------------------ reading

    async def _lineage(self, view: Viewpoint) -> tuple[list[MemoryRecord], list[MemoryRelation]]:
        # Kept between turns while the realm's revision says it is unchanged (recall_cache).
        return await self.recall.load(self.repo, view, lambda: self._read_lineage(view))

    async def _read_lineage(
        self, view: Viewpoint
    ) -> tuple[list[MemoryRecord], list[MemoryRelation]]:
        # Every lifecycle: a record that ended on another branch is still live for this one,
        # and relations decide what is superseded where (engine.memory.lineage).
        records = await self.repo.query_records(
            MemoryQuery(
                realm_id=view.realm_id,
                session_id=view.session_id,
                lifecycles=None,
                branch_ids=frozenset(view.branch_ids),
            )
        )
        relations = await self.repo.relations_for([r.id for r in records])
        return records, relations

    async def retrieve(
        self,
        view: Viewpoint,
        message: str,
        recent_turns: Sequence[str] = (),
        budget: int | None = None,
        *,
        mark_used: bool = True,
    ) -> InjectionResult:
        """The memory block for a turn (step 3), within ``budget`` tokens (default: the
        injection policy's). Marks the injected records used, which feeds decay (not with
        ``mark_used=False``: a dry run only looks)."""
        policy = self.settings.injection
        if budget is not None:
            policy = replace(policy, max_tokens=max(0, budget))
        records, relations = await self._lineage(view)
        now = self.clock.now()
        signal = None if self.semantic is None else await self.semantic.signal(records, message)
        result = select_memories(
            records,
            relations,
            view=view,
            now=now,
            message=message,
            count=self.count,
            recent_turns=recent_turns,
            policy=policy,
            semantic=signal,
        )
        if result.record_ids and mark_used:
            await self.note_used(view, result.record_ids, at=now)()
        self._emit(
            memory_event(
                "injected",
                floor_no=view.floor_no,
                ids=list(result.record_ids),
                tokens=result.tokens,
                candidates=result.candidates,
            )
        )
        return result

    def note_used(
        self, view: Viewpoint, record_ids: Sequence[str], *, at: datetime | None = None
    ) -> Callable[[], Awaitable[None]]:
        """Mark records injected at ``view``'s floor: this process's copy at once, and the
        storage write returned for the caller to run (a turn runs it after its reply, off its
        path; the copy already reads as the database will)."""
        ids, when = tuple(record_ids), at or self.clock.now()
        self.recall.marked(view.realm_id, ids, floor_no=view.floor_no, at=when)

        async def write() -> None:
            if ids:
                await self.repo.mark_used(ids, floor_no=view.floor_no, at=when)

        return write

    async def list_records(
        self,
        realm_id: str,
        session_id: str | None,
        *,
        include_inactive: bool = False,
        kinds: frozenset[MemoryKind] | None = None,
        limit: int = MAX_LISTED_RECORDS,
    ) -> list[MemoryRecord]:
        """A session's records (and its realm's), oldest floor first."""
        return await self.repo.query_records(
            MemoryQuery(
                realm_id=realm_id,
                session_id=session_id,
                kinds=kinds,
                lifecycles=None if include_inactive else frozenset({Lifecycle.ACTIVE}),
                limit=max(0, min(limit, MAX_LISTED_RECORDS)),
            )
        )

    async def search(
        self, view: Viewpoint, query: str, *, limit: int = SEARCH_LIMIT
    ) -> list[SearchHit]:
        """The memories ``view`` can see that match ``query`` (BM25, best first)."""
        records, relations = await self._lineage(view)
        return search_memories(records, relations, view=view, query=query, limit=limit)

    def query_tool(self, view: Viewpoint) -> Callable[[str, int], Awaitable[list[str]]]:
        """A ``query_memory`` tool body for this viewpoint: texts of the best matches."""

        async def query(text: str, limit: int) -> list[str]:
            return [hit.record.display for hit in await self.search(view, text, limit=limit)]

        return query

    # ------------------------------------------------------------------ writing

    async def after_commit(
        self,
        view: Viewpoint,
        *,
        user_text: str,
        reply_text: str,
        tag_summaries: Sequence[str] = (),
        message_ref: str | None = None,
        run_agent: bool = True,
        model: ChatModel | None = None,
        model_name: str | None = None,
        story_date: str | None = None,
    ) -> MemoryTurnOutcome:
        """Store what a committed turn taught (step 8); never raises an EngineError.

        ``reply_text`` is the visible reply (tags already extracted); ``tag_summaries`` the
        texts of the extracted ``<summary>``-style blocks. With ``run_agent`` and a model the
        memory agent plans facts, loops and the micro summary; otherwise the tags become the
        micro summary. ``model``/``model_name`` override the service's memory model for this
        turn (the turn's snapshotted memory-slot profile). ``story_date`` is the in-story date
        the turn was played on (:mod:`engine.memory.story_dates`): the records it writes carry it.
        """
        now = self.clock.now()
        tags = tuple(t for t in tag_summaries if t.strip())
        turn = AgentTurn(
            view=view,
            now=now,
            allowed_scopes=self.settings.allowed_scopes,
            summary_scope=self.settings.summary_scope,
            message_ref=message_ref,
            tag_summaries=tags,
        )

        def fallback() -> MutationPlan:
            return dated_plan(plan_tag_summaries(tags, turn=turn, new_id=self.new_id), story_date)

        degraded = False
        try:
            agent = model or self.model
            if run_agent and agent is not None:
                name = model_name if model_name is not None else self.model_name
                plan = await self._agent_plan(
                    agent, name, view, turn, user_text=user_text, reply_text=reply_text
                )
                degraded = any(e.name == "memory.agent_output_invalid" for e in plan.events)
            else:
                plan = fallback()
        except EngineError as exc:  # the model failed, or storage while reading for it
            kind = "agent_failed" if isinstance(exc, GenerationError) else "agent_skipped"
            self._emit(memory_event(kind, floor_no=view.floor_no, error=str(exc)))
            plan, degraded = fallback(), True
        plan = dated_plan(plan, story_date)
        applied = await self._apply_turn(view, plan, fallback)
        if applied is None:
            return MemoryTurnOutcome(plan=plan, applied=False, degraded=True)
        try:
            await self._schedule_jobs(view, now)
        except EngineError as exc:
            self._emit(memory_event("jobs_not_scheduled", floor_no=view.floor_no, error=str(exc)))
        return MemoryTurnOutcome(
            plan=applied, applied=True, degraded=degraded or applied is not plan
        )

    async def _agent_plan(
        self,
        model: ChatModel,
        model_name: str,
        view: Viewpoint,
        turn: AgentTurn,
        *,
        user_text: str,
        reply_text: str,
    ) -> MutationPlan:
        records, relations = await self._lineage(view)
        context = build_agent_context(
            records,
            relations,
            view=view,
            now=turn.now,
            focus=f"{user_text}\n{reply_text}",
            count=self.count,
            budget=self.settings.agent_context_tokens,
        )
        messages = build_agent_messages(
            context,
            transcript=[("user", user_text), ("narrator", reply_text)],
            allowed_scopes=sorted(turn.allowed_scopes),
            hints=turn.tag_summaries,
        )
        result = await model.complete(build_agent_request(model_name, messages))
        return plan_agent_turn(
            result.text,
            context=context,
            records=records,
            relations=relations,
            turn=turn,
            new_id=self.new_id,
            limits=self.settings.agent_limits,
        )

    async def _apply_turn(
        self, view: Viewpoint, plan: MutationPlan, fallback: Callable[[], MutationPlan]
    ) -> MutationPlan | None:
        """Apply ``plan``; when storage refuses it, the tag summaries alone (None: nothing)."""
        attempt, last = plan, False
        while True:
            try:
                await self.recall.apply(self.repo, attempt)
            except EngineError as exc:
                self._emit(
                    memory_event(
                        "apply_failed", floor_no=view.floor_no, error=str(exc), fallback=last
                    )
                )
                if last:
                    return None
                attempt, last = fallback(), True
                continue
            self._committed(attempt, view.floor_no)
            return attempt

    async def _schedule_jobs(self, view: Viewpoint, now: datetime) -> None:
        summary_scope = self.settings.summary_scope
        compact = JobScope(
            realm_id=view.realm_id,
            session_id=None if summary_scope is MemoryScope.GLOBAL else view.session_id,
            scope=summary_scope,
            scope_id=scope_id_for(summary_scope, view),
        )
        state = await ensure_job(self.repo, JobType.COMPACT, compact.key, due_at=now)
        wanted = request_run(state, now=now)
        if wanted is not state:
            await self.repo.save_job(wanted, expected_revision=state.revision)
        decay = JobScope(
            realm_id=view.realm_id,
            session_id=view.session_id,
            scope=MemoryScope.BRANCH,
            scope_id=view.branch_id,
        )
        await ensure_job(self.repo, JobType.DECAY, decay.key, due_at=now)
        await ensure_job(self.repo, JobType.EXPIRY, view.realm_id, due_at=now)
        if self.semantic is not None:
            await self.semantic.schedule(self.repo, view, now)

    async def forget(
        self, record_id: str, *, view: Viewpoint | None = None, reason: str = "forgotten"
    ) -> MemoryRecord | None:
        """Deprecate one record by hand; None when it does not exist. Without ``view`` it is
        forgotten on every branch, with one from ``view``'s floor on."""
        found = await self.repo.get_records([record_id])
        if not found:
            return None
        record = found[0]
        if record.lifecycle is Lifecycle.DEPRECATED:
            return record
        now = self.clock.now()
        change = LifecycleChange(
            record_id=record.id,
            expected=record.lifecycle,
            new=Lifecycle.DEPRECATED,
            at=now,
            ended_branch=None if view is None else view.branch_id,
            ended_floor=None if view is None else view.floor_no,
            reason=reason,
        )
        plan = MutationPlan(changes=(change,), events=(memory_event("forgotten", id=record.id),))
        await self.recall.apply(self.repo, plan)
        self._committed(plan, None if view is None else view.floor_no)
        return replace(record, lifecycle=Lifecycle.DEPRECATED, updated_at=now)

    async def revive(
        self, record_id: str, *, view: Viewpoint, reason: str = "revived"
    ) -> MemoryRecord:
        """Bring a forgotten record of ``view``'s realm and lineage back to active (the inverse
        of :meth:`forget`; the checks are :mod:`engine.memory.revival`'s)."""
        found = await self.repo.get_records([record_id])
        record = check_owned(found[0] if found else None, view, record_id)
        relations = await self.repo.relations_for([record.id])
        others = {r.source_id for r in relations if r.target_id == record.id}
        replacements = await self.repo.get_records(sorted(others)) if others else []
        now = self.clock.now()
        plan = plan_revive(record, relations, replacements, now=now, reason=reason)
        await self.recall.apply(self.repo, plan)
        self._committed(plan, view.floor_no)
        return replace(
            record, lifecycle=Lifecycle.ACTIVE, updated_at=now, ended_branch=None, ended_floor=None
        )

    # ------------------------------------------------------------------ jobs

    async def compact_now(
        self,
        scope: JobScope,
        *,
        head_floor: int | None = None,
        barrier_floors: Sequence[int] = (),
        force: bool = False,
        job_id: str | None = None,
    ) -> list[MutationPlan]:
        """Run the compactions due in one summary scope (all of them, up to
        ``max_compactions_per_run``); ``head_floor`` None: the newest floor summarised."""
        if scope.scope is None or scope.scope_id is None:
            raise MemoryPolicyError(f"compaction needs a summary scope, got {scope.key!r}")
        query = MemoryQuery(
            realm_id=scope.realm_id,
            session_id=scope.session_id,
            kinds=frozenset({MemoryKind.SUMMARY}),
            scopes=frozenset({(scope.scope, scope.scope_id)}),
        )
        plans: list[MutationPlan] = []
        for round_no in range(self.settings.max_compactions_per_run):
            summaries = await self.repo.query_records(query)
            head = head_floor
            if head is None:
                head = max((s.coverage_end or s.created_floor for s in summaries), default=0)
            task = plan_compaction(
                summaries,
                head_floor=head,
                policy=self.settings.compaction,
                force=force and round_no == 0,
                barrier_floors=barrier_floors,
            )
            if task is None:
                break
            plan = await run_compaction(
                task,
                summariser=self.summariser,
                now=self.clock.now(),
                head_floor=head,
                new_id=self.new_id,
                policy=self.settings.compaction,
                job_id=job_id,
            )
            await self.recall.apply(self.repo, plan)
            self._committed(plan, head)
            plans.append(plan)
        return plans

    async def decay(self, scope: JobScope, *, head_floor: int | None = None) -> MutationPlan:
        """Forget the facts and loops written on one branch whose decayed weight is negligible."""
        if scope.scope is not MemoryScope.BRANCH or scope.scope_id is None:
            raise MemoryPolicyError(f"decay runs per branch, got {scope.key!r}")
        branch = scope.scope_id
        records = [
            r
            for r in await self.repo.query_records(
                MemoryQuery(
                    realm_id=scope.realm_id,
                    session_id=scope.session_id,
                    kinds=frozenset({MemoryKind.FACT, MemoryKind.OPEN_LOOP}),
                    branch_ids=frozenset({branch}),
                )
            )
            if r.origin_branch == branch
        ]
        if head_floor is None:
            head_floor = max(
                (max(r.created_floor, r.last_used_floor or 0) for r in records), default=0
            )
        plan = plan_decay(
            records, now=self.clock.now(), head_floor=head_floor, policy=self.settings.decay
        )
        await self._apply_job_plan(plan, head_floor)
        return plan

    async def expire(self, realm_id: str) -> MutationPlan:
        """Expire old micro summaries and open loops of a realm; purge long-deprecated ones."""
        records = await self.repo.query_records(MemoryQuery(realm_id=realm_id, lifecycles=None))
        plan = plan_expiry(records, now=self.clock.now(), policy=self.settings.expiry)
        await self._apply_job_plan(plan, None)
        return plan

    async def run_job(
        self,
        state: JobState,
        *,
        head_floor: int | None = None,
        barrier_floors: Sequence[int] = (),
    ) -> None:
        """The body of one memory job (the scheduler runs it under the job's lease)."""
        scope = JobScope.parse(state.scope_key)
        if state.job_type is JobType.COMPACT:
            await self.compact_now(
                scope, head_floor=head_floor, barrier_floors=barrier_floors, job_id=state.key
            )
        elif state.job_type is JobType.DECAY:
            await self.decay(scope, head_floor=head_floor)
        elif state.job_type is JobType.EXPIRY:
            await self.expire(scope.realm_id)
        elif state.job_type is JobType.EMBED:
            if self.semantic is not None:  # embeddings switched off since: nothing to do
                await self.semantic.run(self.repo, scope, self.clock.now())
        else:
            raise MemoryPolicyError(f"memory job {state.key}: no work for {state.job_type}")

    async def summary_scopes(self, realm_id: str, session_id: str) -> list[JobScope]:
        """The summary scopes of a session that hold active summaries (for ``compact``)."""
        summaries = await self.repo.query_records(
            MemoryQuery(
                realm_id=realm_id, session_id=session_id, kinds=frozenset({MemoryKind.SUMMARY})
            )
        )
        keys = sorted({(s.scope, s.scope_id, s.session_id) for s in summaries})
        return [
            JobScope(realm_id=realm_id, session_id=sid, scope=scope, scope_id=scope_id)
            for scope, scope_id, sid in keys
        ]

    async def _apply_job_plan(self, plan: MutationPlan, floor_no: int | None) -> None:
        if plan.is_empty:
            return
        await self.recall.apply(self.repo, plan)  # a conflict propagates: the job retries it
        self._committed(plan, floor_no)

    # ------------------------------------------------------------------ events

    def _committed(self, plan: MutationPlan, floor_no: int | None) -> None:
        for event in plan.events:
            self._emit(event)
        if not plan.is_empty:
            self._emit(committed_event(plan, floor_no=floor_no))

    def _emit(self, event: Event) -> None:
        self.events.emit(event)
