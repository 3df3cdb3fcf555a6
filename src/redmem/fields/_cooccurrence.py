"""CoOccurrenceField: a weighted association graph between the records and named entities of a partition.

Nodes are records of the model (an instance or a :class:`~redmem.DbKey`) or named entities
(:class:`Entity`). Edge weights lie in (0, 1]. Operations follow popoto's
CoOccurrenceField: ``link`` (an existing edge keeps its weight),
``strengthen`` (capped at 1.0; ``create=False`` leaves absent edges absent), ``weaken_all`` (multiply, drop below 0.001), ``get_linked`` and
``propagate`` (spreading activation, see :func:`propagation_weights`).

Where it lives in Redis: four keys per field and partition (``<base>:co:<field>:...``), so every
operation is one Lua call whose KEYS are known before it runs, and deleting a record removes
its edges in both directions inside the record's own MULTI/EXEC without reading first:

- ``w``  hash ``"<a> <b>"`` -> weight (text); a symmetric graph stores each pair once, in
  ascending node-id order;
- ``adj`` sorted set, every score 0, of ``"<a> <rank> <b>"`` for every edge a -> b (both directions
  when symmetric). ``<rank>`` is the weight's IEEE-754 big-endian bytes inverted, in hex
  (:func:`weight_rank`), so one node's edges form one lexical range ordered by weight, strongest
  first, ties by neighbour id: ``get_linked``, pruning and propagation read only the edges they keep;
- ``in`` sorted set of ``"<b> <a>"`` for every edge a -> b, kept for directed graphs only (a
  deleted node's incoming edges);
- ``deg`` hash node id -> weighted degree, the sum of the weights of all the node's edges (in and
  out), kept by every script that changes an edge (a node without edges has no entry), so
  centrality reads one entry per node instead of every edge.

Node ids are ``r:<record id>`` and ``e:<escaped entity name>``: they never collide and never
contain a space (record ids and entity names are escaped).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from ..model._dbkey import DbKey
from ..model._field import Field
from ..model._filters import Where
from ..model._loading import load_records
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, RecordNotFound, ValidationError
from ..store._keys import KeyKind, KeySpace, escape, unescape
from ..store._scripts import ScriptCall, queue_script, run_script
from ..store._validation import is_real, non_negative_int, positive_int, utf8_text
from .search_protocol import run_search

if TYPE_CHECKING:
    from ..model._batch import SaveBatch

__all__ = [
    "GraphKeys",
    "CoOccurrenceField",
    "Entity",
    "Graph",
    "GraphSize",
    "Degrees",
    "Propagation",
    "propagation_weights",
    "weight_rank",
    "rank_weight",
    "GRAPH_KIND",
]

#: Key kind of the graph keys: ``<base>:co:<field>:{w,adj,in,deg}``.
GRAPH_KIND = KeyKind.GRAPH
RECORD_PREFIX = "r:"
ENTITY_PREFIX = "e:"
#: ``weaken_all`` removes edges whose weight falls below this.
WEIGHT_FLOOR = 0.001


@dataclass(frozen=True, order=True)
class Entity:
    """A named graph node that is not a record: ``Entity("Paris")``."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ValidationError(f"an entity name is a str, not {self.name!r}")
        utf8_text("Entity name", self.name)


Node: TypeAlias = DbKey | Entity


def weight_rank(weight: float) -> str:
    """16 hex digits whose lexical order is the weights' descending order (for weights >= 0)."""
    return bytes(255 - b for b in struct.pack(">d", weight)).hex()


def rank_weight(rank: str) -> float:
    """The weight :func:`weight_rank` encoded."""
    weight: float = struct.unpack(">d", bytes(255 - b for b in bytes.fromhex(rank)))[0]
    return weight


