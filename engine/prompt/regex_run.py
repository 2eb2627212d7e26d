"""Running SillyTavern regex scripts on text, exactly as ST does, under a timeout.

Per script (ST ``runRegexScript``): the find pattern (after optional macro substitution) is parsed
as a JS literal; without ``g`` only the first match is replaced. The replacement is built per
match: ``{{match}}`` becomes ``$0``, then every ``$N`` / ``$<name>`` is replaced by the capture
(trim strings removed from it; an empty or missing capture gives ``""``; ``$N`` past the last
group reads JS's extra callback arguments: the UTF-16 offset, then the whole input). Nothing else
is special: ``$&``, ``$$``, ``$``' and ``$```` stay literal. Macros run last, on the assembled
replacement. Where ST's own code would throw (``$N`` naming the named-groups object, or a
non-zero offset with trimStrings set) the script is skipped with a "script_error" warning.

Every match runs under ``timeout_s``: a pattern that backtracks catastrophically is abandoned,
the text is left as it was and a warning says which script was skipped. With a turn's
:class:`~engine.prompt.regex_budget.RegexBudget` each script also draws on the turn's total:
it runs under ``min(timeout_s, what remains)``, and once nothing remains it is skipped (the
budget's single warning names it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import regex  # type: ignore[import-untyped]  # no stubs are installed

from engine.formats.regex_scripts import RegexScript, SubstituteRegex
from engine.prompt.js_translate import has_nested_quantifier
from engine.prompt.jsregex import JsRegex, js_replace, parse_script_regex
from engine.prompt.regex_budget import RegexBudget, run_allowance

# Wall-clock bound for one script on one text (all its matches and replacements together).
REGEX_TIMEOUT_S = 0.25

Channel = Literal["store", "display", "prompt", "edit"]


class ScriptMacroExpander(Protocol):
    """Expands macros in a script's find pattern, trim strings and replacement: a callable
    already bound to where the text came from (unlike the assembler's
    :class:`~engine.prompt.inputs.MacroRenderer`, which is told the source and origin on each
    call); ``escape`` (when given) is applied to every macro's value."""

    def __call__(self, text: str, /, *, escape: Callable[[str], str] | None = None) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexWarning:
    """Why a script did not run as written.

    ``code``: "invalid_regex" (JS cannot compile it: inert), "timeout" (gave up after the
    timeout: skipped), "script_error" (SillyTavern itself would throw here: skipped) or, from
    :func:`lint_script` only, "backtracking_risk".
    """

    code: str
    script_id: str
    script_name: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexRun:
    """The text after the scripts ran, and what went wrong along the way."""

    text: str
    warnings: tuple[RegexWarning, ...] = ()


_REGEX_SPECIAL = frozenset(".^$*+?{}[]\\/|()")
_CONTROL_NAMES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\f": "\\f", "\0": "\\0"}
_MATCH_MACRO = regex.compile(r"\{\{match\}\}", regex.IGNORECASE)
_GROUP_REF = regex.compile(r"\$(\d+)|\$<([^>]+)>")


def sanitize_regex_macro(value: str) -> str:
    """ST's escaping of a macro value for ``substituteRegex`` = 2 (ESCAPED)."""
    out: list[str] = []
    for ch in value:
        if ch in _CONTROL_NAMES:
            out.append(_CONTROL_NAMES[ch])
        elif ch in _REGEX_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def script_is_eligible(
    script: RegexScript, *, placement: int, channel: Channel, depth: int | None = None
) -> bool:
    """ST's ``getRegexedString`` filter: channel flags, runOnEdit, depth range, placement."""
    if script.disabled:
        return False
    is_markdown = channel == "display"
    is_prompt = channel == "prompt"
    if not (
        (script.markdown_only and is_markdown)
        or (script.prompt_only and is_prompt)
        or (
            not script.markdown_only
            and not script.prompt_only
            and not is_markdown
            and not is_prompt
        )
    ):
        return False
    if channel == "edit" and not script.run_on_edit:
        return False
    if depth is not None:
        if script.min_depth is not None and script.min_depth >= -1 and depth < script.min_depth:
            return False
        if script.max_depth is not None and script.max_depth >= 0 and depth > script.max_depth:
            return False
    return placement in script.placement


def lint_script(script: RegexScript) -> tuple[RegexWarning, ...]:
    """What an importer should tell the user about a script before it ever runs.

    "invalid_regex": JS cannot compile ``findRegex``, so the script is inert. "backtracking_risk":
    a repeated group holds an unbounded repeat (``(a+)+$``), the classic catastrophic pattern;
    it still runs, under ``REGEX_TIMEOUT_S`` like every script.
    """
    if not script.find_regex:
        return ()
    compiled = parse_script_regex(script.find_regex)
    if compiled is None:
        return (_warning(script, "invalid_regex", f"cannot compile {script.find_regex!r:.120}"),)
    if has_nested_quantifier(compiled.source):
        return (
            _warning(
                script,
                "backtracking_risk",
                f"{compiled.source!r:.120} nests unbounded repeats; it runs under a "
                f"{REGEX_TIMEOUT_S}s timeout",
            ),
        )
    return ()


