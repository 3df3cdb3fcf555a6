"""The text analyser shared by BM25 and the existence filter: text in, index terms out.

``Analyzer().tokens(text)`` normalises and case-folds the text and splits it into runs
(:mod:`redmem.text._runs`: words, CJK runs, ``#<digits>`` references), then turns each run into
terms:

- a CJK run (Han, Hiragana, Katakana, Hangul) becomes its overlapping character bigrams
  (``東京都`` -> ``東京``, ``京都``), a lone character stays a unigram; with
  ``cjk_bigrams=False`` every character is a term;
- a reference is kept as it is (``#594``);
- a word holding a digit or an underscore is an *identifier*: kept whole, never stemmed,
  never a stop word (``q3``, ``v2``, ``gpt-4o``, ``3.5``, ``2024-05-01``, ``user_id``);
- any other word is split at ``-`` and ``.`` (``well-known`` -> ``well``, ``known``); each
  part is dropped when it is a stop word (compared case-folded) or shorter than ``min_length``
  characters, else stemmed with the Snowball English (Porter2) stemmer of PyStemmer when
  ``stem`` (``running`` -> ``run``, ``AI`` -> ``ai``).

Terms come out in text order with duplicates kept, so term frequencies and document lengths
can be read off the list. Stems are memoised per word and each analyser memoises the terms of
each word run; each thread has its own stemmer (the Snowball stemmer keeps state between calls).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, ClassVar

import Stemmer

from ..store._errors import ConfigurationError
from ..store._validation import positive_int
from ._runs import runs
from ._stopwords import ENGLISH_STOPWORDS

__all__ = ["Analyzer", "default_analyzer", "cjk_terms"]

_PART_SPLIT = re.compile(r"[-.]")
_IDENTIFIER_MARK = re.compile(r"[\d_]")
_MAX_MEMOISED = 200_000
_stems: dict[str, str] = {}
_local = threading.local()


def _stem(word: str) -> str:
    """The Snowball English (Porter2) stem of ``word``, memoised across threads."""
    stem = _stems.get(word)
    if stem is None:
        stemmer = getattr(_local, "stemmer", None)
        if stemmer is None:
            stemmer = _local.stemmer = Stemmer.Stemmer("english", 0)  # no cache of its own: _stems is one
        if len(_stems) >= _MAX_MEMOISED:
            _stems.clear()
        stem = _stems[word] = stemmer.stemWord(word)
    return stem


def cjk_terms(run: str, bigrams: bool) -> list[str]:
    """Terms of one CJK run: overlapping bigrams (a lone character stays), or single characters."""
    if not bigrams or len(run) == 1:
        return list(run)
    return [run[i : i + 2] for i in range(len(run) - 1)]


@dataclass(frozen=True)
class Analyzer:
    """Options of the text analysis (see the module docstring for the steps).

    Args:
        stem: reduce plain words to their Snowball English stem.
        stopwords: words dropped from the terms (compared case-folded); identifiers never are.
        lowercase: case-fold the text first.
        min_length: plain words and identifiers shorter than this many characters are dropped.
        cjk_bigrams: CJK runs as overlapping bigrams (else single characters).
    """

    stem: bool = True
    stopwords: frozenset[str] = ENGLISH_STOPWORDS
    lowercase: bool = True
    min_length: int = 1
    cjk_bigrams: bool = True
    if TYPE_CHECKING:  # per instance, set in __post_init__; ClassVar keeps it out of the options
        _words: ClassVar[dict[str, tuple[str, ...]]]

    def __post_init__(self) -> None:
        if isinstance(self.stopwords, str):
            raise ConfigurationError("stopwords must be a collection of words, not one string")
        positive_int("min_length", self.min_length, error=ConfigurationError)
        object.__setattr__(self, "stopwords", frozenset(w.casefold() for w in self.stopwords))
        object.__setattr__(self, "_words", {})  # word run -> its terms; not an option (no field)

    def tokens(self, text: str) -> list[str]:
        """The terms of ``text`` in order, duplicates kept; ``[]`` for empty or stop-word-only text."""
        terms: list[str] = []
        words = self._words
        for word, cjk, reference in runs(text, self.lowercase):
            if word:
                found = words.get(word)
                terms += self._word_terms(word) if found is None else found
            elif cjk:
                terms.extend(cjk_terms(cjk, self.cjk_bigrams))
            else:
                terms.append("#" + reference)
        return terms

    def _word_terms(self, word: str) -> tuple[str, ...]:
        """The terms of one word run, memoised per analyser (words repeat far more than texts)."""
        terms: list[str] = []
        if word.isalpha():
            self._add_word(word, terms)
        else:
            self._add_compound(word, terms)
        if len(self._words) >= _MAX_MEMOISED:
            self._words.clear()
        found = self._words[word] = tuple(terms)
        return found

    def _add_word(self, word: str, terms: list[str]) -> None:
        if len(word) < self.min_length:
            return
        if (word if self.lowercase else word.casefold()) in self.stopwords:
            return
        terms.append(_stem(word) if self.stem else word)

    def _add_compound(self, word: str, terms: list[str]) -> None:
        if _IDENTIFIER_MARK.search(word):
            if len(word) >= self.min_length:
                terms.append(word)
            return
        for part in _PART_SPLIT.split(word):
            self._add_word(part, terms)


@cache
def default_analyzer() -> Analyzer:
    """The shared analyser with the default options (English stems and stop words, CJK bigrams)."""
    return Analyzer()