def propagation_weights(
    neighbours: Mapping[str, Mapping[str, float]],
    seeds: Iterable[str],
    depth: int,
    decay_per_hop: float,
    threshold: float,
    fanout: int = 0,
    hub_degree: int = 0,
) -> dict[str, float]:
    """Spreading activation from ``seeds`` (each at 1.0) over ``neighbours[node][nb] = edge weight``.

    A node reached from u gets ``w(u) * decay_per_hop * edge``; it is kept (and expanded on the
    next hop) when that is >= ``threshold``; a node keeps the max over all walks of at most
    ``depth`` hops. With ``fanout`` > 0 a node passes energy along its ``fanout`` strongest edges
    only (ties by neighbour id); with ``hub_degree`` > 0 a seed of degree d starts at
    ``min(1, hub_degree / d)``. Seeds are not in the result. ``graph_propagate.lua`` runs the
    same computation, hop by hop, in the same floating-point order.
    """
    seeds = list(seeds)
    best = {seed: _seed_energy(len(neighbours.get(seed, {})), hub_degree) for seed in seeds}
    frontier = dict(best)
    for _ in range(depth):
        reached: dict[str, float] = {}
        for node, weight in frontier.items():
            carry = weight * decay_per_hop
            edges = by_weight(neighbours.get(node, {}))
            passing = [(nb, edge) for nb, edge in edges if carry * edge >= threshold]
            for neighbour, edge in passing[:fanout] if fanout else passing:
                value = carry * edge
                if value > best.get(neighbour, 0.0):
                    best[neighbour] = reached[neighbour] = value
        frontier = reached
    for seed in seeds:
        best.pop(seed, None)
    return best


def _seed_energy(degree: int, hub_degree: int) -> float:
    return hub_degree / degree if 0 < hub_degree < degree else 1.0


def by_weight(weights: Mapping[str, float]) -> list[tuple[str, float]]:
    """``weights`` as (node id, weight) pairs, heaviest first, ties by node id ascending."""
    return sorted(weights.items(), key=lambda item: (-item[1], item[0]))


def _check(value: Any, name: str, low: float, high: float, *, open_low: bool = False) -> float:
    """``value`` as a float in [low, high] (or (low, high]); ValidationError otherwise."""
    if not is_real(value):
        raise ValidationError(f"{name} must be a number, not {value!r}")
    number = float(value) + 0.0  # -0.0 becomes 0.0 (its rank would sort after every weight)
    if not (low < number if open_low else low <= number) or not number <= high:
        raise ValidationError(f"{name} must lie in {'(' if open_low else '['}{low}, {high}], got {number!r}")
    return number


@dataclass(frozen=True)
class GraphKeys:
    """The keys of one co-occurrence graph in one partition (all ``<base>:co:<field>:...``)."""

    weights: str  # ``w``: hash "<a> <b>" -> weight
    adjacency: str  # ``adj``: sorted set "<a> <rank> <b>" of every edge a -> b
    incoming: str  # ``in``: sorted set "<b> <a>" of every edge a -> b (directed graphs)
    degrees: str  # ``deg``: hash node id -> weighted degree

    def listed(self) -> list[str]:
        """``[weights, adjacency, incoming, degrees]``: the KEYS the graph write scripts take."""
        return [self.weights, self.adjacency, self.incoming, self.degrees]


