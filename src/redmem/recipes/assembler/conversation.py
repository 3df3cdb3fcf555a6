"""ConversationMemory: one memory per dialog turn, searchable through the turn's conversational context.

A single turn is often unfindable on its own words: "Yes, twice last year!" answers a question
asked one turn earlier, and the day it was said lives in the session header. So each turn
stores, beside its own text, a ``context`` text built at ingest::

    >> text of the turn two before           (same session only)
    > text of the turn before
    [8 May, 2023 1:56 pm] Caroline: I went to a support group yesterday.
    > text of the turn after
    >> text of the turn two after

``context`` is a :class:`SearchText`: indexed, not rendered into assembled contexts (the
neighbours' words help find a turn; the prompt gets the turn). The BM25 index covers it with
:class:`TurnContextAnalyzer`, a field-weighted analysis
in the manner of BM25F (Robertson, Zaragoza and Taylor, CIKM 2004): the terms of a line marked
with ``d`` ``>`` signs count ``max(1, turn_weight // 2**d)`` times, so the turn itself (with its
speaker and date) weighs most and each step away halves a neighbour's weight. Term frequency
and document length are both taken over the weighted terms, which is BM25F with integer field
weights.

The embedding covers a shorter ``passage`` (also a :class:`SearchText`): the turn's own line
between the turns just before and after it, without marks. A sentence embedding of the bare
turn misses who said it and what it answers; of two turns either side it blurs into the topic.

``ingest_conversation(turns, agent_id, window=2)`` builds the contexts and passages and saves
every turn with ``Model.save_many`` (one MULTI/EXEC per 1,000 turns), then lists each
session's turns by position (``ConversationKeyKind.SESSION_TURNS``), so turns appended later one at a time
(:func:`~.conversation_append.append_turns`) continue the session. Search through
:func:`conversation_assembler` (hybrid retrieval, convex score fusion: the measured best), or a
``ContextAssembler`` as with any model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum, unique
from typing import Any

from ...fields.embedding import EmbeddingField
from ...model.base import Model
from ...store.aio import async_function
from ...store.connection import server_errors
from ...store.errors import ValidationError
from ...store.keys import KeySpace, escape
from ...store.validation import non_negative_int
from .context_assembler import ContextAssembler
from .models import NEIGHBOUR_MARK, ConversationMemory, SearchText, TurnContextAnalyzer

__all__ = ["ConversationKeyKind", "ConversationMemory", "SearchText", "Turn", "TurnContextAnalyzer", "build_contexts", "build_passages",
           "ingest_conversation", "conversation_assembler", "session_turns_key", "NEIGHBOUR_MARK", "DEFAULT_WINDOW",
           "PASSAGE_WINDOW"]


@unique
class ConversationKeyKind(StrEnum):
    """Conversation memory's kinds of key (the core kinds are :class:`~redmem.store.keys.KeyKind`; every owner's
    values are distinct, ``tests/test_keys.py``)."""

    #: sorted set: a conversation session's turn ids scored by position (``ct:<session>``)
    SESSION_TURNS = "ct"


#: Neighbouring turns on each side that a context holds by default.
DEFAULT_WINDOW = 2
#: Neighbouring turns on each side that a passage (the embedded text) holds.
PASSAGE_WINDOW = 1


@dataclass(frozen=True)
class Turn:
    """One dialog turn as given to :func:`ingest_conversation`."""

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


def _one_line(text: str) -> str:
    """The text on one line, without leading neighbour marks (they would change its weight)."""
    return " ".join(text.split()).lstrip(NEIGHBOUR_MARK + " ")


def _own_line(turn: Turn) -> str:
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
                lines.append(_own_line(turn))
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


def ingest_conversation(
    turns: Iterable[Turn | Mapping[str, Any]], agent_id: str, window: int = DEFAULT_WINDOW,
    model: type[Model] = ConversationMemory,
) -> list[Any]:
    """Save every turn as one memory of ``agent_id`` (in order) and return the saved records.

    ``turns`` are in conversation order; ``model`` is ConversationMemory or a subclass of it.
    Embeddings are computed in provider-sized batches, records written with ``save_many``.
    """
    given = [Turn.of(turn) for turn in turns]
    records = []
    texts = zip(given, build_contexts(given, window), build_passages(given))
    for position, (turn, context, passage) in enumerate(texts):
        records.append(model(agent_id=agent_id, speaker=turn.speaker, content=turn.text, session=turn.session,
                             position=position, said_at=turn.said_at, context=context, passage=passage))
    for field in model._meta.fields_of(EmbeddingField):
        field.embed_many(records)
    model.save_many(records)
    _list_sessions(records)
    return records


def session_turns_key(space: KeySpace, session: str) -> str:
    """The sorted set of the turn ids of ``session`` in partition ``space``, scored by position
    (:mod:`.conversation_append` appends to it)."""
    return space.key(ConversationKeyKind.SESSION_TURNS, escape(session))


def _list_sessions(records: list[Any]) -> None:
    """Each session's turn ids by position, so :func:`~.conversation_append.append_turns` continues it."""
    sessions: dict[str, dict[str, int]] = {}
    for record in records:
        if record.session:
            key = session_turns_key(record.db_key.keyspace, record.session)
            sessions.setdefault(key, {})[record.db_key.record_id] = record.position
    if sessions:
        client = records[0]._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for key, positions in sessions.items():
                pipe.zadd(key, positions)
            pipe.execute()


#: ``await aingest_conversation(...)``: :func:`ingest_conversation` over redis.asyncio (docs/asyncio.md).
aingest_conversation = async_function(ingest_conversation)


def conversation_assembler(model: type[Model] = ConversationMemory, **options: Any) -> ContextAssembler:
    """A ContextAssembler over ``model`` with the settings measured best for dialog turns.

    Hybrid retrieval, convex score fusion (:func:`~redmem.context.fusion.convex_fusion`) and
    the keyword and vector lists weighing the same for every query: a question naming a person
    keeps its semantic list, whose scores only move a turn past BM25's best when BM25 ranks it
    close. ``options`` are further ContextAssembler arguments (``max_items``, ``max_tokens``,
    ...); they override these settings.
    """
    settings: dict[str, Any] = {"retrieval_mode": "hybrid", "fusion": "convex",
                                "fusion_weights": {"keyword": 1.0, "vector": 1.0}}
    return ContextAssembler(model, **{**settings, **options})
