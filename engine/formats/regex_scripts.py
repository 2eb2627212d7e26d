"""SillyTavern regex scripts (``RegexScriptData``): parsing and export.

Execution lives in :mod:`engine.prompt.regex_run`; JS pattern handling in
:mod:`engine.prompt.jsregex`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum


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
    raw: Mapping[str, object]