class Graph:
    """The co-occurrence graph of one field in one partition; every method is one round trip
    (the searchers only build searches, for the caller to send with others)."""

    def __init__(self, field: CoOccurrenceField, keyspace: KeySpace) -> None:
        self.field = field
        self.keyspace = keyspace

    @property
    def keys(self) -> GraphKeys:
        """The keys of this graph, by name."""
        weights, adjacency, incoming, degrees = (self.keyspace.key(GRAPH_KIND, self.field.name, part)
                                                 for part in ("w", "adj", "in", "deg"))
        return GraphKeys(weights, adjacency, incoming, degrees)

    def size_searcher(self) -> GraphSize:
        """The search counting the graph's adjacency entries (0: no edge), to share a round trip."""
        return GraphSize(ScriptCall("graph_size", [self.keys.adjacency], []))

    # -- nodes ---------------------------------------------------------------------------------
    def record_key(self, node: Any) -> DbKey | None:
        """The DbKey of a record node (None for an entity); ValidationError for anything else."""
        if isinstance(node, Entity):
            return None
        if isinstance(node, self.field.model):
            node = node._saved_key or node.db_key
        if not isinstance(node, DbKey):
            raise ValidationError(_not_a_node(node))
        if node.keyspace != self.keyspace:
            raise ValidationError(f"{node} is not a record of the graph's partition {self.keyspace.base}")
        return node

    def node_id(self, node: Any) -> str:
        """``r:<record id>`` for a record, ``e:<escaped name>`` for an entity."""
        key = self.record_key(node)
        return ENTITY_PREFIX + escape(node.name) if key is None else RECORD_PREFIX + key.record_id

    def node(self, node_id: str) -> Node:
        """Inverse of :meth:`node_id`."""
        if node_id.startswith(RECORD_PREFIX):
            return DbKey(self.keyspace, node_id[len(RECORD_PREFIX):])
        return Entity(unescape(node_id[len(ENTITY_PREFIX):]))

    def _pair(self, a: Any, b: Any) -> tuple[str, str]:
        ids = self.node_id(a), self.node_id(b)
        if ids[0] == ids[1]:
            raise ValidationError(f"no self loops: {a!r} cannot be linked to itself")
        return ids

    # -- edges: each call is one script; with ``pipeline`` it is queued there and returns None ----
    def link(self, a: Any, b: Any, initial_weight: float = 0.1, pipeline: Any = None) -> float | None:
        """Create the edge a-b at ``initial_weight`` (an existing edge keeps its weight); returns
        its weight, 0.0 if it was at once pruned as the weakest beyond ``max_edges``.

        RecordNotFound when a record node is not stored (queued: the reply is None, nothing written).
        """
        amount = _check(initial_weight, "initial_weight", 0.0, 1.0, open_low=True)
        return self._add(a, b, "link", amount, pipeline)

    def strengthen(
        self, a: Any, b: Any, delta: float = 0.05, pipeline: Any = None, *, create: bool = True,
    ) -> float | None:
        """Add ``delta`` to the edge a-b, capped at 1.0; returns the weight. An absent edge is
        created from 0, or with ``create=False`` left absent (returns 0.0). Errors as :meth:`link`."""
        mode = "strengthen" if create else "reinforce"
        return self._add(a, b, mode, _check(delta, "delta", 0.0, 1.0, open_low=True), pipeline)

    def _add(self, a: Any, b: Any, mode: str, amount: float, pipeline: Any) -> float | None:
        ids = self._pair(a, b)
        records = [key.redis_key for key in map(self.record_key, (a, b)) if key is not None]
        args = [*ids, mode, repr(amount), self.field.symmetric_flag, self.field.max_edges]
        if pipeline is not None:
            queue_script(pipeline, "graph_add", self.keys.listed() + records, args)
            return None
        reply = self._run("graph_add", self.keys.listed() + records, args)
        if reply is None:
            raise RecordNotFound(f"cannot link {a!r} and {b!r}: a record node is not stored")
        return float(reply)

    def unlink(self, a: Any, b: Any, pipeline: Any = None) -> bool | None:
        """Remove the edge a-b; False if there was none."""
        args = [*self._pair(a, b), self.field.symmetric_flag]
        if pipeline is not None:
            queue_script(pipeline, "graph_unlink", self.keys.listed(), args)
            return None
        return bool(self._run("graph_unlink", self.keys.listed(), args))

    def weaken_all(self, node: Any, factor: float | None = None, pipeline: Any = None) -> int | None:
        """Multiply every edge of ``node`` by ``factor`` (default: the field's ``decay_factor``),
        removing edges that fall below 0.001; returns how many were removed."""
        factor = self.field.decay_factor if factor is None else _check(factor, "factor", 0.0, 1.0)
        args = [self.node_id(node), repr(factor), self.field.symmetric_flag, repr(WEIGHT_FLOOR)]
        if pipeline is not None:
            queue_script(pipeline, "graph_weaken", self.keys.listed(), args)
            return None
        return int(self._run("graph_weaken", self.keys.listed(), args))

    # -- reading -------------------------------------------------------------------------------
    def degrees(self, nodes: Iterable[Any]) -> list[float]:
        """Each node's weighted degree: the sum of the weights of all its edges (0.0 without edges)."""
        return run_search(self.field.model._meta.client, self.degree_searcher(nodes))

    def degree_searcher(self, nodes: Iterable[Any]) -> Degrees:
        """The search behind :meth:`degrees`, to share a round trip with other searches."""
        ids = [self.node_id(node) for node in nodes]
        return Degrees(ScriptCall("graph_degrees", [self.keys.degrees], ids) if ids else None)

    def get_linked(self, node: Any, min_weight: float = 0.01, limit: int = 20) -> list[tuple[Node, float]]:
        """Up to ``limit`` neighbours of ``node`` with edge weight >= ``min_weight``, heaviest
        first (ties by node id): one ZRANGEBYLEX."""
        source = self.node_id(node)
        low = _check(min_weight, "min_weight", 0.0, 1.0)
        limit = non_negative_int("limit", limit)
        if limit == 0:
            return []
        client = self.field.model._meta.client
        with server_errors(client):
            members = client.zrangebylex(
                self.keys.adjacency, f"[{source} ", f"({source} {weight_rank(low)}!", start=0, num=limit
            )
        start = len(source) + 1  # a member is "<source> <rank> <neighbour>"
        texts = [m.decode() for m in members]
        return [(self.node(t[start + 17:]), rank_weight(t[start:start + 16])) for t in texts]

    def propagate(
        self, seeds: Iterable[Any], depth: int = 2, decay_per_hop: float = 0.5, threshold: float = 0.01,
        *, limit: int = 0, fanout: int = 0, records_only: bool = False, hub_degree: int = 0,
    ) -> list[tuple[Node, float]]:
        """Spreading activation from ``seeds`` (see :func:`propagation_weights`), in one Lua call.

        Returns (node, weight) pairs heaviest first, ties by node id; seeds are left out. The
        bounds are :meth:`searcher`'s.
        """
        search = self.searcher(seeds, depth, decay_per_hop, threshold, limit=limit, fanout=fanout,
                               records_only=records_only, hub_degree=hub_degree)
        return run_search(self.field.model._meta.client, search)

    def searcher(
        self, seeds: Iterable[Any], depth: int = 2, decay_per_hop: float = 0.5, threshold: float = 0.01,
        *, limit: int = 0, fanout: int = 0, records_only: bool = False, hub_degree: int = 0,
        where: Where | None = None,
    ) -> Propagation:
        """The search behind :meth:`propagate`, to share a round trip with other searches.

        ``limit`` > 0: only the ``limit`` heaviest nodes (the walk stops early once no further hop
        can change them); ``fanout`` > 0: each node passes energy along its ``fanout`` strongest
        edges only (bounds the work around hub nodes); ``records_only``: entities carry energy
        but only record nodes are returned; ``hub_degree`` > 0: a seed with more edges than that
        starts at ``hub_degree / its degree`` instead of 1.0 (a common entity points nowhere in
        particular). 0 means no bound. ``where``: a record node is returned only when the record
        passes it (checked in the script; energy still flows through every node).
        """
        seed_ids = list(dict.fromkeys(self.node_id(seed) for seed in seeds))
        depth = non_negative_int("depth", depth)
        decay = _check(decay_per_hop, "decay_per_hop", 0.0, 1.0, open_low=True)
        cut = _check(threshold, "threshold", 0.0, 1.0)
        bounds = [non_negative_int("limit", limit), non_negative_int("fanout", fanout)]
        hub = non_negative_int("hub_degree", hub_degree)
        if not isinstance(records_only, bool):
            raise ValidationError(f"records_only must be a bool, not {records_only!r}")
        if not seed_ids or depth == 0:
            return Propagation(self, None)
        keys = [self.keys.adjacency]
        passing = "" if where is None else where.json(self.keyspace, keys)
        args = [depth, repr(decay), repr(cut), *bounds, RECORD_PREFIX if records_only else "", hub, passing, *seed_ids]
        return Propagation(self, ScriptCall("graph_propagate", keys, args))

    def records(self, weighted: Iterable[tuple[Node, float]]) -> list[tuple[Any, float]]:
        """The record nodes of ``weighted`` hydrated (one round trip), in order, with their weights;
        entities and records deleted meanwhile are left out."""
        pairs = [(node, weight) for node, weight in weighted if isinstance(node, DbKey)]
        found = {r._saved_key: r for r in load_records(self.field.model, [node for node, _ in pairs])}
        return [(found[node], weight) for node, weight in pairs if node in found]

    def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        client = self.field.model._meta.client
        with server_errors(client):
            return run_script(script, keys, args, client)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    alink = async_variant(link)
    astrengthen = async_variant(strengthen)
    aunlink = async_variant(unlink)
    aweaken_all = async_variant(weaken_all)
    adegrees = async_variant(degrees)
    aget_linked = async_variant(get_linked)
    apropagate = async_variant(propagate)
    arecords = async_variant(records)


