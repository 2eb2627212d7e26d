"""Instruct-mode sequences, system prompts, separators and the app macros (Author's Note,
reasoning wrappers, summary, image-prompt prefixes). Values are returned raw, without macro
substitution, as SillyTavern does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.macros.builtins_names import card_field
from engine.macros.registry import MacroDef, Registry

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

DEFAULT_SYSTEM_PROMPT = (
    "Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}."
)
#: SillyTavern's default instruct template (used when instruct mode is on and a key is unset).
DEFAULT_INSTRUCT: dict[str, str] = {
    "input_sequence": "### Instruction:",
    "output_sequence": "### Response:",
    "system_sequence": "",
    "input_suffix": "",
    "output_suffix": "",
    "system_suffix": "",
    "first_output_sequence": "",
    "last_output_sequence": "",
    "first_input_sequence": "",
    "last_input_sequence": "",
    "stop_sequence": "",
    "user_alignment_message": "",
    "last_system_sequence": "",
    "story_string_prefix": "",
    "story_string_suffix": "",
}
_DEFAULT_REASONING = {"prefix": "<think>", "suffix": "</think>", "separator": "\n"}


def _section(env: MacroEnv, key: str) -> dict[str, Any]:
    value = env.context.settings.get(key)
    return value if isinstance(value, dict) else {}


def _instruct(env: MacroEnv, key: str, fallback: str | None = None) -> str:
    instruct = _section(env, "instruct")
    if not instruct.get("enabled"):
        return ""
    value = instruct.get(key, DEFAULT_INSTRUCT.get(key, ""))
    if not value and fallback is not None:
        value = instruct.get(fallback, DEFAULT_INSTRUCT.get(fallback, ""))
    return value if isinstance(value, str) else ""


def _sysprompt(env: MacroEnv) -> tuple[bool, str]:
    section = _section(env, "sysprompt")
    content = section.get("content", DEFAULT_SYSTEM_PROMPT)
    return bool(section.get("enabled", True)), content if isinstance(content, str) else ""


def _default_system_prompt(env: MacroEnv, args: list[str]) -> str:
    enabled, content = _sysprompt(env)
    return content if enabled else ""


def _system_prompt(env: MacroEnv, args: list[str]) -> str:
    enabled, content = _sysprompt(env)
    if not enabled:
        return ""
    if env.context.settings.get("prefer_character_prompt", True):
        own = card_field(env, "char_prompt", env.context.card.char_prompt)
        if own:
            return own
    return content


def _context_value(env: MacroEnv, key: str) -> str:
    value = _section(env, "context").get(key, "***")
    return value if isinstance(value, str) else "***"


def _reasoning(env: MacroEnv, key: str) -> str:
    value = _section(env, "reasoning").get(key, _DEFAULT_REASONING[key])
    return value if isinstance(value, str) else ""


def _authors_note(env: MacroEnv, args: list[str]) -> str:
    note = env.context.chat_metadata.get("note_prompt")
    return note if isinstance(note, str) else env.context.authors_note


def install(registry: Registry) -> None:
    """Register instruct, prompt and app macros."""

    def instruct(name: str, key: str, fallback: str | None = None, *aliases: str) -> MacroDef:
        return MacroDef(
            name=name, aliases=aliases, handler=lambda e, a: _instruct(e, key, fallback)
        )

    defs = [
        instruct("instructStoryStringPrefix", "story_string_prefix"),
        instruct("instructStoryStringSuffix", "story_string_suffix"),
        instruct("instructUserPrefix", "input_sequence", None, "instructInput"),
        instruct("instructUserSuffix", "input_suffix"),
        instruct("instructAssistantPrefix", "output_sequence", None, "instructOutput"),
        instruct("instructAssistantSuffix", "output_suffix", None, "instructSeparator"),
        instruct("instructSystemPrefix", "system_sequence"),
        instruct("instructSystemSuffix", "system_suffix"),
        instruct(
            "instructFirstAssistantPrefix",
            "first_output_sequence",
            "output_sequence",
            "instructFirstOutputPrefix",
        ),
        instruct(
            "instructLastAssistantPrefix",
            "last_output_sequence",
            "output_sequence",
            "instructLastOutputPrefix",
        ),
        instruct("instructStop", "stop_sequence"),
        instruct("instructUserFiller", "user_alignment_message"),
        instruct("instructSystemInstructionPrefix", "last_system_sequence"),
        instruct(
            "instructFirstUserPrefix",
            "first_input_sequence",
            "input_sequence",
            "instructFirstInput",
        ),
        instruct(
            "instructLastUserPrefix", "last_input_sequence", "input_sequence", "instructLastInput"
        ),
        MacroDef(
            name="defaultSystemPrompt",
            aliases=("instructSystem", "instructSystemPrompt"),
            handler=_default_system_prompt,
        ),
        MacroDef(name="systemPrompt", handler=_system_prompt),
        MacroDef(
            name="exampleSeparator",
            aliases=("chatSeparator",),
            handler=lambda e, a: _context_value(e, "example_separator"),
        ),
        MacroDef(name="chatStart", handler=lambda e, a: _context_value(e, "chat_start")),
        MacroDef(name="authorsNote", handler=_authors_note),
        MacroDef(name="charAuthorsNote", handler=lambda e, a: e.context.char_authors_note),
        MacroDef(name="defaultAuthorsNote", handler=lambda e, a: e.context.default_authors_note),
        MacroDef(name="reasoningPrefix", handler=lambda e, a: _reasoning(e, "prefix")),
        MacroDef(name="reasoningSuffix", handler=lambda e, a: _reasoning(e, "suffix")),
        MacroDef(name="reasoningSeparator", handler=lambda e, a: _reasoning(e, "separator")),
        MacroDef(name="summary", handler=lambda e, a: e.context.summary),
        MacroDef(
            name="charPrefix", handler=lambda e, a: str(e.context.extra.get("charPrefix", ""))
        ),
        MacroDef(
            name="charNegativePrefix",
            handler=lambda e, a: str(e.context.extra.get("charNegativePrefix", "")),
        ),
    ]
    for definition in defs:
        registry.register(definition)
