"""The HNSW pre-scan's settings, measured: ef, rows taken per search, insert threads, memory.

    .venv/bin/python benchmarks/hnsw_params.py --cache /tmp/vp

Vectors as ``vector_prescan.py`` makes them (MiniLM for ``--minilm`` dialog memories, hashed
words for ``--hashed``; ``--cache`` keeps them between runs), queried with the LoCoMo questions.
On a usearch graph built as ``redmem.embeddings._hnsw_prescan.new_index`` builds it:

- ``ef``: recall of the exact top 10 after rescoring the graph's candidates in float32, and the
  wall time per search, for ef 64 and 128 (MiniLM);
- ``taken``: wall time per search for the top 50 (what ``assemble()`` asks of each list) when
  5 x 50 = 250 rows or ``candidate_count(50)`` rows are taken (hashed);
- ``threads``: rows not found by their own vector (top 10) after a build on one thread and on two;
- ``memory``: usearch's own count of bytes per row.

Writes ``results/hnsw_params.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, write_json
from questions import dialog_corpus, locomo_questions
from redmem.embeddings import _hnsw_prescan as hnsw_prescan
from vector_prescan import vectors


def unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1)).astype(np.float32)


def built(rows: np.ndarray, threads: int, ef: int = hnsw_prescan.EXPANSION_SEARCH) -> tuple[Any, float]:
    index = hnsw_prescan.new_index(rows.shape[1])
    index.expansion_search = ef
    started = time.perf_counter()
    index.add(np.arange(len(rows), dtype=np.uint64), rows, threads=threads)
    return index, time.perf_counter() - started


def searched(index: Any, rows: np.ndarray, queries: np.ndarray, taken: int, top: int) -> dict[str, float]:
    """Median ms per search (graph + float32 rescoring) and recall of the exact top ``top``."""
    times, recalls = [], []
    for query in queries:
        exact = set(np.argsort(-(rows @ query), kind="stable")[:top].tolist())
        started = time.perf_counter()
        keys = index.search(query, taken, threads=1).keys.astype(np.intp)
        best = keys[np.argsort(-(rows[keys] @ query), kind="stable")[:top]]
        times.append((time.perf_counter() - started) * 1000)
        recalls.append(len(exact & set(best.tolist())) / top)
    return {"ms_p50": statistics.median(times), "recall": statistics.fmean(recalls)}


def self_misses(index: Any, rows: np.ndarray, sample: int) -> int:
    """Rows (of the first ``sample`` distinct ones) missing from their own vector's top 10."""
    _, first = np.unique(rows, axis=0, return_index=True)
    chosen = np.sort(first)[:sample]
    return sum(int(row) not in index.search(rows[row], 10, threads=1).keys for row in chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"))
    parser.add_argument("--minilm", type=int, default=20_000)
    parser.add_argument("--hashed", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cache", default=None)
    parser.add_argument("--out", default="hnsw_params")
    args = parser.parse_args()
    path, cache = Path(args.data), Path(args.cache) if args.cache else None
    questions = locomo_questions(path)
    out: dict[str, Any] = {"minilm_rows": args.minilm, "hashed_rows": args.hashed, "queries": args.queries}
    dense = unit(vectors("minilm", dialog_corpus(path, args.minilm), "document", cache))
    dense_queries = unit(vectors("minilm", questions, "query", cache))[: args.queries]
    out["ef"] = {}
    for ef in (64, 128):
        index, _ = built(dense, 1, ef)
        out["ef"][ef] = searched(index, dense, dense_queries, max(ef, 10), 10)
    one, one_seconds = built(dense, 1)
    two, two_seconds = built(dense, 2)
    out["threads"] = {"1": {"build_s": one_seconds, "self_misses": self_misses(one, dense, 5000)},
                      "2": {"build_s": two_seconds, "self_misses": self_misses(two, dense, 5000)}, "sample": 5000}
    out["memory_bytes_per_row"] = one.memory_usage / len(dense)
    sparse = unit(vectors("hashed", dialog_corpus(path, args.hashed), "document", cache))
    sparse_queries = unit(vectors("hashed", questions, "query", cache))[: args.queries]
    index, _ = built(sparse, 2)
    out["taken"] = {str(taken): searched(index, sparse, sparse_queries, taken, 50)
                    for taken in (250, hnsw_prescan.candidate_count(50))}
    print(out)
    write_json(args.out, {"benchmark": "hnsw_params", "results": out, "machine": machine()})


if __name__ == "__main__":
    main()