@dataclass(frozen=True)
class GraphSize:
    """The search of :meth:`Graph.size_searcher`: how many adjacency entries the graph holds."""

    call: ScriptCall

    def calls(self) -> list[ScriptCall]:
        return [self.call]

    def finish(self, replies: list[Any]) -> int:
        return int(replies[0])


@dataclass(frozen=True)
class Degrees:
    """The search of :meth:`Graph.degrees`: one ``graph_degrees.lua`` call (None without nodes)."""

    call: ScriptCall | None

    def calls(self) -> list[ScriptCall]:
        return [] if self.call is None else [self.call]

    def finish(self, replies: list[Any]) -> list[float]:
        return [float(degree) for degree in replies[0]] if replies else []


@dataclass(frozen=True)
class Propagation:
    """The search of :meth:`Graph.propagate`: its one ``graph_propagate.lua`` call (None without
    seeds or hops: nothing reached), finished into (node, weight) pairs heaviest first."""

    graph: Graph
    call: ScriptCall | None

    def calls(self) -> list[ScriptCall]:
        return [] if self.call is None else [self.call]

    def finish(self, replies: list[Any]) -> list[tuple[Node, float]]:
        reply = replies[0] if replies else []
        weights = {reply[i].decode(): float(reply[i + 1]) for i in range(0, len(reply), 2)}
        return [(self.graph.node(node_id), weight) for node_id, weight in by_weight(weights)]


