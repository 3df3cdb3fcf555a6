"""Sentences and the names in them, by shape alone (no model): what the heuristic extractor keeps
as facts and what the fact lifecycle reads a statement's subject from.

The rules are drawn in :mod:`redmem.recipes.assembler._extractors` (``HeuristicExtractor``).
"""

from __future__ import annotations

import re

__all__ = ["split_sentences", "is_fact", "find_entities", "SKIPPED_OPENERS", "SUBJECT_WORDS", "FUNCTION_WORDS",
           "COMMON_VERBS", "MAX_ENTITIES"]

SKIPPED_OPENERS = (
    "hi", "hello", "hey", "greetings", "good morning", "good afternoon", "good evening", "thanks",
    "thank you", "you're welcome", "you are welcome", "welcome", "sure", "ok", "okay", "great",
    "glad", "sorry", "of course", "certainly", "absolutely", "no problem", "happy to help",
    "let me", "let's", "feel free", "i hope", "hope this", "here is", "here's", "here are",
    "i can", "i'll", "i will", "i'd", "i would", "i'm happy", "i am happy", "as an ai",
    "please", "note that", "in summary", "to summarize",
)
SUBJECT_WORDS = frozenset(
    ["i", "we", "you", "he", "she", "they", "it", "my", "our", "your", "his", "her", "their", "its", "this", "that", "these", "those", "the", "a", "an", "there", "each", "every", "all", "some", "most", "many", "both", "one"]
)
#: Capitalised words that open sentences without naming anything.
FUNCTION_WORDS = SUBJECT_WORDS | frozenset(
    ["and", "but", "or", "so", "then", "also", "however", "if", "when", "while", "after", "before", "because", "since", "yes", "no", "not", "in", "on", "at", "for", "with", "from", "by", "to", "of", "as"]
)
COMMON_VERBS = frozenset(
    ["am", "is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "do", "does", "did", "can", "could", "will", "would", "shall", "should", "may", "might", "must", "use", "like", "love", "prefer", "need", "want", "live", "work", "run", "own", "hate", "know", "think", "get", "go", "make", "keep", "take", "meet", "call", "move", "play", "study", "teach", "speak", "write", "read", "eat", "drink", "drive", "build", "plan", "deploy", "ship", "store", "host", "support", "require", "include", "contain", "mean", "belong", "depend"]
)
MIN_WORDS, MAX_WORDS = 3, 60
#: The most entities kept per memory (every pair of them is linked).
MAX_ENTITIES = 8

_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.S)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)\s+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_WORD = re.compile(r"[\w][\w'’\-.]*[\w]|[\w]")
_ENTITY_RUN = re.compile(r"\b[A-Z][\w\-]*(?:[ \t]+[A-Z][\w\-]*)*")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``: code blocks dropped, one or more sentences per line."""
    sentences = []
    for line in _CODE_BLOCK.sub("\n", text).splitlines():
        line = _EMPHASIS.sub("", _LIST_MARKER.sub("", line)).strip()
        sentences += [" ".join(s.split()) for s in _SENTENCE_BREAK.split(line) if s.strip()]
    return sentences


def _words(sentence: str) -> list[str]:
    return _WORD.findall(sentence)


def is_fact(sentence: str) -> bool:
    """True for a declarative sentence with a subject/verb shape (rules in the module docs)."""
    lowered = sentence.lower()
    if sentence.rstrip().endswith("?") or any(_opens_with(lowered, o) for o in SKIPPED_OPENERS):
        return False
    words = _words(sentence)
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return False
    first = words[0]
    if not (first.lower() in SUBJECT_WORDS or first[0].isupper() or first[0].isdigit()):
        return False
    return any(_verb_like(w.lower()) for w in words[1:])


def _opens_with(lowered: str, opener: str) -> bool:
    return lowered.startswith(opener) and (len(lowered) == len(opener) or not lowered[len(opener)].isalpha())


def _verb_like(word: str) -> bool:
    return word in COMMON_VERBS or (len(word) > 3 and word.isalpha() and word.endswith(("s", "ed")))


def find_entities(sentence: str) -> tuple[str, ...]:
    """Runs of capitalised words, distinct (case-insensitively), at most :data:`MAX_ENTITIES`."""
    found: dict[str, str] = {}
    for match in _ENTITY_RUN.finditer(sentence):
        words = match.group().split()
        if match.start() == len(sentence) - len(sentence.lstrip()) and words[0].lower() in FUNCTION_WORDS:
            words = words[1:]
        name = " ".join(words).strip("-")
        if name and name != "I":
            found.setdefault(name.casefold(), name)
    return tuple(found.values())[:MAX_ENTITIES]
