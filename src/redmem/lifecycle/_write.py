"""``remember``: a new fact written exactly once, merged into a restatement or superseding an older fact.

A write goes in one script call (:mod:`._one_trip`: the same rules, decided inside the script)
unless it needs what only the client can do mid-write — a judge, a caller-given key to refuse
when taken, links given on the record, or cards an older version stored — then it is the
watched write below (:func:`remember_watched`), LLM-free by default:

1. detection, sent with the WATCH: ``lifecycle_lookup.lua`` reads the partition's lifecycle index
   (:mod:`._index`: its version, the record holding this text's digest, the record holding this
   subject/slot, and the *card* of each — ``valid_from``, statement, subject — so no record is
   loaded), pipelined with the vector search of the nearest records (ranked only when the index
   holds neither the text nor the slot) and, for a key the caller gave, whether it is taken;
2. the rules decide (:func:`_decide`): an exact restatement, a near duplicate (cosine >=
   ``merge_threshold`` and :func:`~._detect.restates`) or a statement giving the same slot
   the value its holder gives (:func:`~._detect.same_value`) is merged; else the current holder
   of the slot is superseded; else, with a judge configured, the judge is asked about the
   nearest records. Only near records found by the vectors need their cards read (one more
   round trip, only then);
3. the write itself, one MULTI/EXEC carrying an operation key (exactly once under retries,
   :func:`~redmem.model._persistence.transact`): the new record with its indexes and card, and on
   the older record only the lifecycle's own entries (``valid_to``, ``superseded_by``; or
   ``seen_count``, ``last_seen``, ``sources`` by ``lifecycle_reinforce.lua``), whose stored hash
   the same EXEC returns. The index is WATCHed before detection reads anything and every write
   of a lifecycle record bumps its version (:class:`~redmem.lifecycle.LifecycleMixin`), so a
   concurrent write of the tenant makes detection run again: two writes never both supersede,
   or both create, the same fact.

Round trips of the watched write: the WATCH with detection (:func:`~redmem.store._watch.watch_and_read`),
then the EXEC: two, as a plain save (WATCH, EXEC); on a cluster redis-py sends the WATCH alone (three).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..fields._embedding import written_vector_search
from ..fields._embedding_search import VectorSearch
from ..fields.search_protocol import Hits
from ..model._dbkey import DbKey
from ..model._indexed import AutoKeyField
from ..model._loading import instance_from_stored, load_records
from ..model._persistence import checked_values, queue_new_records, transact
from ..store._connection import server_errors
from ..store._errors import ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import ScriptCall, queue_script
from ._config import NEAR_CANDIDATES, Lifecycle
from ._detect import infer_slot, restates, same_value, slot_key, text_digest
from ._index import VERSION_ENTRY, Card, card_entry, index_key, queue_card, read_card
from ._one_trip import remember_in_one_call
from ._outcome import Action, Remembered, become, embedding_of, json_list
from ._timeline import OPEN_END

__all__ = ["remember", "remember_watched", "save_new", "Remembered", "queue_entries"]


@dataclass
class _Plan:
    """What one detection found and the decision (the cards of the records it names)."""

    digest_holder: str | None
    slot_holder: str | None
    merge_into: Card | None = None
    supersede: Card | None = None
    closed_by: Card | None = None  # a backdated write: the current holder that already replaced it
    own_exists: bool = False  # a record is stored under the new record's given key


@dataclass(frozen=True)
class _Queued:
    """What the EXEC does, and where its reply holds the other record's stored hash (-1: none)."""

    action: Action
    other: Card | None
    position: int = -1


def remember(instance: Any, *, source: str | None = None, now: float | None = None) -> Remembered:
    """Store a new record of a lifecycle model, merging or superseding as its ``lifecycle`` says.

    ``valid_from`` defaults to ``now`` when given, else the model's ``valid_since()`` (the write
    time ``recorded_at`` unless the model overrides it); ``subject`` / ``slot``
    given on the instance name the slot explicitly, else one is inferred when ``auto_slot``.
    ``source`` is added to ``sources``. On a merge the instance becomes the existing record.

    One script call (:mod:`._one_trip`) unless a judge is configured, the caller gave the key or
    the record's links, or the index holds a card of an older version: then the watched write
    (:func:`remember_watched`).
    """
    return _remember(instance, source, now, older=True)


