"""The console's asset commands: ``/persona``, ``/character``, ``/preset`` and ``/worldbook``.

The assets are the realm's (imported by ``tavernbot import`` or ``/import``); these commands
pick which the session uses, through :class:`~engine.turns.api.RoleplayService`
(``list_assets``, ``bind_asset``, ``unbind_asset``) as every front end does.

Every console session lives in the one console realm, where a persona would be shared by all
of them; so the console plays each session under its own speaker id
(:func:`console_speaker`), and a persona set in one session stays in that session.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from engine.turns.api import AssetKind, RoleplayService, SessionKey, Speaker

__all__ = ["ASSET_WORDS", "PERSONA_OFF", "AssetCommands", "console_speaker"]

PERSONA_OFF: Final = "off"
"""``/persona off`` drops the session's persona."""
ASSET_WORDS: Final[dict[AssetKind, tuple[str, str]]] = {
    "card": ("card", "cards"),
    "preset": ("preset", "presets"),
    "worldbook": ("world book", "world books"),
}
"""How the console names each kind it picks, one and many."""
_IMPORT_HINT: Final = "import one with /import FILE or tavernbot import"

Emit = Callable[..., None]
"""The frontend's output: ``emit(kind, message=..., **fields)``."""


def console_speaker(user: str, key: SessionKey) -> Speaker:
    """Who types on the console in session ``key``: named ``user``, with an id of this
    session's own, so that ``/persona`` in one session leaves the others alone."""
    return Speaker(id=f"console:{user}@{key.key}", name=user)


@dataclass
class AssetCommands:
    """The asset commands of one console session; ``emit`` writes the answers."""

    service: RoleplayService
    key: SessionKey
    user: str
    emit: Emit

    # ------------------------------------------------------------------ persona
    async def persona(self, text: str) -> None:
        """``/persona`` shows the persona, ``/persona off`` drops it, ``/persona NAME
        [DESCRIPTION]`` sets it: NAME is ``{{user}}`` from the next message on."""
        speaker = console_speaker(self.user, self.key)
        words = _words(text)
        found = await self.service.persona(self.key, speaker.id)
        if not words:
            if found is None:
                self._info(
                    f"you play as {self.user} (no persona; /persona NAME [DESCRIPTION] sets "
                    "one for this session)",
                    persona=None,
                )
            else:
                about = f": {found[1]}" if found[1] else ""
                self._info(f"you play as {found[0]}{about}", persona=_persona(found))
            return
        if words == [PERSONA_OFF]:
            if found is None:
                self.emit("error", message="this session has no persona to drop")
                return
            await self.service.clear_persona(self.key, speaker.id)
            self._info(f"persona dropped: you play as {self.user} again", persona=None)
            return
        name, description = words[0], " ".join(words[1:])
        await self.service.set_persona(self.key, speaker.id, name, description)
        self._info(
            f"you play as {name} in this session ({{{{user}}}} from your next message)",
            persona={"name": name, "description": description},
        )

    # ------------------------------------------------------------------ assets
    async def character(self, args: list[str]) -> None:
        """``/character`` lists the realm's cards (``*`` the one played); ``/character NAME``
        plays that card."""
        info = await self.service.session_info(self.key)
        bound = (info.character,) if info.character else ()
        if not args:
            await self._list("card", bound)
            return
        name = await self._find("card", " ".join(args))
        if name is not None:
            await self.service.bind_asset(self.key, "card", name)
            self._info(f"now playing {name}", asset="card", name=name)

    async def preset(self, args: list[str]) -> None:
        """``/preset`` lists the realm's presets (``*`` the one used); ``/preset NAME`` uses
        that preset."""
        info = await self.service.session_info(self.key)
        bound = (info.preset,) if info.preset else ()
        if not args:
            await self._list("preset", bound)
            return
        name = await self._find("preset", " ".join(args))
        if name is not None:
            await self.service.bind_asset(self.key, "preset", name)
            self._info(f"now using preset {name}", asset="preset", name=name)

    async def worldbook(self, args: list[str]) -> None:
        """``/worldbook`` lists the realm's world books (``*`` the attached ones);
        ``/worldbook add NAME`` attaches one, ``/worldbook remove NAME`` detaches it."""
        info = await self.service.session_info(self.key)
        if not args:
            await self._list("worldbook", info.worldbooks)
            return
        action, wanted = args[0].lower(), " ".join(args[1:])
        if action not in ("add", "remove") or not wanted:
            self.emit("error", message="usage: /worldbook [add NAME | remove NAME]")
            return
        if action == "remove":
            if wanted not in info.worldbooks:
                attached = ", ".join(info.worldbooks) or "none"
                self.emit(
                    "error",
                    message=f"world book {wanted!r} is not attached; attached: {attached}",
                )
                return
            after = await self.service.unbind_asset(self.key, "worldbook", wanted)
            self._books(f"detached world book {wanted}", after.worldbooks)
            return
        name = await self._find("worldbook", wanted)
        if name is not None:
            after = await self.service.bind_asset(self.key, "worldbook", name)
            self._books(f"attached world book {name}", after.worldbooks)

    # ------------------------------------------------------------------ helpers
    async def _list(self, kind: AssetKind, bound: tuple[str, ...]) -> None:
        one, many = ASSET_WORDS[kind]
        names = await self.service.list_assets(self.key, kind)
        if not names:
            self._info(f"no {many} in this realm yet; {_IMPORT_HINT}", asset=kind, items=[])
            return
        shown = ", ".join(f"{n}{'*' if n in bound else ''}" for n in names)
        command = "/worldbook add" if kind == "worldbook" else f"/{_COMMANDS[kind]}"
        self._info(
            f"{many}: {shown} ({command} NAME to pick one)",
            asset=kind,
            items=names,
            bound=list(bound),
        )

    async def _find(self, kind: AssetKind, wanted: str) -> str | None:
        """The realm's asset ``wanted`` names (exactly, else the one spelled so in any case);
        None, after one line naming what exists, when there is none."""
        names = await self.service.list_assets(self.key, kind)
        if wanted in names:
            return wanted
        folded = [n for n in names if n.casefold() == wanted.casefold()]
        if len(folded) == 1:
            return folded[0]
        one, many = ASSET_WORDS[kind]
        there = f"{many}: {', '.join(names)}" if names else f"no {many} yet; {_IMPORT_HINT}"
        self.emit("error", message=f"no {one} named {wanted!r}; {there}")
        return None

    def _books(self, message: str, books: tuple[str, ...]) -> None:
        attached = ", ".join(books) or "none"
        self._info(f"{message}; attached: {attached}", asset="worldbook", bound=list(books))

    def _info(self, message: str, **fields: Any) -> None:
        self.emit("info", message=message, **fields)


_COMMANDS: Final[dict[AssetKind, str]] = {"card": "character", "preset": "preset"}


def _persona(found: tuple[str, str]) -> dict[str, str]:
    return {"name": found[0], "description": found[1]}


def _words(text: str) -> list[str]:
    """The words of ``text``, quotes grouping them where they pair up (an apostrophe in a
    description is just a letter)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()
