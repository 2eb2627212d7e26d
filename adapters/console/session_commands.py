"""The console's session settings: ``/info``, ``/set`` and ``/note``.

``/set`` names the options as :func:`engine.turns.options.option_lines` words them, leaving out
those that mean nothing on the console (:data:`NOT_CONSOLE_OPTIONS`); the engine checks every
value, so a bad one is one error line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from adapters.console.asset_commands import Emit
from adapters.console.group_commands import group_fields, group_line
from engine.errors import ConfigurationError
from engine.turns.api import RoleplayService, SessionInfo, SessionKey
from engine.turns.notes import describe_note, note_to_json, parse_note_command, summarize_note
from engine.turns.options import MAX_MEMORY_BUDGET, OptionSpec, option_lines, option_spec

__all__ = ["NOT_CONSOLE_OPTIONS", "SessionCommands", "option_values"]

NOT_CONSOLE_OPTIONS: Final = frozenset({"policy"})
"""Session options the console neither shows nor sets: it answers every line it reads, so a
reply policy (when a platform replies in a group) means nothing here."""


def option_values(info: SessionInfo) -> dict[str, str]:
    """The session's options as ``/set`` names and words them (console ones only)."""
    return {name: value for name, value in option_lines(info) if name not in NOT_CONSOLE_OPTIONS}


def _resolve(word: str, specs: dict[str, OptionSpec]) -> OptionSpec:
    """The console option ``word`` names (any case, or its setting's long name)."""
    try:
        name: str | None = option_spec(word).name
    except ConfigurationError:
        name = None
    if name in NOT_CONSOLE_OPTIONS:
        raise ConfigurationError(
            f"session option {name} has no meaning on the console, which answers every "
            f"line; options: {', '.join(specs)}"
        )
    if name is None or name not in specs:
        raise ConfigurationError(f"unknown session option {word!r}; options: {', '.join(specs)}")
    return specs[name]


@dataclass
class SessionCommands:
    """The settings commands of one console session on ``branch``; ``emit`` writes the
    answers."""

    service: RoleplayService
    key: SessionKey
    emit: Emit
    branch: str

    def _specs(self) -> dict[str, OptionSpec]:
        return {
            spec.name: spec
            for spec in self.service.session_option_specs()
            if spec.name not in NOT_CONSOLE_OPTIONS
        }

    async def info(self) -> None:
        info = await self.service.session_info(self.key)
        options = option_values(info)
        branches = ", ".join(f"{b.name} ({b.floors_text})" for b in info.branches)
        books = ", ".join(info.worldbooks) or "(none)"
        lines = [
            f"session {info.key.key}: character {info.character or '(default)'}, "
            f"preset {info.preset or '(none)'}, world books {books}",
            f"branch {self.branch}; branches: {branches}",
            "options: " + ", ".join(f"{name} {value}" for name, value in options.items()),
            summarize_note(info.author_note),
        ]
        group = group_line(info)
        if group is not None:  # a group: who plays, who is muted, the strategy and the mode
            lines.insert(1, group)
        note = info.author_note
        # The note and the options ride along as fields, in the forms ``/note`` and ``/set``
        # take them.
        self.emit(
            "info",
            message="\n  ".join(lines),
            note=note_to_json(note) if note else None,
            options=options,
            **(group_fields(info) if info.members else {}),
        )

    async def set(self, args: list[str]) -> None:
        """``/set`` lists the options; ``/set OPTION`` shows one; ``/set OPTION VALUE`` changes
        it for this session only (the engine checks the value: a bad one is one error line)."""
        specs = self._specs()
        if len(args) > 2:
            self.emit("error", message="usage: /set OPTION VALUE (/set alone lists the options)")
            return
        chosen = [_resolve(args[0], specs)] if args else list(specs.values())
        if len(args) == 2:
            name = chosen[0].name
            info = await self.service.set_session_option(self.key, name, args[1])
            values = option_values(info)
            self.emit(
                "info",
                message=f"{name} = {values[name]} (this session only)",
                option=name,
                value=values[name],
                options=values,
            )
            return
        values = option_values(await self.service.session_info(self.key))
        rows = [
            {
                "name": spec.name,
                "value": values.get(spec.name, ""),
                "values": list(spec.values),
                "help": spec.help,
            }
            for spec in chosen
        ]
        width = max(len(spec.name) for spec in specs.values())
        text = "".join(
            f"\n  {row['name']:<{width}}  {row['value']:<13} "
            + (" | ".join(row["values"]) or f"0 to {MAX_MEMORY_BUDGET} tokens")
            + (f"\n  {'':<{width}}  {row['help']}" if args else "")
            for row in rows
        )
        self.emit("info", message=f"session options (/set OPTION VALUE):{text}", items=rows)

    async def note(self, args: str) -> None:
        current = await self.service.author_note(self.key)
        command = parse_note_command(args, current)
        if command.action == "show":
            note = current
            message = describe_note(current)
        elif command.action == "clear":
            note = None
            await self.service.set_author_note(self.key, None)
            message = "Author's Note cleared."
        else:
            note = command.note
            await self.service.set_author_note(self.key, note)
            message = f"set: {describe_note(note)}"
        self.emit("info", message=message, note=note_to_json(note) if note else None)
