"""Runs INSIDE elfmem's own virtual environment: drives elfmem 0.20.0 for the frames benchmark.

Started by ``elfmem_bridge.ElfmemProcess`` as ``<elfmem-venv>/bin/python elfmem_runner.py``. It
reads one JSON request per line on stdin and answers one JSON line on stdout. Offline: elfmem's
own ``MockLLMService`` stands in for the LLM, and the embedding service looks vectors up in a
table the parent computed (the same vectors redmem is given), so both libraries rank the same
vectors and no model runs here.

Requests (``op`` plus arguments) and answers:

- ``setup {directory, texts_path, vectors_path}`` opens a fresh ``MemorySystem`` on a SQLite file
  in ``directory`` (the parent puts it on tmpfs) with near-duplicate detection and similarity
  edges switched off (every block is kept, the only edges are those sent with ``connect``), and
  loads the lookup table: ``texts_path`` a JSON list of texts, ``vectors_path`` a ``.npy`` matrix
  with one row per text -> ``{}``
- ``learn {blocks: [{text, tags, category}]}`` -> ``{ids_count, learn_seconds, consolidate_seconds}``:
  one ``learn()`` per block, then ``consolidate(skip_llm=True)`` over the whole inbox (elfmem's
  ingest path: embed, score, promote)
- ``connect {edges: [[i, j, weight]]}`` -> ``{seconds}``: ``connect()`` between learned blocks i and j
- ``contradict {pairs: [[i, j]]}`` -> ``{seconds}``: a contradiction record per pair, written with
  elfmem's own ``insert_contradiction`` (its public API has no call for one: since v2 the pairs
  come from consolidation or review only)
- ``frame {name, queries: [str|null], top_k}`` -> ``{results: [{ids, ms, embed_ms, cached}]}``: one
  ``frame()`` per query, ``ids`` as indexes of learned blocks; ``embed_ms`` the lookup's share
- ``quit``
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from elfmem import ElfmemConfig, MemorySystem
from elfmem.adapters.mock import MockLLMService
from elfmem.db.engine import create_engine
from elfmem.db.models import metadata
from elfmem.db.queries import insert_contradiction, seed_builtin_data

from runner_protocol import serve

#: Thresholds above any cosine: no near-duplicate rejection or pairing, no similarity edges.
NEVER = 1.01


class LookupEmbeddings:
    """elfmem's EmbeddingService protocol over a precomputed table (text, lower-cased, -> vector)."""

    model_name = "benchmark-lookup"

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self.table = {text.strip().lower(): row for text, row in zip(texts, vectors.astype(np.float32))}
        self.seconds = 0.0

    async def embed(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        vector = self.table[text.strip().lower()]
        self.seconds += time.perf_counter() - started
        return vector

    async def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        return [await self.embed(text) for text in texts]


class Runner:
    """The state of one runner process: the memory system, its embeddings and the learned ids."""

    def __init__(self) -> None:
        self.system: MemorySystem | None = None
        self.embeddings: LookupEmbeddings | None = None
        self.ids: list[str] = []
        self.index: dict[str, int] = {}

    async def setup(self, directory: str, texts_path: str, vectors_path: str) -> dict[str, Any]:
        texts = json.loads(Path(texts_path).read_text())
        self.embeddings = LookupEmbeddings(texts, np.load(vectors_path))
        engine = await create_engine(str(Path(directory) / "elfmem.db"))
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
            await seed_builtin_data(conn)
        config = ElfmemConfig.model_validate({"memory": {
            "near_dup_exact_threshold": NEVER, "near_dup_near_threshold": NEVER, "edge_score_threshold": NEVER}})
        self.system = MemorySystem(engine=engine, llm_service=MockLLMService(), embedding_service=self.embeddings,
                                   config=config)
        await self.system.begin_session()
        return {}

    async def learn(self, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        assert self.system
        started = time.perf_counter()
        for block in blocks:
            result = await self.system.learn(block["text"], tags=block.get("tags") or None,
                                             category=block.get("category") or "knowledge")
            if result.status != "created":
                raise RuntimeError(f"learn() of block {len(self.ids)}: {result.status}")
            self.index[result.block_id] = len(self.ids)
            self.ids.append(result.block_id)
        learned = time.perf_counter()
        done = await self.system.consolidate(skip_llm=True, max_inbox_per_run=len(blocks) + 1)
        if done.promoted != len(blocks):
            raise RuntimeError(f"consolidate() promoted {done.promoted} of {len(blocks)}")
        return {"ids_count": len(self.ids), "learn_seconds": learned - started,
                "consolidate_seconds": time.perf_counter() - learned}

    async def connect(self, edges: list[list[Any]]) -> dict[str, Any]:
        assert self.system
        started = time.perf_counter()
        for a, b, weight in edges:
            await self.system.connect(self.ids[a], self.ids[b], weight=weight)
        return {"seconds": time.perf_counter() - started}

    async def contradict(self, pairs: list[list[int]]) -> dict[str, Any]:
        assert self.system
        started = time.perf_counter()
        async with self.system._engine.begin() as conn:  # elfmem 0.20 records pairs only inside consolidate
            for a, b in pairs:
                first, second = sorted((self.ids[a], self.ids[b]))
                await insert_contradiction(conn, block_a_id=first, block_b_id=second, score=1.0)
        return {"seconds": time.perf_counter() - started}

    async def frame(self, name: str, queries: list[str | None], top_k: int) -> dict[str, Any]:
        assert self.system and self.embeddings
        rows = []
        for query in queries:
            embedded, started = self.embeddings.seconds, time.perf_counter()
            result = await self.system.frame(name, query, top_k=top_k)
            rows.append({"ids": [self.index[b.id] for b in result.blocks],
                         "ms": (time.perf_counter() - started) * 1000,
                         "embed_ms": (self.embeddings.seconds - embedded) * 1000, "cached": result.cached})
        return {"results": rows}


def main() -> None:
    """Serve the requests, each op awaited on one event loop kept for the runner's life."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    loop, runner = asyncio.new_event_loop(), Runner()
    try:
        serve(lambda op, arguments: loop.run_until_complete(getattr(runner, op)(**arguments)))
        if runner.system:
            loop.run_until_complete(runner.system.close())
    finally:
        loop.close()


if __name__ == "__main__":
    main()
