"""What the inspector reads: tenants with counts and sizes, a page of one agent's memories, one memory.

Every page reads a bounded amount whatever the partition holds: a page of ids comes from one
sorted set range (confidence, last-updated time, record ids, the exact decay order of a large
partition), an exact top-n selection (decay) or a BM25 search cut at ``offset + limit``, then the page's records and scores in one pipeline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from ..cli_commands._inspect import find_record
from ..cli_commands._memory import ChatMemory
from ..fields._bm25 import BM25Field
from ..fields._confidence import ConfidenceField
from ..fields._cooccurrence import CoOccurrenceField
from ..fields._cyclic import CyclicDecayField
from ..fields._decay import DecayingSortedField
from ..lifecycle import LifecycleMixin, history
from ..model._dbkey import DbKey
from ..model._filters import compile_where
from ..model._loading import load_records
from ..model._persistence import ALL_RECORDS
from ..observation._proposals import RecallProposal
from ..store._connection import server_errors
from ..store._errors import QueryArgumentError
from ..store._keys import KeySpace
from ._decay_order import decay_page
from ._timeline import decay_timeline

__all__ = ["SORTS", "PageRequest", "tenants", "memory_page", "memory_detail", "parse_filter", "space_of", "versions_of"]

#: How a page of memories can be ordered.
SORTS = ("relevance", "decay", "confidence", "newest", "oldest", "id")
#: Largest partition whose decay page is the threshold selection's top ``offset + limit`` (it reads
#: most of a partition whose scores lie close together, as old memories' do on the flat power
#: curve); above it the page is read from the partition's exact order at one time
#: (:mod:`~redmem.fields._decay_snapshot`), served at once and rebuilt in the background when older
#: than five minutes (:mod:`.decay_order`).
EXACT_DECAY_LIMIT = 2_000
#: Records sampled per tenant to estimate its size in bytes.
SIZE_SAMPLE = 8
MAX_PAGE = 200
EDGES_SHOWN = 20
SHOWN = ("memory_id", "content", "speaker", "session", "date", "said_at")


@dataclass(frozen=True)
class PageRequest:
    """One page of an agent's memories: search text, filter conditions, order, offset, size."""

    agent: str
    text: str = ""
    conditions: Mapping[str, Any] | None = None
    sort: str = "decay"
    offset: int = 0
    limit: int = 50

    def __post_init__(self) -> None:
        if self.sort not in SORTS:
            raise QueryArgumentError(f"unknown sort {self.sort!r}; use one of {list(SORTS)}")
        if not 1 <= self.limit <= MAX_PAGE or self.offset < 0:
            raise QueryArgumentError(f"a page holds 1 to {MAX_PAGE} memories from an offset >= 0")


def _decay() -> DecayingSortedField:
    return cast(DecayingSortedField, ChatMemory._meta.fields["relevance"])


def _bm25() -> BM25Field:
    return cast(BM25Field, ChatMemory._meta.fields["context_bm25"])


def _confidence() -> ConfidenceField:
    return cast(ConfidenceField, ChatMemory._meta.fields["confidence"])


def space_of(agent: str) -> KeySpace:
    """The partition of ``agent``'s memories."""
    return ChatMemory.query.filter(agent_id=agent).partition()


