"""World info activation: which entries of which books enter the prompt, and where.

:func:`scan_world_info` runs SillyTavern's activation loop over several books at once: constants,
keys on the newest ``scan_depth`` messages, secondary logic, recursion with delay levels, seeded
probability, inclusion groups, sticky/cooldown/delay from a persisted :class:`TimedState`,
minimum activations and the token budget. The result lists the activated entries per position.

Only the scan window is read from the chat (``ScanWindow.newest``), so the cost does not grow
with the length of the chat.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from engine.formats.worldbook import POS_AT_DEPTH, WorldBook, WorldEntry
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.wi_groups import Candidate, filter_by_groups
from engine.prompt.wi_match import (
    Haystack,
    MatchOptions,
    match_key,
    parse_decorators,
    score_entry,
    secondary_passes,
)
from engine.prompt.wi_output import (
    FIRED_CONSTANT,
    FIRED_DECORATOR,
    FIRED_FORCED,
    FIRED_STICKY,
    WorldInfoResult,
    build_result,
)
from engine.prompt.wi_sources import (
    BOOK_KINDS,
    BookSource,
    ScanSources,
    ScanWindow,
    WorldInfoSettings,
)
from engine.prompt.wi_timed import TimedEffects, TimedState

# Hard bound on scan passes even when max_recursion_steps is 0 ("unlimited"), so a
# pathological book cannot loop for long: each pass must activate something new anyway.
MAX_SCAN_PASSES = 1000
# SillyTavern never scans more than this many messages.
MAX_SCAN_MESSAGES = 1000

_EXTENSION = re.compile(r"\.[^/.]+\Z")

_NONE, _INITIAL, _RECURSION, _MIN_ACTIVATIONS = 0, 1, 2, 3

TextHook = Callable[[str, str], str]
RegexHook = Callable[[str, "int | None"], str]


def _identity(text: str, _source: str) -> str:
    return text


def _no_regex(text: str, _depth: int | None) -> str:
    return text


def _rough_tokens(text: str) -> int:
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldInfoRequest:
    """Everything one scan needs. ``max_context`` is the context minus the response tokens;
    ``seed`` makes probability rolls and group picks repeatable. ``character_avatar`` is the
    card's file name, which entries' character filters name (without the extension); when it
    is empty the filters are compared with ``character_name``."""

    books: Sequence[BookSource]
    window: ScanWindow
    settings: WorldInfoSettings = field(default_factory=WorldInfoSettings)
    max_context: int = 4095 - 300
    generation_type: str = "normal"
    character_name: str = ""
    character_avatar: str = ""
    character_tags: tuple[str, ...] = ()
    sources: ScanSources = field(default_factory=ScanSources)
    timed_state: TimedState = field(default_factory=TimedState)
    seed: int | str = 0
    dry_run: bool = False
    forced: Collection[str] = ()


@dataclass(slots=True)
class _Entry:
    key: str
    book: str
    entry: WorldEntry
    content: str
    index: int
    activate: bool
    dont_activate: bool


def sorted_entries(books: Sequence[BookSource], strategy: int) -> list[tuple[str, WorldEntry]]:
    """All enabled books' entries in activation priority (SillyTavern's sort and strategy)."""
    seen: set[str] = set()
    by_kind: dict[str, list[tuple[str, WorldEntry]]] = {kind: [] for kind in BOOK_KINDS}
    for kind in BOOK_KINDS:  # a book bound twice counts once, in the first kind listed
        for source in books:
            if source.kind != kind or source.book.name in seen:
                continue
            seen.add(source.book.name)
            by_kind[kind].extend((source.book.name, e) for e in source.book.entries)

    def desc(items: list[tuple[str, WorldEntry]]) -> list[tuple[str, WorldEntry]]:
        return sorted(items, key=lambda item: -item[1].order)

    glob, char = by_kind["global"], by_kind["character"]
    if strategy == 0:
        rest = desc(glob + char)
    elif strategy == 2:
        rest = desc(glob) + desc(char)
    else:
        rest = desc(char) + desc(glob)
    return desc(by_kind["chat"]) + desc(by_kind["persona"]) + rest


def scan_world_info(
    request: WorldInfoRequest,
    *,
    render: TextHook = _identity,
    count_tokens: Callable[[str], int] = _rough_tokens,
    regex: RegexHook = _no_regex,
    regex_budget: RegexBudget | None = None,
) -> WorldInfoResult:
    """Run the activation loop. ``render(text, source)`` expands macros in keys and content,
    ``count_tokens`` measures the budget, ``regex(text, depth)`` runs the WORLD_INFO regex
    scripts on activated content (depth only for @depth entries). Regex keys draw on the
    turn's ``regex_budget`` (when given) and stop matching once it is spent."""
    return _Scan(request, render, count_tokens, regex, regex_budget).run()


