"""LLM-free detection, as plain values: a text's digest, its anchors, and its subject/slot.

- :func:`text_digest`: exact restatements (case, spacing and end punctuation aside) share it.
- :func:`anchors`: the names and numbers a statement commits to; :func:`restates`: two
  statements say the same when their anchors agree and the content words of one (stop words and
  predicate words aside) are all in the other, so "lives in Berlin" never merges into "lives in
  Lisbon", nor "likes tea" into "likes cocoa", however close their vectors are.
- :func:`infer_slot`: the subject (the first name the entity extractor finds at the start) and
  the attribute family of the predicate (where one lives, works, what one uses, prefers ...):
  a newer fact of the same slot supersedes the older.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

from ..text._sentences import find_entities
from ..text._stopwords import ENGLISH_STOPWORDS

__all__ = [
    "text_digest",
    "anchors",
    "content_words",
    "restates",
    "same_value",
    "infer_slot",
    "slot_key",
    "SLOT_FAMILIES",
    "MODIFIERS",
    "analysis",
]

_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_WORD = re.compile(r"[a-z0-9']+")

#: Attribute families and the predicate words that name them (lower case, whole words).
SLOT_FAMILIES: dict[str, frozenset[str]] = {
    "residence": frozenset(
        [
            "live",
            "lives",
            "lived",
            "living",
            "moved",
            "moves",
            "move",
            "relocated",
            "relocates",
            "relocate",
            "resides",
            "reside",
            "residing",
            "settled",
            "based",
            "home",
            "hometown",
            "address",
        ]
    ),
    "employer": frozenset(
        [
            "works",
            "work",
            "worked",
            "working",
            "joined",
            "joins",
            "employed",
            "employer",
            "hired",
            "job",
            "role",
            "position",
            "started",
            "company",
            "team",
        ]
    ),
    "tool": frozenset(
        [
            "uses",
            "use",
            "used",
            "using",
            "switched",
            "switches",
            "adopted",
            "editor",
            "tool",
            "tools",
            "ide",
            "stack",
            "runs",
            "codes",
            "writes",
        ]
    ),
    "preference": frozenset(
        [
            "prefers",
            "prefer",
            "preferred",
            "likes",
            "like",
            "liked",
            "loves",
            "love",
            "favourite",
            "favorite",
            "enjoys",
            "enjoy",
            "drinks",
            "eats",
        ]
    ),
    "quantity": frozenset(
        ["age", "aged", "old", "owns", "own", "has", "budget", "salary", "earns", "weighs", "costs", "count", "number"]
    ),
}

_PREDICATE_WORDS = frozenset().union(*SLOT_FAMILIES.values())
#: Time and degree words that say nothing of a value ("now drinks tea every morning").
MODIFIERS = frozenset(
    [
        "now",
        "still",
        "currently",
        "today",
        "these",
        "days",
        "every",
        "morning",
        "evening",
        "night",
        "week",
        "month",
        "year",
        "last",
        "new",
        "again",
        "best",
        "most",
        "really",
        "usually",
        "always",
        "often",
        "lately",
        "recently",
    ]
)


def text_digest(text: str) -> str:
    """The digest of a statement, normalised: case-folded, spaces collapsed, end punctuation dropped."""
    normal = _SPACES.sub(" ", text.casefold()).strip().rstrip(".!?;: ")
    return hashlib.blake2b(normal.encode(), digest_size=12).hexdigest()


#: How many statements' analyses (:func:`anchors`, :func:`content_words`, their names) are kept:
#: a write analyses its own text and the cards it compares it with, and a card is compared again by
#: the writes that follow it.
ANALYSES_KEPT = 4096


@lru_cache(maxsize=ANALYSES_KEPT)
def _names(text: str) -> tuple[str, ...]:
    """The entity extractor's names of a statement (:func:`~redmem.text._sentences.find_entities`), kept."""
    return find_entities(text)


@lru_cache(maxsize=ANALYSES_KEPT)
def anchors(text: str) -> frozenset[str]:
    """The names and numbers of a statement, case-folded (what two restatements must share)."""
    names = {name.casefold() for name in _names(text)}
    return frozenset(names | set(_NUMBER.findall(text)))


@lru_cache(maxsize=ANALYSES_KEPT)
def content_words(text: str) -> frozenset[str]:
    """The words of a statement that carry its value: lower case, less stop words and predicate words."""
    words = set(_WORD.findall(text.casefold().replace("'s ", " ")))
    return frozenset(words - ENGLISH_STOPWORDS - _PREDICATE_WORDS)


def restates(text: str, other: str) -> bool:
    """Whether ``text`` says what ``other`` says: the same names and numbers, and the content
    words of one all found in the other (neither empty)."""
    if anchors(text) != anchors(other):
        return False
    mine, theirs = content_words(text), content_words(other)
    return bool(mine) and bool(theirs) and (mine <= theirs or theirs <= mine)


def same_value(text: str, other: str, subject: str) -> bool:
    """Whether two statements of one subject and slot give it the same value: the same names and
    numbers, and either a name or number besides the subject and the numbers of its name (that is
    the value) or, once the subject and generic modifiers (:data:`MODIFIERS`) are set aside, the
    value words of one all among the other's ("favourite drink is cocoa" / "likes cocoa best", not "favourite drink is
    coffee" / "favourite drink is espresso")."""
    mine_anchors = anchors(text)
    if mine_anchors != anchors(other):
        return False
    if mine_anchors - {subject.casefold()} - set(_NUMBER.findall(subject)):  # a number of the name is no value
        return True
    aside = set(_WORD.findall(subject.casefold())) | MODIFIERS
    mine, theirs = content_words(text) - aside, content_words(other) - aside
    return bool(mine) and bool(theirs) and (mine <= theirs or theirs <= mine)


@lru_cache(maxsize=ANALYSES_KEPT)
def analysis(text: str, subject: str) -> tuple[Any, ...]:
    """What the one-call write (``lifecycle_write.lua``) compares of a statement, precomputed:
    (anchors, content words, whether a name or number besides ``subject`` and its numbers is
    left, the value words (content words less the subject's words and :data:`MODIFIERS`)),
    each a sorted tuple; kept (a write analyses its statement for its card and for the script).
    Given the same ``subject``, :func:`restates` and :func:`same_value` are set comparisons of
    these (``same_value(a, b, s)``: the anchors equal, and b's flag or the value words of one
    within the other's)."""
    names = anchors(text)
    value_names = names - {subject.casefold()} - set(_NUMBER.findall(subject))
    aside = set(_WORD.findall(subject.casefold())) | MODIFIERS
    words = content_words(text)
    return tuple(sorted(names)), tuple(sorted(words)), bool(value_names), tuple(sorted(words - aside))


def infer_slot(text: str, subject: str | None = None) -> tuple[str, str] | None:
    """(subject, family) of a statement: ``subject`` or the name it opens with, and the first
    family whose predicate words it uses; None when either is missing."""
    if subject is None:
        names = _names(text)
        if not names or not text.lstrip().startswith(names[0]):
            return None
        subject = names[0]
    words = set(_WORD.findall(text.casefold()))
    family = next((name for name, cues in SLOT_FAMILIES.items() if words & cues), None)
    return None if family is None else (subject, family)


def slot_key(subject: str, slot: str) -> str:
    """The slot index entry of a subject and slot (case-folded, spaces collapsed)."""
    return _SPACES.sub(" ", f"{subject.casefold().strip()}\x1f{slot.casefold().strip()}")
