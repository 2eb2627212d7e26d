"""One generation: steps 2 to 8 of a turn (DESIGN.md section 6), outside any transaction.

:class:`Generation` takes what :mod:`engine.turns.context` read, runs the director (optional),
assembles the prompt (:mod:`engine.turns.turn_prompt`) with macros in the ``assemble`` phase
in a worker thread, streams the narrator's reply
(calling tools between rounds), extracts summary tags *before* the regex scripts run, asks the
verifier (optional), and returns the page to commit: its text, its staged variable writes
(macro writes and sandboxed tool writes) and its meta (tool records, timed state, usage...).
Nothing here touches storage; a failure raises and the caller fails the page.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from engine.errors import EmptyReplyError
from engine.formats.regex_scripts import RegexScript
from engine.macros import Mutation as MacroMutation
from engine.memory import extract_memory_tags
from engine.ports import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    ChatResult,
    Event,
    EventSink,
    ToolCall,
    Usage,
)
from engine.prompt.assemble import AssemblyResult
from engine.prompt.inputs import (
    PLACEMENT_AI_OUTPUT,
    InstanceInput,
)
from engine.prompt.itemize import itemization_of
from engine.prompt.macro_port import EngineMacros
from engine.prompt.regex_budget import EXHAUSTED, RegexBudget
from engine.prompt.regex_run import Channel, RegexRun, apply_scripts
from engine.turns.api import STOP_TURN, OnText
from engine.turns.context import TIMED_STATE_META, TurnRead
from engine.turns.profiles import (
    LLMProfile,
    Slot,
    merge_sampling,
)
from engine.turns.tools import ToolBox, ToolRecord
from engine.turns.turn_prompt import TurnOptions, assemble_turn, staged_from_macros
from engine.variables.values import Mutation

ModelFor = Callable[[LLMProfile], ChatModel]
MAX_INSTANCE_CHARS: Final = 4_000
"""Director or verifier text kept at most."""
MAX_META_WARNINGS: Final = 50
"""Most prompt and regex warnings a page's meta keeps."""
MAX_REPLY_CHARS: Final = 500_000
"""A narrator reply longer than this is cut there, with a warning, and its stream closed: about
125k tokens, more than a model writes in one reply, so only a runaway or hostile endpoint hits
it, and its megabytes are never stored."""
DIRECTOR_PROMPT: Final = (
    "You direct a role-play. In one or two sentences, tell the narrator what should happen "
    "next. Do not write the story yourself."
)
VERIFIER_PROMPT: Final = (
    'Check the reply against the character. Answer only JSON: {"verdict": "pass" | "fail", '
    '"notes": "..."}.'
)


@dataclass(slots=True, kw_only=True)
class Generated:
    """A page ready to commit."""

    raw: str
    display: str
    writes: list[Mutation]
    meta: dict[str, Any]
    records: list[ToolRecord] = field(default_factory=list)
    itemization: dict[str, Any] | None = None
    """How the prompt was assembled (:mod:`engine.prompt.itemize`), stored with the page."""


