"""Reproducible randomness: SillyTavern's string hash (cyrb53), the default ``seedrandom``
generator (ARC4 keyed by the seed string) that ``{{pick}}`` uses, and the dice grammar of
``{{roll}}``.

With the same chat id, text and position, ``{{pick}}`` here chooses what SillyTavern chose, so
an imported card keeps its picks.
"""

from __future__ import annotations

import re
from array import array
from functools import lru_cache

_MASK32 = 0xFFFFFFFF
_WIDTH = 256
_CHUNKS = 6
_START_DENOM = float(_WIDTH**_CHUNKS)
_SIGNIFICANCE = float(2**52)
_OVERFLOW = float(2**53)

#: ``[count]d<sides>[+-modifier]``; a bare number means ``1d<number>``.
DICE = re.compile(r"([1-9]\d*)?[dD]([1-9]\d*)([+-]\d+)?\Z")
#: Dice beyond this many are refused (a hostile ``{{roll::99999999d6}}`` cannot stall).
MAX_DICE = 10_000


def _code_units(text: str) -> bytes | array[int]:
    if text.isascii():
        return text.encode("ascii")
    units = array("H")
    units.frombytes(text.encode("utf-16-le"))
    return units


def _chain(units: bytes | array[int], h: int, k: int) -> int:
    """``h = ((h ^ unit) * k) mod 2**32`` over every unit, eight units per masking: the XOR
    only touches the low 16 bits and the product modulo 2**32 only depends on the operand
    modulo 2**32, so the high bits can pile up for eight steps and be dropped at once."""
    mask = _MASK32
    n = len(units) - len(units) % 8
    it = iter(units[:n])
    for a, b, c, d, e, f, g, i in zip(it, it, it, it, it, it, it, it, strict=True):
        h = (
            ((((((((h ^ a) * k ^ b) * k ^ c) * k ^ d) * k ^ e) * k ^ f) * k ^ g) * k ^ i) * k
        ) & mask
    for unit in units[n:]:
        h = ((h ^ unit) * k) & mask
    return h


def string_hash(text: str, seed: int = 0) -> int:
    """cyrb53 over UTF-16 code units: a 53-bit integer, as SillyTavern's ``getStringHash``."""
    mask = _MASK32
    units = _code_units(text)
    h1 = _chain(units, (0xDEADBEEF ^ seed) & mask, 2654435761)
    h2 = _chain(units, (0x41C6CE57 ^ seed) & mask, 1597334677)
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & mask) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & mask)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & mask) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & mask)
    return 4294967296 * (2097151 & h2) + h1


class SeedRandom:
    """``seedrandom(seed)`` 3.0.5's default generator: 52-bit floats in ``[0, 1)``."""

    __slots__ = ("_s", "_i", "_j")

    def __init__(self, seed: str) -> None:
        key = _mix_key(seed) or [0]
        keylen = len(key)
        expanded = key * (_WIDTH // keylen + 1) if keylen < _WIDTH else key
        s = list(range(_WIDTH))
        j = 0
        for i, k in enumerate(expanded[:_WIDTH]):
            t = s[i]
            j = (j + k + t) & 0xFF
            s[i] = s[j]
            s[j] = t
        # The generator (own i, j from 0) discards its first 256 bytes, without building the
        # 2048-bit number the discarded output would make; i runs 1..255 and wraps to 0.
        j = 0
        for i in range(1, _WIDTH):
            t = s[i]
            j = (j + t) & 0xFF
            s[i] = s[j]
            s[j] = t
        t = s[0]
        j = (j + t) & 0xFF
        s[0] = s[j]
        s[j] = t
        self._s = s
        self._i = 0
        self._j = j

    def _bytes(self, count: int) -> int:
        s = self._s
        i = self._i
        j = self._j
        r = 0
        for _ in range(count):
            i = (i + 1) & 0xFF
            t = s[i]
            j = (j + t) & 0xFF
            s[i] = s[j]
            s[j] = t
            r = r * _WIDTH + s[(s[i] + s[j]) & 0xFF]
        self._i = i
        self._j = j
        return r

    def random(self) -> float:
        """The next float, exactly as ``seedrandom``'s ``prng()``."""
        n = float(self._bytes(_CHUNKS))
        d = _START_DENOM
        x = 0
        while n < _SIGNIFICANCE:
            n = (n + x) * _WIDTH
            d *= _WIDTH
            x = self._bytes(1)
        while n >= _OVERFLOW:
            n /= 2
            d /= 2
            x >>= 1
        return (n + x) / d


def _mix_key(seed: str) -> list[int]:
    key: list[int] = []
    smear = 0
    for index, ch in enumerate(_utf16(seed)):
        slot = index & 0xFF
        current = key[slot] if slot < len(key) else None
        # JavaScript: undefined * 19 is NaN, and NaN ^ x is x.
        smear ^= (current * 19) & _MASK32 if current is not None else 0
        value = (smear + ch) & 0xFF
        if slot < len(key):
            key[slot] = value
        else:
            key.append(value)
    return key


def _utf16(text: str) -> list[int]:
    if text.isascii():
        return list(text.encode("ascii"))
    units = array("H")
    units.frombytes(text.encode("utf-16-le"))
    return list(units)


@lru_cache(maxsize=4096)
def pick_fraction(seed_text: str) -> float:
    """The first ``seedrandom`` float for ``seed_text``'s hash (memoised: it is pure)."""
    return SeedRandom(str(string_hash(seed_text))).random()


def pick_index(seed_text: str, count: int) -> int:
    """The index SillyTavern's ``{{pick}}`` chooses among ``count`` items for ``seed_text``."""
    return int(pick_fraction(seed_text) * count)


def parse_dice(formula: str) -> tuple[int, int, int] | None:
    """``(count, sides, modifier)`` of a dice formula, or ``None`` when it is not one."""
    text = formula.strip()
    if text.isdigit():
        text = "1d" + text
    match = DICE.match(text)
    if match is None:
        return None
    count = int(match.group(1) or 1)
    return count, int(match.group(2)), int(match.group(3) or 0)
