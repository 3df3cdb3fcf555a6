"""The frame cache: a frame result kept in Redis for its TTL, valid while no ``self/...`` block changed.

Every write that changes a block tagged ``self/...`` (learning it, archiving it, its confidence,
its edges, its contradictions) increments the agent's self version counter (``fv``). A cached
result (``fc:<frame>:<digest>``, the digest covering the definition, query, top_k, budget and oversize rule)
records the version it was built at and is served only while the counter still holds it, so
every process sharing the server sees an invalidation at once. Reading the counter and the
result is one script call, sent with the frame's first searches. :class:`FrameCache` is the
seed's name for dropping them by hand (``end_session`` does it too).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from typing import Any

from ...context._explain import Explanation
from ...context._result import Explained
from ...store._connection import server_errors
from ...store._errors import ValidationError
from ...store._keys import KeySpace
from ...store._scripts import ScriptCall
from ._definitions import FrameDefinition, definition_to_json
from ._keys import FrameKeyKind
from ._models import Block
from ._scoring import FrameResult, ScoredBlock

__all__ = ["cache_key", "CacheRead", "CachedFrame", "encode_result", "FrameCache"]


def cache_key(space: KeySpace, definition: FrameDefinition, query: str | None, top_k: int, budget: int,
              oversize: str) -> str:
    """``fc:<frame>:<digest>``: one entry per definition, query, top_k, budget and oversize rule."""
    digest = hashlib.sha256(json.dumps([definition_to_json(definition), query, top_k, budget, oversize]).encode()
                            ).hexdigest()
    return space.key(FrameKeyKind.FRAME_CACHE, definition.name, digest[:32])


class CachedFrame:
    """What the cache holds for a frame now: the self version, and the result if still valid."""

    def __init__(self, version: int, result: FrameResult | None) -> None:
        self.version, self.result = version, result


class CacheRead:
    """The search reading a frame's cache entry and the self version (``frames_cache_get.lua``)."""

    def __init__(self, space: KeySpace, key: str) -> None:
        self.agent_id = space.partition_values[0]
        self.call = ScriptCall("frames_cache_get", [space.key(FrameKeyKind.FRAME_VERSION), key], [])

    def calls(self) -> list[ScriptCall]:
        return [self.call]

    def finish(self, replies: list[Any]) -> CachedFrame:
        version, payload = int(replies[0][0]), replies[0][1]
        if not payload:
            return CachedFrame(version, None)
        data = json.loads(payload)
        if data["version"] != version:
            return CachedFrame(version, None)
        return CachedFrame(version, FrameResult(
            text=data["text"], blocks=[ScoredBlock(**block) for block in data["blocks"]],
            frame_name=data["frame_name"], cached=True, token_count=data["token_count"],
            oversize=data.get("oversize", {}), agent_id=self.agent_id, trail=_cached_trail(data.get("explanation")),
        ))


def encode_result(result: FrameResult, version: int) -> str:
    """The JSON a cache entry holds: the result and the self version it was built at."""
    return json.dumps({"version": version, "text": result.text, "blocks": [asdict(b) for b in result.blocks],
                       "frame_name": result.frame_name, "token_count": result.token_count,
                       "oversize": result.oversize,
                       "explanation": result.explain().to_dict() if result.trail is not None else None})


def _cached_trail(stored: dict[str, Any] | None) -> Explained | None:
    """The explanation a cache entry keeps, noted as served from the cache."""
    if stored is None:
        return None
    explanation = Explanation.from_dict(stored)
    return Explained(replace(explanation, notes=(*explanation.notes, "served from the frame cache: "
                                                 "the scores are those the frame was built with")))


class FrameCache:
    """An agent's cached frames, shared by every process (the seed's per-session ``FrameCache``):
    ``get`` / ``set`` happen inside :meth:`FrameMemory.frame`; here they can be dropped."""

    def __init__(self, agent_id: str) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValidationError(f"agent_id must be a non-empty str, got {agent_id!r}")
        self.space = Block._meta.keyspace((agent_id,))

    def invalidate(self, frame_name: str) -> None:
        """Drop the cached results of ``frame_name`` (every cached frame of the agent goes: one version counter)."""
        if not isinstance(frame_name, str):
            raise ValidationError(f"a frame name is a str, got {frame_name!r}")
        self.clear()

    def clear(self) -> None:
        """Drop every cached frame of the agent (one INCR of the self version)."""
        client = Block._meta.client
        with server_errors(client):
            client.incr(self.space.key(FrameKeyKind.FRAME_VERSION))
