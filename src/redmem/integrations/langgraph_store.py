"""LangGraph: a ``BaseStore`` whose items are redmem records, one tenant (partition) per namespace.

Each item is a :class:`StoreRecord` of the partition named by its namespace (labels joined
with ``.``, which LangGraph forbids inside a label): its value as JSON, its timestamps, and a
text indexed by BM25 (the value's strings, or the paths a put's ``index`` names). A search with
a ``query`` ranks by BM25 inside each namespace under the prefix, fused with the vector list
(convex score fusion) when the model declares an ``EmbeddingField``; ``filter`` is applied to
the values as LangGraph's own stores do. ``abatch`` runs ``batch`` over ``redis.asyncio``
on the caller's event loop (:mod:`redmem.store._aio`, docs/asyncio.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ImportError as missing:  # pragma: no cover - depends on the install
    raise ImportError("redmem.integrations.langgraph_store needs LangGraph: pip install 'redmem[langgraph]'") from missing

from ..context._fusion import convex_fusion
from ..fields._bm25 import BM25Field
from ..fields._embedding import EmbeddingField
from ..model._base import Model
from ..model._fields import DictField, FloatField, StringField
from ..model._indexed import KeyField
from ..model._registry import listed_partitions
from ..store._aio import greenlet_spawn
from ..store._keys import unescape

__all__ = ["StoreRecord", "RedmemStore", "NAMESPACE_SEPARATOR", "matches_filter", "namespace_matches"]

#: Joins a namespace's labels into its partition value (LangGraph labels never hold it).
NAMESPACE_SEPARATOR = "."


class StoreRecord(Model):
    """One LangGraph item: namespace (the partition), key, JSON value, timestamps and searchable text.

    Subclass it with an ``EmbeddingField(source="text", partition_by="namespace_path")`` for
    hybrid search, or for a keyspace of your own.
    """

    namespace_path = KeyField()
    item_key = KeyField()
    value = DictField()
    text = StringField()
    created_at = FloatField()
    updated_at = FloatField()
    text_bm25 = BM25Field(source="text", partition_by="namespace_path")

    class Meta:
        max_text_bytes = 0  # a store gives back what was put: no write-size limit (prompts are budgeted)


def _joined(namespace: tuple[str, ...]) -> str:
    return NAMESPACE_SEPARATOR.join(namespace)


def _compare(value: Any, wanted: Any) -> bool:
    """Whether ``value`` satisfies ``wanted``: operators ``$eq $ne $gt $gte $lt $lte``, nested dicts, or equality."""
    if isinstance(wanted, Mapping):
        if any(str(name).startswith("$") for name in wanted):
            return all(_operator(value, name, operand) for name, operand in wanted.items())
        return isinstance(value, Mapping) and all(_compare(value.get(k), v) for k, v in wanted.items())
    return bool(value == wanted)


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(value == operand)
    if name == "$ne":
        return bool(value != operand)
    if value is None:
        return False
    comparisons = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    if name not in comparisons:
        raise ValueError(f"unsupported filter operator {name!r}")
    return bool(comparisons[name](float(value), float(operand)))


def matches_filter(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a SearchOp ``filter`` (every condition holds)."""
    return all(_compare(value.get(name), condition) for name, condition in (wanted or {}).items())


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts (``prefix``) or ends (``suffix``) with the path; ``*`` matches any label."""
    if len(namespace) < len(condition.path):
        return False
    labels = namespace if condition.match_type == "prefix" else tuple(reversed(namespace))
    path = condition.path if condition.match_type == "prefix" else tuple(reversed(condition.path))
    return all(p == "*" or p == label for p, label in zip(path, labels))


def _searchable_text(value: Mapping[str, Any], index: Any, paths: list[str] | None) -> str:
    """The text a put indexes: the strings at ``index`` (or the store's ``paths``), else every string of the value."""
    if index is False:
        return ""
    chosen = index if isinstance(index, list) else paths
    if chosen:
        return "\n".join(text for path in chosen for text in get_text_at_path(value, tokenize_path(path)))
    return "\n".join(_strings(value))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


class RedmemStore(BaseStore):
    """A LangGraph ``BaseStore`` on redmem: namespaces are tenants, queries are BM25 (hybrid with an embedding).

    ``model`` is StoreRecord or a subclass; ``index_paths`` are the value paths indexed when a
    put gives no ``index`` (None: every string of the value).
    """

    def __init__(self, model: type[StoreRecord] = StoreRecord, *, index_paths: list[str] | None = None) -> None:
        self.model = model
        self.index_paths = index_paths

    # -- the operations --------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, each seeing the writes of those before it."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` over redis.asyncio: each Redis call awaits on this event loop."""
        return await greenlet_spawn(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown operation {type(op).__name__}")

    def _record(self, namespace: tuple[str, ...], key: str) -> Any:
        return self.model.query.get(namespace_path=_joined(namespace), item_key=key)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        record = self._record(namespace, key)
        return None if record is None else self._item(record, namespace)

    def _put(self, op: PutOp) -> None:
        record = self._record(op.namespace, op.key)
        if op.value is None:
            if record is not None:
                record.delete()
            return
        now = time.time()
        value = json.loads(json.dumps(op.value))
        text = _searchable_text(value, op.index, self.index_paths)
        if record is None:
            record = self.model(namespace_path=_joined(op.namespace), item_key=op.key, created_at=now)
        record.value, record.text, record.updated_at = value, text, now
        record.save()

    def _item(self, record: Any, namespace: tuple[str, ...]) -> Item:
        return Item(value=record.value, key=record.item_key, namespace=namespace,
                    created_at=_when(record.created_at), updated_at=_when(record.updated_at))

    # -- search ------------------------------------------------------------------------------------
    def _namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding items, sorted."""
        found = []
        for space in listed_partitions(self.model._meta, self.model._meta.client):
            joined = unescape(space.tag)
            if self.model.query.filter(namespace_path=joined).count():
                found.append(tuple(joined.split(NAMESPACE_SEPARATOR)))
        return sorted(found)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        scored: list[tuple[float | None, Any, tuple[str, ...]]] = []
        for namespace in self._namespaces():
            if namespace[: len(prefix)] != prefix:
                continue
            if op.query:
                scored += [(score, r, namespace) for r, score in self._ranked(namespace, op, op.offset + op.limit)]
            else:
                records = self.model.query.filter(namespace_path=_joined(namespace)).all()
                scored += [(None, r, namespace) for r in records if matches_filter(r.value, op.filter)]
        if op.query:
            scored.sort(key=lambda hit: (-(hit[0] or 0.0), hit[2], hit[1].item_key))
        else:
            scored.sort(key=lambda hit: (-hit[1].updated_at, hit[2], hit[1].item_key))
        return [SearchItem(namespace, r.item_key, r.value, _when(r.created_at), _when(r.updated_at), score)
                for score, r, namespace in scored[op.offset : op.offset + op.limit]]

    def _ranked(self, namespace: tuple[str, ...], op: SearchOp, wanted: int) -> list[tuple[Any, float]]:
        """The namespace's best ``wanted`` records for the query that pass the filter, with their scores.

        Asks for more candidates (doubling) while the filter leaves too few and more may exist.
        """
        query = self.model.query.filter(namespace_path=_joined(namespace))
        ask = max(wanted, 1) * 2
        while True:
            lists = {"keyword": [(h.record, h.score) for h in query.keyword_search(op.query, ask).hits]}
            if self.model._meta.fields_of(EmbeddingField):
                lists["vector"] = [(h.record, h.score) for h in query.semantic_search(op.query, ask).hits]
            by_key = {r.item_key: r for pairs in lists.values() for r, _ in pairs}
            keyed = {name: [(r.item_key, score) for r, score in pairs] for name, pairs in lists.items()}
            fused = [(by_key[key], score) for key, score in convex_fusion(keyed, limit=None)]
            passing = [(r, score) for r, score in fused if matches_filter(r.value, op.filter)]
            if len(passing) >= wanted or all(len(pairs) < ask for pairs in lists.values()):
                return passing[:wanted]
            ask *= 2

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [ns for ns in self._namespaces()
                      if all(namespace_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]