class _Scan:
    def __init__(
        self,
        request: WorldInfoRequest,
        render: TextHook,
        count_tokens: Callable[[str], int],
        regex: RegexHook,
        regex_budget: RegexBudget | None = None,
    ) -> None:
        self.req = request
        self.regex_budget = regex_budget
        self.settings = request.settings
        self.render = render
        self.count_tokens = count_tokens
        self.regex = regex
        self.rng = random.Random(str(request.seed))
        self.entries: list[_Entry] = []
        for index, (book, entry) in enumerate(
            sorted_entries(request.books, self.settings.character_strategy)
        ):
            if entry.disable:
                continue
            deco = parse_decorators(entry.content)
            self.entries.append(
                _Entry(
                    key=f"{book}.{entry.uid}",
                    book=book,
                    entry=entry,
                    content=deco.content,
                    index=index,
                    activate=deco.activate,
                    dont_activate=deco.dont_activate,
                )
            )
        self.timed = TimedEffects(
            request.timed_state,
            {e.key: e.entry for e in self.entries},
            request.window.length,
            dry_run=request.dry_run,
        )
        self.filter_name = filter_name(request.character_avatar, request.character_name)
        self.skew = 0
        self.recurse: list[str] = []
        # Why each candidate passed its last check (the key that fired, or how it was
        # activated without one), reported with the entry once it is activated.
        self.fired: dict[str, str] = {}
        self._haystacks: dict[tuple[int, tuple[bool, ...], bool], Haystack] = {}

    def key_text(self, key: str) -> str:
        # Most keys hold no macro; skip the renderer for them (hundreds of keys per pass).
        return self.render(key, "world_info.key") if "{{" in key or "<" in key else key

    def options(self, entry: WorldEntry) -> MatchOptions:
        s = self.settings
        return MatchOptions(
            case_sensitive=s.case_sensitive
            if entry.case_sensitive is None
            else entry.case_sensitive,
            match_whole_words=(
                s.match_whole_words if entry.match_whole_words is None else entry.match_whole_words
            ),
        )

    def haystack(self, entry: WorldEntry, state: int) -> Haystack:
        depth = (
            self.settings.scan_depth + self.skew if entry.scan_depth is None else entry.scan_depth
        )
        flags = (
            entry.match_persona_description,
            entry.match_character_description,
            entry.match_character_personality,
            entry.match_character_depth_prompt,
            entry.match_scenario,
            entry.match_creator_notes,
        )
        with_recursion = state != _MIN_ACTIVATIONS
        cache_key = (depth, flags, with_recursion)
        found = self._haystacks.get(cache_key)
        if found is not None:
            return found
        if depth <= 0:
            text = ""
        else:
            lines = self.req.window.newest(min(depth, MAX_SCAN_MESSAGES))
            text = "\x01" + "\n\x01".join(line.strip() for line in lines)
            src = self.req.sources
            extra = (
                src.persona_description,
                src.character_description,
                src.character_personality,
                src.character_depth_prompt,
                src.scenario,
                src.creator_notes,
            )
            for wanted, value in zip(flags, extra, strict=True):
                if wanted and value:
                    text += "\n\x01" + value
            for injected in src.injections:
                text += "\n\x01" + injected
            if with_recursion and self.recurse:
                text += "\n\x01" + "\n\x01".join(self.recurse)
        hay = Haystack(text)
        self._haystacks[cache_key] = hay
        return hay

    def candidate_passes(self, item: _Entry, state: int, level: int) -> bool:
        e = item.entry
        if e.triggers and self.req.generation_type not in e.triggers:
            return False
        if not _character_allowed(e, self.filter_name, self.req.character_tags):
            return False
        sticky = self.timed.is_active("sticky", item.key, e)
        if self.timed.is_active("delay", item.key, e):
            return False
        if self.timed.is_active("cooldown", item.key, e) and not sticky:
            return False
        if (
            not sticky
            and e.delay_until_recursion
            and (state != _RECURSION or e.delay_until_recursion > level)
        ):
            return False
        if state == _RECURSION and self.settings.recursive and e.exclude_recursion and not sticky:
            return False
        if item.activate:
            self.fired[item.key] = FIRED_DECORATOR
            return True
        if item.dont_activate:
            return False
        if item.key in self.req.forced or e.constant or sticky:
            self.fired[item.key] = (
                FIRED_FORCED
                if item.key in self.req.forced
                else FIRED_CONSTANT
                if e.constant
                else FIRED_STICKY
            )
            return True
        if not e.keys:
            return False
        hay = self.haystack(e, state)
        opts = self.options(e)
        budget = self.regex_budget
        # ``next`` stops at the first matching key, as ``any`` did: the same regex budget.
        primary = next((k for k in e.keys if match_key(hay, self.key_text(k), opts, budget)), None)
        if primary is None:
            return False
        self.fired[item.key] = primary
        if e.selective and e.secondary_keys:
            hits: list[str] = []
            passed = secondary_passes(
                hay, e.secondary_keys, e.selective_logic, opts, self.key_text, budget, hits=hits
            )
            if hits:
                self.fired[item.key] = f"{primary} + {', '.join(hits)}"
            return passed
        return True

    def run(self) -> WorldInfoResult:
        s = self.settings
        budget = round(s.budget_percent * self.req.max_context / 100) or 1
        if s.budget_cap > 0 and budget > s.budget_cap:
            budget = s.budget_cap
        levels = sorted({e.entry.delay_until_recursion for e in self.entries} - {0})
        level = levels.pop(0) if levels else 0
        state = _INITIAL
        failed: set[str] = set()
        activated: dict[str, tuple[_Entry, str]] = {}
        used_tokens = 0
        all_activated_text = ""
        overflowed = False
        passes = 0
        while state:
            if (s.max_recursion_steps and passes >= s.max_recursion_steps) or (
                passes >= MAX_SCAN_PASSES
            ):
                break
            passes += 1
            self._haystacks.clear()
            now = [
                item
                for item in self.entries
                if item.key not in failed
                and item.key not in activated
                and self.candidate_passes(item, state, level)
            ]
            now.sort(key=lambda i: (not self.timed.is_active("sticky", i.key, i.entry), i.index))
            by_key = {i.key: i for i in now}
            kept = filter_by_groups(
                [Candidate(key=i.key, entry=i.entry) for i in now],
                activated={k: v[0].entry for k, v in activated.items()},
                is_sticky=lambda c: self.timed.is_active("sticky", c.key, c.entry),
                is_suppressed=lambda c: (
                    self.timed.is_active("cooldown", c.key, c.entry)
                    or self.timed.is_active("delay", c.key, c.entry)
                ),
                score=lambda c, st=state: self._score(c.entry, st),  # type: ignore[misc]
                use_scoring=s.use_group_scoring,
                rng=self.rng,
            )
            new = [by_key[c.key] for c in kept]
            rendered: dict[str, str] = {}
            # SillyTavern counts the text as one string, not entry by entry: the recursion
            # text of earlier passes, then this pass's contents joined with newlines (an
            # entry dropped for the budget stays in that text). Tokenizers merge across the
            # joins, so the sum of per-entry counts would differ.
            base_tokens = self.count_tokens(all_activated_text) if all_activated_text else 0
            new_content = ""
            for item in new:
                e = item.entry
                if overflowed and not e.ignore_budget:
                    continue
                sticky = self.timed.is_active("sticky", item.key, e)
                rolled = e.use_probability and e.probability < 100 and not sticky
                if rolled and self.rng.random() * 100 > e.probability:
                    failed.add(item.key)
                    continue
                content = self.render(item.content, f"world_info.{item.key}")
                rendered[item.key] = content
                new_content += content + "\n"
                counted = base_tokens + self.count_tokens(new_content)
                if not e.ignore_budget and counted >= budget:
                    overflowed = True
                    continue
                used_tokens = counted
                activated[item.key] = (item, content)
            ok = [i for i in new if i.key not in failed]
            ok_rec = [i for i in ok if not i.entry.prevent_recursion]
            nxt = _NONE
            if s.recursive and not overflowed and ok_rec:
                nxt = _RECURSION
            if s.recursive and not overflowed and state == _MIN_ACTIVATIONS and self.recurse:
                nxt = _RECURSION
            if nxt == _NONE and not overflowed and len(activated) < s.min_activations:
                depth = s.scan_depth + self.skew
                too_deep = (
                    s.min_activations_depth_max > 0 and depth > s.min_activations_depth_max
                ) or depth > self.req.window.length
                if not too_deep:
                    nxt = _MIN_ACTIVATIONS
                    self.skew += 1
            if nxt == _NONE and levels:
                nxt = _RECURSION
                level = levels.pop(0)
            state = nxt
            if state:
                text = "\n".join(rendered.get(i.key, i.content) for i in ok_rec)
                if text:
                    self.recurse.append(text)
                    all_activated_text = f"{text}\n{all_activated_text}"
        timed_state = self.timed.record({k: v[0].entry for k, v in activated.items()})
        return build_result(
            [(item.key, item.book, item.entry, content) for item, content in activated.values()],
            regex=self.regex,
            timed_state=timed_state,
            budget=budget,
            used_tokens=used_tokens,
            overflowed=overflowed,
            passes=passes,
            fired=self.fired,
        )

    def _score(self, entry: WorldEntry, state: int) -> int:
        return score_entry(
            self.haystack(entry, state),
            entry.keys,
            entry.secondary_keys if entry.selective else (),
            entry.selective_logic,
            self.options(entry),
            self.key_text,
            self.regex_budget,
        )


def filter_name(avatar: str, name: str) -> str:
    """What character filters compare: SillyTavern's avatar file name without its extension
    (``Sera.png`` -> ``Sera``), or the character's name when no file name is known."""
    if not avatar:
        return name
    # As SillyTavern strips it: the last ".xyz" that holds no "/" or ".".
    return _EXTENSION.sub("", avatar)


def _character_allowed(entry: WorldEntry, name: str, tags: tuple[str, ...]) -> bool:
    f = entry.character_filter
    if f.names:
        included = name in f.names
        if included == f.is_exclude:
            return False
    if f.tags:
        tagged = any(t in tags for t in f.tags)
        if tagged == f.is_exclude:
            return False
    return True


__all__ = [
    "MAX_SCAN_MESSAGES",
    "MAX_SCAN_PASSES",
    "POS_AT_DEPTH",
    "BookSource",
    "ScanSources",
    "ScanWindow",
    "WorldBook",
    "WorldInfoRequest",
    "WorldInfoResult",
    "WorldInfoSettings",
    "filter_name",
    "scan_world_info",
    "sorted_entries",
]
