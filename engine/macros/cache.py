"""A bounded cache of parsed templates, so a preset that does not change is parsed once.

Keys are the exact text plus the registry generation (scoped pairing depends on which macros
are registered). The cache holds at most ``MAX_TEMPLATES`` templates and ``MAX_CACHED_CHARS``
characters of source; the least recently used ones go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from engine.macros.nodes import ParseNote, Template
from engine.macros.parser import Parser
from engine.macros.processing import preprocess
from engine.macros.registry import Registry

#: Most templates kept.
MAX_TEMPLATES = 1024
#: Most source characters kept across all cached templates.
MAX_CACHED_CHARS = 4_000_000
#: Texts longer than this are parsed but never cached.
MAX_CACHED_TEXT = 2_000_000


def parse_template(text: str, registry: Registry) -> Template:
    """Pre-process and parse ``text`` (no caching)."""
    src = preprocess(text)
    parser = Parser(src, registry.can_accept)
    items = parser.parse()
    notes: tuple[ParseNote, ...] = tuple(parser.notes)
    return Template(text, src, items, notes)


class TemplateCache:
    """LRU cache of :class:`Template` objects."""

    def __init__(
        self, max_templates: int = MAX_TEMPLATES, max_chars: int = MAX_CACHED_CHARS
    ) -> None:
        self.max_templates = max_templates
        self.max_chars = max_chars
        self._items: OrderedDict[tuple[str, int], Template] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str, registry: Registry) -> Template:
        """The parsed template for ``text`` (parsed now when not cached)."""
        key = (text, registry.generation)
        template = self._items.get(key)
        if template is not None:
            self.hits += 1
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
            return template
        self.misses += 1
        template = parse_template(text, registry)
        if len(text) <= MAX_CACHED_TEXT:
            with self._lock:
                if key not in self._items:
                    self._items[key] = template
                    self._chars += len(text)
                while self._items and (
                    len(self._items) > self.max_templates or self._chars > self.max_chars
                ):
                    (old_text, _), _ = self._items.popitem(last=False)
                    self._chars -= len(old_text)
        return template

    def clear(self) -> None:
        """Forget every cached template."""
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)


DEFAULT_CACHE = TemplateCache()
