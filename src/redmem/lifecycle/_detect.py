"""LLM-free detection, as plain values: a text's digest, its anchors, and its subject/slot.

- :func:`text_digest`: exact restatements (case, spacing and end punctuation aside) share it.
- :func:`anchors`: the names and numbers a statement commits to. Two statements are near
  duplicates only when their anchors agree, so "lives in Berlin" never merges into "lives in
  Lisbon" however close their vectors are.
- :func:`infer_slot`: the subject (the first name the entity extractor finds at the start) and
  the attribute family of the predicate (where one lives, works, what one uses, prefers ...):
  a newer fact of the same slot supersedes the older.
"""

from __future__ import annotations

import hashlib
import re

from ..recipes.extractors import find_entities

__all__ = ["text_digest", "anchors", "infer_slot", "slot_key", "SLOT_FAMILIES"]

_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_WORD = re.compile(r"[a-z']+")

#: Attribute families and the predicate words that name them (lower case, whole words).
SLOT_FAMILIES: dict[str, frozenset[str]] = {
    "residence": frozenset(
        ["live", "lives", "lived", "living", "moved", "moves", "move", "relocated", "relocates", "relocate", "resides", "reside", "residing", "settled", "based", "home", "hometown", "address"]
    ),
    "employer": frozenset(
        ["works", "work", "worked", "working", "joined", "joins", "employed", "employer", "hired", "job", "role", "position", "started", "company", "team"]
    ),
    "tool": frozenset(
        ["uses", "use", "used", "using", "switched", "switches", "adopted", "editor", "tool", "tools", "ide", "stack", "runs", "codes", "writes"]
    ),
    "preference": frozenset(
        ["prefers", "prefer", "preferred", "likes", "like", "liked", "loves", "love", "favourite", "favorite", "enjoys", "enjoy", "drinks", "eats"]
    ),
    "quantity": frozenset(
        ["age", "aged", "old", "owns", "own", "has", "budget", "salary", "earns", "weighs", "costs", "count", "number"]
    ),
}


def text_digest(text: str) -> str:
    """The digest of a statement, normalised: case-folded, spaces collapsed, end punctuation dropped."""
    normal = _SPACES.sub(" ", text.casefold()).strip().rstrip(".!?;: ")
    return hashlib.blake2b(normal.encode(), digest_size=12).hexdigest()


def anchors(text: str) -> frozenset[str]:
    """The names and numbers of a statement, case-folded (what two restatements must share)."""
    names = {name.casefold() for name in find_entities(text)}
    return frozenset(names | set(_NUMBER.findall(text)))


def infer_slot(text: str, subject: str | None = None) -> tuple[str, str] | None:
    """(subject, family) of a statement: ``subject`` or the name it opens with, and the first
    family whose predicate words it uses; None when either is missing."""
    if subject is None:
        names = find_entities(text)
        if not names or not text.lstrip().startswith(names[0]):
            return None
        subject = names[0]
    words = set(_WORD.findall(text.casefold()))
    family = next((name for name, cues in SLOT_FAMILIES.items() if words & cues), None)
    return None if family is None else (subject, family)


def slot_key(subject: str, slot: str) -> str:
    """The slot index entry of a subject and slot (case-folded, spaces collapsed)."""
    return _SPACES.sub(" ", f"{subject.casefold().strip()}\x1f{slot.casefold().strip()}")
