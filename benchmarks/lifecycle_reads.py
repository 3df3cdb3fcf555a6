"""Reads of a lifecycle model with superseded records: the current read against ``as_of="all"``.

    .venv/bin/python benchmarks/lifecycle_reads.py                              # 10k memories, 1% superseded
    .venv/bin/python benchmarks/lifecycle_reads.py --before /path/to/old/src     # also the code at that path

A tenant of ``--sizes`` memories (``common.synthetic_texts``, ``HashingEmbeddings(384)``) of a
lifecycle model, ``--superseded`` of them (a fraction) saved already superseded. Per read kind,
``--queries`` queries (``common.synthetic_queries``), wall ms p50/p95:

- ``vector``: the vector search alone (the embedding field's searcher, top 10), the arm whose
  filter the current read changes;
- ``assemble``: ``ContextAssembler.assemble`` (hybrid BM25 + vectors, 5 items), as the CLI reads.

Each kind is read current (``where=None``: superseded records left out) and with
``where={"as_of": "all"}`` (no validity filter: the floor a current read can reach). With
``--before SRC`` the same measurement runs once more in a subprocess importing redmem from SRC
(the code before a change), reported beside. Results in ``results/lifecycle_reads.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, summary, synthetic_queries, synthetic_texts, write_results
from redmem import AutoKeyField, BM25Field, EmbeddingField, HashingEmbeddings, KeyField, Model, StringField
from redmem.fields.search_protocol import run_search
from redmem.lifecycle import Lifecycle, LifecycleMixin
from redmem.model._filters import compile_where
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer

AGENT = "agent-1"
START = 1_704_067_200.0  # 2024-01-01
READS = {"current": None, "all": {"as_of": "all"}}


def model(tag: str) -> type:
    fields: dict[str, Any] = {
        "note_id": AutoKeyField(), "agent_id": KeyField(), "content": StringField(),
        "content_bm25": BM25Field(source="content"),
        "embedding": EmbeddingField(source="content", provider=HashingEmbeddings(384)),
        "lifecycle": Lifecycle(merge=False, supersede=False),
        "Meta": type("Meta", (), {"partition_by": "agent_id"})}
    return type(f"LifecycleReads{tag}", (LifecycleMixin, Model), fields)


def fill(cls: type, size: int, superseded: float) -> int:
    """``size`` memories, one in ``1 / superseded`` of them saved already superseded; returns how many."""
    every = max(1, round(1 / superseded)) if superseded > 0 else 0
    records = []
    for i, text in enumerate(synthetic_texts(size)):
        record = cls(agent_id=AGENT, content=text, valid_from=START + i)
        if every and i % every == 0:
            record.valid_to = START + i + 1
        records.append(record)
    cls.save_many(records)
    return sum(r.valid_to is not None for r in records)


def vector_read(cls: type, text: str, where: dict[str, Any] | None) -> int:
    field = cls._meta.fields["embedding"]
    search = field.searcher(cls._meta.keyspace((AGENT,)), text, 10, compile_where(cls, where))
    return len(run_search(search.client, search))


def timed(read: Any, queries: list[str]) -> dict[str, float]:
    read(queries[0])  # the first read loads the matrix
    wall = []
    for query in queries:
        started = time.perf_counter()
        read(query)
        wall.append((time.perf_counter() - started) * 1000)
    return summary(wall)


def measure(size: int, superseded: float, queries: int) -> dict[str, Any]:
    cls = model(str(size))
    result: dict[str, Any] = {"superseded": fill(cls, size, superseded)}
    asked = synthetic_queries(synthetic_texts(size), queries)
    assembler = ContextAssembler(cls, max_items=5, max_tokens=2000)
    for name, where in READS.items():
        result[f"vector_{name}"] = timed(lambda q, w=where: vector_read(cls, q, w), asked)
        result[f"assemble_{name}"] = timed(lambda q, w=where: assembler.assemble(q, agent_id=AGENT, where=w), asked)
    return result


def run(sizes: list[int], superseded: float, queries: int) -> dict[str, Any]:
    results = {}
    for size in sizes:
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=120)
            results[str(size)] = measure(size, superseded, queries)
    return results


def before(src: str, argv: list[str]) -> dict[str, Any]:
    """The same measurement with redmem imported from ``src``."""
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, __file__, *argv, "--json"], env=env, check=True,
                          capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def table(payload: dict[str, Any]) -> str:
    lines = [f"# Lifecycle reads ({payload['superseded']:.0%} superseded)", "",
             f"`{payload['command']}`; load {' '.join(f'{x:.2f}' for x in payload['machine']['load_average'])}. Wall ms p50 / p95 per read.", "",
             "code | memories | superseded | vector current | vector as_of=all | assemble current | assemble as_of=all",
             "--- | --- | --- | --- | --- | --- | ---"]
    runs = {"after": payload["results"], **({"before": payload["before"]} if payload.get("before") else {})}
    for code, results in runs.items():
        for size, r in results.items():
            cells = " | ".join(f"{r[k]['p50']:.2f} / {r[k]['p95']:.2f}"
                               for k in ("vector_current", "vector_all", "assemble_current", "assemble_all"))
            lines.append(f"{code} | {int(size):,} | {r['superseded']} | {cells}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--superseded", type=float, default=0.01)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--before", default="", help="a src directory to measure too (the code before a change)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only (no files)")
    parser.add_argument("--out", default="lifecycle_reads", help="results/<out>.json and .md ('' none)")
    args = parser.parse_args(argv)
    measured = ["--sizes", args.sizes, "--superseded", str(args.superseded), "--queries", str(args.queries)]
    results = run([int(s) for s in args.sizes.split(",")], args.superseded, args.queries)
    if args.json:
        print(json.dumps(results))
        return results
    payload = {"benchmark": "lifecycle_reads", "command": "python benchmarks/lifecycle_reads.py " + " ".join(argv or sys.argv[1:]),
               "superseded": args.superseded, "results": results,
               "before": before(args.before, measured) if args.before else None, "machine": machine()}
    print(table(payload))
    if args.out:
        write_results(args.out, payload, table(payload))
    return payload


if __name__ == "__main__":
    main()
