"""Prompt assembly: from a session's assets and chat to the Prompt IR.

:func:`assemble` runs the shared preparation (card, persona, Author's Note, world info), asks
the mode's planner for the layout (SillyTavern's for ``compat_*``, the prompt graph for
``native``), then fills the budget: fixed prompts first, then the chat history from the newest
message back (with the in-chat injections) until the budget is full, then whole example blocks
while they fit. The history is read lazily, so only the part that fits is ever loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from engine.formats.preset import NAMES_COMPLETION, NAMES_CONTENT, NAMES_DEFAULT
from engine.formats.regex_scripts import RegexScript
from engine.prompt.budget import REPLY_PRIMING_TOKENS, Budget, EstimateCounter, TokenCounter
from engine.prompt.compat import plan_compat
from engine.prompt.examples import split_example_block
from engine.prompt.history import sanitize_name
from engine.prompt.inchat import build_injections, section
from engine.prompt.inputs import (
    GAME_MASTER,
    PLAYER,
    AssemblyInput,
    HistoryLine,
    MacroRenderer,
    PromptRegex,
    RawMacros,
    no_regex,
)
from engine.prompt.ir import BudgetReport, IRMessage, PromptIR
from engine.prompt.native import PromptGraph, plan_native
from engine.prompt.plan import Plan
from engine.prompt.prepare import Prepared, prepare
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.regex_port import ScriptRegex
from engine.prompt.wi_output import WorldInfoResult
from engine.prompt.wi_timed import TimedState

Pricer = Callable[[IRMessage], IRMessage]
# Squashing never merges these utility messages into their neighbours.
UNSQUASHABLE = ("newMainChat", "newChat", "groupNudge")


@dataclass(frozen=True, slots=True, kw_only=True)
class AssemblyResult:
    """The prompt, the world info activations behind it, and the timed-effect state the caller
    persists for the branch (unchanged on a dry run)."""

    ir: PromptIR
    world_info: WorldInfoResult
    timed_state: TimedState


def assemble(
    inp: AssemblyInput,
    *,
    macros: MacroRenderer | None = None,
    regex: PromptRegex = no_regex,
    scripts: Sequence[RegexScript] | None = None,
    tokens: TokenCounter | None = None,
    graph: PromptGraph | None = None,
    regex_budget: RegexBudget | None = None,
) -> AssemblyResult:
    """Assemble the prompt for one generation. ``macros`` expands macros (raw text when
    ``None``), ``regex`` runs the prompt-channel regex scripts, ``tokens`` counts tokens (a
    length estimate when ``None``), ``graph`` is the native prompt graph (built from the preset
    when ``None``).

    ``scripts`` (global, preset, then character) is the simpler way to give the regex scripts:
    they then run through a :class:`~engine.prompt.regex_port.ScriptRegex` whose macros
    ({{match}}-style replacements, trim strings, ``substituteRegex`` find patterns) are
    expanded by ``macros``, and their warnings join the prompt's. It replaces ``regex``.

    ``regex_budget`` is the turn's total for regex work, shared by those scripts and the world
    info regex keys (a fresh :class:`~engine.prompt.regex_budget.RegexBudget` when ``None``, so
    every assembly is bounded); when it ran out, its one warning joins the prompt's. A caller
    passing its own ``regex`` gives it the same budget."""
    renderer = macros or RawMacros()
    budget = regex_budget if regex_budget is not None else RegexBudget()
    script_regex = ScriptRegex(scripts, renderer, budget=budget) if scripts is not None else None
    counter = tokens or EstimateCounter()
    prep = prepare(inp, renderer, script_regex or regex, counter, regex_budget=budget)
    plan = plan_native(prep, graph) if inp.mode == "native" else plan_compat(prep)
    result = _fill(prep, plan)
    extra = tuple(script_regex.messages) if script_regex is not None else ()
    exhausted = budget.warning()
    if exhausted is not None:
        extra += (exhausted,)
    if extra:
        result = replace(result, ir=replace(result.ir, warnings=result.ir.warnings + extra))
    return result


def _fill(prep: Prepared, plan: Plan) -> AssemblyResult:
    budget = Budget(prep.counter, prep.available)

    def priced(message: IRMessage) -> IRMessage:
        return replace(message, tokens=budget.cost(message.role, message.content, message.name))

    for slot in plan.slots:
        slot.messages = [priced(m) for m in slot.messages]
        for m in slot.messages:
            budget.spend(m.tokens)
    plan.controls = [priced(m) for m in plan.controls]
    for m in plan.controls:
        budget.spend(m.tokens)
    fixed = budget.used
    if fixed > budget.available:
        prep.warnings.append(
            f"mandatory prompts take {fixed} tokens, more than the {budget.available} available"
        )
    has_history = plan.index_of("chatHistory") is not None
    has_examples = plan.index_of("dialogueExamples") is not None
    history: list[IRMessage] = []
    examples: list[IRMessage] = []
    stats: dict[str, int] = {}
    if prep.inp.pin_examples and has_examples:
        examples = _examples(prep, budget, priced, stats)
    if has_history:
        history = _history(prep, plan, budget, priced, stats)
    if not prep.inp.pin_examples and has_examples:
        examples = _examples(prep, budget, priced, stats)
    messages: list[IRMessage] = []
    for slot in plan.slots:
        if slot.kind == "history":
            messages.extend(history)
        elif slot.kind == "examples":
            messages.extend(examples)
        else:
            messages.extend(slot.messages)
    messages.extend(plan.controls)
    messages = [m for m in messages if m.content]
    if prep.inp.preset.squash_system_messages:
        messages = squash(messages)
    prefill = _prefill_text(prep)
    if prep.inp.use_prefill and prefill:
        messages.append(priced(IRMessage(role="assistant", content=prefill, identifier="bias")))
    wi = prep.world_info
    report = BudgetReport(
        max_context=prep.max_context,
        response_tokens=prep.response_tokens,
        priming_tokens=REPLY_PRIMING_TOKENS,
        available=prep.available,
        fixed_tokens=fixed,
        history_tokens=stats.get("history_tokens", 0),
        history_messages=stats.get("history_messages", 0),
        history_pulled=prep.cursor.pulled,
        history_truncated=bool(stats.get("history_truncated", 0)),
        injection_messages=stats.get("injections", 0),
        example_tokens=stats.get("example_tokens", 0),
        example_blocks=stats.get("example_blocks", 0),
        example_blocks_total=len(prep.example_blocks),
        world_info_budget=wi.budget,
        world_info_tokens=wi.used_tokens,
        total_tokens=sum(m.tokens for m in messages),
    )
    ir = PromptIR(
        mode=prep.inp.mode,
        messages=tuple(messages),
        budget=report,
        warnings=tuple(prep.warnings),
        prefill=prefill,
    )
    return AssemblyResult(ir=ir, world_info=wi, timed_state=wi.timed_state)


def _prefill_text(prep: Prepared) -> str:
    preset = prep.inp.preset
    raw = (
        preset.assistant_impersonation
        if prep.inp.generation_type == "impersonate"
        else preset.assistant_prefill
    )
    return prep.render(raw, "preset.assistant_prefill", origin=GAME_MASTER).rstrip()


def _history_message(prep: Prepared, line: HistoryLine, index: int) -> IRMessage:
    inp = prep.inp
    mode = inp.preset.names_behavior
    role = line.chat_role
    narrator = role == "system"
    ref = "input" if line.floor is None else str(line.floor)
    # Chat lines are typed by players (or written by a model players steer).
    text = prep.render(line.text, f"history.{ref}", origin=PLAYER)
    name: str | None = None
    other = line.name != inp.user_name
    prefixed = (mode == NAMES_CONTENT and bool(line.name)) or (
        mode == NAMES_DEFAULT and other and (inp.is_group or line.force_avatar)
    )
    if prefixed and not narrator:
        text = f"{line.name}: {text}"
    elif mode == NAMES_COMPLETION and line.name:
        name = sanitize_name(line.name)
    return IRMessage(
        role=role,
        content=text,
        name=name,
        sections=(section("history", ref, line.text),),
        identifier=f"chatHistory-{index}",
    )


def _utility(prep: Prepared, key: str, raw: str, identifier: str, **env: object) -> IRMessage:
    text = prep.render(raw, f"preset.{key}", env or None, origin=GAME_MASTER)
    return IRMessage(
        role="system",
        content=text,
        sections=(section("utility", key, text),),
        identifier=identifier,
    )


def _history(
    prep: Prepared, plan: Plan, budget: Budget, priced: Pricer, stats: dict[str, int]
) -> list[IRMessage]:
    inp = prep.inp
    preset = inp.preset
    new_chat_raw = preset.new_group_chat_prompt if inp.is_group else preset.new_chat_prompt
    new_chat = priced(_utility(prep, "new_chat_prompt", new_chat_raw, "newMainChat"))
    budget.spend(new_chat.tokens)
    tail: list[IRMessage] = []
    if inp.is_group and inp.generation_type != "impersonate" and preset.group_nudge_prompt:
        tail.append(
            priced(_utility(prep, "group_nudge_prompt", preset.group_nudge_prompt, "groupNudge"))
        )
    continued = _continued(prep, priced)
    if continued is not None and preset.continue_prefill:
        plan.controls.append(continued)
        budget.spend(continued.tokens)
    elif continued is not None:
        nudge = _utility(
            prep,
            "continue_nudge_prompt",
            preset.continue_nudge_prompt,
            "continueNudge",
            lastChatMessage=continued.content,
        )
        tail.extend([continued, priced(nudge)])
    for message in tail:
        budget.spend(message.tokens)
    injections = build_injections(plan.in_chat, prep.extensions)
    newest_first: list[IRMessage] = []
    truncated = False

    def take(message: IRMessage) -> bool:
        nonlocal truncated
        if not message.content:
            return True
        if not budget.can_afford(message.tokens):
            truncated = True
            return False
        budget.spend(message.tokens)
        newest_first.append(message)
        return True

    newest = prep.cursor.get(0)
    if newest is not None and not newest.is_user and preset.send_if_empty:
        text = prep.render(preset.send_if_empty, "preset.send_if_empty", origin=GAME_MASTER)
        take(priced(IRMessage(role="user", content=text, identifier="sendIfEmpty")))
    index = 0
    injected = 0
    going = True
    while going:
        for message in reversed(injections.get(index, [])):
            if not take(priced(message)):
                going = False
                break
            injected += 1
        if not going:
            break
        line = prep.cursor.get(index)
        if line is None:
            break
        skip = index == 0 and continued is not None  # the continued message moves to the end
        if not skip and not take(priced(_history_message(prep, line, index))):
            break
        index += 1
    # Injections deeper than the chat go before its oldest message, deepest first.
    leftover = [
        m for d in sorted(d for d in injections if d > index) for m in reversed(injections[d])
    ]
    for message in leftover if going and not truncated else []:
        if not take(priced(message)):
            break
        injected += 1
    chronological = list(reversed(newest_first))
    stats["history_tokens"] = sum(m.tokens for m in chronological)
    stats["history_messages"] = len(chronological) - injected
    stats["injections"] = injected
    stats["history_truncated"] = int(truncated)
    return ([new_chat] if new_chat.content else []) + chronological + tail


def _continued(prep: Prepared, priced: Pricer) -> IRMessage | None:
    """For ``continue``: the newest message, taken out of the history. With the preset's
    ``continue_prefill`` it becomes the very last message (a control prompt); otherwise it
    follows the history with the continue nudge."""
    if prep.inp.generation_type != "continue":
        return None
    line = prep.cursor.get(0)
    if line is None:
        return None
    return priced(replace(_history_message(prep, line, 0), identifier="continuePrefill"))


def _examples(
    prep: Prepared, budget: Budget, priced: Pricer, stats: dict[str, int]
) -> list[IRMessage]:
    inp = prep.inp
    header_text = prep.render(
        inp.preset.new_example_chat_prompt, "preset.new_example_chat_prompt", origin=GAME_MASTER
    )
    out: list[IRMessage] = []
    blocks = 0
    for block in prep.example_blocks:
        turns = split_example_block(
            block.text,
            user_name=inp.user_name,
            char_name=inp.character.name,
            is_group=inp.is_group,
            members=inp.group.names if inp.group is not None else (),
        )
        messages = [
            priced(
                IRMessage(
                    role="system",
                    content=header_text,
                    sections=(section("utility", "new_example_chat_prompt", header_text),),
                    identifier="newChat",
                )
            )
        ]
        messages += [
            priced(
                IRMessage(
                    role="system",
                    content=t.content,
                    name=t.name,
                    sections=block.sections,
                    identifier="dialogueExamples",
                )
            )
            for t in turns
        ]
        cost = sum(m.tokens for m in messages)
        if not budget.can_afford(cost):
            break
        budget.spend(cost)
        out.extend(messages)
        blocks += 1
    stats["example_tokens"] = sum(m.tokens for m in out)
    stats["example_blocks"] = blocks
    return out


def squash(messages: list[IRMessage]) -> list[IRMessage]:
    """Merge consecutive unnamed system messages (joined by a newline), except the utility
    messages that mark chat starts."""
    out: list[IRMessage] = []
    for message in messages:
        prev = out[-1] if out else None
        mergeable = (
            message.role == "system"
            and not message.name
            and message.identifier not in UNSQUASHABLE
        )
        if (
            mergeable
            and prev is not None
            and prev.role == "system"
            and not prev.name
            and prev.identifier not in UNSQUASHABLE
        ):
            out[-1] = replace(
                prev,
                content=f"{prev.content}\n{message.content}",
                sections=prev.sections + message.sections,
                tokens=prev.tokens + message.tokens,
            )
        else:
            out.append(message)
    return out
