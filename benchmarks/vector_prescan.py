"""The vector pre-scans side by side: exact (int8, the default), binary (sign bits) and hnsw (a graph), both opt-in.

    .venv/bin/python benchmarks/vector_prescan.py                     # hashed 100k, MiniLM 20k
    .venv/bin/python benchmarks/vector_prescan.py --hashed 100000 --minilm 0 --cache /tmp/vp

The corpus is ``latency.py --workload questions``'s: N memories built from LoCoMo dialog
sentences (``questions.dialog_corpus``), queried with the LoCoMo questions of 6-15 words. Two
kinds of vectors: the benchmarks' hashed ones (``common.hash_vectors``: sparse, ~17 of 384
coordinates non-zero) and MiniLM's (``MiniLMEmbeddings``: dense, a real model; embedding is
slow on the 2-core host, ~15-50 texts/s, so ``--cache DIR`` keeps them as .npy files between
runs). Each set is loaded into a ``VectorMatrix`` and every question is ranked for its top 10
with ``prescan="exact"``, ``"binary"`` and ``"hnsw"`` (its graph built first, the build time
recorded): CPU per search (``time.process_time``, the median of ``--repeats`` passes; the load
average recorded beside it) and, for binary and hnsw, the recall of the exact top 10 and the
share of identical lists (binary's keys unprefixed, hnsw's prefixed ``hnsw_``). Writes
``results/vector_prescan.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import hash_vectors, machine, write_json
from questions import dialog_corpus, locomo_questions
from redmem.embeddings import _binary_prescan as binary_prescan
from redmem.embeddings import _hnsw_prescan as hnsw_prescan
from redmem.embeddings._codec import encode_vector
from redmem.embeddings._matrix import VectorMatrix

TOP = 10
#: The pre-scans compared: the exact one first (the others' recall is measured against it).
PRESCANS = ("exact", "binary", "hnsw")


def vectors(kind: str, texts: list[str], input_type: str, cache: Path | None) -> np.ndarray:
    """The ``kind`` ("hashed" or "minilm") vectors of ``texts``, read from / written to ``cache``."""
    path = cache / f"{kind}-{input_type}-{len(texts)}.npy" if cache else None
    if path is not None and path.exists():
        return np.load(path)
    if kind == "hashed":
        found = hash_vectors(texts)
    else:
        from redmem.embeddings._local import MiniLMEmbeddings

        model = MiniLMEmbeddings()
        found = np.concatenate([model.embed(texts[i:i + 256], input_type=input_type)
                                for i in range(0, len(texts), 256)])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, found)
    return found


def measure(rows: np.ndarray, queries: np.ndarray, repeats: int) -> dict[str, Any]:
    """CPU ms per top-10 search per pre-scan, and the approximate pre-scans' agreement with the exact one."""
    matrix = VectorMatrix()
    matrix.apply(((f"m{n:07d}", encode_vector(row)) for n, row in enumerate(rows)), rows.shape[1])
    assert len(matrix.ids) == len(rows), "every row is in the matrix"
    out: dict[str, Any] = {"rows": len(rows), "queries": len(queries), "load_average_before": list(os.getloadavg())}
    for prescan in PRESCANS:
        matrix.search(queries[0], TOP, prescan)  # the binary one computes its sign bits here
        if prescan == "hnsw":
            matrix.wait_for_graph()
            out["hnsw_build_seconds"] = matrix.graph_build_seconds
        passes = []
        for _ in range(repeats):
            started = time.process_time()
            for query in queries:
                matrix.rank(query, TOP, prescan)
            passes.append((time.process_time() - started) * 1000 / len(queries))
        out[f"{prescan}_cpu_ms"] = statistics.median(passes)
    for prescan in PRESCANS[1:]:
        recalls, identical = [], 0
        for query in queries:
            exact = [i for i, _ in matrix.search(query, TOP)]
            found = [i for i, _ in matrix.search(query, TOP, prescan)]
            recalls.append(len(set(exact) & set(found)) / len(exact) if exact else 1.0)
            identical += found == exact
        prefix = "" if prescan == "binary" else f"{prescan}_"
        out.update({f"{prefix}recall_at_10": statistics.fmean(recalls), f"{prefix}identical": identical / len(queries),
                    f"{prefix}all_ten_found": sum(r == 1.0 for r in recalls) / len(queries)})
    out["load_average_after"] = list(os.getloadavg())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"))
    parser.add_argument("--hashed", type=int, default=100_000, help="memories with hashed vectors (0: none)")
    parser.add_argument("--minilm", type=int, default=20_000, help="memories with MiniLM vectors (0: none)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", default=None, help="directory keeping the embeddings between runs")
    parser.add_argument("--out", default="vector_prescan")
    args = parser.parse_args()
    path, cache = Path(args.data), Path(args.cache) if args.cache else None
    questions = locomo_questions(path)
    results: dict[str, Any] = {}
    for kind, n in (("hashed", args.hashed), ("minilm", args.minilm)):
        if n:
            rows = vectors(kind, dialog_corpus(path, n), "document", cache)
            results[kind] = measure(rows, vectors(kind, questions, "query", cache), args.repeats)
            print(kind, results[kind])
    write_json(args.out, {"benchmark": "vector_prescan", "candidates_per_hit": binary_prescan.CANDIDATES_PER_HIT,
                          "hnsw_candidates": hnsw_prescan.candidate_count(TOP),
                          "top": TOP, "repeats": args.repeats, "results": results, "machine": machine()})


if __name__ == "__main__":
    main()
