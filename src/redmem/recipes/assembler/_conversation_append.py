"""Appending turns to a conversation session, linked as :func:`ingest_conversation` links a whole one.

:func:`~.conversation.ingest_conversation` builds every turn's ``context`` and ``passage`` from
the whole list of turns. A memory fed as the conversation goes (an MCP ``remember`` per turn, a
chat) cannot: the turn after one is not said yet. :func:`append_turns` keeps each session's
turn ids in order (``ConversationKeyKind.SESSION_TURNS``, a sorted set by position, in the partition's
slot) and, for new turns of a session:

- reads the session's last turns (``2 * max(window, PASSAGE_WINDOW)`` of them: enough to
  rebuild in full the contexts that change);
- builds the new turns' contexts and passages with :func:`~redmem.context._neighbours.build_contexts` and
  :func:`~redmem.context._neighbours.build_passages` over those turns and the new ones, so they hold the
  turns before them;
- rebuilds the last ``window`` earlier turns' contexts (and the last one's passage), which now
  hold the new turns as the turns after them, and re-embeds the passages that changed;
- writes the new records, the changed earlier ones and the session's positions in **one**
  MULTI/EXEC (:func:`~redmem.model._persistence.save_records`: exactly once, like every
  save), WATCHing the session's list: a turn appended meanwhile by another writer makes the
  whole step start over, so two writers never both take a turn as the one after the same turn.

Appending a session's turns one at a time thus gives every turn the context and passage that
ingesting the whole session at once gives it. Turns without a session are saved alone (their
context and passage are their own line).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ...context._neighbours import DEFAULT_WINDOW, PASSAGE_WINDOW, Turn, build_contexts, build_passages, record_turn
from ...fields._embedding import EmbeddingField
from ...model._base import Model
from ...model._dbkey import DbKey
from ...model._indexed import AutoKeyField
from ...model._loading import load_records
from ...model._persistence import save_records
from ...store._connection import server_errors
from ...store._errors import ValidationError, WriteConflict
from ...store._validation import non_negative_int
from ...store._watch import MAX_ATTEMPTS
from ._conversation import session_turns_key

__all__ = ["append_turns", "session_turns_key", "turn_of_record", "AlsoWrite"]

#: ``also(pipe, records, before)``: further writes queued in the append's MULTI/EXEC, given the
#: new records and the session's turn just before the first of them (None: none).
AlsoWrite = Callable[[Any, list[Any], Any], None]


def turn_of_record(record: Any) -> Turn:
    """The :class:`~redmem.context._neighbours.Turn` of a stored turn (:func:`~redmem.context._neighbours.record_turn`)."""
    return record_turn(record)


def append_turns(
    records: Sequence[Any], *, window: int = DEFAULT_WINDOW, turn_of: Callable[[Any], Turn] = turn_of_record,
    also: AlsoWrite | None = None,
) -> list[Any]:
    """Save new turns of one session (in order) after the session's stored turns; returns them saved.

    ``records``: unsaved instances of one model and partition with the fields ``session``,
    ``context``, ``position`` and optionally ``passage`` (:class:`~.conversation.ConversationMemory` or a
    model shaped like it), all of one session (None or "": no session, each turn alone).
    ``turn_of(record)``: the Turn the texts are built from (default :func:`turn_of_record`).
    ``also``: further writes for the same MULTI/EXEC (:data:`AlsoWrite`). An auto key left
    None is drawn here (a random hex id). See the module docstring.
    """
    records = list(records)
    if not records:
        return []
    window = non_negative_int("window", window)
    model: type[Any] = type(records[0])
    session = records[0].session or ""
    if any(type(r) is not model or (r.session or "") != session for r in records):
        raise ValidationError("append_turns takes turns of one model and one session")
    for record in records:
        for field in model._meta.fields_of(AutoKeyField):
            if getattr(record, field.name) is None:
                setattr(record, field.name, uuid.uuid4().hex)
    if not session:
        return _save_alone(model, records, turn_of, also)
    space = records[0].db_key.keyspace
    key = session_turns_key(space, session)
    reach = 2 * max(window, PASSAGE_WINDOW)
    client = model._meta.client
    for _ in range(MAX_ATTEMPTS):
        with server_errors(client):
            tail = client.zrange(key, -reach, -1, withscores=True)
        ids = [_text(member) for member, _ in tail]
        earlier = load_records(model, [DbKey(space, record_id) for record_id in ids], track=False)
        changed = _link(earlier, records, window, turn_of)
        last = tail[-1][1] if tail else -1.0
        for offset, record in enumerate(records, 1):
            record.position = int(last) + offset
        _embed(model, [*records, *(changed if "passage" in model._meta.fields else [])])  # else their text is as embedded
        before = earlier[-1] if earlier else None

        def unchanged(reader: Any, seen: list[Any] = tail) -> bool:
            return bool(reader.zrange(key, -reach, -1, withscores=True) == seen)

        def queue(pipe: Any, before: Any = before) -> None:
            pipe.zadd(key, {record.db_key.record_id: record.position for record in records})
            if also is not None:
                also(pipe, records, before)

        if save_records(records, changed, watch=[key], unchanged=unchanged, also=queue):
            return records
    raise WriteConflict(f"gave up appending to session {session!r} after {MAX_ATTEMPTS} concurrent appends")


def _link(earlier: list[Any], records: list[Any], window: int, turn_of: Callable[[Any], Turn]) -> list[Any]:
    """Set the contexts and passages of ``records`` and of the earlier turns they change; returns those."""
    turns = [turn_of(record) for record in [*earlier, *records]]
    contexts, passages = build_contexts(turns, window), build_passages(turns)
    for i, record in enumerate(records, len(earlier)):
        _set_texts(record, contexts[i], passages[i])
    changed = []
    first = max(len(earlier) - max(window, PASSAGE_WINDOW), 0)  # only these have their full context here
    for i in range(first, len(earlier)):
        record = earlier[i]
        stored = _texts(record)
        context = contexts[i] if i >= len(earlier) - window else stored[0]
        passage = passages[i] if i >= len(earlier) - PASSAGE_WINDOW else stored[1]
        if (context, passage) != stored:
            _set_texts(record, context, passage)
            changed.append(record)
    return changed


def _save_alone(model: type[Model], records: list[Any], turn_of: Callable[[Any], Turn], also: AlsoWrite | None) -> list[Any]:
    """Turns without a session: each one's context and passage is its own line."""
    for record in records:
        turn = turn_of(record)
        _set_texts(record, build_contexts([turn])[0], build_passages([turn])[0])
    _embed(model, records)
    save_records(records, also=None if also is None else (lambda pipe: also(pipe, records, None)))
    return records


def _texts(record: Any) -> tuple[Any, Any]:
    """A turn's (context, passage); passage None for a model without one."""
    return record.context, record.passage if "passage" in record._meta.fields else None


def _set_texts(record: Any, context: str, passage: str) -> None:
    """Set a turn's context, and its passage when its model has one."""
    record.context = context
    if "passage" in record._meta.fields:
        record.passage = passage


def _embed(model: type[Model], records: list[Any]) -> None:
    for field in model._meta.fields_of(EmbeddingField):
        field.embed_many(records)


def _text(member: Any) -> str:
    return member.decode() if isinstance(member, bytes) else str(member)