class Generation:
    """Runs one generation; see the module docstring."""

    def __init__(
        self,
        read: TurnRead,
        options: TurnOptions,
        *,
        model_for: ModelFor,
        tools: ToolBox,
        events: EventSink,
        on_text: OnText | None,
        where: Mapping[str, Any],
        regex_budget: RegexBudget | None = None,
    ) -> None:
        self.read = read
        # One budget for all of this turn's regex work (the input's store run may have drawn
        # on it already), in the assembly's worker thread and in post-processing alike.
        self.regex_budget = regex_budget if regex_budget is not None else RegexBudget()
        self.warnings: list[str] = []
        self.options = options
        self.model_for = model_for
        self.tools = tools
        self.events = events
        self.on_text = on_text
        self.where = dict(where)
        self.meta: dict[str, Any] = {}
        self.usage: dict[str, dict[str, int]] = {}

    def emit(self, name: str, **payload: Any) -> None:
        """An event about this generation (its floor and page are always included)."""
        self.events.emit(Event(name=name, payload={**self.where, **payload}))

    # ------------------------------------------------------------------ the run

    async def run(self) -> Generated:
        """Steps 2..8; raises on any failure."""
        instances: list[InstanceInput] = []
        if "director" in self.options.stages:
            text = await self._instance("director", DIRECTOR_PROMPT, self._recent_text())
            if text:
                instances.append(InstanceInput(slot="director", text=text))
                self.meta["director"] = text
        assembled, macros = await self._assemble_off_loop(instances)
        # The page's macro writes open its staged log: the model's tool reads see them, and
        # its tool writes count against the same per-page limit.
        self.tools.env.staged[:0] = staged_from_macros(
            [d.item for d in macros.mutations if isinstance(d.item, MacroMutation)]
        )
        self.warnings.extend(w for w in assembled.ir.warnings if not w.startswith(EXHAUSTED))
        reply = await self._narrate(assembled)
        itemization = itemization_of(assembled.ir, assembled.world_info)
        raw_full = self.options.previous_text + reply
        extracted = extract_memory_tags(raw_full, role="assistant")
        if extracted.items and self.options.keep_summaries:
            summaries = [{"tag": i.tag, "text": i.text} for i in extracted.items]
            self.meta["summaries"] = summaries
            self.emit("memory.extracted", items=summaries, source="summary_tags")
        stored, display = await self._post_regex(extracted.visible_text)
        if "verifier" in self.options.stages:
            verdict = await self._instance("verifier", VERIFIER_PROMPT, stored)
            self.meta["verifier"] = _verdict(verdict)
        if "memory_agent" in self.options.stages:
            self.meta["memory_agent"] = (
                "after commit" if self.options.memory_after_commit else "no memory service"
            )
        writes = list(self.tools.env.staged)
        self.meta[TIMED_STATE_META] = assembled.timed_state.to_json()
        self.meta["tool_records"] = [r.to_json() for r in self.tools.records]
        self.meta["usage"] = self.usage
        self.meta["profiles"] = {
            slot: {"profile": r.profile.id, "model": r.profile.model, "source": r.source}
            for slot, r in self.options.snapshot.by_slot.items()
        }
        if macros.warnings:
            self.meta["macro_warnings"] = [w.to_json() for w in macros.warnings[:50]]
        exhausted = self.regex_budget.warning()  # once, counting the whole turn's skips
        if exhausted is not None:
            self.warnings.append(exhausted)
        if self.warnings:
            self.meta["warnings"] = list(dict.fromkeys(self.warnings))[:MAX_META_WARNINGS]
        return Generated(
            raw=stored,
            display=display,
            writes=writes,
            meta=self.meta,
            records=list(self.tools.records),
            itemization=itemization,
        )

    # ------------------------------------------------------------------ assembly

    async def _assemble_off_loop(
        self, instances: list[InstanceInput]
    ) -> tuple[AssemblyResult, EngineMacros]:
        """Assemble in a worker thread, so a costly prompt (regex scripts and keys, macros,
        token counts) never holds the event loop and other sessions' turns go on meanwhile.

        The thread touches this turn's own values (macro context, variable state, history
        window), the parsed assets shared between turns (frozen values, only read), and
        caches that take a lock (parsed templates, token counts) or whose races only repeat
        pure work (compiled patterns, ``{{if}}`` splits); events are emitted here, on the
        loop, once it returns. A cancelled turn stops waiting at once; the thread then ends within
        the assembly's own bounds (the regex budget, macro limits).
        """
        result, macros = await asyncio.to_thread(
            assemble_turn, self.read, self.options, instances, self.regex_budget
        )
        if result.world_info.activated:
            self.emit(
                "worldbook.matched",
                entries=[e.to_json() for e in result.world_info.activated],
            )
        return result, macros

    async def assemble_only(self) -> tuple[AssemblyResult, EngineMacros]:
        """Only the prompt (a dry run): no model call, nothing staged for a commit; off the
        event loop like a turn's assembly."""
        return await self._assemble_off_loop([])

    async def draft(self) -> str:
        """Assemble and stream the narrator's text only, for a draft that is never committed
        (impersonate): no director or verifier, no summary kept, no regex post-processing of
        the reply (the text is the user's to change before it is sent, and stored then)."""
        assembled, _ = await self._assemble_off_loop([])
        reply = await self._narrate(assembled)
        return extract_memory_tags(reply, role="assistant").visible_text.strip()

    # ------------------------------------------------------------------ the narrator

    async def _narrate(self, assembled: AssemblyResult) -> str:
        profile = self.options.snapshot.profile("narrator")
        model = self.model_for(profile)
        preset = self.read.assets.preset
        sampling = merge_sampling(
            {"temperature": preset.sampling.temperature, "top_p": preset.sampling.top_p},
            profile.sampling,
        )
        messages: list[ChatMessage] = [
            ChatMessage(role=m.role, content=m.content, name=m.name) for m in assembled.ir.messages
        ]
        policy = self.tools.policy
        self.emit(
            "generation.started",
            slot="narrator",
            model=profile.model,
            profile=profile.id,
            prompt_tokens=assembled.ir.budget.total_tokens,
            budget=assembled.ir.budget.available,
        )
        step = 0
        while True:
            offer = self.tools.specs("narrator") if step < policy.max_steps else ()
            request = ChatRequest(
                model=profile.model,
                messages=tuple(messages),
                max_tokens=profile.max_tokens or preset.openai_max_tokens,
                sampling=sampling,
                tools=offer,
                timeout_s=profile.timeout_s,
                metadata=self._metadata("narrator"),
            )
            result = await self._stream(model, request)
            self._add_usage("narrator", result.usage)
            # A tool call the session did not offer is never run: only the text counts then.
            if not result.tool_calls or not offer:
                if result.tool_calls:
                    self.warnings.append(
                        "the model called tools it was not offered: "
                        + ", ".join(sorted({c.name for c in result.tool_calls}))
                    )
                if not extract_memory_tags(result.text, role="assistant").visible_text.strip():
                    # Nothing to show: the page fails with a message instead of a blank reply.
                    raise EmptyReplyError(filtered=result.finish_reason == "content_filter")
                self.emit(
                    "generation.completed",
                    slot="narrator",
                    text=result.text,
                    usage=self.usage.get("narrator", {}),
                )
                return result.text
            step += 1
            messages.append(
                ChatMessage(role="assistant", content=result.text, tool_calls=result.tool_calls)
            )
            for call in result.tool_calls:
                record = await self._tool(call, step)
                messages.append(
                    ChatMessage(role="tool", content=record.result, tool_call_id=call.id)
                )

    async def _tool(self, call: ToolCall, step: int) -> ToolRecord:
        self.emit("tool.call_started", slot="narrator", tool=call.name, step=step)
        record = await self.tools.call("narrator", call, step=step)
        name = {"ok": "tool.call_completed", "denied": "tool.call_denied"}.get(
            record.status, "tool.call_failed"
        )
        self.emit(name, slot="narrator", tool=call.name, step=step, result=record.result)
        return record

    async def _stream(self, model: ChatModel, request: ChatRequest) -> ChatResult:
        stream = model.stream(request)
        text = ""
        prefix = self.options.previous_text
        cut = False
        try:
            async for chunk in stream:
                if not chunk.text:
                    continue
                piece = chunk.text[: MAX_REPLY_CHARS - len(text)]
                cut = len(piece) < len(chunk.text)
                text += piece
                if piece:
                    self.emit("generation.chunk", slot="narrator", text=piece)
                if self.on_text is not None and piece:
                    shown = extract_memory_tags(prefix + text, role="assistant").visible_text
                    await self.on_text(shown)
                if cut:
                    break
        except asyncio.CancelledError as exc:
            await stream.aclose()
            if not text or STOP_TURN not in exc.args:
                raise
            # The user stopped the reply: keep what they saw as the page's text.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self.meta["stopped"] = True
            return ChatResult(text=text, finish_reason="stopped")
        except BaseException:
            await stream.aclose()
            raise
        if cut:  # a runaway reply: keep its start, never store megabytes
            await stream.aclose()
            self.warnings.append(
                f"the reply was cut at MAX_REPLY_CHARS={MAX_REPLY_CHARS} characters"
            )
            return ChatResult(text=text, finish_reason="length")
        return stream.result

    # ------------------------------------------------------------------ other instances

    async def _instance(self, slot: Slot, instruction: str, content: str) -> str:
        profile = self.options.snapshot.profile(slot)
        model = self.model_for(profile)
        request = ChatRequest(
            model=profile.model,
            messages=(
                ChatMessage(role="system", content=instruction),
                ChatMessage(role="user", content=content or "(the story begins)"),
            ),
            max_tokens=profile.max_tokens or 300,
            sampling=dict(profile.sampling),
            timeout_s=profile.timeout_s,
            metadata=self._metadata(slot),
        )
        self.emit("generation.started", slot=slot, model=profile.model, profile=profile.id)
        result = await model.complete(request)
        self._add_usage(slot, result.usage)
        self.emit("generation.completed", slot=slot, text=result.text)
        return result.text.strip()[:MAX_INSTANCE_CHARS]

    def _recent_text(self) -> str:
        lines = [f"{line.name}: {line.text}" for line in self.read.history[-6:]]
        if self.read.user_input:
            lines.append(f"{self.read.user_name}: {self.read.user_input}")
        return "\n".join(lines)

    def _metadata(self, slot: str) -> dict[str, str]:
        return {
            "character": self.read.assets.character.name,
            "user": self.read.user_name,
            "slot": slot,
            # Which page of the floor this is, so a provider that does not read the prompt
            # (the offline one) still answers a regenerate differently.
            "attempt": str(self.where.get("page", 1)),
        }

    def _add_usage(self, slot: str, usage: Usage) -> None:
        total = self.usage.setdefault(slot, {"prompt_tokens": 0, "completion_tokens": 0})
        total["prompt_tokens"] += usage.prompt_tokens
        total["completion_tokens"] += usage.completion_tokens

    async def _post_regex(self, text: str) -> tuple[str, str]:
        """The reply's store and display texts: the AI-output scripts of both channels, run in
        a worker thread on this turn's regex budget; events are emitted back on the loop."""
        if not self.read.assets.scripts:
            return text, text
        stored, display = await asyncio.to_thread(self._post_regex_runs, text)
        for before, run, channel in ((text, stored, "store"), (stored.text, display, "display")):
            self.warnings.extend(w.message for w in run.warnings)
            if run.text != before:
                self.emit("regex.applied", channel=channel, before=before, after=run.text)
        return stored.text, display.text

    def _post_regex_runs(self, text: str) -> tuple[RegexRun, RegexRun]:
        stored = self._regex(text, "store")
        return stored, self._regex(stored.text, "display")

    def _regex(self, text: str, channel: Channel) -> RegexRun:
        scripts: Sequence[RegexScript] = self.read.assets.scripts
        return apply_scripts(
            text,
            scripts,
            placement=PLACEMENT_AI_OUTPUT,
            channel=channel,
            budget=self.regex_budget,
        )


def _verdict(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {"verdict": "unknown", "notes": text[:MAX_INSTANCE_CHARS]}
    if not isinstance(data, dict):
        return {"verdict": "unknown", "notes": text[:MAX_INSTANCE_CHARS]}
    return {"verdict": str(data.get("verdict", "unknown")), "notes": str(data.get("notes", ""))}