def apply_scripts(
    text: str,
    scripts: Iterable[RegexScript],
    *,
    placement: int,
    channel: Channel,
    depth: int | None = None,
    render_macros: ScriptMacroExpander | None = None,
    timeout_s: float = REGEX_TIMEOUT_S,
    budget: RegexBudget | None = None,
) -> RegexRun:
    """Run every eligible script in order (the caller passes global, preset, then character).

    ``channel``: "store" for text being saved (user input on send, a reply on receive),
    "edit" for a stored message being edited, "display" for rendering (markdownOnly scripts)
    and "prompt" for the outgoing prompt (promptOnly scripts). ``depth`` is the message's
    distance from the end (0 = last); None skips the min/max depth checks, as ST does.
    ``budget`` is the turn's total for regex work (see :func:`run_script`).
    """
    warnings: list[RegexWarning] = []
    for script in scripts:
        if not script_is_eligible(script, placement=placement, channel=channel, depth=depth):
            continue
        run = run_script(
            script, text, render_macros=render_macros, timeout_s=timeout_s, budget=budget
        )
        text = run.text
        warnings.extend(run.warnings)
    return RegexRun(text=text, warnings=tuple(warnings))


def run_script(
    script: RegexScript,
    text: str,
    *,
    render_macros: ScriptMacroExpander | None = None,
    timeout_s: float = REGEX_TIMEOUT_S,
    budget: RegexBudget | None = None,
) -> RegexRun:
    """Run one script on ``text`` regardless of placement and channel (ST ``runRegexScript``).

    With ``budget``, the script runs under ``min(timeout_s, what remains of it)`` and the time
    it takes is charged to it; a script that finds the budget spent, or is cut short by it, is
    skipped without a warning of its own (the budget's warning names it).
    """
    if script.disabled or not script.find_regex or not text:
        return RegexRun(text=text)
    find = script.find_regex
    if render_macros is not None and script.substitute_regex == SubstituteRegex.RAW:
        find = render_macros(find)
    elif render_macros is not None and script.substitute_regex == SubstituteRegex.ESCAPED:
        find = render_macros(find, escape=sanitize_regex_macro)
    compiled = parse_script_regex(find)
    if compiled is None:
        return RegexRun(
            text=text,
            warnings=(_warning(script, "invalid_regex", f"cannot compile {find!r:.120}; inert"),),
        )
    limit = run_allowance(budget, timeout_s)
    if budget is not None and limit <= 0:
        budget.skip_script(script.script_name)
        return RegexRun(text=text)
    trims = tuple(render_macros(t) if render_macros else t for t in script.trim_strings)
    replacer = _Replacer(compiled, script.replace_string, trims, render_macros, text)
    started = budget.now() if budget is not None else 0.0
    try:
        result = js_replace(compiled, text, replacer, timeout_s=limit)
    except _ScriptError as exc:
        return RegexRun(text=text, warnings=(_warning(script, "script_error", f"{exc}; skipped"),))
    except TimeoutError:
        if budget is not None and limit < timeout_s:
            budget.skip_script(script.script_name)
            return RegexRun(text=text)
        return RegexRun(
            text=text,
            warnings=(
                _warning(
                    script, "timeout", f"gave up after REGEX_TIMEOUT_S={timeout_s}s; skipped"
                ),
            ),
        )
    finally:
        if budget is not None:
            budget.charge_since(started)
    return RegexRun(text=result)


def _warning(script: RegexScript, code: str, problem: str) -> RegexWarning:
    return RegexWarning(
        code=code,
        script_id=script.id,
        script_name=script.script_name,
        message=f"regex script {script.script_name!r}: {problem}",
    )


class _Replacer:
    """The per-match callback ST passes to ``String.prototype.replace``."""

    def __init__(
        self,
        compiled: JsRegex,
        replace_string: str,
        trims: Sequence[str],
        render_macros: ScriptMacroExpander | None,
        text: str,
    ) -> None:
        self.compiled = compiled
        self.template = _MATCH_MACRO.sub("$0", replace_string)
        self.trims = trims
        self.render_macros = render_macros
        self.text = text

    def __call__(self, match: regex.Match[str]) -> str:
        assembled = _GROUP_REF.sub(lambda ref: self.reference(match, ref), self.template)
        return self.render_macros(assembled) if self.render_macros else assembled

    def reference(self, match: regex.Match[str], ref: regex.Match[str]) -> str:
        if ref.group(1) is not None:
            index = int(ref.group(1))
            value = self.argument(match, index)
            if value and self.trims and index == self.compiled.group_count + 1:
                # ST calls String.replaceAll on the offset, a number: a TypeError in JS.
                raise _ScriptError(f"${index} is the match offset, which trimStrings cannot trim")
        else:
            number = self.compiled.group_names.get(ref.group(2))
            value = match.group(number) if number is not None else None
        if not value:  # JS falsy: undefined, "" and the offset 0
            return ""
        for trim in self.trims:
            value = value.replace(trim, "")
        return value

    def argument(self, match: regex.Match[str], index: int) -> str | None:
        """``arguments[index]`` of JS's replace callback, as text (None when undefined)."""
        groups = self.compiled.group_count
        if index <= groups:
            found: str | None = match.group(index)
            return found
        if index == groups + 1:  # the match offset, counted in UTF-16 code units
            offset = len(self.text[: match.start()].encode("utf-16-le")) // 2
            return str(offset) if offset else None
        if index == groups + 2:
            return self.text
        if index == groups + 3 and self.compiled.group_names:
            # JS passes the null-prototype groups object, which cannot become text: TypeError.
            raise _ScriptError(f"${index} is the named-groups object, which is not text")
        return None


class _ScriptError(Exception):
    """Where SillyTavern's own replacement code would throw; the script is then skipped."""
