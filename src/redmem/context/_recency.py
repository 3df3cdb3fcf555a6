"""Newer facts first: of two memories that state conflicting things about one subject, the newer leads.

Memories are not append-only facts: "Bob uses MySQL for billing", then weeks later "Bob switched
billing to PostgreSQL". A question about billing matches the older one at least as well (it
shares more words with the question), so relevance alone puts the stale fact first. This stage
moves the newer of such a pair just above the older one; nothing else moves.

Two memories form such a pair, without a model call, when the newer one

- says that a fact changed: it holds a verb or phrase of change (``switched``, ``moved``,
  ``no longer``, ``from now on``, ... :data:`CHANGE_WORDS`) and the two are about one subject
  (``cosine >= UPDATE_COSINE``; ``>= CURRENT_UPDATE_COSINE`` when the question asks how things
  stand now, :func:`asks_current`); or
- gives another value for the same thing: the two share a content word, each holds a value the
  other lacks (a word with a digit, a month or weekday name, a word with a capital inside:
  "Mondays at 10" / "Wednesdays at 11", "MySQL" / "PostgreSQL", "tulip42" / "maple77") and
  ``cosine >= VALUE_COSINE``; or
- restates the older with another word: most of their words are shared (Jaccard of their word
  sets >= :data:`RESTATEMENT_JACCARD`), each holds at most :data:`RESTATEMENT_NEW_WORDS` words
  the other lacks, and ``cosine >= RESTATEMENT_COSINE`` ("Alice lives in Berlin" / "Alice lives
  in Lisbon").

When the question asks how things stand now, the newer one also updates the older when it says
an end, correction or replacement (:data:`ENDING_WORDS`, at ``CURRENT_UPDATE_COSINE``): part of
the inventory of benchmarks/scenarios/SPEC.md, "How English says that a fact changed".

Two turns of a conversation about one topic ("I went to a support group yesterday" / "The
support group was great") are none of these: they share a topic but change no value, and their
order is left to relevance. Without vectors the word tests decide alone: a fifth of their words
shared (:data:`WORDS_FOR_COSINE`) stands for the cosine bounds, a tenth (:data:`WORDS_FOR_CHANGE`) when the newer says a change. When a memory's time is unknown it is never moved. Pure computation over values
the assembler already holds: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import TypeVar

from ._query_weights import MONTHS_AND_DAYS

__all__ = [
    "newer_first", "is_update", "words_of", "CHANGE_WORDS", "UPDATE_COSINE", "VALUE_COSINE", "RESTATEMENT_COSINE",
    "RESTATEMENT_JACCARD", "RESTATEMENT_NEW_WORDS", "STATED_AT_FIELDS", "stated_time_fields", "asks_current",
    "CURRENT_UPDATE_COSINE", "PAST_MARKERS", "content_words", "ENDING_WORDS",
]

T = TypeVar("T")

#: Cosine (MiniLM) at or above which a memory saying a change is about the other's subject: an
#: update and the fact it changes score 0.63-0.89 on the scenario suite's dev half ("Bob uses
#: MySQL for billing" / "Bob switched billing to PostgreSQL last week" 0.72), one 0.50 ("Our
#: production region is us-east-1." / "We migrated prod to eu-west-1"), which 0.6 gives up: at
#: 0.5, chat turns saying "it changed my life" moved past older turns of one topic, and LoCoMo
#: R@1 fell by three points.
UPDATE_COSINE = 0.6
#: The bound of :data:`UPDATE_COSINE` when the question asks how things stand now
#: (:func:`asks_current`): of two memories about one subject, the one that says the change is the
#: current answer, though its words differ more from the older statement's ("Our production region
#: is us-east-1." / "We migrated prod to eu-west-1 on November 2." 0.50). A question about what
#: happened ("When did ...", "What did ... say") keeps 0.6: there an older turn is as likely the
#: answer, and chat turns saying "it changed my life" are no update. The change word is still
#: required: a newer memory that merely shares the subject (a later session about the same person)
#: is no update.
CURRENT_UPDATE_COSINE = 0.5
#: Cosine at or above which two statements with different values are about one thing.
VALUE_COSINE = 0.6
#: Cosine above which a restatement with another word counts without a change word or a value.
RESTATEMENT_COSINE = 0.75
#: Without vectors, the share of words (Jaccard) two memories must have in common to be about one
#: subject: "Bob uses MySQL for the billing service." / "Bob switched billing to PostgreSQL last
#: week." 0.22; two chat turns of one speaker on one topic about 0.1 (the speaker's name shared).
#: With any shared word instead, LoCoMo R@1 of the lexical README model fell from 0.36 to 0.31.
WORDS_FOR_COSINE = 0.2
#: Without vectors, the share of words enough when the newer memory says that a fact changed:
#: "The project deadline is March 15." / "The client pushed the deadline to April 30." 0.125,
#: "The team standup starts at 9:30." / "Standup moved to 9:00 because of the new timezone
#: split." 0.18 (ChatMemory, whose vectors are of a passage and are not compared).
WORDS_FOR_CHANGE = 0.1
#: Share of words two memories must have in common to be one statement with another value.
RESTATEMENT_JACCARD = 0.5
#: Words (and word pairs) by which a memory says that a fact changed. Only verbs and phrases
#: of change: "now", "new" or "starting" are said in passing in most chat turns ("but now I'm
#: ready"), and counting them moved ordinary turns of one topic above each other on LoCoMo.
CHANGE_WORDS = frozenset({
    "switched", "switches", "switching", "moved", "changed", "replaced", "replacing", "updated", "became",
    "instead", "anymore", "no longer", "any longer", "not anymore", "from now", "quit", "stopped", "cancelled",
    "canceled", "migrated", "relocated", "renamed", "rescheduled", "postponed", "pushed", "rotated",
})
#: Words (and word pairs) by which a memory says that an old value ended or was corrected, read
#: only beside a question about how things stand now (:func:`asks_current`), at the bound of
#: :data:`CHANGE_WORDS` there: more verbs of replacement, ends of a state and corrections of the
#: inventory in benchmarks/scenarios/SPEC.md ("How English says that a fact changed", forms 1, 2
#: and 5). A question about the past keeps to :data:`CHANGE_WORDS`: its answer is as often the
#: older statement, and chat turns say "I gave up on it" or "we sold tickets" of other things.
ENDING_WORDS = frozenset({
    "swapped", "converted", "transferred", "upgraded", "downgraded", "brought forward", "delayed", "revised",
    "corrected", "correction", "raised", "lowered", "increased", "reduced", "took over", "taken over", "handed",
    "gave up", "given up", "dropped", "ended", "retired", "broke up", "sold", "got rid", "called off", "used to",
    "formerly", "rather than", "in place", "turns out",
})
#: Most words a restatement may hold that the other statement lacks (its new value).
RESTATEMENT_NEW_WORDS = 2

#: Fields that say when a memory was stated, preferred (in this order) over the model's first
#: DatetimeField, which is most often ``created_at``: the time it was written. Memories written
#: in another order than they were said (an import, a backfill, a chat replayed) would otherwise
#: be ordered by when they were saved. On the user-scenario suite's dev half (HybridMemory:
#: ``created_at`` then ``said_at``), the stored order stood in for the said order.
STATED_AT_FIELDS = ("said_at", "valid_from")

#: Words by which a question asks about the past (what happened, what was), not how things stand
#: now: past-tense auxiliaries and markers of an earlier or a first time.
PAST_MARKERS = re.compile(
    r"\b(?:did|was|were|had|ago|used to|previously|originally|before|first|last|ever|formerly|old)\b", re.IGNORECASE)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: The ending of an English possessive ("Tom's", "Tom’s").
_POSSESSIVE = re.compile(r"['’]s$")
#: A token as :func:`_values` reads it: letters and digits with inner hyphens, dots or colons
#: ("us-east-1", "9:30").
_TOKEN = re.compile(r"[^\W_]+(?:[-.:][^\W_]+)*")
#: Words too common to tell two statements apart.
_STOP = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "i", "we", "you", "he", "she", "they", "my", "our",
    "your", "his", "her", "their", "me", "us", "them", "as", "so", "do", "does", "did", "has", "have", "had",
})


def stated_time_fields(names: Sequence[str], datetime_fields: Sequence[str]) -> tuple[str, ...]:
    """The fields whose values date a memory, best first: the first of :data:`STATED_AT_FIELDS`
    among ``names`` (a datetime or an ISO 8601 text), then the first of ``datetime_fields`` (the
    time it was written, read when the stated time is missing); empty when there is neither."""
    stated = next((name for name in STATED_AT_FIELDS if name in names), None)
    written = next((name for name in datetime_fields if name != stated), None)
    return tuple(name for name in (stated, written) if name is not None)


def asks_current(question: str) -> bool:
    """Whether ``question`` asks how things stand now ("What database does billing use?", "When is
    the weekly sync?"): a question with no marker of the past (:data:`PAST_MARKERS`)."""
    return bool(question.strip()) and not PAST_MARKERS.search(question)


def words_of(text: str) -> list[str]:
    """The lower-cased words of ``text``, in order."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> frozenset[str]:
    """The lower-cased words of ``text`` without the words too common to tell statements apart,
    a possessive read as its owner ("Tom's rent" / "Tom pays": one subject, SPEC.md's form 7)."""
    return frozenset(_POSSESSIVE.sub("", word) for word in words_of(text)) - _STOP


def _says(words: list[str], lexicon: frozenset[str]) -> bool:
    """Whether ``words`` hold a word or a pair of adjacent words of ``lexicon``."""
    pairs = {" ".join(pair) for pair in pairwise(words)}
    return bool(lexicon.intersection(words) or lexicon.intersection(pairs))


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    """Shared words over all words of two word sets (0 for two empty sets)."""
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def _values(text: str) -> frozenset[str]:
    """The values a statement gives, lower-cased: words with a digit ("10", "9:30", "us-east-1",
    "tulip42"), month and weekday names, and words of mixed case with a capital inside ("MySQL",
    "PostgreSQL"; not acronyms such as "LGBTQ", which name a topic).
    Names of people are not values: chat turns name each other all the time, and counting them
    moved ordinary turns above each other on LoCoMo."""
    return frozenset(
        token.lower() for token in _TOKEN.findall(text)
        if any(map(str.isdigit, token)) or _mixed_case(token) or MONTHS_AND_DAYS.fullmatch(token.removesuffix("s"))
    )


def _mixed_case(token: str) -> bool:
    """A capital after the first letter and a lower-case letter somewhere: "MySQL", not "LGBTQ" or "Berlin"."""
    return any(map(str.isupper, token[1:])) and any(map(str.islower, token))


def _restates(old_words: frozenset[str], new_words: frozenset[str]) -> bool:
    """Most words shared, and each side holding at most :data:`RESTATEMENT_NEW_WORDS` of its own."""
    own = max(len(old_words - new_words), len(new_words - old_words))
    return _jaccard(old_words, new_words) >= RESTATEMENT_JACCARD and 0 < own <= RESTATEMENT_NEW_WORDS


def is_update(older: str, newer: str, cosine: float | None, current: bool = False) -> bool:
    """Whether ``newer`` updates ``older`` (module docstring); ``cosine`` None when there are no
    vectors; ``current``: the question asks how things stand now (:func:`asks_current`)."""
    return _updates(_Statement.of(older), _Statement.of(newer), cosine, current)


class _Statement:
    """A memory text as :func:`is_update` reads it, each part worked out when first asked for
    (most pairs are told apart by their cosine alone)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @classmethod
    def of(cls, text: str) -> _Statement:
        return cls(text)

    @cached_property
    def all_words(self) -> list[str]:
        return words_of(self.text)

    @cached_property
    def words(self) -> frozenset[str]:
        """Its content words."""
        return content_words(self.text)

    @cached_property
    def values(self) -> frozenset[str]:
        return _values(self.text)

    @cached_property
    def says_change(self) -> bool:
        return _says(self.all_words, CHANGE_WORDS)

    @cached_property
    def says_ending(self) -> bool:
        return _says(self.all_words, ENDING_WORDS)


#: How many statements :func:`newer_first` remembers across calls (by text).
STATEMENT_MEMO = 4096
#: The statement of a text, remembered: it depends on the text alone, and the same memories come
#: back turn after turn (their words and values are then read once, not at every read).
_remembered = lru_cache(maxsize=STATEMENT_MEMO)(_Statement)


def _updates(older: _Statement, newer: _Statement, cosine: float | None, current: bool = False) -> bool:
    if cosine is not None and cosine < min(UPDATE_COSINE, CURRENT_UPDATE_COSINE if current else UPDATE_COSINE):
        return False  # below every bound below: no word of either statement needs reading

    def _at_least(bound: float) -> bool:  # without vectors, shared words stand in for the cosine
        return _jaccard(older.words, newer.words) >= WORDS_FOR_COSINE if cosine is None else cosine >= bound

    def _said_near(bound: float) -> bool:  # a said change: without vectors, a tenth of the words shared
        return _jaccard(older.words, newer.words) >= WORDS_FOR_CHANGE if cosine is None else cosine >= bound

    if newer.says_change and _said_near(CURRENT_UPDATE_COSINE if current else UPDATE_COSINE):
        return True
    if current and newer.says_ending and _said_near(CURRENT_UPDATE_COSINE):
        return True
    if not _at_least(UPDATE_COSINE):
        return False
    subject = (older.words - older.values) & (newer.words - newer.values)
    if subject and older.values - newer.values and newer.values - older.values and _at_least(VALUE_COSINE):
        return True
    return _restates(older.words, newer.words) and _at_least(RESTATEMENT_COSINE)


def newer_first(
    ranked: Sequence[T], time_of: Callable[[T], float | None], text_of: Callable[[T], str],
    cosine_of: Callable[[T, T], float | None], current: bool = False,
) -> tuple[list[T], list[tuple[T, T]]]:
    """``(order, moves)``: ``ranked`` (best first) with each memory that updates a better-ranked,
    older one moved just above it (:func:`is_update`; ``current``: the question asks how things
    stand now), the rest in their order; ``moves`` lists each ``(newer, older)`` pair that moved.
    Memories whose time is None never move.

    Each text is read once and each pair judged at most once (at most n**2 / 2 judgements).
    """
    items = list(ranked)
    times = [time_of(item) for item in items]
    statements: dict[int, _Statement] = {}
    judged: dict[tuple[int, int], bool] = {}

    def statement(index: int) -> _Statement:
        if index not in statements:
            statements[index] = _remembered(text_of(items[index]))
        return statements[index]

    def updates(newer: int, older: int) -> bool:
        if (newer, older) not in judged:
            then, when = times[older], times[newer]
            judged[newer, older] = (then is not None and when is not None and then < when
                                    and _updates(statement(older), statement(newer),
                                                 cosine_of(items[older], items[newer]), current))
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
