"""Build a :class:`MacroContext` (and call options) from a conformance ``env`` object.

The keys are those of the conformance vectors: names, initial variable stores, dynamic
macros, card fields, chat, chat id and metadata, model, input, extensions, outlets,
SillyTavern ``power_user`` settings, the frozen clock (``now``, ``tz``), ``seed``, ``phase``
and ``limits``. Unknown keys are ignored; values of the wrong type fall back to defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine.macros.context import CardFields, ChatMessage, MacroContext
from engine.macros.diagnostics import PHASES, Phase
from engine.macros.limits import Limits
from engine.macros.timefmt import parse_date


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvOptions:
    """The per-call options an env carries besides the context."""

    phase: Phase = "assemble"
    limits: Limits | None = None
    original: str | None = None


def _text(env: dict[str, Any], key: str, default: str = "") -> str:
    value = env.get(key, default)
    return value if isinstance(value, str) else default


def _dict(env: dict[str, Any], key: str) -> dict[str, Any]:
    value = env.get(key)
    return dict(value) if isinstance(value, dict) else {}


def _message(raw: Any) -> ChatMessage:
    if not isinstance(raw, dict):
        return ChatMessage(mes=str(raw))
    swipes = raw.get("swipes")
    swipe_id = raw.get("swipe_id")
    send_date = raw.get("send_date")
    return ChatMessage(
        mes=str(raw.get("mes", "")),
        is_user=bool(raw.get("is_user", False)),
        is_system=bool(raw.get("is_system", False)),
        name=str(raw.get("name", "")),
        swipes=[str(s) for s in swipes] if isinstance(swipes, list) else None,
        swipe_id=swipe_id
        if isinstance(swipe_id, int) and not isinstance(swipe_id, bool)
        else None,
        send_date=send_date if isinstance(send_date, str) else None,
    )


def _limits(raw: Any) -> Limits | None:
    if not isinstance(raw, dict):
        return None
    base = Limits()
    values = {}
    for name in ("max_depth", "max_steps", "max_output_chars", "max_mutations"):
        value = raw.get(name, getattr(base, name))
        values[name] = (
            value
            if isinstance(value, int) and not isinstance(value, bool)
            else getattr(base, name)
        )
    return Limits(**values)


def context_from_env(env: dict[str, Any]) -> tuple[MacroContext, EnvOptions]:
    """A context and call options from a conformance ``env`` object."""
    power_user = _dict(env, "power_user")
    extensions_raw = _dict(env, "extensions")
    extensions = {
        str(name): bool(value.get("enabled", False)) if isinstance(value, dict) else bool(value)
        for name, value in extensions_raw.items()
    }
    greetings = env.get("alternateGreetings")
    now = parse_date(env["now"], UTC) if isinstance(env.get("now"), str) else None
    seed = env.get("seed")
    group = env.get("group")
    metadata = _dict(env, "chatMetadata")
    context = MacroContext(
        user=_text(env, "user", "User"),
        char=_text(env, "char", "Character"),
        group=group if isinstance(group, str) else None,
        card=CardFields(
            description=_text(env, "description"),
            personality=_text(env, "personality"),
            scenario=_text(env, "scenario"),
            persona=_text(env, "persona"),
            mes_examples=_text(env, "mesExamples") or _text(env, "mesExamplesRaw"),
            first_message=_text(env, "firstMessage"),
            alternate_greetings=[str(g) for g in greetings] if isinstance(greetings, list) else [],
            char_version=_text(env, "charVersion"),
            creator_notes=_text(env, "creatorNotes"),
            char_prompt=_text(env, "charPrompt"),
            char_instruction=_text(env, "charInstruction"),
            char_depth_prompt=_text(env, "charDepthPrompt"),
        ),
        chat=[_message(m) for m in env.get("chat", []) or [] if m is not None]
        if isinstance(env.get("chat"), list)
        else [],
        local=_dict(env, "local"),
        global_vars=_dict(env, "global"),
        now=now if isinstance(now, datetime) else None,
        tz=_text(env, "tz", "UTC") or "UTC",
        seed=seed if isinstance(seed, int | str) and not isinstance(seed, bool) else None,
        chat_id=env["chatId"] if isinstance(env.get("chatId"), str) else None,
        chat_metadata=metadata,
        settings=power_user,
        model=_text(env, "model"),
        input=_text(env, "input"),
        extensions=extensions,
        outlets={str(k): str(v) for k, v in _dict(env, "outlets").items()},
        authors_note=_text(env, "authorsNote"),
        char_authors_note=_text(env, "charAuthorsNote"),
        default_authors_note=_text(env, "defaultAuthorsNote"),
        summary=_text(env, "summary"),
        last_generation_type=_text(env, "lastGenerationType"),
        run_kind=_text(env, "runKind"),
        prompt_mode=_text(env, "promptMode", "compat_strict"),
        dynamic_macros={
            str(k): v if isinstance(v, str) else str(v)
            for k, v in _dict(env, "dynamicMacros").items()
        },
    )
    phase = env.get("phase", "assemble")
    original = env.get("original")
    options = EnvOptions(
        phase=phase if phase in PHASES else "assemble",
        limits=_limits(env.get("limits")),
        original=original if isinstance(original, str) else None,
    )
    return context, options


def run_case(case: Any) -> dict[str, Any]:
    """Evaluate one ``{"template", "env"}`` object the way ``macros eval --jsonl`` reports it:
    ``text``, ``local``, ``global``, ``warnings`` (codes), ``warning_details``, ``mutations``
    and ``error`` (``None`` unless the case itself is malformed)."""
    from engine.macros.api import evaluate

    if not isinstance(case, dict):
        return _error("each line must be a JSON object with 'template' and 'env'")
    template = case.get("template")
    if not isinstance(template, str):
        return _error("'template' must be a string")
    env = case.get("env", {})
    if env is None:
        env = {}
    if not isinstance(env, dict):
        return _error("'env' must be an object")
    context, options = context_from_env(env)
    result = evaluate(
        template,
        context,
        phase=options.phase,
        limits=options.limits,
        original=options.original,
    )
    return {
        "text": result.text,
        "local": context.local,
        "global": context.global_vars,
        "warnings": [w.code for w in result.warnings],
        "warning_details": [
            {"code": w.code, "message": w.message, "position": w.position} for w in result.warnings
        ],
        "mutations": [m.as_json() for m in result.mutations],
        "error": None,
    }


def _error(message: str) -> dict[str, Any]:
    return {
        "text": None,
        "local": None,
        "global": None,
        "warnings": [],
        "warning_details": [],
        "mutations": [],
        "error": message,
    }
