"""SillyTavern Chat Completion presets: parse, query and export losslessly.

A preset is the JSON file SillyTavern keeps under "OpenAI Settings": sampling values, the utility
prompts, the behaviour switches, the ``prompts`` list and its ``prompt_order``. Unknown keys are
kept verbatim in ``raw`` so :func:`preset_to_json` writes back what was read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar, get_args

from engine.errors import FormatError
from engine.formats.fieldread import FieldReader, merge_known
from engine.formats.preset_kinds import refuse_other_kinds

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = get_args(Role)

# prompt_order owners: the Chat Completion prompt manager reads 100001; 100000 is the legacy id.
CHARACTER_ID_GLOBAL = 100001
CHARACTER_ID_LEGACY = 100000

INJECTION_RELATIVE = 0
INJECTION_ABSOLUTE = 1  # "in-chat": inserted into the history at injection_depth
DEFAULT_INJECTION_DEPTH = 4
DEFAULT_INJECTION_ORDER = 100

NAMES_NONE = -1
NAMES_DEFAULT = 0
NAMES_COMPLETION = 1
NAMES_CONTENT = 2
NAMES_MODES = (NAMES_NONE, NAMES_DEFAULT, NAMES_COMPLETION, NAMES_CONTENT)

MARKER_IDS = (
    "dialogueExamples",
    "chatHistory",
    "worldInfoBefore",
    "worldInfoAfter",
    "charDescription",
    "charPersonality",
    "scenario",
    "personaDescription",
)
TEXT_BUILTIN_IDS = ("main", "nsfw", "jailbreak", "enhanceDefinitions")
BUILTIN_IDS = TEXT_BUILTIN_IDS + MARKER_IDS
DEFAULT_MAIN_PROMPT = (
    "Write {{char}}'s next reply in a fictional chat between {{charIfNotGroup}} and {{user}}."
)

# The order used when a preset has neither a 100001 nor a 100000 list (identifier, enabled).
DEFAULT_PROMPT_ORDER: tuple[tuple[str, bool], ...] = (
    ("main", True),
    ("worldInfoBefore", True),
    ("personaDescription", True),
    ("charDescription", True),
    ("charPersonality", True),
    ("scenario", True),
    ("enhanceDefinitions", False),
    ("nsfw", True),
    ("worldInfoAfter", True),
    ("dialogueExamples", True),
    ("chatHistory", True),
    ("jailbreak", True),
)

# Preset key -> legacy in-memory settings key, accepted as an alias on import.
SETTING_ALIASES = {
    "temperature": "temp_openai",
    "frequency_penalty": "freq_pen_openai",
    "presence_penalty": "pres_pen_openai",
    "top_p": "top_p_openai",
    "top_k": "top_k_openai",
    "top_a": "top_a_openai",
    "min_p": "min_p_openai",
    "repetition_penalty": "repetition_penalty_openai",
}
LEGACY_PROMPT_KEYS = {
    "main_prompt": "main",
    "nsfw_prompt": "nsfw",
    "jailbreak_prompt": "jailbreak",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PresetPrompt:
    """One entry of ``prompts``. ``system_prompt`` is ``None`` when the key was absent: such
    custom prompts are never placed relatively (SillyTavern's quirk, kept on purpose)."""

    identifier: str
    name: str = ""
    role: Role = "system"
    content: str = ""
    system_prompt: bool | None = None
    marker: bool = False
    injection_position: int = INJECTION_RELATIVE
    injection_depth: int = DEFAULT_INJECTION_DEPTH
    injection_order: int = DEFAULT_INJECTION_ORDER
    injection_trigger: tuple[str, ...] = ()
    forbid_overrides: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    imported: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def in_chat(self) -> bool:
        """Whether the prompt is inserted into the chat history (absolute position)."""
        return self.injection_position == INJECTION_ABSOLUTE

    def triggered_by(self, generation_type: str) -> bool:
        """Whether the prompt takes part in a generation of this type."""
        return not self.injection_trigger or generation_type in self.injection_trigger


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptOrderItem:
    """One slot of a ``prompt_order`` list."""

    identifier: str
    enabled: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptOrder:
    """The ordered prompt slots of one ``character_id``."""

    character_id: int
    order: tuple[PromptOrderItem, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    """Sampler values sent with the request (preset key names)."""

    temperature: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    top_p: float = 1.0
    top_k: float = 0.0
    top_a: float = 0.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    seed: int = -1
    n: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A Chat Completion preset. Field names follow the preset file; see the module docs."""

    source: str = ""
    prompts: tuple[PresetPrompt, ...] = ()
    prompt_orders: tuple[PromptOrder, ...] = ()
    sampling: Sampling = field(default_factory=Sampling)
    openai_max_context: int = 4095
    openai_max_tokens: int = 300
    names_behavior: int = NAMES_DEFAULT
    squash_system_messages: bool = False
    assistant_prefill: str = ""
    assistant_impersonation: str = ""
    continue_prefill: bool = False
    continue_postfix: str = " "
    stream_openai: bool = False
    use_sysprompt: bool = False
    custom_prompt_post_processing: str = ""
    wi_format: str = "{0}"
    scenario_format: str = "{{scenario}}"
    personality_format: str = "{{personality}}"
    impersonation_prompt: str = ""
    new_chat_prompt: str = "[Start a new Chat]"
    new_group_chat_prompt: str = "[Start a new group chat. Group members: {{group}}]"
    new_example_chat_prompt: str = "[Example Chat]"
    continue_nudge_prompt: str = (
        "[Continue your last message without repeating its original content.]"
    )
    group_nudge_prompt: str = "[Write the next reply only as {{char}}.]"
    send_if_empty: str = ""
    extensions: Mapping[str, Any] = field(default_factory=dict, compare=False)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    imported: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def prompt(self, identifier: str) -> PresetPrompt | None:
        """The prompt with this identifier, including built-ins the file lacks."""
        for prompt in self.prompts:
            if prompt.identifier == identifier:
                return prompt
        return _BUILTIN_PROMPTS.get(identifier)

    def effective_order(self) -> tuple[PromptOrderItem, ...]:
        """The slots assembly uses: the 100001 list, else 100000, else the default order;
        slots naming a prompt that does not exist are dropped."""
        chosen: tuple[PromptOrderItem, ...] | None = None
        for wanted in (CHARACTER_ID_GLOBAL, CHARACTER_ID_LEGACY):
            for order in self.prompt_orders:
                if order.character_id == wanted:
                    chosen = order.order
                    break
            if chosen is not None:
                break
        if chosen is None:
            chosen = tuple(
                PromptOrderItem(identifier=ident, enabled=on) for ident, on in DEFAULT_PROMPT_ORDER
            )
        return tuple(item for item in chosen if self.prompt(item.identifier) is not None)

    @property
    def regex_scripts(self) -> tuple[Mapping[str, Any], ...]:
        """The preset-scoped regex scripts (``extensions.regex_scripts``), unparsed."""
        scripts = self.extensions.get("regex_scripts")
        if not isinstance(scripts, list):
            return ()
        return tuple(s for s in scripts if isinstance(s, Mapping))


_BUILTIN_PROMPTS: dict[str, PresetPrompt] = {
    ident: PresetPrompt(
        identifier=ident,
        system_prompt=True,
        marker=ident in MARKER_IDS,
        content=DEFAULT_MAIN_PROMPT if ident == "main" else "",
    )
    for ident in BUILTIN_IDS
}
_SCALAR_FIELDS = tuple(
    f.name
    for f in fields(Preset)
    if f.name not in ("source", "prompts", "prompt_orders", "sampling", "extensions", "raw")
    and f.name != "imported"
)
_PRESET_DEFAULTS = Preset()


PRESET_OBJECT = "a preset object"
"""What a preset file must hold, as import errors name it ("expected a preset object,
got a string")."""


def parse_preset(data: object, *, source: str) -> Preset:
    """Read a Chat Completion preset (decoded JSON). Raises :class:`FormatError` naming
    ``source``, the field and the problem when the file is malformed, or naming what the file
    is when it is another kind of SillyTavern file (an instruct template, a sampler preset)."""
    reader = FieldReader(data, source=source, path="")
    refuse_other_kinds(reader.data, source=source)
    values: dict[str, Any] = {}
    for name in _SCALAR_FIELDS:
        default = getattr(_PRESET_DEFAULTS, name)
        if isinstance(default, bool):
            values[name] = reader.boolean(name, default)
        elif isinstance(default, int):
            values[name] = reader.integer(name, default)
        else:
            values[name] = reader.string(name, default)
    if "names_behavior" not in reader.data and reader.boolean("names_in_completion"):
        values["names_behavior"] = NAMES_COMPLETION
    if values["names_behavior"] not in NAMES_MODES:
        raise reader.fail("names_behavior", "expected -1, 0, 1 or 2")
    if values["openai_max_context"] <= 0:
        raise reader.fail("openai_max_context", "must be a positive number of tokens")
    if values["openai_max_tokens"] < 0:
        raise reader.fail("openai_max_tokens", "must not be negative")
    prompts = [
        _parse_prompt(item, reader, index) for index, item in enumerate(reader.items("prompts"))
    ]
    prompts = _migrate_legacy_prompts(prompts, reader)
    preset = Preset(
        source=source,
        prompts=tuple(prompts),
        prompt_orders=_parse_orders(reader),
        sampling=_parse_sampling(reader),
        extensions=reader.mapping("extensions"),
        raw=copy.deepcopy(dict(reader.data)),
        **values,
    )
    return _with_imported(preset)


def _parse_sampling(reader: FieldReader) -> Sampling:
    values: dict[str, Any] = {}
    defaults = Sampling()
    for f in fields(Sampling):
        key = f.name if reader.has(f.name) else SETTING_ALIASES.get(f.name, f.name)
        default = getattr(defaults, f.name)
        if isinstance(default, int):
            values[f.name] = reader.integer(key, default)
        else:
            values[f.name] = reader.number(key, default)
    return Sampling(**values)


def _parse_prompt(item: object, parent: FieldReader, index: int) -> PresetPrompt:
    r = FieldReader(item, source=parent.source, path=f"prompts[{index}]")
    identifier = r.string("identifier")
    if not identifier:
        raise r.fail("identifier", "every prompt needs an identifier")
    role = r.string("role", "system") or "system"
    if role not in ROLES:
        raise r.fail("role", f"expected system, user or assistant, got {role!r:.30}")
    position = r.integer("injection_position", INJECTION_RELATIVE)
    if position not in (INJECTION_RELATIVE, INJECTION_ABSOLUTE):
        raise r.fail("injection_position", "expected 0 (relative) or 1 (in-chat)")
    depth = r.integer("injection_depth", DEFAULT_INJECTION_DEPTH)
    if depth < 0:
        raise r.fail("injection_depth", "must not be negative")
    prompt = PresetPrompt(
        identifier=identifier,
        name=r.string("name"),
        role=role,
        content=r.string("content"),
        system_prompt=r.optional_bool("system_prompt"),
        marker=r.boolean("marker"),
        injection_position=position,
        injection_depth=depth,
        injection_order=r.integer("injection_order", DEFAULT_INJECTION_ORDER),
        injection_trigger=r.strings("injection_trigger"),
        forbid_overrides=r.boolean("forbid_overrides"),
        raw=copy.deepcopy(dict(r.data)),
    )
    return _with_imported(prompt)


def _migrate_legacy_prompts(
    prompts: list[PresetPrompt], reader: FieldReader
) -> list[PresetPrompt]:
    """Old presets kept main/nsfw/jailbreak as top-level strings; move them into prompts."""
    present = {p.identifier for p in prompts}
    for key, ident in LEGACY_PROMPT_KEYS.items():
        text = reader.string(key)
        if not reader.has(key) or ident in present:
            continue
        builtin = _BUILTIN_PROMPTS[ident]
        prompts.append(
            PresetPrompt(identifier=ident, system_prompt=True, content=text, name=builtin.name)
        )
    return prompts


def _parse_orders(reader: FieldReader) -> tuple[PromptOrder, ...]:
    orders: list[PromptOrder] = []
    for index, item in enumerate(reader.items("prompt_order")):
        r = FieldReader(item, source=reader.source, path=f"prompt_order[{index}]")
        character_id = r.optional_int("character_id")
        if character_id is None:
            raise r.fail("character_id", "missing")
        slots: list[PromptOrderItem] = []
        for slot_index, slot in enumerate(r.items("order")):
            s = FieldReader(slot, source=r.source, path=f"{r.where('order')}[{slot_index}]")
            ident = s.string("identifier")
            if not ident:
                raise s.fail("identifier", "every order slot needs an identifier")
            slots.append(PromptOrderItem(identifier=ident, enabled=s.boolean("enabled", True)))
        orders.append(PromptOrder(character_id=character_id, order=tuple(slots)))
    return tuple(orders)


def _prompt_values(prompt: PresetPrompt) -> dict[str, Any]:
    values: dict[str, Any] = {
        "identifier": prompt.identifier,
        "name": prompt.name,
        "role": prompt.role,
        "content": prompt.content,
        "marker": prompt.marker,
        "injection_position": prompt.injection_position,
        "injection_depth": prompt.injection_depth,
        "injection_order": prompt.injection_order,
        "injection_trigger": list(prompt.injection_trigger),
        "forbid_overrides": prompt.forbid_overrides,
    }
    if prompt.system_prompt is not None:
        values["system_prompt"] = prompt.system_prompt
    return values


def _preset_values(preset: Preset) -> dict[str, Any]:
    values = {name: getattr(preset, name) for name in _SCALAR_FIELDS}
    for f in fields(Sampling):
        values[f.name] = getattr(preset.sampling, f.name)
    values["prompt_order"] = [
        {
            "character_id": order.character_id,
            "order": [{"identifier": s.identifier, "enabled": s.enabled} for s in order.order],
        }
        for order in preset.prompt_orders
    ]
    return values


_PROMPT_DEFAULTS = _prompt_values(PresetPrompt(identifier=""))
_PRESET_VALUE_DEFAULTS = _preset_values(_PRESET_DEFAULTS)
_PRESET_VALUE_DEFAULTS["prompt_order"] = []


_T = TypeVar("_T", Preset, PresetPrompt)


def _with_imported(obj: _T) -> _T:
    values = _prompt_values(obj) if isinstance(obj, PresetPrompt) else _preset_values(obj)
    object.__setattr__(obj, "imported", values)
    return obj


def preset_to_json(preset: Preset) -> dict[str, Any]:
    """The preset as SillyTavern's JSON: the imported object with every changed field written
    back; unknown keys and unchanged spellings survive."""
    out = merge_known(preset.raw, _preset_values(preset), _PRESET_VALUE_DEFAULTS, preset.imported)
    out["prompts"] = [
        merge_known(p.raw, _prompt_values(p), _PROMPT_DEFAULTS, p.imported) for p in preset.prompts
    ]
    if preset.extensions or "extensions" in preset.raw:
        out["extensions"] = copy.deepcopy(dict(preset.extensions))
    return out


__all__ = [
    "BUILTIN_IDS",
    "CHARACTER_ID_GLOBAL",
    "CHARACTER_ID_LEGACY",
    "DEFAULT_PROMPT_ORDER",
    "INJECTION_ABSOLUTE",
    "INJECTION_RELATIVE",
    "MARKER_IDS",
    "FormatError",
    "Preset",
    "PresetPrompt",
    "PromptOrder",
    "PromptOrderItem",
    "Sampling",
    "parse_preset",
    "preset_to_json",
]
