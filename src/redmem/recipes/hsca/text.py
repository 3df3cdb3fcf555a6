"""The text a layer reads: a checked turn split into paragraphs, sentences and words.

A turn must be a ``str`` encodable as UTF-8 (else :class:`~redmem.store.errors.ArgumentTypeError`
or :class:`~redmem.store.errors.ValidationError`) of at most :data:`MAX_TURN_CHARS` characters.
Paragraphs are separated by blank lines; a sentence ends at ``.``, ``!`` or ``?`` (runs of
them, closing quotes and brackets included) followed by white space, or at a line break.
Terms are those of redmem's analyser (case-folded, stop words dropped, Snowball stems).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...store.errors import ArgumentTypeError, ValidationError
from ...store.validation import utf8_text
from ...text.analyzer import Analyzer, default_analyzer

__all__ = ["Sentence", "ParsedTurn", "parse_turn", "checked_turn", "MAX_TURN_CHARS"]

#: The longest turn scored: 2 MiB of characters (a longer one raises ValidationError).
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


def checked_turn(text: Any) -> str:
    """``text`` if it is a scorable turn: a UTF-8-encodable ``str`` of at most MAX_TURN_CHARS."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"a turn is a str, got {type(text).__name__}")
    if len(text) > MAX_TURN_CHARS:
        raise ValidationError(f"a turn holds at most {MAX_TURN_CHARS} characters, got {len(text)}")
    return utf8_text("a turn", text)


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
