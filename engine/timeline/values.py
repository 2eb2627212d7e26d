"""Timeline values: realm, session, branch, floor, page, message, asset and platform links.

These are what the storage port returns and the services hand to the turn workflow. They are
snapshots of rows: immutable, and never updated in place (read again after a change).

Numbering: floors carry ``seq``, their position along a branch's lineage, counted from 1 (a
branch forked after floor 3 numbers its first own floor 4). Pages are numbered from 1 within a
floor. Nothing is ever deleted by a platform action: ``hidden`` flags take its place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, get_args

FloorState = Literal["draft", "generating", "committed", "failed"]
PageStatus = Literal["pending", "committed", "failed"]
MessageRole = Literal["user", "assistant", "system", "narrator"]
AssetKind = Literal["card", "preset", "worldbook", "regex"]
InternalAssetKind = Literal["profile", "persona"]
"""Realm assets the engine keeps for itself (LLM profiles, personas), never listed to users."""
StoredAssetKind = Literal["card", "preset", "worldbook", "regex", "profile", "persona"]
LinkRole = Literal["user", "assistant"]

MAIN_BRANCH: Final = "main"
FLOOR_STATES: Final[tuple[FloorState, ...]] = get_args(FloorState)
PAGE_STATUSES: Final[tuple[PageStatus, ...]] = get_args(PageStatus)
MESSAGE_ROLES: Final[tuple[MessageRole, ...]] = get_args(MessageRole)
ASSET_KINDS: Final[tuple[AssetKind, ...]] = get_args(AssetKind)
INTERNAL_ASSET_KINDS: Final[tuple[InternalAssetKind, ...]] = get_args(InternalAssetKind)
STORED_ASSET_KINDS: Final[tuple[StoredAssetKind, ...]] = (*ASSET_KINDS, *INTERNAL_ASSET_KINDS)

# Names are shown in commands and used as Discord/Telegram ids; bounded so a row stays small.
MAX_NAME_LENGTH: Final = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Realm:
    """A tenant: a Discord guild (a DM is its own realm), a Telegram chat, or the console."""

    id: int
    platform: str
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSettings:
    """What a session is bound to; stored as one JSON object so new keys need no migration.

    ``extra`` keeps keys this version does not know, so an older process never drops them.
    """

    character: str | None = None
    preset: str | None = None
    worldbooks: tuple[str, ...] = ()
    regex_sets: tuple[str, ...] = ()
    prompt_mode: str = "compat_strict"
    macro_mode: str = "read_only"
    reply_policy: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored in the session row."""
        data: dict[str, Any] = dict(self.extra)
        data.update(
            character=self.character,
            preset=self.preset,
            worldbooks=list(self.worldbooks),
            regex_sets=list(self.regex_sets),
            prompt_mode=self.prompt_mode,
            macro_mode=self.macro_mode,
            reply_policy=self.reply_policy,
        )
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SessionSettings:
        """Read the stored object back; unknown keys go to ``extra``."""
        data = dict(data or {})
        default = cls()
        known = {
            "character": data.pop("character", default.character),
            "preset": data.pop("preset", default.preset),
            "worldbooks": tuple(data.pop("worldbooks", ()) or ()),
            "regex_sets": tuple(data.pop("regex_sets", ()) or ()),
            "prompt_mode": data.pop("prompt_mode", default.prompt_mode),
            "macro_mode": data.pop("macro_mode", default.macro_mode),
            "reply_policy": data.pop("reply_policy", default.reply_policy),
        }
        return cls(**known, extra=data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One chat: unique by ``(platform, key)``, living in ``realm_id``."""

    id: int
    realm_id: int
    platform: str
    key: str
    settings: SessionSettings
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Branch:
    """A line of floors. A fork records its parent, the floor it forks after (``fork_floor``)
    and which page of that floor was active when it forked (``fork_page``), so a later swipe
    on the parent never changes what the fork saw."""

    id: int
    session_id: int
    name: str
    parent_id: int | None
    fork_floor: int | None
    fork_page: int | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Floor:
    """One turn on a branch; ``active_page`` is the number of its active page (None until a
    page commits). ``owner``: the process that opened it (its lease id; None on rows older
    than leases), so start-up recovery fails it only once that process is gone.

    Group role-play: ``speaker`` is the member whose reply the floor holds (None: the
    session's character, as on every solo floor); ``seed`` is the activation seed of the
    group turn whose first floor this is (None on every other floor), so re-running the
    activation with it names the same speakers."""

    id: int
    branch_id: int
    seq: int
    state: FloorState
    active_page: int | None
    hidden: bool
    error: str | None
    created_at: datetime
    updated_at: datetime
    owner: str | None = None
    speaker: str | None = None
    seed: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One reply candidate of a floor. ``pending`` while it is generated, then ``committed``
    (frozen, may become active) or ``failed`` (kept for diagnosis, never active).
    ``owner``: the process generating it (see :attr:`Floor.owner`)."""

    id: int
    floor_id: int
    number: int
    status: PageStatus
    hidden: bool
    error: str | None
    meta: Mapping[str, Any]
    created_at: datetime
    owner: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMessage:
    """A message to record: a user's input on a floor, or a reply on a page. ``hidden``: kept
    but out of the prompt and the history (an imported chat's hidden line)."""

    role: MessageRole
    raw: str
    display: str | None = None
    speaker_id: str | None = None
    speaker_name: str | None = None
    platform_ref: str | None = None
    hidden: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A stored message. Inputs belong to the floor (``page_id`` None), replies to a page.
    ``display`` is what the platform shows (after regex scripts); ``raw`` what was written."""

    id: int
    floor_id: int
    page_id: int | None
    seq: int
    role: MessageRole
    speaker_id: str | None
    speaker_name: str | None
    raw: str
    display: str
    hidden: bool
    platform_ref: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Asset:
    """An imported card, preset, world book or regex set, unique by ``(realm, kind, name)``."""

    id: int
    realm_id: int
    kind: AssetKind
    name: str
    data: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformLink:
    """A platform message shown for a floor (user input) or a page (reply)."""

    session_id: int
    platform_ref: str
    branch_id: int
    floor_id: int
    page_id: int | None
    role: LinkRole


@dataclass(frozen=True, slots=True, kw_only=True)
class PageContext:
    """A page with its floor and branch, read together (one query) before changing it."""

    page: Page
    floor: Floor
    branch: Branch
    realm_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorView:
    """A floor as history shows it: its inputs, its pages, and the active page's messages."""

    floor: Floor
    branch_name: str
    inputs: tuple[Message, ...]
    pages: tuple[Page, ...]
    replies: tuple[Message, ...]

    @property
    def active(self) -> Page | None:
        """The active page, if one has committed."""
        for page in self.pages:
            if page.number == self.floor.active_page:
                return page
        return None
