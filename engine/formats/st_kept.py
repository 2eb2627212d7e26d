"""What an imported SillyTavern chat keeps beyond the timeline, so its export gives it back.

The timeline models a line's speaker, text, swipes and hidden state. Everything else a line
holds (``extra`` with reasoning, model and API, ``force_avatar``, ``gen_started`` and
``gen_finished``, ``title``, ``is_name``, keys of extensions, and the dates as they were spelt)
is kept as read, and the export starts from it:

* a reply line: on page 1 of its floor, ``meta[LINE_META]`` (the line without ``mes``,
  ``swipes`` and ``swipe_info``), ``meta[SWIPES_META]`` (the line had a ``swipes`` array, even
  of one swipe) and ``meta[INPUTS_META]`` (the floor's input lines, likewise, in order); each
  page's own ``swipe_info`` object under ``meta[SWIPE_INFO_META]``;
* the header line and the input lines after the last reply (they form a failed floor, which
  has no page): the session setting :data:`ST_FILES_SETTING`, by branch name
  (``{"header": <line or null for a file without one>, "trailing": [<lines>]}``).

``chat_metadata.variables`` become the session's chat-scope variables (one definition of
them); the kept header keeps an empty ``variables`` object, and the export writes the current
chat-scope variables into it.

A kept line always has ``name`` (a message line cannot lack it); a ``LINE_META`` without one
was written by an earlier version, which kept only the fields it did not model.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from engine.errors import FormatError, LimitExceededError
from engine.formats.json_input import type_name
from engine.formats.st_chat import ChatEntry, ChatLog
from engine.variables.values import MAX_KEY_LENGTH, check_storable

ST_FILES_SETTING: Final = "st_chat_files"
"""Session setting: per branch name, the header and trailing lines of an imported chat."""
LEGACY_HEADER_SETTING: Final = "st_chat"
"""Session setting of earlier versions: an imported chat's names and ``chat_metadata``."""
LINE_META: Final = "st_line"
SWIPES_META: Final = "st_swipes"
SWIPE_INFO_META: Final = "st_swipe_info"
INPUTS_META: Final = "st_inputs"
VARIABLES_KEY: Final = "variables"
"""The ``chat_metadata`` key of SillyTavern's chat variables (``/setvar``, ``{{getvar}}``)."""
_TEXT_KEYS: Final = frozenset(("mes", "swipes", "swipe_info"))


def chat_variables(log: ChatLog, *, source: str) -> dict[str, Any]:
    """The chat's ``chat_metadata.variables``, checked as the variable store checks a write
    (FormatError or LimitExceededError naming the variable), before anything is stored."""
    found = log.chat_metadata.get(VARIABLES_KEY)
    if found is None:
        return {}
    where = f"line 1: chat_metadata.{VARIABLES_KEY}"
    if not isinstance(found, Mapping):
        raise FormatError(
            f"expected an object, got {type_name(found)}", source=source, field=where
        )
    for key, value in found.items():
        if not key or len(key) > MAX_KEY_LENGTH:
            raise LimitExceededError(
                f"{source}: {where}: variable name {key[:40]!r} must be 1 to "
                f"MAX_KEY_LENGTH={MAX_KEY_LENGTH} characters long",
                limit="MAX_KEY_LENGTH",
                value=MAX_KEY_LENGTH,
            )
        check_storable(key, value)
    return dict(found)


def file_record(log: ChatLog, trailing: Sequence[ChatEntry]) -> dict[str, Any]:
    """The :data:`ST_FILES_SETTING` value of one imported chat (variables left out)."""
    header: dict[str, Any] | None = None
    if log.header is not None:
        header = copy.deepcopy(dict(log.header))
        metadata = header.get("chat_metadata")
        if isinstance(metadata, dict) and VARIABLES_KEY in metadata:
            metadata[VARIABLES_KEY] = {}
    return {"header": header, "trailing": [kept_line(e) for e in trailing]}


def kept_line(entry: ChatEntry) -> dict[str, Any]:
    """The line without its texts (kept as messages and pages)."""
    return {k: copy.deepcopy(v) for k, v in entry.raw.items() if k not in _TEXT_KEYS}


def reply_meta(entry: ChatEntry, inputs: Sequence[ChatEntry]) -> dict[str, Any]:
    """The meta of a reply's page 1 (see the module docstring)."""
    meta: dict[str, Any] = {
        LINE_META: kept_line(entry),
        INPUTS_META: [kept_line(i) for i in inputs],
    }
    if isinstance(entry.raw.get("swipes"), list):
        meta[SWIPES_META] = True
    return meta


def page_meta(entry: ChatEntry, index: int, inputs: Sequence[ChatEntry]) -> dict[str, Any]:
    """The meta of the page made from swipe ``index`` of a reply line."""
    meta = reply_meta(entry, inputs) if index == 0 else {}
    info = entry.pages[index].info
    if info is not None:
        meta[SWIPE_INFO_META] = copy.deepcopy(dict(info))
    return meta


def is_full(kept: object) -> bool:
    """A line kept whole (this version), not only its unmodelled fields (an earlier one)."""
    return isinstance(kept, Mapping) and "name" in kept


def find_record(settings: Mapping[str, Any], branches: Sequence[str]) -> Mapping[str, Any] | None:
    """The kept file of the first of ``branches`` (a branch, then its ancestors) that has one."""
    files = settings.get(ST_FILES_SETTING)
    if not isinstance(files, Mapping):
        return None
    for name in branches:
        found = files.get(name)
        if isinstance(found, Mapping):
            return found
    return None


def with_variables(metadata: Mapping[str, Any], variables: Mapping[str, Any]) -> dict[str, Any]:
    """``chat_metadata`` with the current chat-scope variables (only when there are some or
    the chat had the key)."""
    out = copy.deepcopy(dict(metadata))
    if variables or VARIABLES_KEY in out:
        out[VARIABLES_KEY] = copy.deepcopy(dict(variables))
    return out