class CoOccurrenceField(Field[Any]):
    """A weighted association graph over the model's records and named entities, per partition.

    Use it through :meth:`graph` (``Memory.associations.graph(agent_id="a")``) or directly on the
    field, where the partition comes from the record nodes (``Memory.associations.link(m1, m2)``);
    a call naming only entities needs :meth:`graph` unless the model is unpartitioned.

    Args:
        symmetric: an edge a-b is also b-a (one weight); else edges are directed a -> b.
        max_edges: the most edges a node keeps; linking beyond it drops the node's weakest edge.
        decay_factor: the default factor of :meth:`Graph.weaken_all`.
        partition_by: the model's partition field (may come from the model's other fields).
    """

    stored = False

    def __init__(
        self,
        symmetric: bool = True,
        max_edges: int = 500,
        decay_factor: float = 0.95,
        partition_by: str | tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(partition_by=partition_by)
        if not isinstance(symmetric, bool):
            raise ModelException(f"symmetric must be a bool, not {symmetric!r}")
        max_edges = positive_int("max_edges", max_edges, error=ModelException)
        try:
            decay_factor = _check(decay_factor, "decay_factor", 0.0, 1.0)
        except ValidationError as exc:
            raise ModelException(str(exc)) from None
        self.symmetric, self.max_edges, self.decay_factor = symmetric, max_edges, decay_factor

    @property
    def symmetric_flag(self) -> str:
        return "1" if self.symmetric else "0"

    # -- finding the graph ---------------------------------------------------------------------
    def graph(self, **partition: Any) -> Graph:
        """The graph of the partition named by the model's partition fields (none if unpartitioned)."""
        meta = self.model._meta
        if set(partition) != set(meta.partition_fields):
            raise ValidationError(
                f"{self.label}.graph() needs exactly the partition fields {list(meta.partition_fields)}"
            )
        values = tuple(meta.fields[n].validate(partition[n]) for n in meta.partition_fields)
        return Graph(self, meta.keyspace(values))

    def graph_of(self, *nodes: Any) -> Graph:
        """The graph of the partition the record nodes among ``nodes`` belong to."""
        spaces = {_keyspace_of(node) for node in nodes if not isinstance(node, Entity)}
        if len(spaces) > 1:
            raise ValidationError(f"{self.label}: nodes of different partitions cannot be linked")
        meta = self.model._meta
        if not spaces and meta.partition_fields:
            raise ValidationError(
                f"{self.label}: a call naming only entities needs the partition: "
                f"{self.model.__name__}.{self.name}.graph({', '.join(meta.partition_fields)}=...)"
            )
        return Graph(self, spaces.pop() if spaces else meta.keyspace())

    # -- the graph's operations, partition taken from the record nodes --------------------------
    def link(self, a: Any, b: Any, initial_weight: float = 0.1, pipeline: Any = None) -> float | None:
        """:meth:`Graph.link` in the partition of the record nodes."""
        return self.graph_of(a, b).link(a, b, initial_weight, pipeline)

    def strengthen(
        self, a: Any, b: Any, delta: float = 0.05, pipeline: Any = None, *, create: bool = True,
    ) -> float | None:
        """:meth:`Graph.strengthen` in the partition of the record nodes."""
        return self.graph_of(a, b).strengthen(a, b, delta, pipeline, create=create)

    def unlink(self, a: Any, b: Any, pipeline: Any = None) -> bool | None:
        """:meth:`Graph.unlink` in the partition of the record nodes."""
        return self.graph_of(a, b).unlink(a, b, pipeline)

    def weaken_all(self, node: Any, factor: float | None = None, pipeline: Any = None) -> int | None:
        """:meth:`Graph.weaken_all` in the partition of a record node."""
        return self.graph_of(node).weaken_all(node, factor, pipeline)

    def get_linked(self, node: Any, min_weight: float = 0.01, limit: int = 20) -> list[tuple[Node, float]]:
        """:meth:`Graph.get_linked` in the partition of a record node."""
        return self.graph_of(node).get_linked(node, min_weight, limit)

    def propagate(
        self, seeds: Iterable[Any], depth: int = 2, decay_per_hop: float = 0.5, threshold: float = 0.01
    ) -> list[tuple[Node, float]]:
        """:meth:`Graph.propagate` in the partition of the record seeds ([] without seeds)."""
        seeds = list(seeds)
        if not seeds:
            return []
        return self.graph_of(*seeds).propagate(seeds, depth, decay_per_hop, threshold)

    # -- taking part in deletes ----------------------------------------------------------------
    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        """Remove the record's edges in both directions, in the delete's own MULTI/EXEC."""
        keys = Graph(self, batch.keyspace).keys.listed()
        batch.script("graph_remove_node", keys, [RECORD_PREFIX + batch.record_id, self.symmetric_flag])

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    alink = async_variant(link)
    astrengthen = async_variant(strengthen)
    aunlink = async_variant(unlink)
    aweaken_all = async_variant(weaken_all)
    aget_linked = async_variant(get_linked)
    apropagate = async_variant(propagate)


def _keyspace_of(node: Any) -> KeySpace:
    """The partition of a record node (a DbKey or a model instance)."""
    if isinstance(node, DbKey):
        return node.keyspace
    if hasattr(node, "db_key"):
        space: KeySpace = (node._saved_key or node.db_key).keyspace
        return space
    raise ValidationError(_not_a_node(node))


def _not_a_node(node: Any) -> str:
    hint = f"; name an entity Entity({node!r})" if isinstance(node, str) else ""
    return f"a graph node is a record of the field's model (instance or DbKey) or an Entity, not {node!r}{hint}"
