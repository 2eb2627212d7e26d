"""Regex scripts in the prompt channel, with macros rendered by the assembler's renderer.

SillyTavern expands macros in three places of a script: the replacement (after the captures
are put in), each trim string, and, with ``substituteRegex`` 1 (raw) or 2 (escaped), the find
pattern itself. :class:`ScriptRegex` is the :class:`~engine.prompt.inputs.PromptRegex` that
runs the session's scripts with those macros expanded by the same renderer as the rest of the
prompt (so ``{{user}}``, ``{{char}}`` and variables agree with the prompt text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.formats.regex_scripts import RegexScript
from engine.prompt.inputs import (
    GAME_MASTER,
    PLACEMENT_AI_OUTPUT,
    PLACEMENT_USER_INPUT,
    PLAYER,
    EscapingMacroRenderer,
    MacroRenderer,
    Origin,
)
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.regex_run import REGEX_TIMEOUT_S, RegexWarning, apply_scripts

# Chat text reaches the macro engine through a script's captures: it is rendered as player
# text (write macros typed in chat stay raw by default), like the messages themselves. Other
# placements (world info) carry only game masters' text.
CHAT_PLACEMENTS = (PLACEMENT_USER_INPUT, PLACEMENT_AI_OUTPUT)


class ScriptMacros:
    """The :class:`~engine.prompt.regex_run.ScriptMacroExpander` that
    :func:`~engine.prompt.regex_run.apply_scripts` takes, built on the
    assembler's :class:`~engine.prompt.inputs.MacroRenderer`.

    With ``escape`` (find patterns with ``substituteRegex`` = 2) every macro's value is passed
    through it. A renderer that cannot escape values leaves such a pattern as written rather
    than splice unescaped text (a name like ``A.B+``) into a regex.
    """

    def __init__(self, macros: MacroRenderer, *, source: str, origin: Origin) -> None:
        self.macros = macros
        self.source = source
        self.origin: Origin = origin

    def __call__(self, text: str, /, *, escape: Callable[[str], str] | None = None) -> str:
        """``text`` with macros expanded (values escaped when ``escape`` is given)."""
        if escape is None:
            return self.macros.render(text, source=self.source, origin=self.origin)
        if isinstance(self.macros, EscapingMacroRenderer):
            return self.macros.render_escaped(
                text, source=self.source, origin=self.origin, escape=escape
            )
        return text


class ScriptRegex:
    """A :class:`~engine.prompt.inputs.PromptRegex` running ``scripts`` (global, preset, then
    character, as given) in the prompt channel, each under ``timeout_s`` and all drawing on
    ``budget`` (the turn's total for regex work, when given). The warnings of every run are kept
    in :attr:`warnings` (each once)."""

    def __init__(
        self,
        scripts: Sequence[RegexScript],
        macros: MacroRenderer,
        *,
        timeout_s: float = REGEX_TIMEOUT_S,
        budget: RegexBudget | None = None,
    ) -> None:
        self.scripts = tuple(scripts)
        self.timeout_s = timeout_s
        self.budget = budget
        self.warnings: list[RegexWarning] = []
        self._chat = ScriptMacros(macros, source="history.regex", origin=PLAYER)
        self._other = ScriptMacros(macros, source="regex", origin=GAME_MASTER)

    def __call__(self, text: str, *, placement: int, depth: int | None) -> str:
        """The text after the eligible scripts."""
        if not self.scripts:
            return text
        run = apply_scripts(
            text,
            self.scripts,
            placement=placement,
            channel="prompt",
            depth=depth,
            render_macros=self._chat if placement in CHAT_PLACEMENTS else self._other,
            timeout_s=self.timeout_s,
            budget=self.budget,
        )
        for warning in run.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        return run.text

    @property
    def messages(self) -> list[str]:
        """The warnings' messages (each names its script)."""
        return [w.message for w in self.warnings]
