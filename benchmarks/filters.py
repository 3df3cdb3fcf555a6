"""assemble() with and without a metadata filter (``where=``) at N memories in one partition.

    .venv/bin/python benchmarks/filters.py                      # N = 10k, 200 questions, 3 repeats
    .venv/bin/python benchmarks/filters.py --sizes 1000 --queries 50 --repeats 1 --out ''   # a smoke run

The questions workload of ``latency.py`` (``questions.py``: N memories of LoCoMo dialog
sentences read from ``--data``, LoCoMo questions as queries) on the seed's Memory model plus two
declared indexed fields to filter on (without the LoCoMo file, ``common``'s synthetic memories
and queries instead): ``kind`` (a TagField, memory i has ``KINDS[i % 4]``) and
``rank`` (a SortedField, memory i has ``(i * 7919 % 1000) / 1000``, spread evenly over [0, 1)).
The hybrid model also has an EmbeddingField fed deterministic hashed vectors (``common.hash_vectors``).

For each mode (lexical, hybrid) and each filter of :data:`FILTERS` -- none, a selective one
(about 5% of the memories match) and a broad one (about 90%) -- the same ``--queries`` questions
are assembled (max_items 10) after 5 warm-up ones, ``--repeats`` times (the filters taking
turns within each repeat, so that a change of the machine's load reaches them all): p50/p95 ms, round
trips and commands per call (medians over repeats), the server's script time per call (the
``usec`` of EVAL and EVALSHA in ``INFO commandstats`` over the calls, less sensitive to the
client's scheduling than wall time), and what the BM25 top 50 (the assembler's candidate limit)
read in Redis with the filter (postings, records scored). Every assembled record is checked against the
filter. The load average is recorded before and after each mode (the machine is shared: compare
round trips and records read, and p50s only within one run). Written to ``results/filters.json``
and ``results/filters.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import CommandCounter, machine, median_of, summary, synthetic_queries, synthetic_texts, write_results
from questions import dialog_corpus, locomo_questions
from redmem import SortedField, TagField
from redmem.model._filters import compile_where
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer
from redmem_driver import hash_provider, memory_model

log = logging.getLogger("benchmarks.filters")

AGENT = "agent-1"
WARMUP = 5
KINDS = ["fact", "event", "preference", "plan"]
#: name -> where (None: no filter); the share of memories each lets through is in the results.
FILTERS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "selective": {"kind": "preference", "rank__gte": 0.8},
    "broad": {"rank__gte": 0.1},
}


def filter_model(name: str, hybrid: bool) -> type:
    """The seed's Memory (``memory_model``) with ``kind`` (tags) and ``rank`` (sorted) added."""
    extra = {"kind": TagField(), "rank": SortedField(partition_by="agent_id")}
    return memory_model(name, hash_provider() if hybrid else None, extra=extra)


def ingest(model: type, texts: list[str]) -> list[Any]:
    records = [model(agent_id=AGENT, content=text, kind=[KINDS[i % 4]], rank=(i * 7919 % 1000) / 1000)
               for i, text in enumerate(texts)]
    model.save_many(records, chunk_size=1000)
    return records


def matches(record: Any, where: dict[str, Any] | None) -> bool:
    """The two filters of :data:`FILTERS`, checked on the record itself."""
    if where is None:
        return True
    return all(record.kind == [value] if name == "kind" else record.rank >= value for name, value in where.items())


def script_usec(client: Any) -> float:
    """Microseconds the server spent running scripts so far (EVAL and EVALSHA)."""
    stats = client.info("commandstats")
    return float(sum(stats.get(f"cmdstat_{name}", {}).get("usec", 0) for name in ("eval", "evalsha")))


def run(assembler: ContextAssembler, queries: list[str], where: dict[str, Any] | None) -> list[dict[str, Any]]:
    client = assembler.model_class._meta.client
    server_before = script_usec(client)
    rows = []
    for text in queries:
        before, started = CommandCounter.snapshot(), time.perf_counter()
        result = assembler.assemble({"query": text}, where=where, agent_id=AGENT)
        ms = (time.perf_counter() - started) * 1000
        trips, commands = CommandCounter.since(before)
        if not all(matches(record, where) for record in result.records):
            raise AssertionError(f"an assembled record does not match {where}")
        rows.append({"ms": ms, "round_trips": trips, "commands": commands, "selected": len(result.records)})
    server_ms = (script_usec(client) - server_before) / 1000 / len(queries)
    for row in rows:
        row["server_ms"] = server_ms  # the run's mean per call (the counters are not read per call)
    return rows