def save_new(instance: Any) -> None:
    """:func:`remember` as ``save()`` writes a new record: the same write, but the one-call
    write does not build the record it superseded from the script's reply (``save()`` returns
    no outcome; building that record took 22 µs, about 3% of a write's client CPU)."""
    _remember(instance, None, None, older=False)


def _remember(instance: Any, source: str | None, now: float | None, older: bool) -> Remembered:
    """:func:`remember`; ``older``: whether a one-call supersede's outcome carries the older record."""
    ready = _prepare(instance, source, now)
    linked = any(getattr(instance, name) is not None for name in _LINKS)
    if ready.generated and type(instance).lifecycle.judge is None and not linked:
        outcome = remember_in_one_call(instance, dict(ready.values), ready.text, ready.entries, older=older)
        if outcome is not None:
            return outcome
    return _watched(instance, ready)


def remember_watched(instance: Any, *, source: str | None = None, now: float | None = None) -> Remembered:
    """:func:`remember` by the watched write whatever the record (the path the one-call write
    decides as: tests replay writes through both)."""
    return _watched(instance, _prepare(instance, source, now))


#: The lifecycle's links a new record may be given (then written the watched way, as given).
_LINKS = ("valid_to", "superseded_by", "supersedes")


@dataclass(frozen=True)
class _Prepared:
    """A new record made ready to write: its checked values, statement, index entries (of its
    text and slot), and whether its key was just generated (else a record under it is refused)."""

    values: dict[str, Any]
    text: str
    entries: list[str]
    generated: bool


def _prepare(instance: Any, source: str | None, now: float | None) -> _Prepared:
    """Times, sources, the key, the embedding, the checked values and the slot of a new record."""
    model = type(instance)
    config: Lifecycle = model.lifecycle
    at = time.time() if now is None else now
    if instance.valid_from is None:
        instance.valid_from = instance.valid_since() if now is None else now
    instance.recorded_at = instance.last_seen = at
    if source is not None:
        instance.sources = [*(instance.sources or []), source]
    generated = any(getattr(instance, f.name) is None for f in model._meta.fields_of(AutoKeyField))
    values = checked_values(instance, True)  # the id generated, the text embedded, the values checked
    text = str(getattr(instance, config.text_field) or "")
    slot = _slot_of(instance, text, config)
    values.update(subject=instance.subject, slot=instance.slot)
    return _Prepared(values, text, ["d:" + text_digest(text)] + (["s:" + slot] if slot else []), generated)


def _watched(instance: Any, ready: _Prepared) -> Remembered:
    """The WATCH round trip (with detection), then the MULTI/EXEC."""
    values, text, generated = ready.values, ready.text, ready.generated
    model = type(instance)
    config: Lifecycle = model.lifecycle
    space = instance.db_key.keyspace
    entries = [VERSION_ENTRY, *ready.entries]
    slot = entries[2][2:] if len(entries) > 2 else None
    client = model._meta.client
    index = index_key(space)
    done: list[_Queued] = []
    replies: list[Any] = []
    detection = _Detection(instance, config, entries, slot, check_own=not generated)

    def prepare(reader: Any, read: list[Any]) -> _Plan:
        plan = detection.decide(read, text)
        if plan.own_exists:
            raise ValidationError(
                f"{model.__name__} {instance.db_key.redis_key} exists: load it and save it "
                "to change it (a new fact goes under a new key)"
            )
        return plan

    links = {name: getattr(instance, name) for name in _LINKS}

    def write(pipe: Any, plan: _Plan) -> None:
        for name, value in links.items():  # as given: an earlier attempt's plan may have set them
            setattr(instance, name, value)
        done[:] = [_queue(pipe, client, instance, dict(values), plan, index, entries)]

    try:
        transact(client, [], prepare, write, also_watch=[index], replies=replies, reads=detection.queue)
    finally:
        detection.release()
    queued = done[0]
    other = None if queued.other is None else _stored(model, space, queued, replies)
    instance._was_stored = True
    if queued.action == "merged":
        become(instance, other)
        return Remembered("merged", other)
    return Remembered(queued.action, instance, other)


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


