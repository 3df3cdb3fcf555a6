"""``remember``: a new fact written exactly once, merged into a restatement or superseding an older fact.

One write, LLM-free by default:

1. detection, one round trip: the partition's lifecycle index entries (its version, the record
   holding this text's digest, the record holding this subject/slot) read by
   ``lifecycle_lookup.lua`` pipelined with the vector search of the nearest records;
2. the candidates found are loaded (one pipelined round trip, none when there are none) and
   the rules decide (:func:`_decide`): an exact restatement, a near duplicate (cosine >=
   ``merge_threshold`` and :func:`~._detect.restates`) or a statement giving the same slot
   the value its holder gives (:func:`~._detect.same_value`) is merged; else the current holder of the slot is superseded; else, with a judge configured, the judge is asked about the nearest records;
3. the write itself, one MULTI/EXEC (:func:`~redmem.model.persistence.save_records`) carrying an
   operation key (exactly once under retries), WATCHing the index: its version must be the
   one detection read, else detection runs again, so two concurrent writes of one tenant never
   both supersede or both create the same fact.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..fields.embedding import EmbeddingField
from ..fields.search_protocol import Hits, Search, run_searches
from ..model.dbkey import DbKey
from ..model.loading import load_records
from ..model.persistence import checked_values, save_records
from ..store.errors import WriteConflict
from ..store.keys import KeyKind, KeySpace
from ..store.scripts import ScriptCall
from ..store.watch import MAX_ATTEMPTS
from ._config import NEAR_CANDIDATES, Lifecycle
from ._detect import infer_slot, restates, same_value, slot_key, text_digest

__all__ = ["remember", "Remembered", "index_key", "VERSION_ENTRY"]

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
    """What one detection found: the index version it read and the decision."""

    version: bytes | None
    digest_holder: str | None
    slot_holder: str | None
    merge_into: Any = None
    supersede: Any = None
    closed_by: Any = None  # a backdated write: the current holder that already replaced it


class _Lookup:
    """The index entries, as a search sharing the detection round trip."""

    def __init__(self, key: str, entries: list[str]) -> None:
        self.call = ScriptCall("lifecycle_lookup", [key], entries)

    def calls(self) -> list[ScriptCall]:
        return [self.call]

    def finish(self, replies: list[Any]) -> list[Any]:
        values: list[Any] = replies[0]
        return values


def index_key(space: KeySpace) -> str:
    """The lifecycle index hash of a partition."""
    return space.key(KeyKind.LIFECYCLE_INDEX)


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
    checked_values(instance, True)  # the id generated, the text embedded, the values checked
    text = str(getattr(instance, config.text_field) or "")
    slot = _slot_of(instance, text, config)
    space = instance.db_key.keyspace
    entries = [VERSION_ENTRY, "d:" + text_digest(text)] + (["s:" + slot] if slot else [])
    for _ in range(MAX_ATTEMPTS):
        plan = _detect(instance, config, space, entries, text, slot)
        done = _write(instance, plan, space, entries, slot)
        if done is not None:
            return done
    raise WriteConflict(f"gave up remembering into {space.base} after {MAX_ATTEMPTS} concurrent lifecycle writes")


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
            slot: str | None) -> _Plan:
    """Read the index and the nearest records (one round trip), load the candidates, decide."""
    model = type(instance)
    embedding = _embedding(model)
    vector = None if embedding is None else getattr(instance, embedding.name)
    searches: list[Search[Any]] = [_Lookup(index_key(space), entries)]
    if embedding is not None and vector is not None and (config.merge or config.judge is not None):
        searches.append(embedding.searcher(space, np.asarray(vector), NEAR_CANDIDATES + 1))
    answers = run_searches(model._meta.client, searches)
    values = [None if v is None else v.decode() if isinstance(v, bytes) else str(v) for v in answers[0]]
    plan = _Plan(answers[0][0], values[1], values[2] if slot else None)
    own = instance.db_key.record_id
    hits: Hits = [(rid, score) for rid, score in (answers[1] if len(answers) > 1 else []) if rid != own]
    wanted = list(dict.fromkeys(i for i in (plan.digest_holder, plan.slot_holder, *(r for r, _ in hits)) if i))
    loaded = {r.db_key.record_id: r for r in load_records(model, [DbKey(space, i) for i in wanted], track=False)}
    current = {rid: record for rid, record in loaded.items() if record.valid_to is None}
    _decide(plan, instance, config, text, current, hits)
    return plan


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


def _write(instance: Any, plan: _Plan, space: KeySpace, entries: list[str], slot: str | None) -> Remembered | None:
    """The write of a plan, one MULTI/EXEC; None when the index changed since detection (decide again)."""
    index = index_key(space)

    def unchanged(reader: Any) -> bool:
        return bool(reader.hget(index, VERSION_ENTRY) == plan.version)

    def bump(pipe: Any, created: Sequence[Any] = ()) -> None:
        pipe.hincrby(index, VERSION_ENTRY, 1)
        for record in created:
            if record.valid_to is None:  # the index names current records only
                pipe.hset(index, mapping=dict.fromkeys(entries[1:], record.db_key.record_id))

    if plan.merge_into is not None:
        kept = plan.merge_into
        kept.seen_count = (kept.seen_count or 1) + 1
        kept.last_seen = instance.last_seen
        kept.sources = list(dict.fromkeys([*(kept.sources or []), *(instance.sources or [])]))
        if not save_records([], [kept], watch=[index], unchanged=unchanged, also=bump):
            return None
        _become(instance, kept)
        return Remembered("merged", kept)
    older = plan.supersede
    if older is not None:
        older.valid_to = instance.valid_from
        older.superseded_by = instance.db_key.record_id
        instance.supersedes = older.db_key.record_id
    if plan.closed_by is not None:
        instance.valid_to = plan.closed_by.valid_from
        instance.superseded_by = plan.closed_by.db_key.record_id
    updated = [older] if older is not None else []
    if not save_records([instance], updated, watch=[index], unchanged=unchanged,
                        also=lambda pipe: bump(pipe, [instance])):
        if older is not None:
            older.valid_to = older.superseded_by = instance.supersedes = None
        return None
    return Remembered("superseded" if older is not None else "created", instance, older)


def _become(instance: Any, stored: Any) -> None:
    """Make ``instance`` the stored record it merged into (its key, its values)."""
    for field in type(stored)._meta.stored_fields():
        setattr(instance, field.name, getattr(stored, field.name))
    instance._saved_key = stored._saved_key
    instance._was_stored = True