def figures(runs: list[list[dict[str, Any]]]) -> dict[str, float]:
    per_run = [{**summary([r["ms"] for r in rows]),
                "round_trips": float(sorted(r["round_trips"] for r in rows)[len(rows) // 2]),
                "commands": float(sorted(r["commands"] for r in rows)[len(rows) // 2]),
                "server_script_ms": rows[0]["server_ms"],
                "selected": sum(r["selected"] for r in rows) / len(rows)} for rows in runs]
    return median_of(per_run)


def bm25_reads(model: type, queries: list[str], where: dict[str, Any] | None) -> dict[str, Any]:
    """What each BM25 top-10 search read inside Redis with the filter: postings, records scored."""
    space = model.query.filter(agent_id=AGENT).partition()
    compiled = compile_where(model, where)
    found = [model.content_bm25.search(space, text, 50, where=compiled) for text in queries]
    return {"postings_read": summary([f.postings_read for f in found]),
            "records_scored": summary([f.records_scored for f in found]),
            "modes": sorted({f.mode for f in found})}


def measure(n: int, mode: str, texts: list[str], queries: list[str], repeats: int) -> dict[str, Any]:
    model = filter_model(f"Filt{mode.title()}{n}", hybrid=mode == "hybrid")
    records = ingest(model, texts)
    assembler = ContextAssembler(model, score_weights={"relevance": 1.0}, max_items=10, retrieval_mode=mode)
    CommandCounter.install()
    out: dict[str, Any] = {"load_average": {"before": list(os.getloadavg())}, "filters": {}}
    for where in FILTERS.values():
        run(assembler, queries[:WARMUP], where)
    runs: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in FILTERS}
    for _ in range(repeats):  # the filters take turns, so a change of load reaches them all
        for name, where in FILTERS.items():
            runs[name].append(run(assembler, queries, where))
    for name, where in FILTERS.items():
        share = sum(matches(r, where) for r in records) / len(records)
        out["filters"][name] = {"where": where, "share": share, "assemble": figures(runs[name]),
                                "bm25": bm25_reads(model, queries, where)}
        log.info("N=%d %s %s: %s", n, mode, name, out["filters"][name]["assemble"])
    out["load_average"]["after"] = list(os.getloadavg())
    return out


def table(payload: dict[str, Any]) -> str:
    lines = ["| N | mode | filter | share | p50 ms | p95 ms | server script ms / call | round trips "
             "| BM25 top 50: postings read (median) | load before / after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n, modes in payload["results"].items():
        for mode, out in modes.items():
            load = out["load_average"]
            for name, row in out["filters"].items():
                a = row["assemble"]
                lines.append(f"| {n} | {mode} | {name} | {row['share']:.0%} | {a['p50']:.2f} | {a['p95']:.2f} | "
                             f"{a['server_script_ms']:.2f} | {a['round_trips']:.0f} | "
                             f"{row['bm25']['postings_read']['p50']:.0f} | "
                             f"{load['before'][0]:.2f} / {load['after'][0]:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"),
                        help="locomo-dev.json")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default="lexical,hybrid")
    parser.add_argument("--out", default="filters", help="results/<out>.json and .md ('' none)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    path = Path(args.data)
    if path.is_file():
        queries = locomo_questions(path)[: args.queries]
    else:  # no LoCoMo file: common's synthetic memories and queries
        queries = synthetic_queries(synthetic_texts(1000), args.queries)
    results: dict[str, Any] = {}
    payload = {"benchmark": "filters", "queries": len(queries), "repeats": args.repeats, "warmup": WARMUP,
               "filters": FILTERS, "results": results}
    started = time.perf_counter()
    for n in (int(size) for size in args.sizes.split(",")):
        texts = dialog_corpus(path, n) if path.is_file() else synthetic_texts(n)
        results[str(n)] = {}
        for mode in args.modes.split(","):
            with EmbeddedServer() as server:
                redmem.connect(server.url, socket_timeout=120)
                results[str(n)][mode] = measure(n, mode, texts, queries, args.repeats)
    payload.update(machine=machine(), seconds=time.perf_counter() - started)
    if args.out:
        write_results(args.out, payload, table(payload))
    return payload


if __name__ == "__main__":
    main()
