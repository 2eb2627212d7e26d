"""Prompt-injection hygiene for stored memory text.

Memory text comes from model output and, through it, from users; once stored it is replayed
into every later prompt, so text that tries to steer the model is a lasting attack. Two layers:

* :func:`neutralize` runs on write: it strips invisible control characters and replaces role
  markers, fake system headers, memory-tag look-alikes and "ignore previous instructions"
  phrasings (English and Chinese) with a visible placeholder, and reports what it found so the
  caller can lower the record's confidence and flag it.
* :func:`quote_for_injection` runs on read: whatever got stored is rendered as one inert line
  of data (angle brackets replaced, no line breaks, bounded length), under a header that says
  the block holds notes, not instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

FILTERED = "[filtered]"
# One memory line in the prompt never exceeds this. Records are injected as whole units
# (engine.memory.units), so only a single unit longer than this by itself is ever cut, and
# the injection result carries a warning naming it.
MAX_INJECTED_ITEM_CHARS = 600

# Zero-width, bidi-control and other invisible format characters used to hide payloads.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\u00ad]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Chat-template special tokens: <|im_start|>, <|system|>, <|eot_id|>, <|endoftext|>...
    ("role_token", re.compile(r"<\|[^|<>\n]{1,40}\|>")),
    ("role_token", re.compile(r"</?s>|<<\s*/?\s*SYS\s*>>|\[/?INST\]", re.IGNORECASE)),
    ("role_token", re.compile(r"</?(?:start_of_turn|end_of_turn)>", re.IGNORECASE)),
    # Fake headers: "### System:", "SYSTEM:", "Developer note:" at a line start, "### Instruction".
    (
        "fake_header",
        re.compile(
            r"(?im)^[ \t>*=\-]*(?:#{1,6}[ \t]*)?(?:system|developer)"
            r"(?:[ \t]+(?:prompt|message|note|override))?[ \t]*[:：]"
        ),
    ),
    (
        "fake_header",
        re.compile(r"(?im)^[ \t]*#{1,6}[ \t]*(?:instructions?|assistant|user|response)\b[ \t]*:?"),
    ),
    ("fake_header", re.compile(r"(?i)\[\s*(?:system|developer)(?:\s+\w+)?\s*\]")),
    ("fake_header", re.compile(r"(?im)^[ \t#]*(?:系统|系統)(?:提示|消息|指令)?[ \t]*[:：]")),
    (
        "fake_header",
        re.compile(
            r"(?i)\[\s*(?:memory(?:\s+facts)?|open\s+loops|recent\s+micro\s+summaries"
            r"|macro\s+summary|recalled\s+from\s+earlier)\s*\]"
        ),
    ),
    # The memory tags themselves (opening or closing), so stored text cannot break out of a tag.
    ("memory_tag", re.compile(r"(?i)</?\s*(?:summary|memory|memo|摘要|记忆|記憶)\s*/?>")),
    # "ignore / disregard / forget (all) (the) previous|prior|above ... instructions|rules".
    (
        "override",
        re.compile(
            r"(?i)\b(?:ignore|disregard|forget|override|bypass)\b[\w\s,'-]{0,30}?"
            r"\b(?:previous|prior|above|earlier|preceding|all|any|your|the\s+system)\b"
            r"[\w\s'-]{0,30}?\b(?:instructions?|prompts?|rules|guidelines|directions?"
            r"|messages?|context)\b"
        ),
    ),
    (
        "override",
        re.compile(
            r"(?i)\byou\s+are\s+now\s+(?:dan\b|free\s+(?:of|from)|no\s+longer\s+bound"
            r"|an?\s+(?:unrestricted|unfiltered|jailbroken|uncensored))"
        ),
    ),
    ("override", re.compile(r"(?i)\bnew\s+(?:system\s+)?instructions?\s*[:：]")),
    ("override", re.compile(r"(?i)\b(?:reveal|print|repeat)\s+(?:your|the)\s+system\s+prompt")),
    (
        "override",
        re.compile(
            r"(?:忽略|无视|無視|忽视|忘记|忘掉|不要理会|不要遵守|跳过)掉?你?"
            r"(?:以上|之前|前面|上面|上述|先前|此前|所有|全部|一切)"
            r"[^。！？\n]{0,10}?(?:指令|指示|提示|规则|規則|设定|設定|要求|命令|内容)"
        ),
    ),
    (
        "override",
        re.compile(
            r"(?:从现在开始|從現在開始|现在起)[，,]?你(?:必须|只能|不再)"
            r"|你(?:现在|現在)是(?:一个)?(?:没有限制|不受限制|无限制|DAN|开发者模式)"
        ),
    ),
    ("override", re.compile(r"(?:系统提示词|系統提示詞|系统指令)")),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SanitizeResult:
    """The cleaned text and the names of the patterns that fired (empty: nothing found)."""

    text: str
    reasons: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        """Whether anything instruction-like was found."""
        return bool(self.reasons)


def neutralize(text: str) -> SanitizeResult:
    """Clean memory text on write; benign prose comes back unchanged."""
    reasons: list[str] = []
    cleaned = _INVISIBLE.sub("", text)
    if cleaned != text:
        reasons.append("invisible_chars")
    stripped = _CONTROL.sub("", cleaned)
    if stripped != cleaned:
        reasons.append("control_chars")
    cleaned = stripped
    for name, pattern in _PATTERNS:
        cleaned, count = pattern.subn(FILTERED, cleaned)
        if count and name not in reasons:
            reasons.append(name)
    return SanitizeResult(text=cleaned, reasons=tuple(reasons))


QUOTE_CACHE_SIZE: Final = 16_384
"""Quoted lines kept between calls: a turn's ranking and packing quote every candidate unit,
and the same units come back turn after turn, so each is filtered once (the result depends
only on the text and the cut)."""


def quote_for_injection(text: str, *, max_chars: int = MAX_INJECTED_ITEM_CHARS) -> str:
    """Render stored text as one inert line of data for the memory block.

    Runs the write-time filter again (older rows may predate it), replaces angle brackets so no
    tag or special token can be formed, folds line breaks so no line can pose as a header, and
    cuts to ``max_chars``.
    """
    return _quoted(text, max_chars)


@lru_cache(maxsize=QUOTE_CACHE_SIZE)
def _quoted(text: str, max_chars: int) -> str:
    cleaned = neutralize(text).text
    cleaned = cleaned.replace("<", "\u2039").replace(">", "\u203a")
    cleaned = " / ".join(part.strip() for part in cleaned.splitlines() if part.strip())
    if len(cleaned) > max_chars:
        cleaned = cleaned[: max_chars - 1].rstrip() + "\u2026"
    return cleaned
