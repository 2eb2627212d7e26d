"""Token counting: exact for OpenAI encodings (offline), estimated for every other model.

The ``bpe_openai`` package ships the ``cl100k_base`` and ``o200k_base`` tables, so exact counts
never need the network (tiktoken would download its tables on first use).

Which encoding (by model family, after dropping a ``provider/`` prefix such as OpenRouter's):

* ``o200k_base``: gpt-4o, chatgpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o-series (o1, o3, o4...),
  gpt-oss, omni-moderation;
* ``cl100k_base``: gpt-4 (the older ones), gpt-3.5 / gpt-35, text-embedding-ada-002 and
  text-embedding-3-*;
* anything else (Claude, Llama, Mistral, Gemini, DeepSeek, local models...): the estimator.

The estimator counts with ``o200k_base`` and adds ``ESTIMATE_MARGIN`` (15 %), rounded up. Modern
BPE vocabularies of other vendors land within roughly that margin of o200k on English and
European text; over-estimating a little keeps a prompt from overflowing a context window.

Chat overhead (OpenAI's documented accounting for chat models): every message costs
``TOKENS_PER_MESSAGE`` on top of its content, a ``name`` field ``TOKENS_PER_NAME`` more, and the
reply is primed with ``REPLY_PRIMING_TOKENS``; see :func:`count_chat_tokens`.

Long texts: the tokenizer refuses a text of a million characters or one giving 200k tokens, and a
player can put such a text in a chat (an imported message, a huge model reply). Counting never
raises: a text up to ``EXACT_COUNT_MAX_CHARS`` is counted in one call, a longer one in pieces of
at most that size cut before a space (each cut can change the count by about a token), and past
``CHUNKED_COUNT_MAX_CHARS`` the rest is estimated at the rate of the part counted. Such a text
never fits a context window anyway; its count only has to be large and cheap.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from engine.prompt.budget import (
    REPLY_PRIMING_TOKENS,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TokenCounter,
)

ESTIMATE_MARGIN = 0.15
#: Most texts whose counts an exact counter remembers.
COUNT_MEMO_SIZE = 16_384
#: Longer texts are counted every time (they are rarely counted twice).
COUNT_MEMO_MAX_CHARS = 32_768
#: Most characters of text an exact counter's memo holds in all (bounds its memory).
COUNT_MEMO_TOTAL_CHARS = 4_000_000
EXACT_COUNT_MAX_CHARS: Final = 40_000
"""Texts up to this many characters are counted exactly, in one call to the tokenizer; longer
ones in pieces of at most this size. A character is at most four UTF-8 bytes, hence at most four
tokens, so a piece stays well under the tokenizer's refusal (200k tokens, a million characters)."""
CHUNKED_COUNT_MAX_CHARS: Final = 2_000_000
"""Characters of a long text counted piece by piece (about 50 ms of work); the rest of a longer
text is estimated at the rate of the counted part."""

O200K = "o200k_base"
CL100K = "cl100k_base"

_O200K_PREFIXES = (
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "gpt-oss",
    "omni-moderation",
)
_CL100K_PREFIXES = (
    "gpt-4",
    "gpt-3.5",
    "gpt-35",
    "text-embedding-ada-002",
    "text-embedding-3",
)


