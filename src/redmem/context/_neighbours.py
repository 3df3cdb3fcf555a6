"""Neighbour context: a memory searchable through the texts said just before and after it.

A single turn is often unfindable on its own words: "Yes, twice last year!" answers a question
asked one turn earlier, and the day it was said lives in the session header. So a memory that
belongs to a session stores, beside its own text, two search texts built at write time from
the session's turns:

``context`` (indexed by BM25 with :class:`TurnContextAnalyzer`)::

    >> text of the turn two before           (same session only)
    > text of the turn before
    [8 May, 2023 1:56 pm] Caroline: I went to a support group yesterday.
    > text of the turn after
    >> text of the turn two after

``passage`` (embedded): the turn's own line between the turns just before and after it,
without marks. A sentence embedding of the bare turn misses who said it and what it answers;
of two turns either side it blurs into the topic.

Both are :class:`SearchText`: stored for search, never rendered into an assembled context (the
neighbours' words help find a memory; the prompt gets the memory). A memory with no session is
a session of one: its context and passage are its own line. This module is the pure stage
(texts from turns); :mod:`redmem.recipes.conversation_append` writes them as turns arrive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model._fields import StringField
from ..store._errors import ValidationError
from ..store._validation import non_negative_int, positive_int
from ..text._analyzer import Analyzer

__all__ = ["NEIGHBOUR_MARK", "DEFAULT_WINDOW", "PASSAGE_WINDOW", "Turn", "TurnContextAnalyzer", "SearchText",
           "own_line", "build_contexts", "build_passages", "record_turn", "split_speaker", "spoken_date"]

#: The mark that opens a neighbour's line in a context, once per step of distance.
NEIGHBOUR_MARK = ">"
#: Neighbouring turns on each side that a context holds by default.
DEFAULT_WINDOW = 2
#: Neighbouring turns on each side that a passage (the embedded text) holds.
PASSAGE_WINDOW = 1
#: ``Name: text`` at the start of a memory of a model without a ``speaker`` field: up to three words, then ": ".
SPEAKER_PREFIX = re.compile(r"(\S+(?: \S+){0,2}): (.+)", re.DOTALL)


@dataclass(frozen=True)
class TurnContextAnalyzer(Analyzer):
    """The shared analysis, with each line's terms repeated by its distance from the turn.

    Field-weighted in the manner of BM25F (Robertson, Zaragoza and Taylor, CIKM 2004): a line
    opening with ``d`` :data:`NEIGHBOUR_MARK` signs counts ``max(1, turn_weight // 2**d)``
    times (d = 0: the turn's own line). With the default 4: the turn 4, next-door turns 2,
    turns two away 1. Term frequency and document length are both taken over weighted terms.
    """

    turn_weight: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_int("turn_weight", self.turn_weight)

    def tokens(self, text: str) -> list[str]:
        """The weighted terms of a context: every line's terms, repeated by its weight."""
        terms: list[str] = []
        for line in text.splitlines():
            stripped = line.lstrip(NEIGHBOUR_MARK)
            distance = len(line) - len(stripped)
            terms.extend(super().tokens(stripped) * max(1, self.turn_weight >> distance))
        return terms


@dataclass(frozen=True)
class Turn:
    """One thing said: who said it, its text, its session ("" for none) and when (as shown)."""

    speaker: str
    text: str
    session: str = ""
    said_at: str = ""

    @classmethod
    def of(cls, turn: Turn | Mapping[str, Any]) -> Turn:
        """A Turn from a Turn or a mapping with ``speaker``, ``text`` and optional ``session``, ``said_at``."""
        if isinstance(turn, Turn):
            return turn
        if not isinstance(turn, Mapping) or "text" not in turn:
            raise ValidationError(f"a turn is a Turn or a mapping with 'speaker' and 'text', not {turn!r}")
        return cls(str(turn.get("speaker") or ""), str(turn["text"]), str(turn.get("session") or ""),
                   str(turn.get("said_at") or ""))


class SearchText(StringField):
    """A stored text kept for search only: indexed, never rendered into an assembled context.

    ``own_line_of``: a text field of the model; a record saved with this field unset, or with no
    ``session`` (a session of one), gets that field's text as its own line (:func:`own_line`),
    kept in step with the text: a memory written without its neighbours is searchable by its
    own words. Pass ``ContextAssembler(render_fields=[...])`` naming
    a SearchText to show it anyway.
    """

    shown = False

    def __init__(self, *, own_line_of: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.own_line_of = own_line_of

    def before_save(self, instance: Any, creating: bool) -> None:
        if self.own_line_of is None or (getattr(instance, self.name) is not None and getattr(instance, "session", None)):
            return
        text = getattr(instance, self.own_line_of)
        if isinstance(text, str):
            setattr(instance, self.name, own_line(record_turn(instance, text)))


def spoken_date(when: datetime) -> str:
    """A date as people write it, ``8 May 2023``: the words a question about it uses ("May", "2023")."""
    return f"{when.day} {when:%B %Y}"


def split_speaker(text: str) -> tuple[str, str]:
    """``("Caroline", "I went ...")`` from ``"Caroline: I went ..."``; ``("", text)`` without such a prefix."""
    found = SPEAKER_PREFIX.fullmatch(text)
    return (found.group(1), found.group(2)) if found else ("", text)


def record_turn(record: Any, text: str | None = None) -> Turn:
    """The :class:`Turn` of a stored memory: its ``text`` (default its ``content``) and ``session``, and
    its ``speaker`` and ``said_at`` when its model has them.

    A model without a ``speaker`` field keeps the speaker in the text (``Caroline: I went ...``):
    it is split off (:func:`split_speaker`), so the memory's own line still reads as its text
    and its neighbours' lines hold what was said without the name (a name that every other line
    repeats would make every memory of a speaker match a question naming them). A ``said_at``
    datetime is written as :func:`spoken_date`, a text as it is.
    """
    text = record.content if text is None else text
    speaker = getattr(record, "speaker", None)
    if "speaker" not in record._meta.fields:
        speaker, text = split_speaker(text or "")
    said = getattr(record, "said_at", None)
    return Turn(speaker or "", text or "", getattr(record, "session", None) or "",
                spoken_date(said) if isinstance(said, datetime) else said or "")


def _one_line(text: str) -> str:
    """The text on one line, without leading neighbour marks (they would change its weight)."""
    return " ".join(text.split()).lstrip(NEIGHBOUR_MARK + " ")


def own_line(turn: Turn) -> str:
    """A turn's line in its context: ``[said_at] speaker: text``, on one line."""
    head = f"[{turn.said_at}] " if turn.said_at else ""
    who = f"{_one_line(turn.speaker)}: " if turn.speaker else ""
    return head + who + _one_line(turn.text)


def build_contexts(turns: list[Turn], window: int = DEFAULT_WINDOW) -> list[str]:
    """The context text of every turn: its own line between up to ``window`` neighbours per side.

    Neighbours are turns of the same session (consecutive in ``turns``), marked by distance.
    """
    window = non_negative_int("window", window)
    contexts = []
    for i, turn in enumerate(turns):
        lines = []
        for j in range(i - window, i + window + 1):
            if j == i:
                lines.append(own_line(turn))
            elif 0 <= j < len(turns) and turns[j].session == turn.session:
                lines.append(NEIGHBOUR_MARK * abs(i - j) + " " + _one_line(turns[j].text))
        contexts.append("\n".join(lines))
    return contexts


def build_passages(turns: list[Turn]) -> list[str]:
    """The passage (embedded text) of every turn: its context of :data:`PASSAGE_WINDOW`, marks removed.

    ``text of the turn before / [said_at] Speaker: text of the turn / text of the turn after``,
    one per line, neighbours of the same session only.
    """
    return ["\n".join(line.lstrip(NEIGHBOUR_MARK + " ") for line in context.splitlines())
            for context in build_contexts(turns, PASSAGE_WINDOW)]
