"""The text a layer reads: a checked turn split into paragraphs, sentences and words.

A turn must be a ``str`` encodable as UTF-8 (else :class:`~redmem.store._errors.ArgumentTypeError`
or :class:`~redmem.store._errors.ValidationError`) of at most :data:`MAX_TURN_CHARS` characters.
Paragraphs are separated by blank lines; a sentence ends at ``.``, ``!`` or ``?`` (runs of
them, closing quotes and brackets included) followed by white space, or at a line break.
Terms are those of redmem's analyser (case-folded, stop words dropped, Snowball stems).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...store._errors import ArgumentTypeError, ValidationError
from ...store._validation import utf8_text
from ...text._analyzer import Analyzer, default_analyzer

__all__ = ["Sentence", "ParsedTurn", "parse_turn", "checked_turn", "query_terms", "MAX_TURN_CHARS"]

#: The longest turn scored by default: 2 MiB of characters (a longer one raises ValidationError);
#: ``HSCAEngine(max_turn_chars=...)`` sets another limit.
MAX_TURN_CHARS = 2 * 1024 * 1024
_PARAGRAPHS = re.compile(r"\n[ \t]*\n+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_WORDS = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


@dataclass(frozen=True)
class Sentence:
    """One sentence: its text, its surface words (case kept) and its analyser terms."""

    text: str
    words: tuple[str, ...]
    terms: tuple[str, ...]


@dataclass(frozen=True)
class ParsedTurn:
    """A turn's paragraphs, each a tuple of its non-empty sentences."""

    text: str
    paragraphs: tuple[tuple[Sentence, ...], ...]

    @property
    def sentences(self) -> list[Sentence]:
        return [s for paragraph in self.paragraphs for s in paragraph]

    @property
    def words(self) -> list[str]:
        return [w for s in self.sentences for w in s.words]

    @property
    def terms(self) -> list[str]:
        return [t for s in self.sentences for t in s.terms]


def checked_turn(text: Any, max_chars: int = MAX_TURN_CHARS) -> str:
    """``text`` if it is a scorable turn: a UTF-8-encodable ``str`` of at most ``max_chars`` characters."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"a turn is a str, got {type(text).__name__}")
    if len(text) > max_chars:
        raise ValidationError(f"a turn holds at most {max_chars} characters, got {len(text)}")
    return utf8_text("a turn", text)


def query_terms(name: str, text: Any) -> list[str]:
    """The distinct analyser terms of a query or concept ``text``, in order; ArgumentTypeError
    naming ``name`` when it is not a str (``relevant(None)``)."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type(text).__name__}")
    return list(dict.fromkeys(default_analyzer().tokens(text)))


def parse_turn(text: str, analyzer: Analyzer | None = None) -> ParsedTurn:
    """Split a checked turn into paragraphs and sentences, with each sentence's words and terms."""
    analyse = analyzer or default_analyzer()
    paragraphs = []
    for block in _PARAGRAPHS.split(text.strip()):
        sentences = tuple(
            Sentence(piece, tuple(_WORDS.findall(piece)), tuple(analyse.tokens(piece)))
            for piece in (p.strip() for p in _SENTENCE_END.split(block))
            if _WORDS.search(piece)
        )
        if sentences:
            paragraphs.append(sentences)
    return ParsedTurn(text, tuple(paragraphs))
