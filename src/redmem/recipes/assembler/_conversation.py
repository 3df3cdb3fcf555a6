"""ConversationMemory: one memory per dialog turn, searchable through the turn's conversational context.

Each turn stores, beside its own text, the search texts of :mod:`redmem.context._neighbours`:
a ``context`` (the turn's line, with its speaker and date, between up to two turns of its
session on each side, indexed by BM25 with :class:`TurnContextAnalyzer`) and a ``passage``
(the turn between the turns just before and after it, embedded). The names of that module
(``Turn``, ``build_contexts``, ``build_passages``, ``SearchText`` ...) are importable from here too.

``ingest_conversation(turns, agent_id, window=2)`` builds the contexts and passages and saves
every turn with ``Model.save_many`` (one MULTI/EXEC per 1,000 turns), then lists each
session's turns by position (``ConversationKeyKind.SESSION_TURNS``), so turns appended later one at a time
(:func:`~.conversation_append.append_turns`) continue the session. Search through
:func:`conversation_assembler` (hybrid retrieval, convex score fusion: the measured best), or a
``ContextAssembler`` as with any model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum, unique
from typing import Any

from ...context._neighbours import (
    DEFAULT_WINDOW,
    NEIGHBOUR_MARK,
    PASSAGE_WINDOW,
    SearchText,
    Turn,
    TurnContextAnalyzer,
    build_contexts,
    build_passages,
)
from ...fields._embedding import EmbeddingField
from ...model._base import Model
from ...store._aio import async_function
from ...store._connection import server_errors
from ...store._keys import KeySpace, escape
from ._context_assembler import ContextAssembler
from ._models import ConversationMemory

__all__ = ["ConversationKeyKind", "ConversationMemory", "SearchText", "Turn", "TurnContextAnalyzer", "build_contexts", "build_passages",
           "ingest_conversation", "aingest_conversation", "conversation_assembler", "session_turns_key", "NEIGHBOUR_MARK", "DEFAULT_WINDOW",
           "PASSAGE_WINDOW"]


@unique
class ConversationKeyKind(StrEnum):
    """Conversation memory's kinds of key (the core kinds are :class:`~redmem.store._keys.KeyKind`; every owner's
    values are distinct, ``tests/unit/store/test_keys.py``)."""

    #: sorted set: a conversation session's turn ids scored by position (``ct:<session>``)
    SESSION_TURNS = "ct"


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

    Hybrid retrieval, convex score fusion (:func:`~redmem.context._fusion.convex_fusion`) and
    the keyword and vector lists weighing the same for every query: a question naming a person
    keeps its semantic list, whose scores only move a turn past BM25's best when BM25 ranks it
    close. ``options`` are further ContextAssembler arguments (``max_items``, ``max_tokens``,
    ...); they override these settings.
    """
    settings: dict[str, Any] = {"retrieval_mode": "hybrid", "fusion": "convex",
                                "fusion_weights": {"keyword": 1.0, "vector": 1.0}}
    return ContextAssembler(model, **{**settings, **options})
