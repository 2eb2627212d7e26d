"""Names and card fields: ``user``, ``char``, ``group``, ``notChar``, the card and persona fields
(their own macros expanded one level), greetings, examples, ``model``, ``isMobile``, and the
Core Profile's read-only names (``userName``, ``assistantName``, ``runKind``, ``promptMode``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from engine.macros.examples import format_examples
from engine.macros.registry import ArgSpec, MacroDef, Registry

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_NEWLINES = re.compile(r"\n+")


def card_field(env: MacroEnv, key: str, raw: str) -> str:
    """A card field with its macros expanded once (card macros inside it give ``''``)."""
    if not env.replace_character_card or not raw:
        return ""
    cached = env.card_cache.get(key)
    if cached is None:
        cached = env.evaluate(raw.strip(), replace_character_card=False)
        if env.context.settings.get("collapse_newlines"):
            cached = _NEWLINES.sub("\n", cached)
        cached = cached.replace("\r", "")
        env.card_cache[key] = cached
    return cached


def _setting(env: MacroEnv, key: str, default: bool) -> bool:
    value = env.context.settings.get(key, default)
    return bool(value)


def _group_names(env: MacroEnv, *, muted: bool, speaker: bool) -> str | None:
    """SillyTavern's ``getGroupValue`` (MacroEnvBuilder): the override if set, else the
    members' names joined with ", " (muted ones only with ``muted``, the speaker only with
    ``speaker``), else ``None`` outside a group."""
    if env.group is not None:
        return env.group
    members = env.context.group_members
    if not members:
        return None
    muted_names = env.context.group_muted
    return ", ".join(
        name
        for name in members
        if (muted or name not in muted_names) and (speaker or name != env.char)
    )


def _group(env: MacroEnv, args: list[str]) -> str:
    names = _group_names(env, muted=True, speaker=True)
    return env.char if names is None else names


def _group_not_muted(env: MacroEnv, args: list[str]) -> str:
    names = _group_names(env, muted=False, speaker=True)
    return env.char if names is None else names


def _not_char(env: MacroEnv, args: list[str]) -> str:
    # SillyTavern's macro engine leaves the user out in a group and muted members too
    # (getGroupValue with filterOutChar and the default includeMuted=false); solo it is the user.
    names = _group_names(env, muted=False, speaker=False)
    return env.user if names is None else names


def _scenario(env: MacroEnv, args: list[str]) -> str:
    override = env.context.chat_metadata.get("scenario")
    if isinstance(override, str) and override:
        return card_field(env, "scenario_override", override)
    return card_field(env, "scenario", env.context.card.scenario)


def _examples_raw(env: MacroEnv, args: list[str]) -> str:
    override = env.context.chat_metadata.get("mes_example")
    if isinstance(override, str) and override:
        return card_field(env, "mes_example_override", override)
    return card_field(env, "mes_examples", env.context.card.mes_examples)


def _char_prompt(env: MacroEnv, args: list[str]) -> str:
    if not _setting(env, "prefer_character_prompt", True):
        return ""
    override = env.context.chat_metadata.get("system_prompt")
    if isinstance(override, str) and override:
        return card_field(env, "char_prompt_override", override)
    return card_field(env, "char_prompt", env.context.card.char_prompt)


def _char_instruction(env: MacroEnv, args: list[str]) -> str:
    if not _setting(env, "prefer_character_jailbreak", True):
        return ""
    return card_field(env, "char_instruction", env.context.card.char_instruction)


def _greeting(env: MacroEnv, args: list[str]) -> str:
    index = int(args[0]) if args and args[0].strip() else 0
    card = env.context.card
    if index == 0:
        return card_field(env, "first_message", card.first_message)
    if 1 <= index <= len(card.alternate_greetings):
        return card_field(env, f"greeting_{index}", card.alternate_greetings[index - 1])
    return ""


def _field(key: str) -> MacroDef:
    def handler(env: MacroEnv, args: list[str]) -> str:
        return card_field(env, key, getattr(env.context.card, key))

    return MacroDef(name=f"__card_{key}", handler=handler)


def install(registry: Registry) -> None:
    """Register names and card fields."""

    def field_macro(name: str, key: str, aliases: tuple[str, ...] = ()) -> MacroDef:
        return MacroDef(name=name, aliases=aliases, handler=_field(key).handler)

    defs = [
        MacroDef(name="user", handler=lambda e, a: e.user),
        MacroDef(name="char", handler=lambda e, a: e.char),
        MacroDef(name="userName", handler=lambda e, a: e.user),
        MacroDef(name="assistantName", handler=lambda e, a: e.char),
        MacroDef(name="group", aliases=("charIfNotGroup",), handler=_group),
        MacroDef(name="groupNotMuted", handler=_group_not_muted),
        MacroDef(name="notChar", handler=_not_char),
        MacroDef(name="charPrompt", handler=_char_prompt),
        MacroDef(name="charInstruction", handler=_char_instruction),
        field_macro("charDescription", "description", ("description",)),
        field_macro("charPersonality", "personality", ("personality",)),
        MacroDef(name="charScenario", aliases=("scenario",), handler=_scenario),
        field_macro("persona", "persona"),
        MacroDef(name="mesExamplesRaw", handler=_examples_raw),
        MacroDef(name="mesExamples", handler=lambda e, a: format_examples(_examples_raw(e, a), e)),
        field_macro("charDepthPrompt", "char_depth_prompt"),
        field_macro("charCreatorNotes", "creator_notes", ("creatorNotes",)),
        MacroDef(
            name="charFirstMessage",
            aliases=("greeting",),
            handler=_greeting,
            args=(ArgSpec(name="index", type="integer", optional=True),),
        ),
        field_macro("charVersion", "char_version", ("version", "char_version")),
        MacroDef(name="model", handler=lambda e, a: e.context.model),
        MacroDef(name="isMobile", handler=lambda e, a: "false"),
        MacroDef(name="runKind", handler=lambda e, a: e.context.run_kind),
        MacroDef(name="promptMode", handler=lambda e, a: e.context.prompt_mode),
    ]
    for definition in defs:
        registry.register(definition)
