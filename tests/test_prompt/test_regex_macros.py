"""Regex scripts in the prompt channel see the prompt's macros: {{char}} in a replacement,
{{user}} in trim strings, and ``substituteRegex`` raw (1) and escaped (2) find patterns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.formats.regex_scripts import RegexScript
from engine.formats.worldbook import POS_BEFORE
from engine.prompt.assemble import AssemblyResult, assemble
from engine.prompt.inputs import (
    GAME_MASTER,
    AssemblyInput,
    CharacterFields,
    HistoryLine,
    ListHistory,
    Origin,
)
from engine.prompt.macro_port import EngineMacros, macro_context
from engine.prompt.regex_port import ScriptMacros, ScriptRegex
from engine.prompt.regex_run import sanitize_regex_macro
from engine.prompt.wi_sources import BookSource
from tests.test_prompt.helpers import default_preset
from tests.test_worldinfo.helpers import book, entry


def script(find: str, replace: str = "", **kw: Any) -> RegexScript:
    kw.setdefault("placement", (1, 2))
    return RegexScript(
        id=f"id-{find}",
        script_name=kw.pop("name", "S"),
        find_regex=find,
        replace_string=replace,
        prompt_only=True,
        **kw,
    )


def assemble_with(
    scripts: list[RegexScript],
    message: str,
    *,
    char: str = "Sera",
    user: str = "Ann",
    **kw: Any,
) -> AssemblyResult:
    character = CharacterFields(name=char)
    macros = EngineMacros(macro_context(character, user_name=user), phase="dry_run")
    inp = AssemblyInput(
        preset=default_preset(),
        character=character,
        history=ListHistory([HistoryLine(text="hello", is_user=False, name=char, floor=1)]),
        user_name=user,
        user_input=message,
        **kw,
    )
    return assemble(inp, macros=macros, scripts=scripts)


def last(result: AssemblyResult) -> str:
    return result.ir.messages[-1].content


def test_replacement_expands_char() -> None:
    result = assemble_with([script("/wave/g", "{{char}} waves")], "I wave")
    assert last(result) == "I Sera waves"


def test_trim_strings_expand_user() -> None:
    # The capture "Ann: hi" loses the trim string "{{user}}: " (= "Ann: ").
    result = assemble_with(
        [script(r"/\[(.+)\]/", "<$1>", trim_strings=("{{user}}: ",))], "[Ann: hi]"
    )
    assert last(result) == "<hi>"


def test_substitute_regex_raw_puts_the_value_in_as_a_pattern() -> None:
    raw = script("/{{char}}/g", "X", substitute_regex=1)
    assert last(assemble_with([raw], "Sera, Sera!")) == "X, X!"
    # Raw: "A.B+" is a pattern, so "AxBBB" matches too.
    assert last(assemble_with([raw], "A.B+ and AxBBB", char="A.B+")) == "X+ and X"


def test_substitute_regex_escaped_matches_the_name_literally() -> None:
    escaped = script("/{{char}}/g", "X", substitute_regex=2)
    assert last(assemble_with([escaped], "A.B+ and AxBBB", char="A.B+")) == "X and AxBBB"


def test_without_substitution_the_find_pattern_keeps_its_macro() -> None:
    plain = script("/{{char}}/g", "X", substitute_regex=0)
    assert last(assemble_with([plain], "Sera")) == "Sera"


def test_world_info_scripts_see_the_macros_too() -> None:
    b = book(entry(1, constant=True, position=POS_BEFORE, content="LORE"))
    wi = script("/LORE/", "lore of {{char}}", placement=(5,))
    result = assemble_with([wi], "hi", books=[BookSource(book=b)])
    assert "lore of Sera" in [m.content for m in result.ir.messages]


def test_a_broken_script_is_reported_once_with_its_name_once() -> None:
    broken = script("/(/g", "x", name="Broken")
    result = assemble_with([broken], "one")
    found = [w for w in result.ir.warnings if "Broken" in w]
    assert len(found) == 1 and found[0].count("Broken") == 1


class _PlainRenderer:
    """A renderer that cannot escape values."""

    def render(
        self,
        text: str,
        *,
        source: str,
        origin: Origin,
        env: Mapping[str, object] | None = None,
    ) -> str:
        return text.replace("{{char}}", "A.B+")


def test_a_renderer_that_cannot_escape_leaves_the_pattern_as_written() -> None:
    macros = ScriptMacros(_PlainRenderer(), source="regex", origin=GAME_MASTER)
    assert macros("{{char}}") == "A.B+"
    assert macros("{{char}}", escape=sanitize_regex_macro) == "{{char}}"


def test_script_regex_runs_chat_captures_under_the_history_access() -> None:
    character = CharacterFields(name="Sera")
    macros = EngineMacros(macro_context(character, user_name="Ann"), phase="dry_run")
    run = ScriptRegex([script("/(.+)/", "[$1]")], macros)
    # A write macro typed in chat stays raw (read-only history access), as in the messages.
    out = run("{{setvar::x::1}}", placement=1, depth=0)
    assert out == "[{{setvar::x::1}}]"
    assert macros.context.local == {}
