"""``remember``: a new fact written exactly once, merged into a restatement or superseding an older fact.

One write, LLM-free by default:

1. detection, one round trip: the partition's lifecycle index entries (its version, the record
   holding this text's digest, the record holding this subject/slot) read by
   ``lifecycle_lookup.lua`` pipelined with the vector search of the nearest records;
2. the candidates found are loaded (one pipelined round trip, none when there are none) and
   the rules decide (:func:`_decide`): an exact restatement, a near duplicate (cosine >=
   ``merge_threshold`` and :func:`~._detect.restates`) or a statement giving the same slot
   the value its holder gives (:func:`~._detect.same_value`) is merged; else the current holder of the slot is superseded; else, with a judge configured, the judge is asked about the nearest records;
3. the write itself, one MULTI/EXEC carrying an operation key (exactly once under retries,
   :func:`~redmem.model.persistence.transact`): the new record with its indexes, and on the older
   record only the lifecycle's own entries (``valid_to``, ``superseded_by``, or ``seen_count``,
   ``last_seen``, ``sources``). The index is WATCHed before detection reads anything and every
   write of a lifecycle record bumps its version (:class:`~redmem.lifecycle.LifecycleMixin`),
   so a concurrent write of the tenant makes detection run again: two writes never both
   supersede, or both create, the same fact.

Round trips: WATCH, detection, the load (only when there is a candidate), EXEC.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum, unique
from typing import Any, Literal

import numpy as np

from ..fields.embedding import EmbeddingField
from ..fields.embedding_search import VectorSearch
from ..fields.search_protocol import Hits
from ..model.dbkey import DbKey
from ..model.indexed import AutoKeyField
from ..model.loading import load_records
from ..model.persistence import checked_values, queue_new_records, transact
from ..store.errors import ValidationError
from ..store.keys import KeyKind, KeySpace
from ..store.scripts import ScriptCall, run_calls
from ._config import NEAR_CANDIDATES, Lifecycle
from ._detect import infer_slot, restates, same_value, slot_key, text_digest
from ._timeline import OPEN_END

__all__ = ["LifecycleKeyKind", "remember", "Remembered", "index_key", "queue_entries", "VERSION_ENTRY"]


@unique
class LifecycleKeyKind(StrEnum):
    """The fact lifecycle's kinds of key (the core kinds are :class:`~redmem.store.keys.KeyKind`; every owner's
    values are distinct, ``tests/test_keys.py``)."""

    #: hash: a lifecycle model's index of current facts (``version``, ``d:<digest>``, ``s:<slot>`` -> record id)
    LIFECYCLE_INDEX = "lx"

#: The index entry counting lifecycle writes of the partition (what a write's WATCH checks).
VERSION_ENTRY = "version"
Action = Literal["created", "merged", "superseded"]


@dataclass(frozen=True)
class Remembered:
    """What :func:`remember` did: ``record`` is the stored record (the existing one on a merge),
    ``older`` the record it superseded (None unless ``action`` is "superseded")."""

    action: Action
    record: Any
    older: Any = None


@dataclass
class _Plan:
    """What one detection found and the decision."""

    digest_holder: str | None
    slot_holder: str | None
    merge_into: Any = None
    supersede: Any = None
    closed_by: Any = None  # a backdated write: the current holder that already replaced it
    own_exists: bool = False  # a record is stored under the new record's given key


def index_key(space: KeySpace) -> str:
    """The lifecycle index hash of a partition."""
    return space.key(LifecycleKeyKind.LIFECYCLE_INDEX)


def remember(instance: Any, *, source: str | None = None, now: float | None = None) -> Remembered:
    """Store a new record of a lifecycle model, merging or superseding as its ``lifecycle`` says.

    ``valid_from`` defaults to ``now`` (the write time, ``recorded_at``); ``subject`` / ``slot``
    given on the instance name the slot explicitly, else one is inferred when ``auto_slot``.
    ``source`` is added to ``sources``. On a merge the instance becomes the existing record.
    """
    model = type(instance)
    config: Lifecycle = model.lifecycle
    at = time.time() if now is None else now
    if instance.valid_from is None:
        instance.valid_from = at
    instance.recorded_at = instance.last_seen = at
    if source is not None:
        instance.sources = [*(instance.sources or []), source]
    generated = any(getattr(instance, f.name) is None for f in model._meta.fields_of(AutoKeyField))
    values = checked_values(instance, True)  # the id generated, the text embedded, the values checked
    text = str(getattr(instance, config.text_field) or "")
    slot = _slot_of(instance, text, config)
    values.update(subject=instance.subject, slot=instance.slot)
    space = instance.db_key.keyspace
    entries = [VERSION_ENTRY, "d:" + text_digest(text)] + (["s:" + slot] if slot else [])
    client = model._meta.client
    index = index_key(space)
    done: list[Remembered] = []

    def prepare(reader: Any, hashes: list[Any]) -> _Plan:
        plan = _detect(instance, config, space, entries, text, slot, check_own=not generated)
        if plan.own_exists:
            raise ValidationError(f"{model.__name__} {instance.db_key.redis_key} exists: load it and save it "
                                  "to change it (a new fact goes under a new key)")
        return plan

    links = {name: getattr(instance, name) for name in ("valid_to", "superseded_by", "supersedes")}

    def write(pipe: Any, plan: _Plan) -> None:
        for name, value in links.items():  # as given: an earlier attempt's plan may have set them
            setattr(instance, name, value)
        done[:] = [_queue(pipe, client, instance, dict(values), plan, index, entries)]

    transact(client, [], prepare, write, also_watch=[index])
    outcome = done[0]
    if outcome.action == "merged":
        _become(instance, outcome.record)
    instance._was_stored = True
    return outcome


def _slot_of(instance: Any, text: str, config: Lifecycle) -> str | None:
    """The slot index entry of the instance: its explicit subject/slot, else the inferred one."""
    if instance.subject and instance.slot:
        return slot_key(instance.subject, instance.slot)
    if not (config.supersede and config.auto_slot):
        return None
    inferred = infer_slot(text, instance.subject or None)
    if inferred is None:
        return None
    instance.subject, instance.slot = inferred
    return slot_key(*inferred)


def _embedding(model: type) -> EmbeddingField | None:
    return next(iter(model._meta.fields_of(EmbeddingField)), None)  # type: ignore[attr-defined]


def _detect(instance: Any, config: Lifecycle, space: KeySpace, entries: list[str], text: str,
            slot: str | None, check_own: bool) -> _Plan:
    """Read the index and the nearest records (one round trip), load the candidates, decide."""
    model = type(instance)
    embedding = _embedding(model)
    vector = None if embedding is None else getattr(instance, embedding.name)
    near = None
    if embedding is not None and vector is not None and (config.merge or config.judge is not None):
        near = embedding.searcher(space, np.asarray(vector), NEAR_CANDIDATES + 1)
    call = ScriptCall("lifecycle_lookup", [index_key(space)], entries)
    lookup, found = _nearest(model._meta.client, call, near, needed=lambda held: not any(held[1:]))
    values = [None if v is None else v.decode() if isinstance(v, bytes) else str(v) for v in lookup]
    plan = _Plan(values[1], values[2] if slot else None)
    own = instance.db_key.record_id
    floor = min(config.merge_threshold, 1.0 if config.judge is None else config.judge_threshold)
    hits: Hits = [(rid, score) for rid, score in found if rid != own and score >= floor]
    named = (own if check_own else None, plan.digest_holder, plan.slot_holder, *(r for r, _ in hits))
    wanted = list(dict.fromkeys(i for i in named if i))
    loaded = {r.db_key.record_id: r for r in load_records(model, [DbKey(space, i) for i in wanted], track=False)}
    plan.own_exists = loaded.pop(own, None) is not None
    current = {rid: record for rid, record in loaded.items() if record.valid_to is None}
    _decide(plan, instance, config, text, current, hits)
    return plan


def _nearest(client: Any, lookup: ScriptCall, near: VectorSearch | None,
             needed: Callable[[list[Any]], bool]) -> tuple[list[Any], Hits]:
    """The lookup's reply and the nearest records, in one round trip; the vectors are ranked only
    when ``needed(reply)``: a text or slot the index already holds decides without them (the
    holder is current but for a record deleted or restored since). The ranking runs on this
    thread, not the search pool: a write's rows cost less than a hand-off."""
    if near is None or near.empty:
        return run_calls(client, [lookup])[0], []
    try:
        replies = run_calls(client, [lookup, *near.calls()])
        if not needed(replies[0]):
            near.abandon()
            return replies[0], []
        near.work()
    except BaseException:
        near.abandon()
        raise
    return replies[0], near.finish(replies[1:])


