"""The native chat archive: a lossless, versioned JSON document of one whole session.

An archive holds everything a session owns, as rows with the database ids replaced by
positions: ``branches``, ``floors``, ``pages`` and ``messages`` refer to each other by their
index in those lists (a branch's parent always comes earlier). Nothing is left out: failed and
hidden floors, inactive and failed pages, hidden messages and platform references, platform
links, every variable log entry (page writes and explicit writes, in order), the materialised
values of each scope, the branch snapshots, the bound assets as their JSON, and the session's
memory records and relations.

What an export -> import -> export round trip may change (everything else comes back equal):

* ``exported_at``;
* ``session.platform``/``session.key``/``session.realm`` name the session the archive was
  imported into;
* a bound asset whose name is taken in the target realm by different content is imported
  under a new name (``name (2)``, ...) and the session settings follow the rename;
* memory record ids are new (the archive numbers records by position); the stored
  ``provenance.job_id`` text is kept as it was, even though it names the old ids.

Choices: the realm's **global variables** travel as the global-scope log entries this session
wrote plus the current realm value of each key those entries touched; an import sets a key only
if the target realm does not have it yet (existing global values are never changed). Memory
records are the ones owned by the session (``session_id``); realm-wide records and memory job
states are not part of a session and are not exported.

:func:`parse_archive` validates a document completely (types, bounds, references,
uniqueness) so that a valid archive can always be written; every problem is a
:class:`~engine.errors.FormatError` naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, get_args

from engine.errors import FormatError
from engine.formats import archive_memory
from engine.formats.archive_fields import (
    MAX_LONG_TEXT,
    MAX_SHORT_TEXT,
    Fields,
    opt_ref,
    ref,
    unique,
)
from engine.formats.archive_values import (
    Archive,
    ArchiveAsset,
    ArchiveBranch,
    ArchiveFloor,
    ArchiveLink,
    ArchiveLogEntry,
    ArchiveMessage,
    ArchivePage,
    ArchiveSession,
    ArchiveSnapshot,
    ArchiveValue,
)
from engine.formats.json_input import decode_text, loads
from engine.timeline.values import (
    ASSET_KINDS,
    FLOOR_STATES,
    MAX_NAME_LENGTH,
    MESSAGE_ROLES,
    PAGE_STATUSES,
    LinkRole,
)
from engine.variables.values import SCOPES, LogSource, MutationOp

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "MAX_ARCHIVE_BYTES",
    "MAX_ARCHIVE_ROWS",
    "Archive",
    "ArchiveAsset",
    "ArchiveBranch",
    "ArchiveFloor",
    "ArchiveLink",
    "ArchiveLogEntry",
    "ArchiveMessage",
    "ArchivePage",
    "ArchiveSession",
    "ArchiveSnapshot",
    "ArchiveValue",
    "archive_to_bytes",
    "archive_to_json",
    "looks_like_archive",
    "parse_archive",
]

ARCHIVE_FORMAT: Final = "tavernbot-archive"
"""The ``format`` marker of every archive document."""
ARCHIVE_VERSION: Final = 1
"""The version this module writes and reads."""
MAX_ARCHIVE_BYTES: Final = 512 * 1024 * 1024
"""An archive file bigger than this is refused before parsing."""
MAX_ARCHIVE_ROWS: Final = 2_000_000
"""Most items in any one list of an archive."""

SNIFF_BYTES: Final = 4096
"""How much of a file :func:`looks_like_archive` looks at."""
_FORMAT_PAIR: Final = re.compile(rb'(?<!\\)"format"\s*:\s*"' + ARCHIVE_FORMAT.encode() + rb'"')
_LINK_ROLES: Final[tuple[LinkRole, ...]] = get_args(LinkRole)
_LOG_SOURCES: Final[tuple[LogSource, ...]] = get_args(LogSource)
_OPS: Final[tuple[MutationOp, ...]] = get_args(MutationOp)
_OWNED_SCOPES: Final = {"page": "pages", "floor": "floors", "branch": "branches"}


# ------------------------------------------------------------------------------- writing


def _iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def archive_to_json(archive: Archive) -> dict[str, Any]:
    """The archive as a JSON object (see :func:`archive_to_bytes`)."""
    s = archive.session
    return {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "exported_at": _iso(archive.exported_at),
        "session": {
            "platform": s.platform,
            "key": s.key,
            "realm": {"platform": s.realm_platform, "key": s.realm_key},
            "settings": dict(s.settings),
            "created_at": _iso(s.created_at),
        },
        "branches": [
            {
                "name": b.name,
                "parent": b.parent,
                "fork_floor": b.fork_floor,
                "fork_page": b.fork_page,
                "created_at": _iso(b.created_at),
            }
            for b in archive.branches
        ],
        "floors": [
            {
                "branch": f.branch,
                "seq": f.seq,
                "state": f.state,
                "active_page": f.active_page,
                "hidden": f.hidden,
                "error": f.error,
                "created_at": _iso(f.created_at),
                "updated_at": _iso(f.updated_at),
                # Group floors only: a solo session's archive is written as it always was.
                **({"speaker": f.speaker} if f.speaker is not None else {}),
                **({"seed": f.seed} if f.seed is not None else {}),
            }
            for f in archive.floors
        ],
        "pages": [
            {
                "floor": p.floor,
                "number": p.number,
                "status": p.status,
                "hidden": p.hidden,
                "error": p.error,
                "meta": dict(p.meta),
                "created_at": _iso(p.created_at),
            }
            for p in archive.pages
        ],
        "messages": [
            {
                "floor": m.floor,
                "page": m.page,
                "seq": m.seq,
                "role": m.role,
                "speaker_id": m.speaker_id,
                "speaker_name": m.speaker_name,
                "raw": m.raw,
                "display": m.display,
                "hidden": m.hidden,
                "platform_ref": m.platform_ref,
                "created_at": _iso(m.created_at),
            }
            for m in archive.messages
        ],
        "links": [
            {
                "platform_ref": k.platform_ref,
                "branch": k.branch,
                "floor": k.floor,
                "page": k.page,
                "role": k.role,
            }
            for k in archive.links
        ],
        "variable_log": [
            {
                "source": e.source,
                "scope": e.scope,
                "key": e.key,
                "op": e.op,
                "value": e.value,
                "branch": e.branch,
                "seq": e.seq,
                "floor": e.floor,
                "page": e.page,
                "created_at": _iso(e.created_at),
            }
            for e in archive.variable_log
        ],
        "variable_values": [
            {"scope": v.scope, "owner": v.owner, "key": v.key, "value": v.value}
            for v in archive.variable_values
        ],
        "snapshots": [{"page": n.page, "data": dict(n.data)} for n in archive.snapshots],
        "assets": [
            {
                "kind": a.kind,
                "name": a.name,
                "data": dict(a.data),
                "created_at": _iso(a.created_at),
                "updated_at": _iso(a.updated_at),
            }
            for a in archive.assets
        ],
        "memory": {
            "records": [archive_memory.record_to_json(r) for r in archive.memory_records],
            "relations": [archive_memory.relation_to_json(r) for r in archive.memory_relations],
        },
    }


def archive_to_bytes(archive: Archive) -> bytes:
    """The archive as UTF-8 JSON (indented, keys in a fixed order)."""
    import json

    return json.dumps(archive_to_json(archive), ensure_ascii=False, indent=1).encode("utf-8")


# ------------------------------------------------------------------------------- reading


def looks_like_archive(data: bytes) -> bool:
    """Whether ``data`` is meant to be an archive (a JSON object naming the archive format),
    as opposed to a SillyTavern JSONL chat; a cheap sniff, not a validation."""
    head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    # An unescaped "format": "tavernbot-archive" pair; the same words quoted inside a chat
    # message are escaped (\"format\") and do not match.
    return head.startswith(b"{") and _FORMAT_PAIR.search(head) is not None


def parse_archive(data: bytes | str | Mapping[str, Any], *, source: str) -> Archive:
    """Read and fully validate an archive (bytes, text or a decoded object)."""
    if isinstance(data, bytes):
        if len(data) > MAX_ARCHIVE_BYTES:
            raise FormatError(
                f"file is {len(data)} bytes, over MAX_ARCHIVE_BYTES={MAX_ARCHIVE_BYTES}",
                source=source,
            )
        data = decode_text(data, source=source)
    obj = loads(data, source=source) if isinstance(data, str) else data
    top = Fields(obj, source=source, path="")
    if top.data.get("format") != ARCHIVE_FORMAT:
        raise top.fail("format", f"expected {ARCHIVE_FORMAT!r}, this is not a tavernbot archive")
    version = top.integer("version", minimum=1)
    if version != ARCHIVE_VERSION:
        raise top.fail(
            "version", f"version {version} is not supported (this reads {ARCHIVE_VERSION})"
        )
    return _Reader(top).read()


class _Reader:
    """Reads the lists in dependency order, checking every reference as it goes."""

    def __init__(self, top: Fields) -> None:
        self.top = top
        self.source = top.source

    def _rows(self, key: str) -> list[Fields]:
        return [
            Fields(item, source=self.source, path=f"{key}[{i}]")
            for i, item in enumerate(self.top.items(key, limit=MAX_ARCHIVE_ROWS))
        ]

    def read(self) -> Archive:
        session = self._session(self.top.child("session"))
        branches = tuple(self._branch(r, i) for i, r in enumerate(self._rows("branches")))
        if not branches:
            raise self.top.fail("branches", "an archive needs at least one branch")
        unique([b.name for b in branches], source=self.source, field="branches", what="name")
        floors = tuple(self._floor(r, len(branches)) for r in self._rows("floors"))
        live = [(f.branch, f.seq) for f in floors if f.state != "failed"]
        unique(live, source=self.source, field="floors", what="live (branch, seq)")
        pages = tuple(self._page(r, len(floors)) for r in self._rows("pages"))
        unique(
            [(p.floor, p.number) for p in pages],
            source=self.source,
            field="pages",
            what="(floor, number)",
        )
        self._check_active(floors, pages)
        messages = tuple(self._message(r, floors, pages) for r in self._rows("messages"))
        links = tuple(self._link(r, branches, floors, pages) for r in self._rows("links"))
        unique(
            [k.platform_ref for k in links], source=self.source, field="links", what="platform_ref"
        )
        counts = {"branches": len(branches), "floors": len(floors), "pages": len(pages)}
        log = tuple(self._log(r, counts) for r in self._rows("variable_log"))
        values = tuple(self._value(r, counts) for r in self._rows("variable_values"))
        unique(
            [(v.scope, v.owner, v.key) for v in values],
            source=self.source,
            field="variable_values",
            what="(scope, owner, key)",
        )
        snapshots = tuple(
            ArchiveSnapshot(page=ref(r, "page", len(pages)), data=r.obj("data"))
            for r in self._rows("snapshots")
        )
        unique([n.page for n in snapshots], source=self.source, field="snapshots", what="page")
        assets = tuple(self._asset(r) for r in self._rows("assets"))
        unique(
            [(a.kind, a.name) for a in assets],
            source=self.source,
            field="assets",
            what="(kind, name)",
        )
        memory = self.top.child("memory")
        records, relations = archive_memory.read_memory(memory, branches=len(branches))
        return Archive(
            session=session,
            exported_at=self.top.instant("exported_at"),
            branches=branches,
            floors=floors,
            pages=pages,
            messages=messages,
            links=links,
            variable_log=log,
            variable_values=values,
            snapshots=snapshots,
            assets=assets,
            memory_records=records,
            memory_relations=relations,
        )

    def _session(self, r: Fields) -> ArchiveSession:
        realm = r.child("realm")
        return ArchiveSession(
            platform=r.text("platform", limit=32, empty=False),
            key=r.text("key", empty=False),
            realm_platform=realm.text("platform", limit=32, empty=False),
            realm_key=realm.text("key", empty=False),
            settings=_settings(r),
            created_at=r.instant("created_at"),
        )

    def _branch(self, r: Fields, index: int) -> ArchiveBranch:
        parent = opt_ref(r, "parent", index, before=index)
        fork_floor = r.opt_int("fork_floor", minimum=0)
        if (parent is None) != (fork_floor is None):
            raise r.fail("fork_floor", "a branch has a fork floor exactly when it has a parent")
        return ArchiveBranch(
            name=r.text("name", empty=False),
            parent=parent,
            fork_floor=fork_floor,
            fork_page=r.opt_int("fork_page", minimum=1),
            created_at=r.instant("created_at"),
        )

    def _floor(self, r: Fields, branches: int) -> ArchiveFloor:
        return ArchiveFloor(
            branch=ref(r, "branch", branches),
            seq=r.integer("seq", minimum=1),
            state=r.choice("state", FLOOR_STATES),
            active_page=r.opt_int("active_page", minimum=1),
            hidden=r.flag("hidden"),
            error=r.opt_text("error", limit=MAX_LONG_TEXT),
            created_at=r.instant("created_at"),
            updated_at=r.instant("updated_at"),
            # Optional: archives written before group role-play have neither.
            speaker=r.opt_text("speaker", limit=MAX_NAME_LENGTH) if "speaker" in r.data else None,
            seed=r.opt_int("seed", minimum=0) if "seed" in r.data else None,
        )

    def _page(self, r: Fields, floors: int) -> ArchivePage:
        return ArchivePage(
            floor=ref(r, "floor", floors),
            number=r.integer("number", minimum=1),
            status=r.choice("status", PAGE_STATUSES),
            hidden=r.flag("hidden"),
            error=r.opt_text("error", limit=MAX_LONG_TEXT),
            meta=r.obj("meta"),
            created_at=r.instant("created_at"),
        )

    def _check_active(
        self, floors: tuple[ArchiveFloor, ...], pages: tuple[ArchivePage, ...]
    ) -> None:
        numbers: dict[int, set[int]] = {}
        for page in pages:
            numbers.setdefault(page.floor, set()).add(page.number)
        for index, floor in enumerate(floors):
            if floor.active_page is not None and floor.active_page not in numbers.get(index, ()):
                raise FormatError(
                    f"names page {floor.active_page}, which the floor does not have",
                    source=self.source,
                    field=f"floors[{index}].active_page",
                )

    def _message(
        self, r: Fields, floors: tuple[ArchiveFloor, ...], pages: tuple[ArchivePage, ...]
    ) -> ArchiveMessage:
        floor = ref(r, "floor", len(floors))
        page = opt_ref(r, "page", len(pages))
        if page is not None and pages[page].floor != floor:
            raise r.fail("page", f"page {page} belongs to another floor than floor {floor}")
        return ArchiveMessage(
            floor=floor,
            page=page,
            seq=r.integer("seq", minimum=0),
            role=r.choice("role", MESSAGE_ROLES),
            speaker_id=r.opt_text("speaker_id"),
            speaker_name=r.opt_text("speaker_name"),
            raw=r.text("raw", limit=MAX_LONG_TEXT),
            display=r.text("display", limit=MAX_LONG_TEXT),
            hidden=r.flag("hidden"),
            platform_ref=r.opt_text("platform_ref"),
            created_at=r.instant("created_at"),
        )

    def _link(
        self,
        r: Fields,
        branches: tuple[ArchiveBranch, ...],
        floors: tuple[ArchiveFloor, ...],
        pages: tuple[ArchivePage, ...],
    ) -> ArchiveLink:
        floor = ref(r, "floor", len(floors))
        page = opt_ref(r, "page", len(pages))
        if page is not None and pages[page].floor != floor:
            raise r.fail("page", f"page {page} belongs to another floor than floor {floor}")
        return ArchiveLink(
            platform_ref=r.text("platform_ref", empty=False),
            branch=ref(r, "branch", len(branches)),
            floor=floor,
            page=page,
            role=r.choice("role", _LINK_ROLES),
        )

    def _log(self, r: Fields, counts: Mapping[str, int]) -> ArchiveLogEntry:
        op = r.choice("op", _OPS)
        return ArchiveLogEntry(
            source=r.choice("source", _LOG_SOURCES),
            scope=r.choice("scope", SCOPES),
            key=r.text("key"),
            op=op,
            value=r.json("value") if op == "set" else None,
            branch=opt_ref(r, "branch", counts["branches"]),
            seq=r.opt_int("seq", minimum=0),
            floor=opt_ref(r, "floor", counts["floors"]),
            page=opt_ref(r, "page", counts["pages"]),
            created_at=r.instant("created_at"),
        )

    def _value(self, r: Fields, counts: Mapping[str, int]) -> ArchiveValue:
        scope = r.choice("scope", SCOPES)
        owned = _OWNED_SCOPES.get(scope)
        if owned is None:
            if r.data.get("owner", 0) is not None:
                raise r.fail("owner", f"must be null for the {scope} scope")
            owner = None
        else:
            owner = ref(r, "owner", counts[owned])
        return ArchiveValue(scope=scope, owner=owner, key=r.text("key"), value=r.json("value"))

    def _asset(self, r: Fields) -> ArchiveAsset:
        return ArchiveAsset(
            kind=r.choice("kind", ASSET_KINDS),
            name=r.text("name", empty=False),
            data=r.obj("data"),
            created_at=r.instant("created_at"),
            updated_at=r.instant("updated_at"),
        )


def _settings(r: Fields) -> dict[str, Any]:
    """The session settings object, with the bindings the engine reads type-checked."""
    settings = r.obj("settings")
    inner = Fields(settings, source=r.source, path=r.where("settings"))
    for key in ("character", "preset", "reply_policy"):
        if key in settings:
            inner.opt_text(key)
    for key in ("prompt_mode", "macro_mode"):
        if key in settings:
            inner.text(key)
    for key in ("worldbooks", "regex_sets"):
        if key in settings and settings[key] is not None:
            for index, _name in enumerate(inner.items(key, limit=MAX_ARCHIVE_ROWS)):
                if not isinstance(_name, str) or len(_name) > MAX_SHORT_TEXT:
                    raise inner.fail(f"{key}[{index}]", "expected a name (text of 1-200 chars)")
    return settings