class _Detection:
    """The reads of one write's detection, sent with its WATCH (:meth:`queue`), and the decision
    on their replies (:meth:`decide`): the index with its cards, whether a key the caller gave is
    taken, and the nearest records by vector (ranked only when the index names no current holder)."""

    def __init__(self, instance: Any, config: Lifecycle, entries: list[str], slot: str | None, check_own: bool) -> None:
        self.instance, self.config, self.slot = instance, config, slot
        self.space = instance.db_key.keyspace
        self.lookup = ScriptCall("lifecycle_lookup", [index_key(self.space)], entries)
        self.own_key = instance.db_key.redis_key if check_own else None
        self.near: VectorSearch | None = None

    def queue(self, pipe: Any) -> None:
        """Queue the reads (a retried attempt's search is released and made anew)."""
        self.release()
        self.lookup.queue(pipe)
        if self.own_key is not None:
            pipe.exists(self.own_key)
        near = self._searcher()
        if near is not None:
            for call in near.calls():  # locks the matrix until finish() or abandon()
                call.queue(pipe)
        self.near = near

    def release(self) -> None:
        """Release a search whose replies were not used."""
        if self.near is not None:
            self.near.abandon()
            self.near = None

    def decide(self, replies: list[Any], text: str) -> _Plan:
        """The plan from the replies of :meth:`queue`: cards of the named holders, then the rules."""
        reply, rest = replies[0], list(replies[1:])
        own_exists = bool(rest.pop(0)) if self.own_key is not None else False
        found = self._nearest(rest, needed=not any(reply[2::2]))
        ids = [None if v is None else v.decode() if isinstance(v, bytes) else str(v) for v in reply[1::2]]
        current = {i: card for i, raw in zip(ids, reply[2::2]) if i and (card := read_card(i, raw)) is not None}
        plan = _Plan(ids[0], ids[1] if self.slot else None, own_exists=own_exists)
        config = self.config
        floor = min(config.merge_threshold, 1.0 if config.judge is None else config.judge_threshold)
        own = self.instance.db_key.record_id
        hits: Hits = [(rid, score) for rid, score in found if rid != own and score >= floor]
        if hits:
            client = type(self.instance)._meta.client
            current.update(_cards(client, self.space, [rid for rid, _ in hits if rid not in current]))
        _decide(plan, self.instance, config, text, current, hits)
        return plan

    def _searcher(self) -> VectorSearch | None:
        model, config = type(self.instance), self.config
        embedding = embedding_of(model)
        vector = None if embedding is None else getattr(self.instance, embedding.name)
        if embedding is None or vector is None or not (config.merge or config.judge is not None):
            return None
        return written_vector_search(embedding, self.space, vector, NEAR_CANDIDATES + 1)

    def _nearest(self, replies: list[Any], needed: bool) -> Hits:
        """The nearest records from the search's replies when ``needed`` (the matrix caught up, then
        ranked once on this thread: a write's rows cost less to rank than to hand to the search
        pool), else none."""
        near, self.near = self.near, None
        if near is None:
            return []
        if not needed:
            near.abandon()
            return []
        return near.finish_current(replies)


def _cards(client: Any, space: KeySpace, record_ids: list[str]) -> dict[str, Card]:
    """The cards of these records (the current ones: a record without a card is not current)."""
    if not record_ids:
        return {}
    with server_errors(client):
        raws = client.hmget(index_key(space), [card_entry(rid) for rid in record_ids])
    return {rid: card for rid, raw in zip(record_ids, raws) if (card := read_card(rid, raw)) is not None}


