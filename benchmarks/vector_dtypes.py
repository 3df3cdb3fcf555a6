"""What storing vectors as float16 or int8 changes against float32: LoCoMo turns, MiniLM vectors.

    .venv/bin/python benchmarks/vector_dtypes.py --data ../shared/data/locomo-dev.json

Per conversation, every turn is embedded with ``MiniLMEmbeddings`` and each question ranks the
turns by exact cosine against the vectors as ``EmbeddingField(dtype=...)`` stores them
(``redmem.embeddings._codec``: encoded, then decoded). Reported per dtype: the stored bytes of a
384-d vector, R@1/5/10 and MRR of the evidence turns (semantic arm alone), and against float32:
the mean overlap of the top 10, the share of questions with the same top-10 set, the largest
cosine difference; and the Redis memory an ``EmbeddingField`` of that dtype adds per record
(``used_memory`` delta over ``--records`` records of random 384-d vectors in one partition, ids
of 32 hex digits, on a private server). Writes ``results/vector_dtypes.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, write_json
from locomo import first_hit, load, scores
from redmem import AutoKeyField, EmbeddingField, KeyField, Model
from redmem.embeddings._codec import DTYPES, decode_rows, encode_stored
from redmem.embeddings._local import MiniLMEmbeddings
from redmem.store._embedded import EmbeddedServer

TOP = 10
DIMENSIONS = 384


def stored(vectors: np.ndarray, dtype: str) -> np.ndarray:
    """The unit rows of ``vectors`` as ``dtype`` stores them."""
    rows, _ = decode_rows([encode_stored(v, dtype, b"\0" * 8) for v in vectors], vectors.shape[1])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def redis_bytes_per_record(records: int) -> dict[str, float]:
    """Redis memory an EmbeddingField of each dtype adds per record (random vectors, one partition):
    ``used_memory`` delta of saving the records with the field, less that of the same records without."""
    vectors = np.random.default_rng(7).standard_normal((records, DIMENSIONS)).astype(np.float32)
    used = {}
    with EmbeddedServer() as server:
        client = redmem.connect(server.url)
        for dtype in (None, *DTYPES):
            fields = {"item_id": AutoKeyField(), "owner": KeyField(partition_by="owner")}
            if dtype is not None:
                fields["vector"] = EmbeddingField(dimensions=DIMENSIONS, dtype=dtype)
            model = type(f"Vec{dtype}", (Model,), {"__module__": __name__, **fields})
            items = [model(owner="o") for _ in range(records)]
            if dtype is not None:
                for item, vector in zip(items, vectors):
                    item.vector = vector
            before = int(client.info("memory")["used_memory"])
            model.save_many(items)
            used[dtype] = (int(client.info("memory")["used_memory"]) - before) / records
    return {dtype: used[dtype] - used[None] for dtype in DTYPES}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="path of locomo-dev.json (never copied)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--records", type=int, default=10_000, help="records of the Redis memory measure")
    parser.add_argument("--out", default="vector_dtypes", help="results/<out>.json ('' writes nothing)")
    args = parser.parse_args(argv)
    model = MiniLMEmbeddings()
    hits: dict[str, list] = {dtype: [] for dtype in DTYPES}
    overlap: dict[str, list[float]] = {dtype: [] for dtype in DTYPES}
    largest = dict.fromkeys(DTYPES, 0.0)
    for conversation in load(args.data, args.conversations):
        ids = [turn["dia_id"] for turn in conversation["turns"]]
        documents = model.embed([turn["text"] for turn in conversation["turns"]])
        queries = model.embed([q["question"] for q in conversation["questions"]], input_type="query")
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        exact = queries @ stored(documents, "float32").T
        best = {}
        for dtype in DTYPES:
            cosines = queries @ stored(documents, dtype).T
            largest[dtype] = max(largest[dtype], float(np.abs(cosines - exact).max()))
            best[dtype] = [sorted(range(len(ids)), key=lambda i: (-row[i], ids[i]))[:TOP] for row in cosines]
            hits[dtype] += [first_hit([ids[i] for i in top], q["evidence"])
                            for top, q in zip(best[dtype], conversation["questions"])]
            overlap[dtype] += [len(set(a) & set(b)) / TOP for a, b in zip(best["float32"], best[dtype])]
    memory = redis_bytes_per_record(args.records)
    results = {
        dtype: {"bytes_384d": len(encode_stored(np.ones(DIMENSIONS), dtype, b"\0" * 8)),
                "redis_bytes_per_record": memory[dtype], **scores(hits[dtype]),
                "top10_overlap": float(np.mean(overlap[dtype])),
                "same_top10": float(np.mean([o == 1.0 for o in overlap[dtype]])),
                "max_cosine_difference": largest[dtype]}
        for dtype in DTYPES
    }
    print("| dtype | bytes (384-d) | Redis bytes per record | R@1 | R@5 | R@10 | MRR | top-10 overlap with float32 "
          "| same top-10 | max cosine difference |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for dtype, r in results.items():
        print(f"| {dtype} | {r['bytes_384d']} | {r['redis_bytes_per_record']:,.0f} | {r['recall@1']:.3f} | {r['recall@5']:.3f} "
              f"| {r['recall@10']:.3f} | {r['mrr']:.3f} | {r['top10_overlap']:.4f} | {r['same_top10']:.3f} "
              f"| {r['max_cosine_difference']:.1e} |")
    payload = {"benchmark": "vector_dtypes", "machine": machine(), "questions": len(hits["float32"]),
               "records": args.records, "results": results}
    if args.out:
        write_json(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
