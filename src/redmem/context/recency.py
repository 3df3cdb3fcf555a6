"""Newer facts first: of two memories that state conflicting things about one subject, the newer leads.

Memories are not append-only facts: "Bob uses MySQL for billing", then weeks later "Bob switched
billing to PostgreSQL". A question about billing matches the older one at least as well (it
shares more words with the question), so relevance alone puts the stale fact first. This stage
moves the newer of such a pair just above the older one; nothing else moves.

Two memories form such a pair, without a model call, when they are about one subject
(``cosine >= UPDATE_COSINE``) and either

- the newer one says that a fact changed: it holds a verb or phrase of change (``switched``,
  ``moved``, ``no longer``, ``instead``, ... :data:`CHANGE_WORDS`), or
- the newer one restates the older with another value: most of their words are shared
  (Jaccard of their word sets >= :data:`RESTATEMENT_JACCARD`), each holds at most
  :data:`RESTATEMENT_NEW_WORDS` words the other lacks, and ``cosine >= RESTATEMENT_COSINE``
  ("Alice lives in Berlin" / "Alice lives in Lisbon").

Two turns of a conversation about one topic ("I went to a support group yesterday" / "The
support group was great") are neither: they share a topic but not a slot, and their order is
left to relevance. Without vectors the cosine tests are skipped and the word tests decide alone
(a restatement then needs the Jaccard bound only). When a memory's time is unknown it is never
moved. Pure computation over values the assembler already holds: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

__all__ = [
    "newer_first", "is_update", "words_of", "CHANGE_WORDS", "UPDATE_COSINE", "RESTATEMENT_COSINE",
    "RESTATEMENT_JACCARD", "RESTATEMENT_NEW_WORDS",
]

T = TypeVar("T")

#: Cosine (MiniLM) at or above which two memories are about one subject: an update of a fact
#: and the fact score 0.65-0.78 ("Bob uses MySQL for billing" / "Bob switched billing to
#: PostgreSQL last week" 0.69, "Alice lives in Berlin." / "Alice moved to Lisbon in May." 0.65),
#: two facts of one person on different subjects 0.52-0.54.
UPDATE_COSINE = 0.6
#: Cosine above which a restatement with another value counts without a change word.
RESTATEMENT_COSINE = 0.75
#: Share of words two memories must have in common to be one statement with another value.
RESTATEMENT_JACCARD = 0.5
#: Words (and word pairs) by which a memory says that a fact changed. Only verbs and phrases
#: of change: "now", "new" or "starting" are said in passing in most chat turns ("but now I'm
#: ready"), and counting them moved ordinary turns of one topic above each other on LoCoMo.
CHANGE_WORDS = frozenset({
    "switched", "switches", "switching", "moved", "changed", "replaced", "replacing", "updated", "became",
    "instead", "anymore", "no longer", "any longer", "not anymore", "quit", "stopped", "cancelled", "canceled",
    "migrated", "relocated", "renamed", "rescheduled", "postponed",
})
#: Most words a restatement may hold that the other statement lacks (its new value).
RESTATEMENT_NEW_WORDS = 2

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: Words too common to tell two statements apart.
_STOP = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "i", "we", "you", "he", "she", "they", "my", "our",
    "your", "his", "her", "their", "me", "us", "them", "as", "so", "do", "does", "did", "has", "have", "had",
})


def words_of(text: str) -> list[str]:
    """The lower-cased words of ``text``, in order."""
    return [w.lower() for w in _WORD.findall(text)]


def _says_change(words: list[str]) -> bool:
    pairs = {" ".join(pair) for pair in pairwise(words)}
    return bool(CHANGE_WORDS.intersection(words) or CHANGE_WORDS.intersection(pairs))


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    """Shared words over all words of two word sets (0 for two empty sets)."""
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def _restates(old_words: frozenset[str], new_words: frozenset[str]) -> bool:
    """Most words shared, and each side holding at most :data:`RESTATEMENT_NEW_WORDS` of its own."""
    own = max(len(old_words - new_words), len(new_words - old_words))
    return _jaccard(old_words, new_words) >= RESTATEMENT_JACCARD and 0 < own <= RESTATEMENT_NEW_WORDS


def is_update(older: str, newer: str, cosine: float | None) -> bool:
    """Whether ``newer`` updates ``older`` (module docstring); ``cosine`` None when there are no vectors."""
    return _updates(_Statement.of(older), _Statement.of(newer), cosine)


@dataclass(frozen=True)
class _Statement:
    """A memory text as :func:`is_update` reads it: its content words and whether it says a change."""

    words: frozenset[str]
    says_change: bool

    @classmethod
    def of(cls, text: str) -> _Statement:
        words = words_of(text)
        return cls(frozenset(words) - _STOP, _says_change(words))


def _updates(older: _Statement, newer: _Statement, cosine: float | None) -> bool:
    if cosine is not None and cosine < UPDATE_COSINE:
        return False
    if newer.says_change and (cosine is not None or _jaccard(older.words, newer.words) > 0):
        return True
    return _restates(older.words, newer.words) and (cosine is None or cosine >= RESTATEMENT_COSINE)


def newer_first(
    ranked: Sequence[T], time_of: Callable[[T], float | None], text_of: Callable[[T], str],
    cosine_of: Callable[[T, T], float | None],
) -> tuple[list[T], list[tuple[T, T]]]:
    """``(order, moves)``: ``ranked`` (best first) with each memory that updates a better-ranked,
    older one moved just above it (:func:`is_update`), the rest in their order; ``moves`` lists
    each ``(newer, older)`` pair that moved. Memories whose time is None never move.

    Each text is read once and each pair judged at most once (at most n**2 / 2 judgements).
    """
    items = list(ranked)
    times = [time_of(item) for item in items]
    statements = [_Statement.of(text_of(item)) for item in items]
    judged: dict[tuple[int, int], bool] = {}

    def updates(newer: int, older: int) -> bool:
        if (newer, older) not in judged:
            then, when = times[older], times[newer]
            judged[newer, older] = (then is not None and when is not None and then < when
                                    and _updates(statements[older], statements[newer],
                                                 cosine_of(items[older], items[newer])))
        return judged[newer, older]

    order = list(range(len(items)))
    moves: list[tuple[T, T]] = []
    moved, budget = True, len(order) ** 2  # a move puts a newer item above an older one: bounded
    while moved and budget > 0:
        moved, budget = False, budget - 1
        for j in range(1, len(order)):
            i = next((i for i in range(j) if updates(order[j], order[i])), None)
            if i is not None:
                moves.append((items[order[j]], items[order[i]]))
                order.insert(i, order.pop(j))
                moved = True
                break
    return [items[k] for k in order], moves