def _decide(plan: _Plan, instance: Any, config: Lifecycle, text: str, current: dict[str, Any], hits: Hits) -> None:
    """Merge into a restatement, else supersede the slot's holder, else ask the judge (if any)."""
    field = config.text_field
    if config.merge:
        if plan.digest_holder in current:
            plan.merge_into = current[plan.digest_holder]
            return
        for rid, cosine in hits:
            record = current.get(rid)
            if record is not None and cosine >= config.merge_threshold and restates(text, str(getattr(record, field))):
                plan.merge_into = record
                return
    if config.supersede and plan.slot_holder in current:
        holder = current[plan.slot_holder]
        if config.merge and same_value(text, str(getattr(holder, field)), holder.subject or ""):
            plan.merge_into = holder  # the same slot, the same value: a restatement
        elif holder.valid_from > instance.valid_from:
            plan.closed_by = holder
        else:
            plan.supersede = holder
        return
    if config.judge is not None:
        for rid, cosine in hits:
            record = current.get(rid)
            if record is None or cosine < config.judge_threshold:
                continue
            verdict = config.judge(text, str(getattr(record, field)))
            if verdict == "duplicate" and config.merge:
                plan.merge_into = record
                return
            if verdict == "supersedes" and config.supersede and record.valid_from <= instance.valid_from:
                plan.supersede = record
                return


