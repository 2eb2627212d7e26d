"""Split long replies into Discord messages without breaking their markdown.

A piece ends at the best boundary that fits: a paragraph, then a line, then a sentence, then a
word; a hard cut only when a single word is longer than a message. A boundary where no markdown
is open (code fence, inline code, bold, italic, underline, strike-through, spoiler) is preferred;
when the only boundaries that fit are inside one, the piece closes what is open and the next
piece reopens it (a code fence keeps its language), so every piece renders on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MESSAGE_LIMIT = 2000
MIN_FILL = 0.3  # a boundary earlier than this share of the limit makes too short a piece
CLOSE_RESERVE = 24  # room kept for closing/reopening markers when a cut is inside markdown

_PAIRED = ("**", "__", "~~", "||")
_SENTENCE_END = re.compile(r"[.!?…][)\"'»”]*\s")


@dataclass(frozen=True, slots=True)
class _State:
    """What is open at a position: a fence (with its language), inline code, span markers."""

    fence: str | None = None
    code: bool = False
    spans: tuple[str, ...] = ()

    @property
    def balanced(self) -> bool:
        return self.fence is None and not self.code and not self.spans

    def closing(self) -> str:
        if self.fence is not None:
            return "\n```"
        return ("`" if self.code else "") + "".join(reversed(self.spans))

    def opening(self) -> str:
        if self.fence is not None:
            return f"```{self.fence}\n"
        return "".join(self.spans) + ("`" if self.code else "")


def _toggle(spans: tuple[str, ...], marker: str) -> tuple[str, ...]:
    if marker in spans:
        index = len(spans) - 1 - spans[::-1].index(marker)
        return spans[:index] + spans[index + 1 :]
    return (*spans, marker)


def scan(text: str, start: _State | None = None) -> list[_State]:
    """The markdown state before each position of ``text`` (and after its end)."""
    states: list[_State] = []
    state = start or _State()
    i, n = 0, len(text)
    while i < n:
        states.append(state)
        step = 1
        if text.startswith("```", i):
            if state.fence is None:
                end = text.find("\n", i + 3)
                lang = text[i + 3 : end].strip() if end != -1 else ""
                state = _State(fence=lang if len(lang) < 20 else "")
            else:
                state = _State(spans=())
            step = 3
        elif state.fence is not None:
            pass
        elif text[i] == "`":
            state = _State(code=not state.code, spans=state.spans)
        elif state.code:
            pass
        elif text[i] == "\\":
            step = 2
        elif text[i : i + 2] in _PAIRED:
            state = _State(spans=_toggle(state.spans, text[i : i + 2]))
            step = 2
        elif text[i] == "*":
            state = _State(spans=_toggle(state.spans, "*"))
        elif text[i] == "_" and _word_edge(text, i):
            state = _State(spans=_toggle(state.spans, "_"))
        for _ in range(step - 1):
            if len(states) < n:
                states.append(state)
        i += step
    del states[n:]
    states.append(state)
    return states


def _word_edge(text: str, i: int) -> bool:
    before = text[i - 1] if i > 0 else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    return not (before.isalnum() and after.isalnum())


def _boundaries(window: str) -> list[list[int]]:
    """Cut positions (piece ends) by class, best class first, each list ascending."""
    paragraphs = [m.end() for m in re.finditer(r"\n\s*\n", window)]
    lines = [m.end() for m in re.finditer(r"\n", window)]
    sentences = [m.end() for m in _SENTENCE_END.finditer(window)]
    words = [m.end() for m in re.finditer(r"\s+", window)]
    return [paragraphs, lines, sentences, words]


def _pick(window: str, states: list[_State], lowest: int, balanced_only: bool) -> int | None:
    for positions in _boundaries(window):
        for pos in reversed(positions):
            if pos < lowest:
                break
            if pos < len(window) and (states[pos].balanced or not balanced_only):
                return pos
    return None


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters (see the module docstring)."""
    if limit <= CLOSE_RESERVE * 2:
        raise ValueError(f"limit {limit} is too small to split markdown safely")
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[: limit + 1]
        states = scan(window)
        lowest = int(limit * MIN_FILL)
        cut = _pick(window[:limit], states, lowest, balanced_only=True)
        if cut is None:
            room = limit - CLOSE_RESERVE
            cut = _pick(window[:room], states, lowest, balanced_only=False) or room
        state = states[cut]
        if state.fence is not None:
            # Inside a code block: keep the code's own whitespace, close and reopen the fence.
            pieces.append(rest[:cut].rstrip("\n") + state.closing())
            rest = state.opening() + rest[cut:]
        else:
            # Span markers must touch the text they wrap, so trim around the cut.
            pieces.append(rest[:cut].rstrip() + state.closing())
            rest = state.opening() + rest[cut:].lstrip()
    if rest.strip() or not pieces:
        pieces.append(rest)
    return pieces
