"""The side effects of :meth:`FrameMemory.frame`, queued in one pipeline (one round trip).

- Every returned block: ``reinforcement_count`` + 1 and ``last_reinforced`` = the active hours now
  (an active block's ``window`` entry too), by ``frames_reinforce.lua``.
- Every pair of returned blocks joined by an edge: the edge + 0.10, capped at 1.0; a missing
  edge is never created (``Graph.strengthen(..., create=False)``). A pair with a seed is sent
  only when the seed's edges (which the candidate script read for the expansion) hold it, so
  a frame of unlinked seeds sends no edge script at all.
- A frame with a cache policy: its result, stored with the ``self/...`` version it was built at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...fields._cooccurrence import Graph
from ...model._dbkey import DbKey
from ...store._connection import server_errors
from ...store._keys import KeySpace
from ...store._scripts import queue_script
from ._models import Block
from ._retrieval import block_keys

__all__ = ["EDGE_REINFORCE_DELTA", "EDGE_WEIGHT_CAP", "CacheWrite", "apply_effects"]

#: Weight added to an existing edge between two blocks one frame returned.
EDGE_REINFORCE_DELTA = 0.10
#: Edges never exceed this weight.
EDGE_WEIGHT_CAP = 1.0


@dataclass(frozen=True)
class CacheWrite:
    """A frame result to cache: its key, its JSON and its time to live."""

    key: str
    payload: str
    ttl_seconds: int


def apply_effects(
    client: Any, space: KeySpace, block_ids: Sequence[str], now_hours: float, linked: Sequence[tuple[str, str]],
    cache: CacheWrite | None,
) -> int:
    """Reinforce ``block_ids`` and the edges ``linked`` among them, and write ``cache``: one round trip.

    Returns how many edges were reinforced.
    """
    if not block_ids and cache is None:
        return 0
    keys = block_keys(space)
    graph = Graph(Block.edges, space)
    pairs = list(linked)
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        if block_ids:
            queue_script(pipe, "frames_reinforce", [keys["window"], keys["count"], *map(space.record, block_ids)],
                         [repr(now_hours), *block_ids])
        for a, b in pairs:
            graph.strengthen(DbKey(space, a), DbKey(space, b), EDGE_REINFORCE_DELTA, pipe, create=False)
        if cache is not None:
            pipe.set(cache.key, cache.payload, ex=cache.ttl_seconds)
        replies = pipe.execute()
    edge_replies = replies[1: 1 + len(pairs)] if block_ids else []
    return sum(1 for reply in edge_replies if reply is not None and float(reply) > 0)
