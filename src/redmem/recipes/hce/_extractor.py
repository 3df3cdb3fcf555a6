"""EntityExtractor: the entities of a text, deterministic and offline (regular expressions only).

Rules, applied in this order (a span taken by an earlier rule is not read again):

1. quoted phrases, 1-80 characters between "..." or curly quotes, or '...' not inside a word
   -> PHRASE;
2. dates: ISO dates, a month name with an optional day and year, weekday names, years
   1900-2099 -> DATE;
3. numbers (with decimals, thousands separators, a trailing %) -> NUMBER;
4. runs of capitalised words (joined by "of", "de", "da", "van", "von", "del"), leading and
   trailing stop words dropped ("I", "The", "Where") -> NAME. A sentence's first word is
   capitalised anyway, so it starts a name only when the text also capitalises it
   mid-sentence ("Sure, ..." is not a name; "Ana called. I told Ana" is); a name the graph
   already knows is found at a sentence start through :meth:`EntityExtractor.mentions`.

An entity's key is its text case-folded with whitespace collapsed, so "Acme" and "ACME" are one
node. :meth:`EntityExtractor.mentions` lists the lower-case word n-grams of a text, the
candidates for entities the graph already knows ("acme"); the pipeline keeps those the
session's existence filter may have seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ...store._validation import positive_int
from ...text._stopwords import ENGLISH_STOPWORDS
from ._kinds import NodeType

__all__ = ["EntityExtractor", "ExtractedEntity", "entity_key", "significant_words", "significant_word_set"]

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december"
           "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
_QUOTED = re.compile(r'"([^"\n]{1,80})"|“([^”\n]{1,80})”|(?<!\w)\'([^\'\n]{1,80})\'(?!\w)')
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|\b(?:{_ORDINAL}\s+(?:of\s+)?)?(?:{_MONTHS})\b\.?(?:\s+{_ORDINAL}\b)?(?:,?\s+\d{{4}}\b)?"
    rf"|\b(?:{_WEEKDAYS})\b|\b(?:19|20)\d{{2}}\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*%?")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "del"})
#: Month words that are also ordinary words: a date only when capitalised or next to a day/year.
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "jan", "dec", "sept", "sep"})


def entity_key(text: str) -> str:
    """The graph key of an entity: case-folded, whitespace collapsed, outer punctuation stripped."""
    return " ".join(text.casefold().split()).strip(".,;:!?()[]{}\"'“”‘’")


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity found in a text: its ``key`` (graph node), its ``name`` as written, its ``type``."""

    key: str
    name: str
    type: NodeType


def significant_words(text: str) -> set[str]:
    """The case-folded words of ``text`` that are not stop words."""
    return set(significant_word_set(text))


@lru_cache(maxsize=4096)
def significant_word_set(text: str) -> frozenset[str]:
    """:func:`significant_words`, frozen and remembered by text (the last 4,096): the focus
    buffer's entries are compared with every query, and a text's words never change."""
    return frozenset(w for w in (m.group().casefold() for m in _WORD.finditer(text)) if not _is_stop(w))


def _sentence_start(text: str, position: int) -> bool:
    """True when only spaces and opening quotes or brackets lie between ``position`` and the start
    of the text or the end of the previous sentence (``.``, ``!``, ``?``, a line break)."""
    before = text[:position].rstrip(" \t\"'“‘([")
    return not before or before[-1] in ".!?\n"


def _is_stop(word: str) -> bool:
    return word.casefold().replace("’", "'").split("'")[0] in ENGLISH_STOPWORDS


class EntityExtractor:
    """Deterministic entity extraction (see the module docs for the rules).

    Args:
        max_ngram: the longest lower-case word n-gram :meth:`mentions` offers.
    """

    def __init__(self, max_ngram: int = 3) -> None:
        self.max_ngram = positive_int("max_ngram", max_ngram)

    def extract(self, text: str) -> list[ExtractedEntity]:
        """The entities of ``text``, in order of first appearance, one per key."""
        taken = [False] * len(text)
        found: list[tuple[int, str, NodeType]] = []

        def claim(start: int, end: int, name: str, kind: NodeType) -> None:
            if not any(taken[start:end]) and entity_key(name):
                taken[start:end] = [True] * (end - start)
                found.append((start, name, kind))

        for m in _QUOTED.finditer(text):
            group = next(g for g in (1, 2, 3) if m.group(g) is not None)
            claim(m.start(), m.end(), m.group(group).strip(), NodeType.PHRASE)
        for m in _DATE.finditer(text):
            if m.group().casefold() in _AMBIGUOUS_MONTHS and not m.group()[0].isupper():
                continue
            claim(m.start(), m.end(), m.group().rstrip("."), NodeType.DATE)
        for m in _NUMBER.finditer(text):
            claim(m.start(), m.end(), m.group(), NodeType.NUMBER)
        for start, end, name in self._names(text, taken):
            claim(start, end, name, NodeType.NAME)
        entities: dict[str, ExtractedEntity] = {}
        for _, name, kind in sorted(found, key=lambda item: item[0]):
            entities.setdefault(entity_key(name), ExtractedEntity(entity_key(name), name, kind))
        return list(entities.values())

    def _names(self, text: str, taken: list[bool]) -> list[tuple[int, int, str]]:
        """Runs of capitalised words not already taken, stop words trimmed from both ends; a
        sentence's first word counts only when the text also capitalises it mid-sentence."""
        runs: list[list[re.Match[str]]] = [[]]
        mid_sentence: set[str] = set()
        for m in _WORD.finditer(text):
            word, gap = m.group(), text[runs[-1][-1].end():m.start()] if runs[-1] else ""
            joined = runs[-1] and gap.strip() == "" and "\n" not in gap
            if word[0].isupper() and not _sentence_start(text, m.start()):
                mid_sentence.add(word)
            if word[0].isupper() and not any(taken[m.start():m.end()]):
                if not joined:
                    runs.append([])
                runs[-1].append(m)
            elif joined and word in _CONNECTORS:
                runs[-1].append(m)
            else:
                runs.append([])
        names = []
        for run in runs:
            if run and _sentence_start(text, run[0].start()) and run[0].group() not in mid_sentence:
                run = run[1:]
            while run and (_is_stop(run[0].group()) or run[0].group() in _CONNECTORS):
                run = run[1:]
            while run and (_is_stop(run[-1].group()) or run[-1].group() in _CONNECTORS):
                run = run[:-1]
            if run:
                names.append((run[0].start(), run[-1].end(), text[run[0].start():run[-1].end()]))
        return names

    def mentions(self, text: str) -> list[str]:
        """Keys of the lower-case word n-grams of ``text`` (1 to ``max_ngram`` words) that could name
        a known entity: no n-gram starts or ends with a stop word; single words have 3+ letters."""
        words = [m.group().casefold() for m in _WORD.finditer(text)]
        stop = [_is_stop(word) for word in words]
        keys: dict[str, None] = {}
        for n in range(1, self.max_ngram + 1):
            for i in range(len(words) - n + 1):
                if stop[i] or stop[i + n - 1] or (n == 1 and len(words[i]) < 3):
                    continue
                gram = words[i:i + n]
                keys.setdefault(entity_key(" ".join(gram)))
        return [key for key in keys if key]
