"""``{{mesExamples}}``: the card's dialogue examples as SillyTavern formats them.

The raw examples are split on ``<START>`` (any case) into blocks, each ``heading + block.trim()
+ "\\n"``. The heading is ``<START>`` for Chat Completion and for instruct mode, otherwise the
context template's example separator with its macros expanded (nothing when it is empty). In
instruct mode (on, and the API is not Chat Completion) each block is then rewritten with the
instruct sequences, as SillyTavern's ``formatInstructModeExamples`` does.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from engine.prompt.examples import EXAMPLE_USER, split_example_block

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_START = re.compile(r"<START>", re.IGNORECASE)
_START_LINE = re.compile(r"<START>\n", re.IGNORECASE)
_NAME = re.compile(r"\{\{name\}\}", re.IGNORECASE)
#: SillyTavern's default context template separator (used when no context template is set).
DEFAULT_EXAMPLE_SEPARATOR = "***"
#: SillyTavern's default instruct sequences (used when instruct mode is on and a key is unset).
_DEFAULT_SEQUENCES = {"input_sequence": "### Instruction:", "output_sequence": "### Response:"}


def _section(env: MacroEnv, key: str) -> dict[str, Any] | None:
    value = env.context.settings.get(key)
    return value if isinstance(value, dict) else None


def _separator_heading(env: MacroEnv) -> str:
    """``example_separator`` with its macros expanded, plus a newline ('' when it is empty)."""
    context = _section(env, "context")
    separator = (
        context.get("example_separator") if context is not None else DEFAULT_EXAMPLE_SEPARATOR
    )
    if not isinstance(separator, str) or not separator:
        return ""
    return env.evaluate(separator) + "\n"


def _blocks(raw: str, heading: str) -> list[str]:
    """SillyTavern's ``parseMesExamples``: ``raw`` must already be trimmed, as a card field is."""
    if not raw or raw == "<START>":
        return []
    if not raw.startswith("<START>"):  # case-sensitive, as SillyTavern checks it
        raw = "<START>\n" + raw.strip()
    return [f"{heading}{block.strip()}\n" for block in _START.split(raw)[1:]]


def format_examples(raw: str, env: MacroEnv) -> str:
    """The value of ``{{mesExamples}}`` for the raw (macro-expanded) examples ``raw``."""
    if not raw:
        return ""
    settings = env.context.settings
    chat_completion = settings.get("main_api", "openai") == "openai"
    instruct = _section(env, "instruct") or {}
    is_instruct = bool(instruct.get("enabled")) and not chat_completion
    separator = "" if chat_completion else _separator_heading(env)
    heading = "<START>\n" if chat_completion or is_instruct else separator
    blocks = _blocks(raw, heading)
    if not blocks or not is_instruct:
        return "".join(blocks)
    return "".join(_instruct_examples(blocks, env, instruct, separator))


def _sequence(env: MacroEnv, instruct: dict[str, Any], key: str, name: str) -> str:
    value = instruct.get(key, _DEFAULT_SEQUENCES.get(key, ""))
    text = value if isinstance(value, str) else ""
    if text and instruct.get("macro", True):
        # SillyTavern expands macros, then {{name}}; doing {{name}} first gives the same text
        # without reporting it as an unknown macro.
        text = env.evaluate(_NAME.sub(lambda _: name, text))
    return text


def _instruct_examples(
    blocks: list[str], env: MacroEnv, instruct: dict[str, Any], heading: str
) -> list[str]:
    """SillyTavern's ``formatInstructModeExamples`` for a solo chat."""
    if instruct.get("skip_examples"):
        return [_START_LINE.sub(lambda _: heading, block, count=1) for block in blocks]
    user, char = env.user, env.char
    names = instruct.get("names_behavior")
    wrap = bool(instruct.get("wrap", True))
    input_prefix = _sequence(env, instruct, "input_sequence", user)
    output_prefix = _sequence(env, instruct, "output_sequence", char)
    input_suffix = _sequence(env, instruct, "input_suffix", user)
    output_suffix = _sequence(env, instruct, "output_suffix", char)
    if instruct.get("macro", True) and wrap:
        input_suffix = input_suffix or "\n"
        output_suffix = output_suffix or "\n"
    joiner = "\n" if wrap else ""
    out: list[str] = []
    for block in blocks:
        turns = split_example_block(block, user_name=user, char_name=char)
        if not turns:
            continue
        if heading:
            out.append(heading)
        for turn in turns:
            is_user = turn.name == EXAMPLE_USER
            named = names == "always" or (names == "force" and is_user)
            content = f"{user if is_user else char}: {turn.content}" if named else turn.content
            suffix = input_suffix if is_user else output_suffix
            parts = [input_prefix if is_user else output_prefix, content + suffix]
            out.append(joiner.join(part for part in parts if part))
    if not out:
        return [_START_LINE.sub(lambda _: heading, block, count=1) for block in blocks]
    return out
