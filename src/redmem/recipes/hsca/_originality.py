"""Layer 1's discount for stuffing: how much of a chunk is repetition rather than new statement.

Relational weight (:mod:`.relational`) rewards words that recur together, which repetition
fakes: a phrase repeated, a keyword list, a sentence respun. Three signals of the chunk alone
catch the forms people use (Ntoulas et al., "Detecting spam web pages through content
analysis", WWW 2006, use the same kinds of features: compressibility, function-word share,
repeated n-grams)::

    repeated   = share of the chunk's word trigrams that occur more than once in it
    duplicated = share of sentences whose term set has Jaccard >= NEAR_DUPLICATE with one of the
                 DUPLICATE_LOOKBACK sentences before it
    function   = min(1, stop-word share of the surface words / FUNCTION_WORD_FLOOR)
    originality = (1 - repeated) * (1 - duplicated) * function

so 1 for ordinary prose, near 0 for a phrase repeated or a bare keyword list. A chunk of fewer
than :data:`MIN_WORDS` words has too little text to judge and is not discounted.
"""

from __future__ import annotations

from collections import Counter

from ...text._stopwords import ENGLISH_STOPWORDS
from ._text import ParsedTurn

__all__ = ["originality", "NEAR_DUPLICATE", "DUPLICATE_LOOKBACK", "FUNCTION_WORD_FLOOR", "MIN_WORDS"]

#: Term-set Jaccard from which a sentence counts as a near-duplicate of an earlier one.
NEAR_DUPLICATE = 0.5
#: Earlier sentences a sentence is compared with (keeps the check linear in a long chunk).
DUPLICATE_LOOKBACK = 20
#: Stop-word share of ordinary English from which no discount applies (prose runs 0.4-0.5).
FUNCTION_WORD_FLOOR = 0.25
#: Chunks shorter than this many words are not discounted.
MIN_WORDS = 12


def originality(turn: ParsedTurn) -> float:
    """The chunk's originality in [0, 1] (module docstring)."""
    words = [w.casefold() for w in turn.words]
    if len(words) < MIN_WORDS:
        return 1.0
    trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
    repeated = sum(n for n in trigrams.values() if n > 1) / max(1, sum(trigrams.values()))
    function = min(1.0, sum(w in ENGLISH_STOPWORDS for w in words) / len(words) / FUNCTION_WORD_FLOOR)
    return (1 - repeated) * (1 - _duplicated(turn)) * function


def _duplicated(turn: ParsedTurn) -> float:
    """Share of sentences nearly repeating one of the :data:`DUPLICATE_LOOKBACK` before it."""
    seen: list[frozenset[str]] = []
    duplicates = 0
    for sentence in turn.sentences:
        terms = frozenset(sentence.terms)
        if terms and any(len(terms & s) / len(terms | s) >= NEAR_DUPLICATE for s in seen[-DUPLICATE_LOOKBACK:]):
            duplicates += 1
        seen.append(terms)
    return duplicates / len(seen) if seen else 0.0
