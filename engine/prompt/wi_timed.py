"""Sticky, cooldown and delay: world info timed effects as a value the caller persists per branch.

A :class:`TimedState` goes in with each scan and a new one comes out; the caller stores it with
the branch (it is plain JSON through :meth:`TimedState.to_json`). Times are counted in chat
messages that the scan sees (``chat_length``), as SillyTavern counts them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.errors import FormatError
from engine.formats.worldbook import WorldEntry, entry_to_json

EFFECTS = ("sticky", "cooldown")


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedRecord:
    """One running effect: active for ``start <= n < end``; ``protected`` survives a rerun at
    the same chat length (a cooldown that began when a sticky ended)."""

    hash: str
    start: int
    end: int
    protected: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedState:
    """Running effects keyed ``"<book>.<uid>"``, per effect kind."""

    sticky: Mapping[str, TimedRecord] = field(default_factory=dict)
    cooldown: Mapping[str, TimedRecord] = field(default_factory=dict)

    def records(self, effect: str) -> Mapping[str, TimedRecord]:
        """The records of one effect kind (``sticky`` or ``cooldown``)."""
        return self.sticky if effect == "sticky" else self.cooldown

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (SillyTavern's ``chat_metadata.timedWorldInfo`` shape)."""
        return {
            effect: {
                key: {"hash": r.hash, "start": r.start, "end": r.end, "protected": r.protected}
                for key, r in self.records(effect).items()
            }
            for effect in EFFECTS
        }

    @classmethod
    def from_json(cls, data: object, *, source: str = "timedWorldInfo") -> TimedState:
        """Read what :meth:`to_json` wrote (or SillyTavern's metadata)."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise FormatError("expected an object", source=source)
        parsed: dict[str, dict[str, TimedRecord]] = {}
        for effect in EFFECTS:
            items = data.get(effect)
            items = {} if items is None else items
            if not isinstance(items, Mapping):
                raise FormatError("expected an object", source=source, field=effect)
            parsed[effect] = {}
            for key, value in items.items():
                if not isinstance(value, Mapping):
                    raise FormatError("expected an object", source=source, field=f"{effect}.{key}")
                try:
                    parsed[effect][str(key)] = TimedRecord(
                        hash=str(value.get("hash", "")),
                        start=int(value.get("start", 0)),
                        end=int(value.get("end", 0)),
                        protected=bool(value.get("protected", False)),
                    )
                except (TypeError, ValueError):
                    raise FormatError(
                        "start and end must be numbers", source=source, field=f"{effect}.{key}"
                    ) from None
        return cls(sticky=parsed["sticky"], cooldown=parsed["cooldown"])


def entry_hash(entry: WorldEntry) -> str:
    """A fingerprint of an entry: editing the entry ends its running effects."""
    text = json.dumps(entry_to_json(entry), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _value(entry: WorldEntry, effect: str) -> int:
    value = entry.sticky if effect == "sticky" else entry.cooldown
    return value or 0


class TimedEffects:
    """The effects of one scan: checks the incoming state, then records new activations."""

    def __init__(
        self,
        state: TimedState,
        entries: Mapping[str, WorldEntry],
        chat_length: int,
        *,
        dry_run: bool = False,
    ) -> None:
        self.chat_length = chat_length
        self.entries = entries
        self.dry_run = dry_run
        self._incoming = state
        self._state: dict[str, dict[str, TimedRecord]] = {
            effect: dict(state.records(effect)) for effect in EFFECTS
        }
        self._active: dict[str, set[str]] = {effect: set() for effect in EFFECTS}
        self._check()

    def _check(self) -> None:
        n = self.chat_length
        for effect in EFFECTS:
            records = self._state[effect]
            for key, record in list(records.items()):
                entry = self.entries.get(key)
                if n <= record.start and not record.protected:
                    # The chat did not advance (swipe or regenerate): the effect is redone.
                    del records[key]
                    continue
                if entry is None or entry_hash(entry) != record.hash:
                    if n >= record.end:
                        del records[key]
                    continue
                if not _value(entry, effect):
                    del records[key]
                    continue
                if n >= record.end:
                    del records[key]
                    if effect == "sticky" and _value(entry, "cooldown"):
                        self._state["cooldown"][key] = TimedRecord(
                            hash=record.hash,
                            start=n,
                            end=n + _value(entry, "cooldown"),
                            protected=True,
                        )
                        self._active["cooldown"].add(key)
                    continue
                self._active[effect].add(key)

    def is_active(self, effect: str, key: str, entry: WorldEntry) -> bool:
        """Whether ``effect`` (sticky, cooldown or delay) holds for the entry now."""
        if effect == "delay":
            return bool(entry.delay) and self.chat_length < (entry.delay or 0)
        return key in self._active[effect]

    def record(self, activated: Mapping[str, WorldEntry]) -> TimedState:
        """The outgoing state: expired effects dropped and the effects started by this scan's
        activations added. A dry run returns the incoming state unchanged."""
        if self.dry_run:
            return self._incoming
        n = self.chat_length
        for key, entry in activated.items():
            for effect in EFFECTS:
                value = _value(entry, effect)
                if value and key not in self._state[effect]:
                    self._state[effect][key] = TimedRecord(
                        hash=entry_hash(entry), start=n, end=n + value
                    )
        return TimedState(
            sticky=dict(self._state["sticky"]), cooldown=dict(self._state["cooldown"])
        )
