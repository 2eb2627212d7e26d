"""What prompt assembly takes: the session's assets, the chat as a lazy source, and the ports
(macro renderer, regex runner, token counter) it calls back into."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, runtime_checkable

from engine.formats.cards import CharacterCard
from engine.formats.preset import Preset
from engine.group.settings import GenerationMode
from engine.prompt.ir import Mode, Role
from engine.prompt.wi_sources import BookSource, WorldInfoSettings
from engine.prompt.wi_timed import TimedState

# Regex-script placements the assembler runs (SillyTavern's regex_placement values).
PLACEMENT_USER_INPUT = 1
PLACEMENT_AI_OUTPUT = 2
PLACEMENT_WORLD_INFO = 5

# Persona description positions.
PERSONA_IN_PROMPT = 0
# Deprecated: SillyTavern migrates it to IN_PROMPT whenever a persona is loaded.
PERSONA_AFTER_CHAR = 1
PERSONA_TOP_AN = 2
PERSONA_BOTTOM_AN = 3
PERSONA_AT_DEPTH = 4
PERSONA_NONE = 9

# Author's Note positions.
NOTE_IN_PROMPT = 0
NOTE_IN_CHAT = 1
NOTE_BEFORE_PROMPT = 2

ROLE_BY_NUMBER: tuple[Role, ...] = ("system", "user", "assistant")
MemoryPosition = Literal["before_chat", "after_worldinfo", "before_jailbreak"]

Origin = Literal["player", "game_master"]
"""Who wrote a text that enters an assembly, which decides what its macros may do (DESIGN
section 10, "Who may write"). It is decided where the text enters and travels with every
render call:

- ``player``: anything a player can type (chat messages, the new input, persona names and
  descriptions, display names, and chat text reaching a regex script through its captures).
  Its macros run under the session's ``macro_mode``: ``read_only`` by default (write macros
  stay raw with a warning), ``full`` or ``off``.
- ``game_master``: assets a game master bound (card, preset, world books, regex scripts, a
  prompt graph) and the Author's Note a game master set. Its macros may write.
"""
PLAYER: Final[Origin] = "player"
GAME_MASTER: Final[Origin] = "game_master"


MEMBER_CARD: Final = "char"
"""The ``env`` key of :meth:`MacroRenderer.render` naming the group member whose card the text
is: the text is rendered as SillyTavern renders a member's card in a group
(``baseChatReplace`` with that member as ``name2``): ``{{char}}`` is the member, ``{{notChar}}``
is worked out relative to it, and card macros (``{{description}}``...) give ``''``."""


class MacroRenderer(Protocol):
    """Expands macros in one piece of prompt text. ``source`` names the text (``preset.main``,
    ``card.description``, ``world.<book>.<uid>``...) for warnings and traces; ``origin`` says
    who wrote it (see :data:`Origin`); ``env`` adds call-specific values such as ``original``,
    ``outlets``, :data:`MEMBER_CARD` or call-local macros."""

    def render(
        self,
        text: str,
        *,
        source: str,
        origin: Origin,
        env: Mapping[str, object] | None = None,
    ) -> str:
        """The text with macros expanded."""
        ...


@runtime_checkable
class EscapingMacroRenderer(MacroRenderer, Protocol):
    """A :class:`MacroRenderer` that can also escape every macro's value (needed for a regex
    script's find pattern with ``substituteRegex`` = 2)."""

    def render_escaped(
        self, text: str, *, source: str, origin: Origin, escape: Callable[[str], str]
    ) -> str:
        """The text with macros expanded, each value passed through ``escape``."""
        ...


class RawMacros:
    """A renderer that leaves text unchanged (no macro engine wired in)."""

    def render(
        self,
        text: str,
        *,
        source: str,
        origin: Origin,
        env: Mapping[str, object] | None = None,
    ) -> str:
        """``text`` as is."""
        return text

    def render_escaped(
        self, text: str, *, source: str, origin: Origin, escape: Callable[[str], str]
    ) -> str:
        """``text`` as is (there are no macro values to escape)."""
        return text


class PromptRegex(Protocol):
    """Runs the session's regex scripts for the prompt channel (promptOnly and both-off scripts
    of the given placement, honouring min/max depth)."""

    def __call__(self, text: str, *, placement: int, depth: int | None) -> str:
        """The text after the scripts."""
        ...


def no_regex(text: str, *, placement: int, depth: int | None) -> str:
    """A :class:`PromptRegex` that changes nothing."""
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryLine:
    """One visible chat message. ``floor`` is its floor number (``None`` for the new input);
    ``role`` is ``system`` for narrator messages."""

    text: str
    is_user: bool
    name: str = ""
    floor: int | None = None
    role: Role | None = None
    force_avatar: bool = False

    @property
    def chat_role(self) -> Role:
        """The role the message is sent with."""
        if self.role is not None:
            return self.role
        return "user" if self.is_user else "assistant"


class HistorySource(Protocol):
    """The chat of a branch, read lazily from the newest message backwards. Hidden messages
    are not part of it. Assembly stops reading once the budget is full."""

    @property
    def length(self) -> int:
        """How many messages the chat has."""
        ...

    @property
    def user_messages(self) -> int:
        """How many of them are the user's (for the Author's Note interval)."""
        ...

    def newest_first(self) -> Iterator[HistoryLine]:
        """The messages from the newest to the oldest."""
        ...


