"""One partition of 1M memories: ingest, Redis memory per memory, assemble() latency (lexical and hybrid).

    .venv/bin/python benchmarks/scale.py                                  # N = 1M, lexical then hybrid int8
    .venv/bin/python benchmarks/scale.py --n 300000 --kinds lexical       # a smaller N
    .venv/bin/python benchmarks/scale.py --quick                          # N = 20k, 50 queries

Per model kind, a fresh private server (``EmbeddedServer``) and one agent partition of N memories
built from LoCoMo dialog sentences (``questions.dialog_corpus``: past the ~5,000 file-order
memories every further one recombines 1-3 sentences, deterministically; ``--data`` read, never
copied). Kinds: ``lexical`` (the seed's Memory model), ``hybrid-int8`` / ``hybrid-float16`` (the
same plus an ``EmbeddingField(dtype=...)`` fed ``common.hash_vectors``, 384-d; the model's cost
is not the library's, and is timed apart anyway).

- **Ingest**: ``save_many`` calls of ``--call-size`` records (``chunk_size`` the same), each call
  timed; progress (memories, memories/s, bytes per memory so far, load average) is printed every
  ``--progress`` memories. The benchmark's client has ``socket_timeout=120``: redmem's default of
  1.2 s is a bound on one server reply, and one save_many chunk of 1,000 records can take longer
  than that on a loaded host (the slowest call of each run is recorded: ``call_seconds``).
- **Memory**: ``used_memory`` after ingest minus before, / N (and ``used_memory_dataset``).
- **assemble()**: ``ContextAssembler`` (max_items 10, ``score_weights={"relevance": 1.0}``,
  ``retrieval_mode`` lexical or hybrid) over the first ``--queries`` LoCoMo questions of 6-15
  words after 5 warm-ups: a first pass reported apart (it copies the query terms' postings and,
  for hybrid, the partition's vectors into the process), then ``--passes`` more: p50/p95/p99
  ms, without the query embedding for hybrid, round trips; hybrid kinds once per
  ``--vector-prescans`` pre-scan (``exact``, ``binary``, ``hnsw``: its graph built after the
  warm-up, before the first pass, and its build time recorded).

Written to ``results/scale.json`` and ``.md`` after every kind (``--out`` to change the name).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, summary, write_results
from questions import dialog_corpus, locomo_questions
from redmem import EmbeddingField
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, assemble_many, graph_ready, hash_provider, memory_model

log = logging.getLogger("benchmarks.scale")

AGENT = "agent-1"
WARMUP = 5
SOCKET_TIMEOUT = 120.0
DEFAULT_SOCKET_TIMEOUT = 1.2
TARGETS = {"memory": "Redis memory per memory <= 2.5 KB (lexical)", "latency": "assemble p50 <= 8 ms at 1M"}


def model_for(kind: str, n: int, provider: TimedProvider | None) -> type:
    """The seed's Memory model; with an EmbeddingField storing the kind's dtype for ``hybrid-<dtype>``."""
    name = f"Scale{kind.replace('-', '').title()}{n}"
    return memory_model(name) if kind == "lexical" else memory_model(name, provider, dtype=kind.split("-", 1)[1])


def ingest(model: type, texts: list[str], args: Any, client: Any, provider: TimedProvider | None) -> dict[str, Any]:
    """save_many in calls of ``args.call_size``: seconds, rates, slowest calls, progress lines."""
    embedding = next((f for f in model._meta.fields.values() if isinstance(f, EmbeddingField)), None)
    before, started, calls, embed_seconds = used(client), time.perf_counter(), [], 0.0
    progress = []
    for first in range(0, len(texts), args.call_size):
        records = [model(agent_id=AGENT, content=text) for text in texts[first:first + args.call_size]]
        if embedding is not None:
            began = time.perf_counter()
            embedding.embed_many(records)
            embed_seconds += time.perf_counter() - began
        began = time.perf_counter()
        model.save_many(records, chunk_size=args.call_size)
        calls.append(time.perf_counter() - began)
        done = first + len(records)
        if done % args.progress == 0 or done == len(texts):
            elapsed = time.perf_counter() - started
            line = {"memories": done, "seconds": round(elapsed, 1),
                    "per_s_without_embedding": round(done / (elapsed - embed_seconds)),
                    "bytes_per_memory": round((used(client) - before) / done),
                    "slowest_call_s": round(max(calls), 3), "load": round(os.getloadavg()[0], 2)}
            progress.append(line)
            log.info("ingest %s", line)
    seconds = time.perf_counter() - started
    memory = client.info("memory")
    return {"seconds": seconds, "embed_seconds": embed_seconds,
            "per_s_without_embedding": len(texts) / (seconds - embed_seconds),
            "call_size": args.call_size, "call_seconds": {**summary(calls), "max": max(calls),
                                                          "over_default_timeout": sum(c > DEFAULT_SOCKET_TIMEOUT
                                                                                      for c in calls)},
            "bytes_per_memory": (int(memory["used_memory"]) - before) / len(texts),
            "used_memory_human": memory["used_memory_human"],
            "dataset_bytes_per_memory": int(memory["used_memory_dataset"]) / len(texts), "progress": progress}


def used(client: Any) -> int:
    return int(client.info("memory")["used_memory"])


def latency(model: type, kind: str, queries: list[str], provider: TimedProvider | None, passes: int,
            prescan: str = "exact") -> dict[str, Any]:
    """assemble() over ``queries``: the first pass apart (it copies the query terms' postings and,
    for hybrid, the vectors into the process), then ``passes`` more; ``prescan``: the hybrid
    model's vector pre-scan for every pass."""
    mode = "lexical" if kind == "lexical" else "hybrid"
    if mode == "hybrid":
        next(f for f in model._meta.fields.values() if isinstance(f, EmbeddingField)).prescan = prescan
    assembler = ContextAssembler(model, score_weights={"relevance": 1.0}, max_items=10, retrieval_mode=mode)
    assemble_many(model, mode, AGENT, queries[:WARMUP], provider=provider, assembler=assembler)
    graph_seconds = graph_ready(model, AGENT) if mode == "hybrid" else None
    first = assemble_many(model, mode, AGENT, queries, provider=provider, assembler=assembler)
    rows = [row for _ in range(passes)
            for row in assemble_many(model, mode, AGENT, queries, provider=provider, assembler=assembler)]
    total, bare = summary([r["ms"] for r in rows]), summary([r["ms"] - r["embed_ms"] for r in rows])
    cold = summary([r["ms"] - r["embed_ms"] for r in first])
    return {"mode": mode, "prescan": prescan if mode == "hybrid" else None, "passes": passes,
            "p50": total["p50"], "p95": total["p95"], "p99": total["p99"],
            "p50_without_embedding": bare["p50"], "p95_without_embedding": bare["p95"],
            "first_pass_p50_without_embedding": cold["p50"], "first_pass_p95_without_embedding": cold["p95"],
            "round_trips": statistics.median(r["round_trips"] for r in rows), "queries": len(first),
            "hnsw_build_seconds": graph_seconds}


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# {int(payload['n']):,} memories in one partition", "",
             f"`{payload['command']}` -- {payload['machine']['date']}, git {payload['machine']['git']}, "
             f"{payload['machine']['cores']} shared cores, Redis {payload.get('redis_version')}.", "",
             "| kind | ingest s | memories/s | slowest save_many call s (calls > 1.2 s) | bytes/memory | used_memory | "
             "load avg |", "|---|---|---|---|---|---|---|"]
    for kind, out in payload["results"].items():
        i = out["ingest"]
        lines.append(f"| {kind} | {i['seconds']:.0f} | {i['per_s_without_embedding']:.0f} | "
                     f"{i['call_seconds']['max']:.2f} ({i['call_seconds']['over_default_timeout']}) | "
                     f"{i['bytes_per_memory']:.0f} | {i['used_memory_human']} | {out['load'][0]} -> {out['load'][-1]} |")
    lines += ["", "assemble() without the query embedding, ms (first pass: the postings and vectors are copied "
              "into the process):", "",
              "| kind | pre-scan | p50 | p95 | p99 | first pass p50 / p95 | round trips |", "|---|---|---|---|---|---|---|"]
    for kind, out in payload["results"].items():
        for a in out["assemble"]:
            lines.append(f"| {kind} | {a['prescan'] or '-'} | {a['p50_without_embedding']:.2f} | "
                         f"{a['p95_without_embedding']:.2f} | {a['p99']:.2f} | {a['first_pass_p50_without_embedding']:.2f} / "
                         f"{a['first_pass_p95_without_embedding']:.2f} | {a['round_trips']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--kinds", default="lexical,hybrid-int8",
                        help="comma-separated: lexical, hybrid-int8, hybrid-float16")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=2, help="timed passes over the queries after the first")
    parser.add_argument("--vector-prescans", default="exact",
                        help="hybrid kinds: the EmbeddingField pre-scan(s) timed, e.g. exact,binary")
    parser.add_argument("--call-size", type=int, default=1000, help="records per save_many call (and chunk_size)")
    parser.add_argument("--progress", type=int, default=50_000, help="print progress every this many memories")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"))
    parser.add_argument("--quick", action="store_true", help="N = 20k, 50 queries")
    parser.add_argument("--out", default="scale")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.queries, args.progress = 20_000, 50, 5_000
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    data = Path(args.data)
    started = time.perf_counter()
    texts = dialog_corpus(data, args.n)
    queries = locomo_questions(data)[:args.queries]
    log.info("corpus of %d memories built in %.0f s", len(texts), time.perf_counter() - started)
    results: dict[str, Any] = {}
    payload: dict[str, Any] = {
        "benchmark": "scale", "n": args.n, "targets": TARGETS, "socket_timeout": SOCKET_TIMEOUT,
        "command": "python benchmarks/scale.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "results": results}
    for kind in args.kinds.split(","):
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=SOCKET_TIMEOUT)
            client = server.client()
            provider = None if kind == "lexical" else hash_provider()
            model = model_for(kind, args.n, provider)
            out: dict[str, Any] = {"load": [round(os.getloadavg()[0], 2)]}
            log.info("%s: ingesting %d memories", kind, args.n)
            out["ingest"] = ingest(model, texts, args, client, provider)
            prescans = args.vector_prescans.split(",") if kind != "lexical" else ["exact"]
            out["assemble"] = [latency(model, kind, queries, provider, args.passes, prescan) for prescan in prescans]
            out["load"].append(round(os.getloadavg()[0], 2))
            payload["redis_version"] = client.info("server")["redis_version"]
            for timed in out["assemble"]:
                log.info("%s (%s): %.0f B/memory, assemble p50 %.2f p95 %.2f ms, first pass p50 %.2f", kind,
                         timed["prescan"], out["ingest"]["bytes_per_memory"], timed["p50_without_embedding"],
                         timed["p95_without_embedding"], timed["first_pass_p50_without_embedding"])
        results[kind] = out
        payload.update(machine=machine(), seconds=time.perf_counter() - started)
        write_results(args.out, payload, markdown(payload))
    return payload


if __name__ == "__main__":
    main()
