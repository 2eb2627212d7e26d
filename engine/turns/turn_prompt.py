"""The prompt of one turn: the session's choices for it (:class:`TurnOptions`), the macro
context and assembly input built from what the turn read, the assembly itself
(:func:`assemble_turn`), and the page writes its macros stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.macros import Mutation as MacroMutation
from engine.macros import Phase
from engine.prompt.assemble import AssemblyResult, assemble
from engine.prompt.inputs import AssemblyInput, InstanceInput, MemoryItem, Persona
from engine.prompt.macro_port import EngineMacros, macro_context, player_access
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.tokens import counter_for_model
from engine.turns.context import TurnRead, WindowHistory
from engine.turns.notes import session_note
from engine.turns.profiles import ProfileSnapshot, Stage
from engine.variables.values import Mutation, Scope

__all__ = ["TurnOptions", "assemble_turn", "staged_from_macros"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOptions:
    """The session's choices for this turn."""

    mode: str  # respond | regenerate | continue | impersonate (a draft, never committed)
    prompt_mode: str
    macro_mode: str
    stages: tuple[Stage, ...]
    snapshot: ProfileSnapshot
    previous_text: str = ""
    seed: int | str = 0
    phase: Phase = "assemble"
    memory: tuple[MemoryItem, ...] = ()
    memory_after_commit: bool = False
    keep_summaries: bool = True
    """Whether summary tags are recorded for memory (the session's memory option); they are
    stripped from the reply either way."""
    persona: str = ""
    """The speaking player's persona description (``{{persona}}`` and the persona prompt)."""


def staged_from_macros(mutations: Sequence[MacroMutation]) -> list[Mutation]:
    """Macro writes as staged page writes: SillyTavern local writes land in the branch scope,
    global writes in the realm's global scope (DESIGN.md section 3)."""
    out: list[Mutation] = []
    for m in mutations:
        scope: Scope = "global" if m.scope == "global" else "branch"
        if m.kind == "delete":
            out.append(Mutation.delete(scope, m.key))
        else:
            out.append(Mutation.set(scope, m.key, m.value))
    return out


def assemble_turn(
    read: TurnRead,
    options: TurnOptions,
    instances: list[InstanceInput],
    regex_budget: RegexBudget,
) -> tuple[AssemblyResult, EngineMacros]:
    """Build the turn's macro context and assembly input from what it read, and assemble the
    prompt (pure and synchronous: a turn runs this in a worker thread)."""
    assets = read.assets
    local = read.state.local()
    persona = Persona(description=options.persona)
    # Every turn (respond, regenerate, continue, dry run) reads the note from the session
    # it read, so what a dry run shows is what the next reply gets.
    note = session_note(read.session.settings)
    context = macro_context(
        assets.character,
        user_name=read.user_name,
        persona=persona,
        recent=read.history,
        user_input=read.user_input or "",
        local=local,
        global_vars=dict(read.state.global_),
        seed=options.seed,
        chat_id=f"{read.session.platform}:{read.session.key}",
        group=assets.group,
    )
    context.prompt_mode = options.prompt_mode
    context.authors_note = note.text if note is not None else ""
    macros = EngineMacros(
        context,
        phase=options.phase,
        player_access=player_access(options.macro_mode),
        trace=options.phase == "dry_run",
    )
    generation_type = {
        "regenerate": "regenerate",
        "continue": "continue",
        "impersonate": "impersonate",
    }.get(options.mode, "normal")
    narrator = options.snapshot.profile("narrator")
    mode = options.prompt_mode
    inp = AssemblyInput(
        preset=assets.preset,
        character=assets.character,
        history=WindowHistory(read.history, read.total_messages),
        user_name=read.user_name,
        user_input=read.user_input,
        persona=persona,
        author_note=note,
        books=assets.books,
        timed_state=read.timed_state,
        mode=mode if mode in ("compat_strict", "compat_plus", "native") else "compat_strict",  # type: ignore[arg-type]
        generation_type=generation_type,
        seed=options.seed,
        instances=instances,
        memory=options.memory,
        group=assets.group,
    )
    # The scripts run with the assembler's macro renderer, so {{char}} and the like expand
    # in replacements, trim strings and substituteRegex patterns as in SillyTavern.
    result = assemble(
        inp,
        macros=macros,
        scripts=assets.scripts,
        tokens=counter_for_model(narrator.model),
        regex_budget=regex_budget,
    )
    return result, macros