def _decide(plan: _Plan, instance: Any, config: Lifecycle, text: str, current: dict[str, Card], hits: Hits) -> None:
    """Merge into a restatement, else supersede the slot's holder, else ask the judge (if any)."""
    if config.merge:
        if plan.digest_holder in current:
            plan.merge_into = current[plan.digest_holder]
            return
        for rid, cosine in hits:
            card = current.get(rid)
            if card is not None and cosine >= config.merge_threshold and restates(text, card.text):
                plan.merge_into = card
                return
    if config.supersede and plan.slot_holder in current:
        holder = current[plan.slot_holder]
        if config.merge and same_value(text, holder.text, holder.subject):
            plan.merge_into = holder  # the same slot, the same value: a restatement
        elif holder.valid_from > instance.valid_from:
            plan.closed_by = holder
        else:
            plan.supersede = holder
        return
    if config.judge is not None:
        for rid, cosine in hits:
            card = current.get(rid)
            if card is None or cosine < config.judge_threshold:
                continue
            verdict = config.judge(text, card.text)
            if verdict == "duplicate" and config.merge:
                plan.merge_into = card
                return
            if verdict == "supersedes" and config.supersede and card.valid_from <= instance.valid_from:
                plan.supersede = card
                return


def queue_entries(pipe: Any, record: Any, **values: Any) -> None:
    """Queue the lifecycle's own entries of a stored record (``valid_to`` with its index and the
    record's card too): they have no other index, so the rest of the record is left as it is."""
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
        queue_card(pipe, record)
    pipe.hincrby(index_key(key.keyspace), VERSION_ENTRY, 1)


def _queue(
    pipe: Any, client: Any, instance: Any, values: dict[str, Any], plan: _Plan, index: str, entries: list[str]
) -> _Queued:
    """Queue the plan's writes in the transaction; what it does once applied."""
    model = type(instance)
    space = instance.db_key.keyspace
    if plan.merge_into is not None:
        kept = DbKey(space, plan.merge_into.record_id)
        last_seen = model._meta.fields["last_seen"].encode(instance.last_seen)
        position = len(pipe)
        queue_script(pipe, "lifecycle_reinforce", [kept.redis_key], [last_seen, json_list(instance.sources)])
        pipe.hincrby(index, VERSION_ENTRY, 1)
        return _Queued("merged", plan.merge_into, position)
    older, newer_id = plan.supersede, instance.db_key.record_id
    position = -1
    if older is not None:
        older_key = DbKey(space, older.record_id)
        fields = model._meta.fields
        pipe.hset(
            older_key.redis_key,
            mapping={
                "valid_to": fields["valid_to"].encode(instance.valid_from),
                "superseded_by": fields["superseded_by"].encode(newer_id),
            },
        )
        pipe.zadd(space.key(KeyKind.SORTED, "valid_to"), {older.record_id: instance.valid_from})
        pipe.hdel(index, card_entry(older.record_id))
        position = len(pipe)
        pipe.hgetall(older_key.redis_key)
        values["supersedes"] = instance.supersedes = older.record_id
    if plan.closed_by is not None:
        values["valid_to"] = instance.valid_to = plan.closed_by.valid_from
        values["superseded_by"] = instance.superseded_by = plan.closed_by.record_id
    queue_new_records(pipe, client, [instance], values=[values], fresh=True)  # bumps the version too
    if instance.valid_to is None:  # the index names current records only
        pipe.hset(index, mapping=dict.fromkeys(entries[1:], newer_id))
    return _Queued("superseded" if older is not None else "created", older, position)


def _stored(model: type, space: KeySpace, queued: _Queued, replies: list[Any]) -> Any:
    """The other record as the EXEC left it (from its reply; loaded when an earlier attempt's
    EXEC, whose reply was lost, applied the write)."""
    assert queued.other is not None
    key = DbKey(space, queued.other.record_id)
    if not replies:
        return load_records(model, [key], track=False)[0]
    raw = replies[queued.position]
    if isinstance(raw, list):  # a script's HGETALL: field, value, field, value ...
        raw = dict(zip(raw[::2], raw[1::2]))
    return instance_from_stored(model, key, raw)
