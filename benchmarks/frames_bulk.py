"""Load an agent's blocks as ``FrameMemory.learn()`` one by one would, in pipelined batches.

``learn()`` costs three or four round trips a block (vector search, WATCHed read, MULTI/EXEC),
78 blocks/s on a quiet host and 14-30 on a loaded one: 100k blocks took 22 minutes to an hour and
more. :func:`bulk_learn` writes the same keys with one pipeline per ``batch`` blocks:

- each block is built as ``learn()`` builds it (tags checked and sorted, decay tier, ``valid_from``
  and the active hour from one ``clock()`` call per block, ids from ``new_id``);
- its wiring plan comes from the same rule (:func:`~redmem.recipes.frames._learning.plan_from_hits`)
  over an in-process search of the blocks loaded before it: cosines of the stored vectors
  (decoded from the field's storage dtype, unit rows) with the block's vector, the best
  ``neighbours_wanted`` above 0 (equal cosines by id), as ``VectorMatrix.rank`` scores them;
- its context, position and the earlier blocks' new contexts come from
  :func:`~redmem.recipes.frames._learning.prepare_block` over the session's last blocks kept in
  the process (what ``frames_tail.lua`` reads back), and its writes are
  :func:`~redmem.recipes.frames._learning.queue_block`'s, in the same order, followed by the
  self version and the wiring plan's edges and duplicates (``learn()``'s ``also``);
- after each batch's pipeline, the supersedes the judge asked for, through ``FrameMemory.supersede``
  (as ``learn()`` does right after its block).

Only for a partition with no block yet (the session may be open). ``tests/integration/recipes/
test_frames_bulk_load.py`` compares a partition loaded this way with one ``learn()`` loaded, key by
key (DUMP).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from redmem.embeddings._base import unit_rows
from redmem.embeddings._codec import decode_rows, encode_stored
from redmem.embeddings._matrix import cosines, top_k
from redmem.fields._embedding import _vector_digest
from redmem.model._dbkey import DbKey
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._definitions import check_tag
from redmem.recipes.frames._learning import plan_from_hits, prepare_block, queue_block, tail_arguments, tail_rows
from redmem.recipes.frames._models import DECAY_TIERS, Block, decay_tier
from redmem.recipes.frames._retrieval import block_keys
from redmem.store._keys import KeyKind
from redmem.store._scripts import run_script

__all__ = ["bulk_learn", "MATRIX_FROM"]

#: From this many loaded blocks on, a batch's cosines with them come from one matrix product (the
#: size at which ``learn()``'s search starts its pre-scan); the float32 sums' order differs from
#: ``learn()``'s row-by-row products, so an edge weight may differ from its in the last bit.
MATRIX_FROM = 8192


def _new_id() -> str:
    return uuid.uuid4().hex


class _Loaded:
    """The vectors (unit rows, as the search's matrix holds them), contents and open validity of
    the blocks loaded so far."""

    def __init__(self, dimensions: int) -> None:
        self.rows = np.zeros((1024, dimensions), dtype=np.float32)
        self.ids: list[str] = []
        self.content: dict[str, str] = {}
        self.superseded: set[str] = set()

    def hits(self, vector: np.ndarray, limit: int, before: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The search ``learn()`` runs: the ``limit`` best (id, cosine) pairs above 0. ``before``:
        the cosines with the first rows, computed already (:meth:`products`)."""
        if not self.ids or limit <= 0:
            return []
        unit = unit_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        done = 0 if before is None else before.shape[0]
        scores = cosines(self.rows[done: len(self.ids)], unit)
        return top_k(scores if before is None else np.concatenate([before, scores]), self.ids, limit)

    def products(self, vectors: list[np.ndarray]) -> np.ndarray | None:
        """The cosines of every loaded row with each of ``vectors`` (rows x vectors), in one matrix
        product, once :data:`MATRIX_FROM` rows are loaded (None before: row by row, as ``learn()``)."""
        if len(self.ids) < MATRIX_FROM:
            return None
        units = unit_rows(np.asarray(vectors, dtype=np.float32))
        return np.asarray(self.rows[: len(self.ids)] @ units.T, dtype=np.float32)

    def add(self, block_id: str, stored_vector: bytes, content: str) -> None:
        if len(self.ids) == self.rows.shape[0]:
            self.rows = np.vstack([self.rows, np.zeros_like(self.rows)])
        decoded, _ = decode_rows([stored_vector], self.rows.shape[1])
        self.rows[len(self.ids)] = unit_rows(decoded)[0]
        self.ids.append(block_id)
        self.content[block_id] = content

    def current(self, ids: list[str]) -> list[tuple[str, str]]:
        return [(i, self.content[i]) for i in ids if i in self.content and i not in self.superseded]


def bulk_learn(memory: FrameMemory, blocks: Sequence[dict[str, Any]], *, batch: int = 64,
               new_id: Callable[[], str] = _new_id) -> list[str]:
    """Store ``blocks`` (``{"text", "tags", "category"}`` each) in ``memory``'s partition, which
    holds none yet, as ``memory.learn`` called on each in order would; returns their ids."""
    space, client, window = memory.space, memory.client, memory.neighbours
    if client.exists(space.key(KeyKind.ALL_RECORDS)):
        raise ValueError(f"bulk_learn loads an empty partition; {space.tag} holds blocks")
    hours, started, session, tail = run_script("frames_tail", [block_keys(space)["clock"]],
                                               tail_arguments(space, window), client)
    clock, rows = (hours, started, session), tail_rows(tail)
    loaded: _Loaded | None = None
    ids: list[str] = []
    for first in range(0, len(blocks), batch):
        chunk, times = [], {}
        for spec in blocks[first: first + batch]:
            block, times[id(block)] = _block(memory, spec, new_id())
            chunk.append(block)
        Block.embedding.embed_many(chunk)
        embedded = [block.embedding for block in chunk]
        before = None if loaded is None or memory.wiring is None or any(v is None for v in embedded) else (
            loaded.products(embedded))
        supersedes: list[tuple[str, str]] = []
        with client.pipeline(transaction=False) as pipe:
            for number, block in enumerate(chunk):
                block_id, text = str(block.block_id), block.content or ""
                vector = block.embedding
                plan = None
                if memory.wiring is not None and vector is not None:
                    loaded = loaded or _Loaded(len(vector))
                    hits = loaded.hits(vector, memory.wiring.neighbours_wanted,
                                       None if before is None else before[:, number])
                    plan = plan_from_hits(DbKey(space, block_id), text, hits, memory.wiring, loaded.current)
                prepared = prepare_block(block, window, times[id(block)], clock, rows)
                _keep_tail(rows, block, prepared[1], 2 * window)

                def also(pipe: Any, block: Block = block, plan: Any = plan) -> None:
                    if any(tag.startswith("self/") for tag in block.tags):
                        memory.store.queue_self_changed(pipe)
                    if plan is not None:
                        plan.queue(pipe, memory._graph(), memory.store)

                queue_block(pipe, block, prepared, also)
                if loaded is not None and vector is not None:
                    loaded.add(block_id, encode_stored(vector, Block.embedding.dtype, _vector_digest(vector)), text)
                if plan is not None:
                    supersedes += [(older, block_id) for older in plan.superseded]
                    loaded.superseded.update(plan.superseded)  # type: ignore[union-attr]
                ids.append(block_id)
            pipe.execute()
        for older, newer in supersedes:
            memory.supersede(older, newer)
    return ids


def _block(memory: FrameMemory, spec: dict[str, Any], block_id: str) -> tuple[Block, float]:
    """The unsaved block ``learn()`` builds (``valid_from``: the memory's clock now) and that time."""
    clean = sorted({check_tag(tag) for tag in spec.get("tags", ())})
    category = spec.get("category", "knowledge")
    check_tag(category)
    now = memory.clock()
    return Block(agent_id=memory.agent_id, content=spec["text"], category=category, tags=clean,
                 decay_lambda=DECAY_TIERS[decay_tier(clean, category)], valid_from=now, block_id=block_id), now


def _keep_tail(rows: list[list[str]], block: Block, changed: list[tuple[str, str, str]], reach: int) -> None:
    """The session's last ``reach`` blocks after ``block`` joined them (``frames_tail.lua``'s rows)."""
    if not block.session or reach <= 0:
        return
    contexts = {block_id: context for block_id, _, context in changed}
    rows[:] = [[r[0], r[1], r[2], contexts.get(r[0], r[3])] for r in rows]
    rows.append([str(block.block_id), str(block.position), block.content or "", block.context or ""])
    del rows[:-reach]
