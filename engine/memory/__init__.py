"""Long-term memory: records, tag extraction, the memory agent, injection, compaction, jobs.

Everything here is pure planning over plain values: storage implements
:class:`engine.memory.ports.MemoryRepository` and applies the returned
:class:`engine.memory.plan.MutationPlan` in one transaction; the scheduler in ``bot`` drives
:mod:`engine.memory.worker`. The names below are the public API; the submodules hold the named
limits and defaults.
"""

from __future__ import annotations

from engine.memory.agent_context import (
    AgentContext,
    build_agent_context,
    build_agent_messages,
    build_agent_request,
)
from engine.memory.agent_ops import AgentLimits, ValidatedOps, validate_agent_ops
from engine.memory.agent_plan import AgentTurn, plan_agent_turn, plan_forget, plan_tag_summaries
from engine.memory.compaction import (
    CompactionPolicy,
    CompactionRequest,
    CompactionTask,
    CompactionTrigger,
    Summariser,
    build_compaction_request,
    plan_compaction,
    run_compaction,
)
from engine.memory.conflicts import resolve_key_conflicts
from engine.memory.decay import DecayPolicy, decay_factor
from engine.memory.extraction import (
    DEFAULT_SUMMARY_TAGS,
    ExtractedItem,
    ExtractionResult,
    extract_memory_tags,
)
from engine.memory.injection import (
    InjectionMode,
    InjectionPolicy,
    InjectionResult,
    TokenCounter,
    rank_memories,
    select_memories,
)
from engine.memory.jobs import JobPolicy, JobState, JobStatus, JobType
from engine.memory.lineage import LineageSegment, Viewpoint, visible_records
from engine.memory.maintenance import ExpiryPolicy, plan_decay, plan_expiry
from engine.memory.plan import Diagnostic, LifecycleChange, MutationPlan, committed_event
from engine.memory.ports import MemoryQuery, MemoryRepository
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    Provenance,
    RelationKind,
    SequentialIds,
)
from engine.memory.sanitize import neutralize, quote_for_injection
from engine.memory.scoping import JobScope, viewpoint_for
from engine.memory.search import SearchHit, search_memories
from engine.memory.service import MemoryService, MemorySettings, MemoryTurnOutcome
from engine.memory.summarisers import offline_summariser, summariser_for
from engine.memory.worker import ensure_job, recover_jobs, run_job_once

__all__ = [
    "DEFAULT_SUMMARY_TAGS",
    "AgentContext",
    "AgentLimits",
    "AgentTurn",
    "CompactionPolicy",
    "CompactionRequest",
    "CompactionTask",
    "CompactionTrigger",
    "DecayPolicy",
    "Diagnostic",
    "ExpiryPolicy",
    "ExtractedItem",
    "ExtractionResult",
    "InjectionMode",
    "InjectionPolicy",
    "InjectionResult",
    "JobPolicy",
    "JobScope",
    "JobState",
    "JobStatus",
    "JobType",
    "Lifecycle",
    "LifecycleChange",
    "LineageSegment",
    "MemoryKind",
    "MemoryQuery",
    "MemoryRecord",
    "MemoryRelation",
    "MemoryRepository",
    "MemoryScope",
    "MemoryService",
    "MemorySettings",
    "MemorySource",
    "MemoryTurnOutcome",
    "MutationPlan",
    "Provenance",
    "RelationKind",
    "SearchHit",
    "SequentialIds",
    "Summariser",
    "TokenCounter",
    "ValidatedOps",
    "Viewpoint",
    "build_agent_context",
    "build_agent_messages",
    "build_agent_request",
    "build_compaction_request",
    "committed_event",
    "decay_factor",
    "ensure_job",
    "extract_memory_tags",
    "neutralize",
    "offline_summariser",
    "plan_agent_turn",
    "plan_compaction",
    "plan_decay",
    "plan_expiry",
    "plan_forget",
    "plan_tag_summaries",
    "quote_for_injection",
    "rank_memories",
    "recover_jobs",
    "resolve_key_conflicts",
    "run_compaction",
    "run_job_once",
    "search_memories",
    "select_memories",
    "summariser_for",
    "validate_agent_ops",
    "viewpoint_for",
    "visible_records",
]