class ExactCounter:
    """Exact counts with a shipped OpenAI encoding; special-token text counts as plain text.

    Counts are remembered (least recently used first out; at most ``COUNT_MEMO_SIZE`` texts of
    at most ``COUNT_MEMO_MAX_CHARS``, ``COUNT_MEMO_TOTAL_CHARS`` in all): a prompt re-counts the
    same history lines every turn.
    """

    __slots__ = ("_chars", "_encoding", "_lock", "_memo", "name")

    def __init__(self, encoding_name: str) -> None:
        self.name = encoding_name
        self._encoding = _encoding(encoding_name)
        self._memo: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        # Services may count from worker threads as well as from the event loop.
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        """The number of tokens ``text`` encodes to."""
        with self._lock:
            known = self._memo.get(text)
            if known is not None:
                self._memo.move_to_end(text)
                return known
        if len(text) > EXACT_COUNT_MAX_CHARS:
            return self._count_long(text)  # never memoised (longer than COUNT_MEMO_MAX_CHARS)
        tokens = self._count_piece(text)
        if len(text) <= COUNT_MEMO_MAX_CHARS:
            with self._lock:
                if text not in self._memo:
                    self._chars += len(text)
                self._memo[text] = tokens
                while self._memo and (
                    len(self._memo) > COUNT_MEMO_SIZE or self._chars > COUNT_MEMO_TOTAL_CHARS
                ):
                    old, _ = self._memo.popitem(last=False)
                    self._chars -= len(old)
        return tokens

    def _count_piece(self, text: str) -> int:
        try:
            return len(self._encoding.encode_ordinary(text))
        except ValueError:
            # The tokenizer refused the text: its UTF-8 length bounds the count from above.
            return len(text.encode("utf-8", "replace"))

    def _count_long(self, text: str) -> int:
        """A text longer than ``EXACT_COUNT_MAX_CHARS``: counted in pieces, then estimated."""
        counted_up_to = min(len(text), CHUNKED_COUNT_MAX_CHARS)
        total = 0
        start = 0
        while start < counted_up_to:
            end = min(start + EXACT_COUNT_MAX_CHARS, counted_up_to)
            if end < len(text):
                # Cut before a space: the word after it keeps its leading space, as it would.
                space = text.rfind(" ", start + 1, end)
                if space > start:
                    end = space
            total += self._count_piece(text[start:end])
            start = end
        if start < len(text):
            total += math.ceil(total * (len(text) - start) / start)
        return total


class EstimatingCounter:
    """An estimate for models whose tokenizer is not shipped: o200k plus ``ESTIMATE_MARGIN``."""

    __slots__ = ("_base", "name")

    def __init__(self) -> None:
        self.name = f"estimate({O200K}+{round(ESTIMATE_MARGIN * 100)}%)"
        self._base = ExactCounter(O200K)

    def count(self, text: str) -> int:
        """An over-estimate of the token count (0 for the empty text)."""
        return math.ceil(self._base.count(text) * (1 + ESTIMATE_MARGIN))


def encoding_for_model(model: str) -> str | None:
    """The OpenAI encoding of ``model``, or None when the model is not an OpenAI one."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if name.startswith("ft:"):  # fine-tunes: ft:gpt-4o-mini:org::id
        name = name[3:]
    if name.startswith(_O200K_PREFIXES):
        return O200K
    if name.startswith(_CL100K_PREFIXES):
        return CL100K
    return None


def counter_for_model(model: str) -> TokenCounter:
    """The counter for ``model``: exact for OpenAI families, the documented estimate otherwise."""
    encoding = encoding_for_model(model)
    return _exact(encoding) if encoding is not None else _estimator()


def count_chat_tokens(counter: TokenCounter, messages: Iterable[Mapping[str, str]]) -> int:
    """Prompt tokens of chat messages as OpenAI accounts them (content plus overheads).

    Each message is a mapping like ``{"role": ..., "content": ..., "name": ...}``; every value is
    counted, plus ``TOKENS_PER_MESSAGE`` per message, ``TOKENS_PER_NAME`` per name and
    ``REPLY_PRIMING_TOKENS`` once.
    """
    total = REPLY_PRIMING_TOKENS
    for message in messages:
        total += TOKENS_PER_MESSAGE
        for key, value in message.items():
            total += counter.count(value)
            if key == "name":
                total += TOKENS_PER_NAME
    return total


@functools.cache
def _encoding(name: str) -> Any:
    # Loading a table takes a fraction of a second: do it once per process, on first use.
    # Imported here, not at the top: importing the package already loads both tables.
    with warnings.catch_warnings():
        # the package reads its tables with a deprecated importlib.resources call
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # type: ignore[import-untyped]  # ships no type information

        return bpe_openai.get_encoding(name)


@functools.cache
def _exact(name: str) -> ExactCounter:
    return ExactCounter(name)


@functools.cache
def _estimator() -> EstimatingCounter:
    return EstimatingCounter()
