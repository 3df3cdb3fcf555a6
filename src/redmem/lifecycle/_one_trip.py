"""A lifecycle write in one round trip: lookup, rules and writes in one script call.

The writes a plain save of the new record queues are recorded (:func:`~redmem.store._composed.recorded`)
and sent as arguments of ``lifecycle_write.lua``, composed with the scripts they call
(:mod:`redmem.store._composed`), which reads the index entries of the text and slot with their
cards, applies the rules of :func:`~._write.remember` to them, and writes the outcome — the new
record, or the reinforcement of the one it restates, and the older record's window — all in
one atomic, exactly-once EVALSHA. The rules compare the statements' precomputed analyses
(:func:`~._detect.analysis`, kept in each card), which give the decisions of
:func:`~._detect.restates` and :func:`~._detect.same_value` as set comparisons.

The near-duplicate rule needs the nearest records, ranked in-process: they are ranked before the
call when the index may hold neither the text nor the slot (:mod:`._hints`), and the script
checks that the matrix ranked was the server's current one (its changes call, pasted in). The
script answers "redo", writing nothing, when the index holds neither and nothing was ranked, or
the matrix was behind (the changes it read bring it up): the write is ranked and sent again, a
second round trip. Once written, the script reads the changes since the matrix's version (the
write's own vector among them); they are kept and applied, in one batch, before the next
ranking (:meth:`~redmem.fields._embedding_search.VectorSearch.defer`: one row applied at a time
costs milliseconds at 100,000 rows), so that ranking's matrix is current without a round trip.

Cards stored by an older version (no analysis) send the write the watched way (:mod:`._write`).
"""

from __future__ import annotations

import json
from typing import Any, cast

from ..fields._embedding import written_vector_search
from ..fields._embedding_search import DEFERRED_MOST, VectorSearch
from ..model._dbkey import DbKey
from ..model._loading import instance_from_stored
from ..model._persistence import queue_new_records
from ..store._composed import composed_source, queued_args, recorded, run_composed
from ..store._connection import server_errors
from ..store._errors import WriteConflict
from ..store._keys import KeyKind, KeySpace
from ..store._watch import MAX_ATTEMPTS
from ._config import NEAR_CANDIDATES, Lifecycle
from ._detect import analysis
from ._hints import held
from ._index import index_key
from ._outcome import Remembered, become, embedding_of, json_list

__all__ = ["remember_in_one_call"]

#: The scripts ``lifecycle_write.lua`` calls by name.
_HELPERS = ("lifecycle_reinforce", "vector_changes")
#: A matrix argument of a model without vectors (never read).
_NO_MATRIX = ["", 0, 0, 0]


def remember_in_one_call(
    instance: Any, values: dict[str, Any], text: str, entries: list[str], *, older: bool
) -> Remembered | None:
    """Store a new record of a lifecycle model (its values checked, ``entries`` the index entries
    of its text and slot) in one script call, two when the nearest records must be ranked anew;
    None when a card of an older version needs the watched write (nothing written). ``older``:
    a supersede's outcome carries the older record, built from the reply (else None)."""
    model = type(instance)
    config: Lifecycle = model.lifecycle
    client = model._meta.client
    key = instance.db_key
    space, record_id = key.keyspace, key.record_id
    index = index_key(space)
    hints = held.get(client, index)
    commands = recorded(client, lambda pipe: queue_new_records(pipe, client, [instance], values=[values], fresh=True))
    sources, queued = queued_args(client, commands)
    source = composed_source("lifecycle_write", _HELPERS, tuple(sources))
    near = _searcher(instance, config, space)
    keys = [index, key.redis_key, space.key(KeyKind.SORTED, "valid_to")]
    fields = model._meta.fields
    mine = analysis(text, instance.subject or "")
    head = [
        entries[0],
        entries[1] if len(entries) > 1 else "",
        record_id,
        json.dumps([mine[0], mine[1], mine[3]]),
        "1" if config.merge else "0",
        "1" if config.supersede else "0",
        fields["valid_to"].encode(instance.valid_from),
        repr(float(instance.valid_from)),
        f"{space.record('')}:",
    ]
    tail = [fields["last_seen"].encode(instance.last_seen), json_list(instance.sources)]
    if near is not None:
        near.hold()
        keys += near.change_keys
    try:
        rank = near is not None and not hints.any_held(entries)
        if rank:
            cast(VectorSearch, near).apply_deferred()  # the rows of the writes since the last ranking
        ranked = _ranked(cast(VectorSearch, near), record_id, config) if rank else ""
        for _ in range(MAX_ATTEMPTS):
            sent = _NO_MATRIX if near is None else [*near.changes_args()[:2], 2 * DEFERRED_MOST, near.deferred_end()]
            with server_errors(client):
                reply = run_composed(client, source, keys, [*head, ranked, *tail, *sent, *queued])
            if reply[0] != b"redo":
                break
            if reply[1] == b"legacy" or near is None:
                return None
            near.catch_up(reply[2])
            ranked = _ranked(near, record_id, config)
        else:
            raise WriteConflict(f"gave up writing {key.redis_key} after {MAX_ATTEMPTS} concurrent writes")
        if reply[3] and near is not None:
            near.defer(sent, reply[3])
    finally:
        if near is not None:
            near.abandon()
    return _outcome(instance, space, reply, hints, entries, older)


def _searcher(instance: Any, config: Lifecycle, space: KeySpace) -> VectorSearch | None:
    """The search of the nearest records (a model with merge and an embedding of the text), else None."""
    embedding = embedding_of(type(instance))
    vector = None if embedding is None else getattr(instance, embedding.name)
    if embedding is None or vector is None or not config.merge:
        return None
    return written_vector_search(embedding, space, vector, NEAR_CANDIDATES + 1)


def _ranked(near: VectorSearch, record_id: str, config: Lifecycle) -> str:
    """The nearest records the near-duplicate rule may merge into, best first, as the script takes them."""
    return json.dumps([rid for rid, score in near.rank_held() if rid != record_id and score >= config.merge_threshold])


def _outcome(instance: Any, space: KeySpace, reply: list[Any], hints: Any, entries: list[str], older: bool) -> Remembered:
    """The instance (of partition ``space``) and the outcome once the script's reply is in (the
    superseded record only when ``older``)."""
    model = type(instance)
    action, other_id, other = reply[0].decode(), reply[1], reply[2]
    instance._was_stored = True
    if action == "merged":
        stored = instance_from_stored(model, DbKey(space, other_id.decode()), dict(zip(other[::2], other[1::2])))
        become(instance, stored)
        return Remembered("merged", stored)
    if action == "closed":
        instance.valid_to = model._meta.fields["valid_to"].decode(other)
        instance.superseded_by = other_id.decode()
        return Remembered("created", instance)
    hints.seen(entries, [])
    if action == "superseded":
        instance.supersedes = other_id.decode()
        if not older:
            return Remembered("superseded", instance)
        stored = instance_from_stored(model, DbKey(space, instance.supersedes), dict(zip(other[::2], other[1::2])))
        return Remembered("superseded", instance, stored)
    return Remembered("created", instance)
