"""Layer 2, coherence: does the chunk read as structurally intentional text (not: is it good)?

Four heuristics, each in [0, 1], averaged; the sentence-length factor also gates the average
(a fragment scores low whatever its other factors), and the whole is scaled by how word-like the
text is::

    coherence = wordness * sqrt(length * mean(length, pronouns, punctuation, clauses))

- ``length``: mean words per sentence; 0 at <= 1 word, rising to 1 at 8, 1 up to 30, falling
  to 0 at 80 (fragments and run-ons depress it).
- ``pronouns``: the share of third-person pronouns with a plausible antecedent, a content word
  earlier in the chunk (1 when there are none).
- ``punctuation``: punctuation marks per word; 0.3 with none at all, 1 from 0.04 to 0.4,
  falling to 0 at 1.5 (symbol soup).
- ``clauses``: clause markers (``,;:`` and subordinating words) per sentence; 0.6 when flat
  (under 0.5), 1 from 0.5 to 4, falling to 0 at 10 (very deep nesting).
- ``wordness``: ``min(1, function-word share / 0.2)``: real sentences are held together by
  function words (English stop words); gibberish has none, so it scores near 0.

Empty text scores 0.
"""

from __future__ import annotations

import math
import re
from statistics import fmean

from ...text._stopwords import ENGLISH_STOPWORDS
from ._text import ParsedTurn

__all__ = ["coherence_score", "coherence_parts", "FUNCTION_WORD_SHARE"]

#: The share of function words from which a text counts as fully word-like.
FUNCTION_WORD_SHARE = 0.2
_PUNCTUATION = re.compile(r"[.,;:!?()\"'\u2018\u2019\u201c\u201d-]")
_CLAUSE_MARKS = re.compile(r"[,;:]")
_SUBORDINATORS = frozenset(
    ["because", "although", "though", "while", "when", "whenever", "which", "that", "who", "whom", "whose", "if", "unless", "since", "until", "after", "before", "where", "whereas", "so"]
)
_PRONOUNS = frozenset(["he", "she", "it", "they", "him", "her", "them", "his", "its", "their", "this", "these", "those"])


def _ramp(x: float, zero_below: float, one_from: float, one_to: float, zero_at: float) -> float:
    """A trapezoid: 0 at ``zero_below``, 1 on [one_from, one_to], 0 at ``zero_at``."""
    if x <= zero_below or x >= zero_at:
        return 0.0
    if x < one_from:
        return (x - zero_below) / (one_from - zero_below)
    if x <= one_to:
        return 1.0
    return (zero_at - x) / (zero_at - one_to)


def coherence_parts(turn: ParsedTurn) -> dict[str, float]:
    """The five factors of the coherence score (see the module docstring), each in [0, 1]."""
    sentences = turn.sentences
    words = [w.lower() for w in turn.words]
    if not words:
        return dict.fromkeys(("length", "pronouns", "punctuation", "clauses", "wordness"), 0.0)
    per_sentence = len(words) / len(sentences)
    marks = len(_PUNCTUATION.findall(turn.text)) / len(words)
    clauses = (len(_CLAUSE_MARKS.findall(turn.text)) + sum(w in _SUBORDINATORS for w in words)) / len(sentences)
    function_share = sum(w in ENGLISH_STOPWORDS for w in words) / len(words)
    return {
        "length": _ramp(per_sentence, 1, 8, 30, 80),
        "pronouns": _resolved_share(words),
        "punctuation": 0.3 if marks == 0 else _ramp(marks, 0, 0.04, 0.4, 1.5),
        "clauses": max(_ramp(clauses, 0, 0.5, 4, 10), 0.6 if clauses < 0.5 else 0.0),
        "wordness": min(1.0, function_share / FUNCTION_WORD_SHARE),
    }


def coherence_score(turn: ParsedTurn) -> float:
    """Layer 2's coherence of ``turn``, in [0, 1]."""
    parts = coherence_parts(turn)
    structure = fmean((parts["length"], parts["pronouns"], parts["punctuation"], parts["clauses"]))
    return parts["wordness"] * math.sqrt(parts["length"] * structure)


def _resolved_share(words: list[str]) -> float:
    """The share of third-person pronouns preceded by a content word (1 without pronouns)."""
    pronouns = resolved = 0
    seen_content = False
    for word in words:
        if word in _PRONOUNS:
            pronouns += 1
            resolved += seen_content
        elif word not in ENGLISH_STOPWORDS and word.isalpha():
            seen_content = True
    return resolved / pronouns if pronouns else 1.0
