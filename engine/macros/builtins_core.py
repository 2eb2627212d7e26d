"""Core built-ins: whitespace, ``trim``, ``if``/``else``, ``reverse``, comments, randomness
(``roll``, ``random``, ``pick``), ``banned``, ``outlet``, ``input``, token budgets and
``original``."""

from __future__ import annotations

import random as _random
import re
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.macros import diagnostics as d
from engine.macros.processing import ELSE_MARKER
from engine.macros.randomness import MAX_DICE, parse_dice, pick_index, string_hash
from engine.macros.registry import (
    ArgSpec,
    MacroArgumentError,
    MacroDef,
    MacroValueMissing,
    Registry,
)

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_SYSTEM_RANDOM = _random.Random()
#: Chat ids repeat on every pick; their hash is memoised.
_chat_id_hash = lru_cache(maxsize=256)(string_hash)
_ESCAPED_COMMA = re.compile(r"(?<!\\),")


def _repeat(env: MacroEnv, unit: str, args: list[str]) -> str:
    count = int(args[0]) if args and args[0].strip() else 1
    if count < 0:
        raise MacroArgumentError(f"count must not be negative, got {count}")
    # Never build more than the output limit allows (the evaluator cuts and warns).
    return unit * min(count, env.limits.max_output_chars + 1)


def _trim(env: MacroEnv, args: list[str]) -> str:
    # Non-scoped: the literal marker, removed (with surrounding newlines) by post-processing.
    return args[-1] if env.call_scoped else "{{trim}}"


def _not_called(env: MacroEnv, args: list[str]) -> str:  # pragma: no cover - if is special
    raise MacroArgumentError("'if' is evaluated by the if-block evaluator")


def random_source(env: MacroEnv) -> _random.Random:
    """Uniform randomness: seeded per context and call when the context has a seed."""
    context = env.context
    if context.seed is None:
        return _SYSTEM_RANDOM
    context.random_counter += 1
    return _random.Random(f"{context.seed}:{context.chat_id or ''}:{context.random_counter}")


def list_items(args: list[str]) -> list[str]:
    """SillyTavern's list reading: one argument is split on ``::`` or on unescaped commas."""
    if len(args) != 1:
        return args
    only = args[0]
    if "::" in only:
        return [item.strip() for item in only.split("::")]
    return [item.replace("\\,", ",").strip() for item in _ESCAPED_COMMA.split(only)]


def _random_pick(env: MacroEnv, args: list[str]) -> str:
    items = list_items(args)
    if not items:
        return ""
    return items[random_source(env).randrange(len(items))]


def _chat_hash(env: MacroEnv) -> int:
    metadata = env.context.chat_metadata
    cached = metadata.get("chat_id_hash")
    if isinstance(cached, int | float) and not isinstance(cached, bool):
        return int(cached)
    source = metadata.get("main_chat")
    if source is None:
        source = env.context.chat_id
    return _chat_id_hash(source) if isinstance(source, str) else 0


def _pick(env: MacroEnv, args: list[str]) -> str:
    items = list_items(args)
    if not items:
        return ""
    template = env.template
    content_hash = template.content_hash() if template is not None else 0
    parts = [str(_chat_hash(env)), str(content_hash), str(env.call_position)]
    reroll = env.context.chat_metadata.get("pick_reroll_seed")
    if reroll:
        parts.append(str(reroll))
    return items[pick_index("-".join(parts), len(items))]


def _roll(env: MacroEnv, args: list[str]) -> str:
    dice = parse_dice(args[0])
    if dice is None or dice[0] > MAX_DICE:
        env.warn(
            d.MACRO_ARG_TYPE_INVALID,
            f"'{args[0]}' is not a dice formula like 2d6+3 (at most {MAX_DICE} dice)",
        )
        return ""
    count, sides, modifier = dice
    rng = random_source(env)
    return str(sum(rng.randint(1, sides) for _ in range(count)) + modifier)


def _banned(env: MacroEnv, args: list[str]) -> str:
    word = args[0]
    if word.startswith('"'):
        word = word[1:]
    if word.endswith('"'):
        word = word[:-1]
    if word:
        env.context.banned_words.append(word)
    return ""


def _original(env: MacroEnv, args: list[str]) -> str:
    if env.original is None:
        raise MacroValueMissing("no original text was supplied")
    if env.original_used:
        return ""
    env.original_used = True
    return env.original


def _setting_int(env: MacroEnv, key: str, default: int) -> int:
    value = env.context.settings.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _max_context(env: MacroEnv, args: list[str]) -> str:
    return str(_setting_int(env, "max_context", 8192))


def _max_response(env: MacroEnv, args: list[str]) -> str:
    return str(_setting_int(env, "max_response", 512))


def _max_prompt(env: MacroEnv, args: list[str]) -> str:
    return str(_setting_int(env, "max_context", 8192) - _setting_int(env, "max_response", 512))


def install(registry: Registry) -> None:
    """Register the core built-ins."""
    count = (ArgSpec(name="count", type="integer", optional=True),)
    defs = [
        MacroDef(name="space", handler=lambda e, a: _repeat(e, " ", a), args=count),
        MacroDef(name="newline", handler=lambda e, a: _repeat(e, "\n", a), args=count),
        MacroDef(name="noop", handler=lambda e, a: ""),
        MacroDef(name="trim", handler=_trim, args=(ArgSpec(name="content", optional=True),)),
        MacroDef(
            name="if",
            handler=_not_called,
            args=(ArgSpec(name="condition"), ArgSpec(name="content")),
            delay_args=True,
        ),
        MacroDef(name="else", handler=lambda e, a: ELSE_MARKER),
        MacroDef(name="input", handler=lambda e, a: e.context.input),
        MacroDef(name="maxPrompt", aliases=("maxPromptTokens",), handler=_max_prompt),
        MacroDef(name="maxContext", aliases=("maxContextTokens",), handler=_max_context),
        MacroDef(name="maxResponse", aliases=("maxResponseTokens",), handler=_max_response),
        MacroDef(name="reverse", handler=lambda e, a: a[0][::-1], args=(ArgSpec(name="value"),)),
        MacroDef(
            name="//",
            aliases=("comment",),
            handler=lambda e, a: "",
            args=(ArgSpec(name="comment"),),
            list_args=(0, None),
            strict=False,
        ),
        MacroDef(name="roll", handler=_roll, args=(ArgSpec(name="formula"),)),
        MacroDef(name="random", handler=_random_pick, list_args=(0, None)),
        MacroDef(name="pick", handler=_pick, list_args=(0, None)),
        MacroDef(name="banned", handler=_banned, args=(ArgSpec(name="word"),), writes=True),
        MacroDef(
            name="outlet",
            handler=lambda e, a: e.context.outlets.get(a[0], "") or "",
            args=(ArgSpec(name="key"),),
        ),
        MacroDef(name="original", handler=_original),
    ]
    for definition in defs:
        registry.register(definition)
