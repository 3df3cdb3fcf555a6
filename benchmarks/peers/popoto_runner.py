"""Runs INSIDE popoto's own virtual environment: drives popoto 1.10.1 for the benchmarks.

Started by ``popoto_bridge.PopotoProcess`` as ``<bench-venv>/bin/python popoto_runner.py``
with ``REDIS_URL`` (the benchmark's private server) and ``POPOTO_CONTENT_PATH`` (a scratch
directory: popoto keeps vectors as files) in its environment. It reads one JSON request per
line on stdin and answers one JSON line on stdout; logging goes to stderr.

Requests (``op`` plus arguments) and answers:

- ``setup {name, embedding: null|"minilm"|"hash", model_path, tokenizer_path}`` declares a
  memory model ``name`` with the fields of the seed's ``Memory`` (those of popoto's
  ``DefaultMemory`` without its eviction cap and credential filter), plus an
  ``EmbeddingField`` when ``embedding`` is set -> ``{}``
- ``ingest {name, agent_id, texts, single}`` -> ``{ids, single_seconds, bulk_seconds, ...}``: the
  first ``single`` texts saved one ``save()`` each, the rest with ``Model.bulk_create``; ``ids``
  are the records' memory_id in text order; ``*_embed_seconds`` the provider's share
- ``assemble {name, agent_id, queries, mode, max_items, formatted}`` -> ``{results: [{ids, ms,
  embed_ms, round_trips, commands, formatted?}]}`` — one ``ContextAssembler.assemble()`` per query
- ``quit``

The embedding model is the same all-MiniLM-L6-v2 int8 ONNX file and tokenizer that redmem's
``MiniLMEmbeddings`` uses (paths given by the parent), loaded here with the same recipe:
truncate to 256 word pieces, mean-pool over real tokens, L2-normalise.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for common

import numpy as np
import popoto
from popoto.embeddings import AbstractEmbeddingProvider
from popoto.fields.embedding_field import EmbeddingField
from popoto.recipes.context_assembler import ContextAssembler

from common import CommandCounter, hash_vectors
from runner_protocol import serve


class MiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) from the given files: the recipe of redmem's MiniLMEmbeddings."""

    def __init__(self, model_path: str, tokenizer_path: str) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(tokenizer_path)
        self.tokenizer.enable_truncation(max_length=256)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), 32):
            rows = order[start : start + 32]
            encodings = self.tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, feed)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.where(norms > 0, norms, 1)
        return out


class TimedProvider(AbstractEmbeddingProvider):
    """popoto's provider interface around a vector function; accumulates the time it spends."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self.seconds = 0.0

    def embed(self, texts: list[str], input_type: str | None = None) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self.function(list(texts)).tolist()
        self.seconds += time.perf_counter() - started
        return vectors

    @property
    def dimensions(self) -> int:
        return 384

    @property
    def max_batch_size(self) -> int:
        return 64


class Runner:
    """The state of one runner process: declared models and the provider."""

    def __init__(self) -> None:
        self.models: dict[str, type] = {}
        self.provider: TimedProvider | None = None
        CommandCounter.install()

    def setup(self, name: str, embedding: str | None = None, model_path: str = "", tokenizer_path: str = "") -> dict:
        fields: dict[str, Any] = {
            "memory_id": popoto.AutoKeyField(),
            "agent_id": popoto.KeyField(),
            "content": popoto.StringField(default=""),
            "importance": popoto.FloatField(default=1.0),
            "relevance": popoto.DecayingSortedField(base_score_field="importance", partition_by="agent_id"),
            "confidence": popoto.ConfidenceField(),
            "content_bm25": popoto.BM25Field(source="content"),
            "associations": popoto.CoOccurrenceField(),
        }
        if embedding:
            function = MiniLM(model_path, tokenizer_path) if embedding == "minilm" else hash_vectors
            self.provider = TimedProvider(function)
            fields["embedding"] = EmbeddingField(source="content", provider=self.provider)
        self.models[name] = type(name, (popoto.AccessTrackerMixin, popoto.Model), {"__module__": __name__, **fields})
        return {}

    def _embed_seconds(self) -> float:
        return self.provider.seconds if self.provider else 0.0

    def ingest(self, name: str, agent_id: str, texts: list[str], single: int = 0) -> dict:
        """The first ``single`` texts saved one ``save()`` at a time, the rest with ``bulk_create``."""
        model = self.models[name]
        instances = [model(agent_id=agent_id, content=text) for text in texts]
        answer: dict[str, Any] = {}
        for part, chunk in (("single", instances[:single]), ("bulk", instances[single:])):
            embedded, started = self._embed_seconds(), time.perf_counter()
            if part == "single":
                for instance in chunk:
                    instance.save()
            elif chunk:
                model.bulk_create(chunk)
            answer[f"{part}_seconds"] = time.perf_counter() - started
            answer[f"{part}_embed_seconds"] = self._embed_seconds() - embedded
            answer[f"{part}_count"] = len(chunk)
        answer["ids"] = [str(i.memory_id) for i in instances]
        return answer

    def assemble(self, name: str, agent_id: str, queries: list[str], mode: str, max_items: int = 10,
                 formatted: bool = False) -> dict:
        assembler = ContextAssembler(self.models[name], {"relevance": 1.0}, max_items=max_items,
                                     retrieval_mode=mode)
        results = []
        for text in queries:
            before, embedded = CommandCounter.snapshot(), self._embed_seconds()
            started = time.perf_counter()
            result = assembler.assemble(query_cues={"query": text}, agent_id=agent_id)
            ms = (time.perf_counter() - started) * 1000
            trips, commands = CommandCounter.since(before)
            row = {"ids": [str(r.memory_id) for r in result.records], "ms": ms,
                   "embed_ms": (self._embed_seconds() - embedded) * 1000, "round_trips": trips, "commands": commands}
            if formatted:
                row["formatted"] = result.formatted
            results.append(row)
        return {"results": results}


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    runner = Runner()
    serve(lambda op, arguments: getattr(runner, op)(**arguments))

if __name__ == "__main__":
    main()
