"""The redmem side of the benchmarks: the seed's memory model, a timed provider, measured assembles.

The model is the ``Memory`` of the context-assembler seed's example (the public API redmem
mirrors) — the same fields popoto_runner declares for popoto — with an ``EmbeddingField`` only
for the hybrid runs. ``assemble_many`` runs one ``ContextAssembler.assemble()`` per query and
records what each one cost: wall time, query embedding time, round trips and commands sent
(``common.CommandCounter``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from common import HASH_DIMENSIONS, CommandCounter, hash_vectors
from redmem import (
    AccessTrackerMixin,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    CyclicDecayField,
    DecayingSortedField,
    EmbeddingField,
    FloatField,
    KeyField,
    Model,
    StringField,
)
from redmem.fields._embedding_search import matrices
from redmem.recipes.context_assembler import ContextAssembler

__all__ = ["TimedProvider", "memory_model", "assemble_many", "COMPOSITE_WEIGHTS", "minilm_function", "graph_ready"]

#: score_weights of the composite runs (the seed example's weights).
COMPOSITE_WEIGHTS = {"relevance": 0.6, "confidence": 0.3}


class TimedProvider:
    """An embedding provider around a vector function, timing itself.

    Documents are remembered by text, so identical texts are embedded once per process
    (LoCoMo's two redmem models share turns); queries are embedded on every call, unless
    ``queries`` were given: their vectors are computed at once, in batches, and then only looked
    up, as a remote embedding service's vectors arrive without the model running in this process.
    """

    def __init__(self, function: Callable[[list[str]], np.ndarray], dimensions: int = HASH_DIMENSIONS,
                 queries: Sequence[str] = ()) -> None:
        self.function = function
        self.dimensions = dimensions
        self.max_batch_size = 64
        self.seconds = 0.0
        self._memo: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(queries))
        self._queries = dict(zip(unique, function(unique))) if unique else {}

    def embed(self, texts: Sequence[str], input_type: str = "document") -> np.ndarray:
        started = time.perf_counter()
        if input_type == "query" and self._queries and all(t in self._queries for t in texts):
            out = np.array([self._queries[t] for t in texts], dtype=np.float32).reshape(-1, self.dimensions)
            self.seconds += time.perf_counter() - started
            return out
        if input_type == "query":
            out = np.asarray(self.function(list(texts)), dtype=np.float32)
            self.seconds += time.perf_counter() - started
            return out
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self.function(missing)))
        out = np.array([self._memo[t] for t in texts], dtype=np.float32).reshape(-1, self.dimensions)
        self.seconds += time.perf_counter() - started
        return out


def minilm_function() -> Callable[[list[str]], np.ndarray]:
    from redmem.embeddings._local import MiniLMEmbeddings

    model = MiniLMEmbeddings()
    return lambda texts: model.embed(texts)


def hash_provider() -> TimedProvider:
    return TimedProvider(hash_vectors)


def memory_model(name: str, provider: TimedProvider | None = None, push: bool = False,
                 dtype: str = "float16", extra: dict[str, Any] | None = None) -> type:
    """The seed's Memory model under the key name ``name``; with an EmbeddingField when ``provider``
    (its vectors stored as ``dtype``);
    with ``push`` also a CyclicDecayField on ``importance`` (every fresh record is above the
    surfacing threshold: the push path offers memories unrelated to the query); ``extra``: more
    fields by name (``filters.py``: the fields it filters on)."""
    fields: dict[str, Any] = {
        "memory_id": AutoKeyField(),
        "agent_id": KeyField(),
        "content": StringField(),
        "importance": FloatField(default=1.0),
        "relevance": DecayingSortedField(base_score_field="importance", partition_by="agent_id"),
        "confidence": ConfidenceField(),
        "content_bm25": BM25Field(source="content"),
        "associations": CoOccurrenceField(),
    }
    if provider is not None:
        fields["embedding"] = EmbeddingField(source="content", provider=provider, dtype=dtype)
    if push:
        fields["rhythm"] = CyclicDecayField(base_score_field="importance", partition_by="agent_id")
    meta = type("Meta", (), {"name": name})
    return type(name, (AccessTrackerMixin, Model), {"__module__": __name__, "Meta": meta, **fields, **(extra or {})})


def make_assembler(model: type, mode: str, max_items: int = 10) -> ContextAssembler:
    weights = COMPOSITE_WEIGHTS if mode == "composite" else None
    return ContextAssembler(model, score_weights=weights, max_items=max_items, retrieval_mode=mode)


def assemble_many(
    model: type, mode: str, agent_id: str, queries: Sequence[str], *, provider: TimedProvider | None = None,
    max_items: int = 10, formatted: bool = False, assembler: ContextAssembler | None = None,
) -> list[dict[str, Any]]:
    """One assemble() per query: ``{ids, proactive, ms, embed_ms, round_trips, commands[, formatted]}`` each
    (``proactive``: the ids of the selected records that came from the push path).

    ``assembler`` (None: ``make_assembler(model, mode, max_items)``) is one built by a recipe.
    """
    CommandCounter.install()
    assembler = assembler or make_assembler(model, mode, max_items)
    partition = {model._meta.partition_fields[0]: agent_id}
    rows = []
    for text in queries:
        before, embedded = CommandCounter.snapshot(), provider.seconds if provider else 0.0
        started = time.perf_counter()
        result = assembler.assemble(query_cues={"query": text}, **partition)
        ms = (time.perf_counter() - started) * 1000
        trips, commands = CommandCounter.since(before)
        row = {"ids": [str(r.memory_id) for r in result.records],
               "proactive": [str(r.memory_id) for r in result.proactive], "ms": ms,
               "embed_ms": ((provider.seconds if provider else 0.0) - embedded) * 1000,
               "round_trips": trips, "commands": commands}
        if formatted:
            row["formatted"] = result.formatted
        rows.append(row)
    return rows


def ingest_measured(model: type, agent_id: str, texts: Sequence[str], single: int,
                    provider: TimedProvider | None = None, chunk_size: int = 1000) -> dict[str, Any]:
    """Save the first ``single`` texts one ``save()`` at a time, the rest with ``save_many(chunk_size=)``.

    Returns ids (in text order) and the seconds of each part, with the provider's embedding
    time measured apart (``*_embed_seconds``) so rates can leave it out.
    """
    records = [model(agent_id=agent_id, content=text) for text in texts]
    parts: dict[str, Any] = {}
    for part, chunk in (("single", records[:single]), ("bulk", records[single:])):
        embedded, started = provider.seconds if provider else 0.0, time.perf_counter()
        if part == "single":
            for record in chunk:
                record.save()
        elif chunk:
            for field in model._meta.fields.values():
                if isinstance(field, EmbeddingField):
                    field.embed_many(chunk)
            model.save_many(chunk, chunk_size=chunk_size)
        parts[f"{part}_seconds"] = time.perf_counter() - started
        parts[f"{part}_embed_seconds"] = (provider.seconds if provider else 0.0) - embedded
        parts[f"{part}_count"] = len(chunk)
    parts["ids"] = [str(r.memory_id) for r in records]
    return parts


def graph_ready(model: type, agent: str) -> float | None:
    """For a model whose EmbeddingField pre-scans with "hnsw": wait until the process's graph of
    ``agent``'s vectors is built (a search has loaded them) and return its build time in seconds;
    None for other pre-scans."""
    field = next(f for f in model._meta.fields.values() if isinstance(f, EmbeddingField))
    if field.prescan != "hnsw":
        return None
    matrix = matrices.get(model._meta.client, field.keys(model.query.filter(agent_id=agent).partition())[0])
    matrix.wait_for_graph()
    return matrix.graph_build_seconds