def queue_entries(pipe: Any, record: Any, **values: Any) -> None:
    """Queue the lifecycle's own entries of a stored record (``valid_to`` with its index too):
    they have no other index, so the rest of the record is left as it is."""
    fields = type(record)._meta.fields
    key = record.db_key
    for name, value in values.items():
        setattr(record, name, value)
        if value is None:
            pipe.hdel(key.redis_key, name)
        else:
            pipe.hset(key.redis_key, name, fields[name].encode(value))
    if "valid_to" in values:
        end = values["valid_to"]
        pipe.zadd(key.keyspace.key(KeyKind.SORTED, "valid_to"), {key.record_id: OPEN_END if end is None else end})
    pipe.hincrby(index_key(key.keyspace), VERSION_ENTRY, 1)


def _queue(pipe: Any, client: Any, instance: Any, values: dict[str, Any], plan: _Plan, index: str,
           entries: list[str]) -> Remembered:
    """Queue the plan's writes in the transaction; what it does once applied."""
    if plan.merge_into is not None:
        kept = plan.merge_into
        sources = list(dict.fromkeys([*(kept.sources or []), *(instance.sources or [])]))
        queue_entries(pipe, kept, seen_count=(kept.seen_count or 1) + 1, last_seen=instance.last_seen, sources=sources)
        return Remembered("merged", kept)
    older, newer_id = plan.supersede, instance.db_key.record_id
    if older is not None:
        queue_entries(pipe, older, valid_to=instance.valid_from, superseded_by=newer_id)
        values["supersedes"] = instance.supersedes = older.db_key.record_id
    if plan.closed_by is not None:
        values["valid_to"] = instance.valid_to = plan.closed_by.valid_from
        values["superseded_by"] = instance.superseded_by = plan.closed_by.db_key.record_id
    queue_new_records(pipe, client, [instance], values=[values], fresh=True)
    if instance.valid_to is None:  # the index names current records only
        pipe.hset(index, mapping=dict.fromkeys(entries[1:], newer_id))
    pipe.hincrby(index, VERSION_ENTRY, 1)
    return Remembered("superseded" if older is not None else "created", instance, older)


def _become(instance: Any, stored: Any) -> None:
    """Make ``instance`` the stored record it merged into (its key, its values)."""
    for field in type(stored)._meta.stored_fields():
        setattr(instance, field.name, getattr(stored, field.name))
    instance._saved_key = stored._saved_key
