"""Splitting text into runs: words, CJK runs and ``#<digits>`` references, after normalisation.

Normalisation: Unicode NFKC (full-width forms, ligatures, superscript digits), the typographic
apostrophe U+2019 read as ``'``, soft hyphens and variation selectors removed; ASCII text is
left as it is (NFKC does not change it). Then case folding when asked.

A *word* is a run of letters, digits and combining marks (Unicode categories L, N, M) outside
the CJK scripts, whose pieces may be joined by single ``-``, ``.``, ``_`` or ``'``. A *CJK run*
is a run of Han, Hiragana, Katakana or Hangul characters. Anything else separates runs.

ASCII text, the common case, goes through a small ASCII pattern; other text through the full
Unicode pattern, built once on first use from :mod:`unicodedata` (about 25 ms).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import cache

__all__ = ["CJK_RANGES", "runs", "normalise"]

#: Code point ranges of the scripts written without spaces that are indexed as character n-grams.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303C),  # Hangzhou numerals, vertical iteration marks
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x323AF),  # CJK unified ideographs extensions B to H
)
#: Word characters are looked up below this code point: planes 2 and 3 hold only ideographs.
_SCAN_LIMIT = 0x20000
_CONNECTORS = "-._'"
#: Removed before splitting: soft hyphen, variation selectors (BMP and plane 14).
_INVISIBLE = dict.fromkeys([0xAD, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
#: Groups of both patterns: (word, CJK run, reference digits); ASCII holds no CJK, so the
#: second group of the ASCII pattern is one that never matches.
_ASCII_RUNS = re.compile(r"([A-Za-z0-9]+(?:[-._'][A-Za-z0-9]+)*)|((?!))|#([0-9]+)")


def _char_class(ranges: list[tuple[int, int]]) -> str:
    """A regex character class matching the inclusive code point ``ranges``."""
    body = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
    )
    return f"[{body}]"


def _gaps(limit: int) -> Iterator[tuple[int, int]]:
    """The code point intervals ``[low, high)`` below ``limit`` outside :data:`CJK_RANGES`."""
    low = 0
    for start, end in CJK_RANGES:
        if start > low:
            yield low, min(start, limit)
        low = end + 1
        if low >= limit:
            return
    yield low, limit


def _word_ranges() -> list[tuple[int, int]]:
    """Inclusive ranges of the letters (L*), numbers (N*) and marks (M*) that are not CJK."""
    ranges: list[tuple[int, int]] = []
    for low, high in _gaps(_SCAN_LIMIT):
        start = None
        for code in range(low, high + 1):
            inside = code < high and unicodedata.category(chr(code))[0] in "LNM"
            if inside and start is None:
                start = code
            elif not inside and start is not None:
                ranges.append((start, code - 1))
                start = None
    return ranges


@cache
def _unicode_runs() -> re.Pattern[str]:
    """The full pattern. A class holding code points above U+FFFF is matched by a slow linear
    scan in ``re``, so the plane-1 letters get their own class behind a cheap range guard."""
    ranges = _word_ranges()
    bmp = _char_class([(a, min(b, 0xFFFF)) for a, b in ranges if a <= 0xFFFF])
    astral = _char_class([(max(a, 0x10000), b) for a, b in ranges if b > 0xFFFF])
    piece = f"(?:{bmp}++|(?=[\\U00010000-\\U0001FFFF]){astral}++)"
    word = f"{piece}(?:[{re.escape(_CONNECTORS)}]?+{piece})*+"
    return re.compile(f"({word})|({_char_class(list(CJK_RANGES))}+)|#(\\d+)")


def normalise(text: str, lowercase: bool) -> str:
    """NFKC with apostrophes unified and invisible marks dropped (non-ASCII only), then casefold."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").translate(_INVISIBLE)
    return text.casefold() if lowercase else text


def runs(text: str, lowercase: bool) -> list[tuple[str, str, str]]:
    """The runs of ``text`` in order, each ``(word, cjk_run, reference_digits)`` with one non-empty."""
    text = normalise(text, lowercase)
    pattern = _ASCII_RUNS if text.isascii() else _unicode_runs()
    return pattern.findall(text)
