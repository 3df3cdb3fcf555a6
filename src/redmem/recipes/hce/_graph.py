"""EntityGraph: a session's interactions and the entities they mention, on the co-occurrence primitive.

Each stored interaction is a record node, linked to every entity it mentions (``MENTIONS``,
weight :data:`MENTION_WEIGHT`); the entities of one interaction are linked pairwise
(``CO_OCCURS``, strengthened by :data:`CO_OCCURRENCE_DELTA` per interaction, capped at 1.0).
An entity's type and display name live in one hash per session (first seen wins).

:func:`spreading_activation` is the primitive's propagation (``graph_propagate.lua``, one
script call at any depth): seeds start at 1.0; each round every node reached in the previous
round passes ``energy * energy_factor * edge weight`` to its neighbours; a node keeps the max;
values below ``floor`` are dropped; after ``rounds`` rounds the ``top_k`` interactions are
returned. Passing energy along a node's ``fanout`` strongest edges only bounds the work at
hub entities (ids sort newest first, so a tie keeps the newest interactions), and a seed with
more than ``hub_degree`` edges starts at ``hub_degree / degree`` (a name in every other message
points nowhere in particular; the design starts every seed at 1.0 and is silent on hubs).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Any

from ...fields._cooccurrence import Entity, Graph, Propagation
from ...fields.search_protocol import run_search
from ...model._dbkey import DbKey
from ...model._filters import Where
from ...store._connection import server_errors
from ._extractor import ExtractedEntity
from ._keys import HCEKeyKind
from ._kinds import EdgeType, NodeType
from ._models import HCEInteraction
from ._validity import Visibility

__all__ = [
    "EntityGraph", "spreading_activation", "MENTION_WEIGHT", "CO_OCCURRENCE_DELTA", "ROUNDS", "ENERGY_FACTOR",
    "FLOOR", "TOP_K", "FANOUT", "MAX_PAIRED", "HUB_DEGREE",
]

#: Weight of an interaction - entity edge: a mention is certain.
MENTION_WEIGHT = 1.0
#: What each interaction adds to the edge between two entities it mentions together.
CO_OCCURRENCE_DELTA = 0.1
#: Spreading activation defaults: 3 rounds, energy x 0.5 per hop, drop below 0.01, top 10.
ROUNDS, ENERGY_FACTOR, FLOOR, TOP_K = 3, 0.5, 0.01, 10
#: Edges a node passes energy along per round (its strongest).
FANOUT = 32
#: Only the first this-many entities of an interaction are linked pairwise (at most 28 pairs).
MAX_PAIRED = 8
#: A seed with more edges than this starts at HUB_DEGREE / its degree: the user's own name,
#: mentioned in every other message, points nowhere in particular.
HUB_DEGREE = 20


class EntityGraph:
    """The entity graph of one session (see the module docs)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.graph: Graph = HCEInteraction.graph.graph(session_id=session_id)
        self.space = self.graph.keyspace
        self.types_key = self.space.key(HCEKeyKind.ENTITY_TYPES)

    @property
    def client(self) -> Any:
        return HCEInteraction._meta.client

    def queue_interaction(self, pipe: Any, interaction_id: str, entities: Sequence[ExtractedEntity]) -> None:
        """Queue on ``pipe`` (after the interaction's own save) its ``MENTIONS`` edges, the
        ``CO_OCCURS`` edges of its entities and their types."""
        node = DbKey(self.space, interaction_id)
        for entity in entities:
            self.graph.link(node, Entity(entity.key), MENTION_WEIGHT, pipeline=pipe)
            pipe.hsetnx(self.types_key, entity.key, json.dumps({"type": entity.type.value, "name": entity.name}))
        for a, b in combinations(entities[:MAX_PAIRED], 2):
            self.graph.strengthen(Entity(a.key), Entity(b.key), CO_OCCURRENCE_DELTA, pipeline=pipe)

    def node_type(self, key: str) -> NodeType | None:
        """The type of entity ``key`` (None when the graph does not know it)."""
        with server_errors(self.client):
            raw = self.client.hget(self.types_key, key)
        return None if raw is None else NodeType(json.loads(raw)["type"])

    def entities(self) -> dict[str, tuple[NodeType, str]]:
        """Every entity of the session: key -> (type, name as first written)."""
        with server_errors(self.client):
            raw = self.client.hgetall(self.types_key)
        return {k.decode(): (NodeType(v["type"]), v["name"]) for k, v in
                ((k, json.loads(v)) for k, v in raw.items())}

    @staticmethod
    def edge_type(a: Any, b: Any) -> EdgeType:
        """The type of the edge between two nodes: an interaction and an entity, or two entities."""
        return EdgeType.MENTIONS if isinstance(a, DbKey) or isinstance(b, DbKey) else EdgeType.CO_OCCURS

    def linked(self, key: str, limit: int = 20) -> list[tuple[Any, float, EdgeType]]:
        """The strongest neighbours of entity ``key``: (interaction id or entity key, weight, edge type)."""
        return [
            (node.record_id if isinstance(node, DbKey) else node.name, weight, self.edge_type(node, Entity(key)))
            for node, weight in self.graph.get_linked(Entity(key), limit=limit)
        ]

    def searcher(self, seeds: Iterable[str], rounds: int = ROUNDS, energy_factor: float = ENERGY_FACTOR,
                 floor: float = FLOOR, top_k: int = TOP_K, fanout: int = FANOUT,
                 hub_degree: int = HUB_DEGREE, *, where: Where | None = None) -> Propagation:
        """The propagation from entity keys ``seeds`` to the ``top_k`` interactions passing
        ``where`` (energy still flows through every node), as a search."""
        return self.graph.searcher([Entity(key) for key in seeds], rounds, energy_factor, floor,
                                   limit=top_k, fanout=fanout, records_only=True, hub_degree=hub_degree, where=where)


def spreading_activation(graph: EntityGraph, seeds: Iterable[str], rounds: int = ROUNDS,
                         energy_factor: float = ENERGY_FACTOR, floor: float = FLOOR, top_k: int = TOP_K,
                         fanout: int = FANOUT, hub_degree: int = HUB_DEGREE, *, as_of: Any = None,
                         ) -> list[tuple[str, float]]:
    """The ``top_k`` interactions activated from entity keys ``seeds``: (interaction id, activation),
    strongest first, ties by id (newest first); only the current interactions, or those valid
    ``as_of`` (see :class:`~redmem.recipes.hce._validity.Visibility`). One round trip."""
    where = Visibility(as_of).where
    search = graph.searcher(seeds, rounds, energy_factor, floor, top_k, fanout, hub_degree, where=where)
    reached = run_search(graph.client, search)
    return [(node.record_id, weight) for node, weight in reached if isinstance(node, DbKey)]