class ListHistory:
    """A :class:`HistorySource` over messages in memory, given oldest first."""

    def __init__(self, lines: Sequence[HistoryLine]) -> None:
        self._lines = lines
        self._users = sum(1 for line in lines if line.is_user)

    @property
    def length(self) -> int:
        """The number of messages."""
        return len(self._lines)

    @property
    def user_messages(self) -> int:
        """The number of user messages."""
        return self._users

    def newest_first(self) -> Iterator[HistoryLine]:
        """Newest to oldest."""
        return reversed(self._lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class CharacterFields:
    """The card fields assembly uses (already chosen: chat overrides applied by the caller)."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    mes_example: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    creator_notes: str = ""
    depth_prompt: str = ""
    depth_prompt_depth: int = 4
    depth_prompt_role: Role = "system"
    tags: tuple[str, ...] = ()
    # The card's file name (SillyTavern's avatar, e.g. "Seraphina.png"): world entries'
    # character filters list file names without the extension. Empty: the name is used.
    avatar: str = ""

    @classmethod
    def from_card(cls, card: CharacterCard, *, avatar: str = "") -> CharacterFields:
        """The fields of an imported card; ``avatar`` is its file name (see the field)."""
        depth = card.depth_prompt
        role = depth.role if depth is not None and depth.role in ROLE_BY_NUMBER else "system"
        return cls(
            name=card.name,
            description=card.description,
            personality=card.personality,
            scenario=card.scenario,
            mes_example=card.mes_example,
            system_prompt=card.system_prompt,
            post_history_instructions=card.post_history_instructions,
            creator_notes=card.creator_notes,
            depth_prompt=depth.text if depth is not None else "",
            depth_prompt_depth=depth.depth if depth is not None else 4,
            depth_prompt_role=role,
            tags=card.tags,
            avatar=avatar,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupPrompt:
    """The group around the speaker (:attr:`AssemblyInput.character`), for a group turn.

    ``members`` are every member's fields in list order, the speaker's included (assembly
    uses :attr:`AssemblyInput.character` for the speaker, so the caller's chat overrides
    apply to it); ``muted`` names the muted ones. In ``join`` mode the description,
    personality, scenario and examples of every member (muted ones only with ``join_muted``,
    or when speaking) are joined, each wrapped by ``join_prefix``/``join_suffix``, where
    ``{{char}}`` is that member and ``<FIELDNAME>`` the field's name; each member's depth
    prompt goes into the chat. ``scenario_override``/``examples_override`` are the chat's own
    scenario and examples, which replace the joined ones as in SillyTavern."""

    members: tuple[CharacterFields, ...]
    muted: tuple[str, ...] = ()
    mode: GenerationMode = "swap"
    join_muted: bool = False
    join_prefix: str = ""
    join_suffix: str = ""
    scenario_override: str = ""
    examples_override: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """Every member's name in list order (``{{group}}``)."""
        return tuple(member.name for member in self.members)

    @property
    def unmuted_names(self) -> tuple[str, ...]:
        """The unmuted members' names in list order (``{{groupNotMuted}}``)."""
        return tuple(m.name for m in self.members if m.name not in self.muted)


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """The user's persona: its description and where it goes."""

    description: str = ""
    position: int = PERSONA_IN_PROMPT
    depth: int = 2
    role: int = 0

    @property
    def placement(self) -> int:
        """Where the description goes: ``position``, with the deprecated AFTER_CHAR read as
        IN_PROMPT (SillyTavern rewrites it so when the persona is loaded)."""
        return PERSONA_IN_PROMPT if self.position == PERSONA_AFTER_CHAR else self.position


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorNote:
    """The chat's Author's Note."""

    text: str = ""
    interval: int = 1
    position: int = NOTE_IN_CHAT
    depth: int = 4
    role: int = 0
    allow_wi_scan: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    """A memory chosen by the caller for this turn (compat_plus and native)."""

    id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceInput:
    """Text another model instance contributes to the narrator's prompt (e.g. the director's
    instructions), compat_plus and native only."""

    slot: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssemblyInput:
    """Everything one assembly needs. ``user_input`` (if any) is the newest user message and
    is not part of ``history``. ``max_context``/``max_tokens`` override the preset's values.
    ``group`` makes it a group turn, ``character`` being the speaker."""

    preset: Preset
    character: CharacterFields
    history: HistorySource
    user_name: str = "User"
    user_input: str | None = None
    persona: Persona = field(default_factory=Persona)
    author_note: AuthorNote | None = None
    books: Sequence[BookSource] = ()
    world_info: WorldInfoSettings = field(default_factory=WorldInfoSettings)
    timed_state: TimedState = field(default_factory=TimedState)
    mode: Mode = "compat_strict"
    generation_type: str = "normal"
    max_context: int | None = None
    max_tokens: int | None = None
    seed: int | str = 0
    dry_run: bool = False
    pin_examples: bool = False
    group: GroupPrompt | None = None
    use_prefill: bool = False
    memory: Sequence[MemoryItem] = ()
    memory_position: MemoryPosition = "before_chat"
    instances: Sequence[InstanceInput] = ()
    tool_results: Sequence[str] = ()

    @property
    def is_group(self) -> bool:
        """Whether this is a group turn (a :class:`GroupPrompt` is given): the group chat
        prompt and nudge are used and other speakers' lines carry their names."""
        return self.group is not None
