"""SillyTavern regex scripts (``RegexScriptData``): parsing and export.

Execution lives in :mod:`engine.prompt.regex_run`; JS pattern handling in
:mod:`engine.prompt.jsregex`.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from engine.errors import FormatError
from engine.formats.json_input import (
    as_int,
    decode_text,
    get_bool,
    get_str,
    get_str_list,
    loads,
    type_name,
)


class Placement(IntEnum):
    """Where a script applies (``regex_placement`` in SillyTavern)."""

    MD_DISPLAY = 0  # deprecated in ST; kept so old files keep their meaning
    USER_INPUT = 1
    AI_OUTPUT = 2
    SLASH_COMMAND = 3
    SEND_AS = 4  # legacy, unused by ST
    WORLD_INFO = 5
    REASONING = 6


class SubstituteRegex(IntEnum):
    """How macros inside ``findRegex`` are substituted before compiling."""

    NONE = 0
    RAW = 1
    ESCAPED = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexScript:
    """One regex script. ``raw`` is the original JSON object, kept for lossless export."""

    id: str
    script_name: str
    find_regex: str
    replace_string: str = ""
    trim_strings: tuple[str, ...] = ()
    placement: tuple[int, ...] = ()
    disabled: bool = False
    markdown_only: bool = False
    prompt_only: bool = False
    run_on_edit: bool = False
    substitute_regex: int = 0
    min_depth: int | None = None
    max_depth: int | None = None
    raw: Mapping[str, object] = field(default_factory=dict)


# An imported file with more scripts than this is refused (real collections hold dozens).
MAX_SCRIPTS_PER_FILE = 2_000


def parse_regex_scripts(data: bytes | str | object, *, source: str) -> tuple[RegexScript, ...]:
    """Read one script object or a list of them from JSON bytes/text or an already decoded value.

    Raises FormatError naming ``source``, the field (``[3].placement``) and the problem.
    """
    if isinstance(data, bytes | str):
        text = decode_text(data, source=source) if isinstance(data, bytes) else data
        data = loads(text, source=source)
    return regex_scripts_from_json(data, source=source)


def load_regex_file(data: bytes, *, source: str) -> tuple[list[object], tuple[RegexScript, ...]]:
    """A regex file as imported: its scripts as JSON items (one object becomes a list of one,
    to store) and as validated scripts. A file holding valid JSON of another type (``"abc"``)
    is reported as such, never as invalid JSON."""
    value = loads(decode_text(data, source=source), source=source)
    scripts = regex_scripts_from_json(value, source=source)
    return (list(value) if isinstance(value, list) else [value]), scripts


def regex_scripts_from_json(value: object, *, source: str) -> tuple[RegexScript, ...]:
    """Read one decoded script object or a list of them (a string is never parsed again:
    it is the wrong type)."""
    if isinstance(value, Mapping):
        return (parse_regex_script(value, source=source, field=""),)
    if not isinstance(value, list):
        raise FormatError(
            f"expected a regex script object or a list of them, got {type_name(value)}",
            source=source,
        )
    if len(value) > MAX_SCRIPTS_PER_FILE:
        raise FormatError(
            f"{len(value)} scripts, over MAX_SCRIPTS_PER_FILE={MAX_SCRIPTS_PER_FILE}",
            source=source,
        )
    return tuple(
        parse_regex_script(item, source=source, field=f"[{i}]") for i, item in enumerate(value)
    )


def parse_regex_script(value: object, *, source: str, field: str = "") -> RegexScript:
    """Read one ``RegexScriptData`` object; ``field`` prefixes field names in errors."""
    prefix = f"{field}." if field else ""
    if not isinstance(value, Mapping):
        raise FormatError(
            f"expected a regex script object, got {type_name(value)}", source=source, field=field
        )

    def where(key: str) -> str:
        return prefix + key

    if "scriptName" not in value:
        raise FormatError("missing scriptName", source=source, field=where("scriptName"))
    name = get_str(value, "scriptName", source=source, field=where("scriptName"))
    script_id = get_str(value, "id", source=source, field=where("id")) or str(uuid.uuid4())
    return RegexScript(
        id=script_id,
        script_name=name,
        find_regex=get_str(value, "findRegex", source=source, field=where("findRegex")),
        replace_string=get_str(
            value, "replaceString", source=source, field=where("replaceString")
        ),
        trim_strings=get_str_list(value, "trimStrings", source=source, field=where("trimStrings")),
        placement=_placement(value.get("placement"), source=source, field=where("placement")),
        disabled=get_bool(
            value, "disabled", source=source, field=where("disabled"), default=False
        ),
        markdown_only=get_bool(
            value, "markdownOnly", source=source, field=where("markdownOnly"), default=False
        ),
        prompt_only=get_bool(
            value, "promptOnly", source=source, field=where("promptOnly"), default=False
        ),
        run_on_edit=get_bool(
            value, "runOnEdit", source=source, field=where("runOnEdit"), default=False
        ),
        substitute_regex=_substitute(
            value.get("substituteRegex"), source, where("substituteRegex")
        ),
        min_depth=as_int(value.get("minDepth"), source=source, field=where("minDepth")),
        max_depth=as_int(value.get("maxDepth"), source=source, field=where("maxDepth")),
        raw=copy.deepcopy(dict(value)),
    )


def _placement(value: object, *, source: str, field: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FormatError(
            f"expected an array of numbers, got {type_name(value)}", source=source, field=field
        )
    out: list[int] = []
    for i, item in enumerate(value):
        number = as_int(item, source=source, field=f"{field}[{i}]")
        if number is not None:
            out.append(number)
    return tuple(out)


def _substitute(value: object, source: str, field: str) -> int:
    if isinstance(value, bool):  # early ST stored a boolean: true meant "raw"
        return int(value)
    number = as_int(value, source=source, field=field)
    return 0 if number is None else number


def regex_script_to_json(script: RegexScript) -> dict[str, object]:
    """The script as ST's JSON object; unknown keys of the imported object are kept."""
    out: dict[str, object] = copy.deepcopy(dict(script.raw))
    out.update(
        id=script.id,
        scriptName=script.script_name,
        findRegex=script.find_regex,
        replaceString=script.replace_string,
        trimStrings=list(script.trim_strings),
        placement=list(script.placement),
        disabled=script.disabled,
        markdownOnly=script.markdown_only,
        promptOnly=script.prompt_only,
        runOnEdit=script.run_on_edit,
        substituteRegex=script.substitute_regex,
        minDepth=script.min_depth,
        maxDepth=script.max_depth,
    )
    return out


def card_regex_scripts(
    extensions: Mapping[str, object], *, source: str
) -> tuple[RegexScript, ...]:
    """The scoped scripts a card carries in ``data.extensions.regex_scripts`` (may be none)."""
    value = extensions.get("regex_scripts")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FormatError(
            f"expected an array, got {type_name(value)}",
            source=source,
            field="data.extensions.regex_scripts",
        )
    return tuple(
        parse_regex_script(item, source=source, field=f"data.extensions.regex_scripts[{i}]")
        for i, item in enumerate(value)
    )