def parse_filter(text: str) -> dict[str, Any]:
    """Filter conditions from ``field=value`` pairs joined by ``&`` (a comma makes a list, for
    ``__in``, ``__any``, ``__all``) or a JSON object; QueryArgumentError when unreadable."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise QueryArgumentError(f"the filter is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise QueryArgumentError("a JSON filter must be an object of conditions")
        return loaded
    conditions: dict[str, Any] = {}
    for pair in text.split("&"):
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise QueryArgumentError(f"cannot read the filter condition {pair!r}: write field=value")
        listed = name.strip().endswith(("__in", "__any", "__all"))
        conditions[name.strip()] = [v.strip() for v in value.split(",")] if listed else value.strip()
    return conditions


def tenants() -> list[dict[str, Any]]:
    """Every agent with its memory count and an estimated size (bytes): one pipeline of counts, one of samples."""
    spaces = ChatMemory.query.partitions()
    client = ChatMemory._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for space in spaces:
            pipe.zcard(space.key(ALL_RECORDS))
            pipe.zrange(space.key(ALL_RECORDS), 0, SIZE_SAMPLE - 1)
        replies = pipe.execute()
    counts, samples = replies[0::2], replies[1::2]
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for space, sample in zip(spaces, samples):
            for raw in sample:
                pipe.memory_usage(DbKey(space, raw.decode()).redis_key)
        usages = iter(pipe.execute())
    rows = []
    for space, count, sample in zip(spaces, counts, samples):
        sizes = [next(usages) or 0 for _ in sample]
        each = sum(sizes) / len(sizes) if sizes else 0
        rows.append({"agent": space.partition_values[0], "memories": count, "bytes": int(each * count)})
    return sorted(rows, key=lambda row: str(row["agent"]))


def memory_page(request: PageRequest, now: float | None = None) -> dict[str, Any]:
    """One page of memories: rows with their scores, the total, the order used."""
    at = time.time() if now is None else now
    space = space_of(request.agent)
    base = ChatMemory.query.filter(agent_id=request.agent).no_track()
    query = base.filter(**request.conditions) if request.conditions else base
    search: dict[str, float] | None = None
    if request.text.strip():
        where = compile_where(ChatMemory, dict(request.conditions) if request.conditions else None)
        ranked = _bm25().search(space, request.text, request.offset + request.limit, False, where).ranked
        ids = [record_id for record_id, _ in ranked[request.offset:]]
        search = dict(ranked)
        total, order = len(ranked), "relevance"
    elif request.conditions or request.sort in ("id", "relevance"):
        ids = [key.record_id for key in query.limit(request.limit, request.offset).keys()]
        total, order = query.count(), "id"
    else:
        ids, total, order = _ordered_ids(space, request.sort, request.offset, request.limit, at)
    rows = _rows(space, ids, at)
    for row in rows:
        row["match"] = None if search is None else search.get(row["memory_id"])
    return {"agent": request.agent, "total": total, "offset": request.offset, "limit": request.limit,
            "order": order, "rows": rows}


def _ordered_ids(space: KeySpace, sort: str, offset: int, limit: int, now: float) -> tuple[list[str], int, str]:
    """A page of ids by decay (exact top ``offset + limit`` up to :data:`EXACT_DECAY_LIMIT` memories,
    then the saved exact order at a stated time, :mod:`.decay_order`), confidence or last-updated time, the
    total, and the order used."""
    client = ChatMemory._meta.client
    decay = _decay()
    if sort == "decay":
        with server_errors(client):
            total = client.zcard(space.key(ALL_RECORDS))
        if total <= EXACT_DECAY_LIMIT or decay.half_life is not None:
            ranked = decay.ranked(space, now, offset + limit)
            return [record_id for record_id, _ in ranked[offset:]], total, sort
        return decay_page(decay, space, offset, limit, now, _stamp)
    key = (_confidence().index_key(space) if sort == "confidence"
           else decay.keys_in(space).updated)
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        if sort == "oldest":
            pipe.zrange(key, offset, offset + limit - 1)
        else:
            pipe.zrevrange(key, offset, offset + limit - 1)
        pipe.zcard(space.key(ALL_RECORDS))
        found, total = pipe.execute()
    return [raw.decode() for raw in found], total, sort


def _rows(space: KeySpace, ids: list[str], now: float) -> list[dict[str, Any]]:
    """The records ``ids`` name, in that order, with their decayed score, confidence and last-updated time."""
    if not ids:
        return []
    decay, confidence = _decay(), _confidence()
    keys = decay.keys_in(space)
    client = ChatMemory._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        pipe.zmscore(keys.updated, ids)
        pipe.zmscore(keys.base, ids)
        pipe.zmscore(confidence.index_key(space), ids)
        updated, bases, confidences = pipe.execute()
    loaded = {r._saved_key.record_id: r for r in load_records(ChatMemory, [DbKey(space, i) for i in ids], track=False)}
    rows = []
    for record_id, t, base, conf in zip(ids, updated, bases, confidences):
        record = loaded.get(record_id)
        if record is None:
            continue
        score = None if t is None else decay.score(1.0 if base is None else base, t, conf, now)
        rows.append({**{name: getattr(record, name) for name in SHOWN}, "decay": score,
                     "confidence": conf if conf is not None else confidence.initial_confidence,
                     "updated": None if t is None else _when(t)})
    return rows


def _when(seconds: float | None) -> str | None:
    return None if seconds is None else _stamp(seconds)


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def memory_detail(agent: str, memory_id: str) -> dict[str, Any]:
    """Everything stored about one memory: fields, scores now and the decay curve over time
    (``timeline``), edges, access and outcome history, and its versions (``history``) when the
    model has the fact lifecycle."""
    record = find_record(ChatMemory, memory_id, agent)
    fields = ChatMemory._meta.fields
    graph, rhythm = cast(CoOccurrenceField, fields["associations"]), cast(CyclicDecayField, fields["rhythm"])
    evidence = ConfidenceField.get_confidence_data(record, "confidence")
    linked = graph.get_linked(record, min_weight=0.0, limit=EDGES_SHOWN)
    neighbours = {r._saved_key: r for r in load_records(ChatMemory, [n for n, _ in linked if isinstance(n, DbKey)],
                                                        track=False)}
    proposal = RecallProposal.for_record(record)
    accessed = record.access_log
    return {
        "timeline": _timeline(record, evidence["confidence"], accessed),
        "key": record._saved_key.redis_key,
        "fields": {name: value for name, value in record.to_dict().items()},
        "scores": {"decay": _decay().score_of(record), "cyclic": rhythm.score_of(record),
                   "confidence": evidence["confidence"]},
        "outcomes": {name: evidence[name] for name in ("evidence_count", "corroborations", "contradictions")},
        "edges": [{"weight": weight, "memory_id": getattr(node, "record_id", str(node)),
                   "content": getattr(neighbours.get(node), "content", None)} for node, weight in linked],
        "access": {"count": record.access_count, "last": _when(record.last_accessed),
                   "log": [_when(t) for t in accessed[:20]],
                   "staged": [_when(t) for t in record.staged_accesses]},
        "proposal": None if proposal is None else {"status": proposal.status, "surfaced": _when(proposal.surfaced_at),
                                                   "reason": proposal.reason},
        "history": versions_of(record),
    }


def _timeline(record: Any, confidence: float | None, accessed: list[float]) -> dict[str, Any] | None:
    """The decay curve since the last touch (:func:`~.timeline.decay_timeline`); None before any."""
    decay = _decay()
    keys, record_id = decay.keys_in(record._saved_key.keyspace), record._saved_key.record_id
    client = ChatMemory._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        pipe.zscore(keys.updated, record_id)
        pipe.zscore(keys.base, record_id)
        touched, base = pipe.execute()
    if touched is None:
        return None
    return decay_timeline(decay, 1.0 if base is None else base, touched, confidence, time.time(), accessed)


def versions_of(record: Any) -> list[dict[str, Any]] | None:
    """Every version of ``record``'s fact, oldest first, with its validity window
    (:func:`~redmem.lifecycle.history`); None for a model without the lifecycle."""
    if not isinstance(record, LifecycleMixin):
        return None
    text_field = type(record).lifecycle.text_field
    return [{"memory_id": r.db_key.record_id, "content": getattr(r, text_field), "valid_from": _when(r.valid_from),
             "valid_to": _when(r.valid_to), "current": r.valid_to is None} for r in history(record)]
