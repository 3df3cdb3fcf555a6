"""HCE retrieve latency of two versions of the library, side by side on one stored session and one load.

    # once: a redis-server of your own, then the session (benchmarks/hce.py's synthetic conversation)
    .venv/bin/python benchmarks/hce_side_by_side.py ingest --url unix:///tmp/r.sock --size 100000
    # alternately, each version on PYTHONPATH (its src/ and this benchmarks/ directory)
    PYTHONPATH=<old>/src:benchmarks .venv/bin/python benchmarks/hce_side_by_side.py ask --url ... --label old >> runs.jsonl
    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/hce_side_by_side.py ask --url ... --label new >> runs.jsonl
    .venv/bin/python benchmarks/hce_side_by_side.py report runs.jsonl --out hce_side_by_side

On a host shared with other work, wall-clock milliseconds measure waiting for a core as much as
work, so the versions are asked alternately on one session, with the load average quoted per run.
``ask`` is ``benchmarks/hce.py``'s query loop (200 queries of three stored words and a name, the
query's embedding apart, asked twice); besides the milliseconds it reports the server's command
time per query as the server counts it: the scripts' time (``EVAL``/``EVALSHA``, which includes
the commands they run) plus the other top-level commands, each counted once. ``--per-script``
logs every command (``SLOWLOG`` at threshold 0, which slows the server a little: a separate run)
and reports the server time per query of each script by name. ``keyword`` runs HCE's keyword
search alone on the stored session: inside Redis per postings budget, and in-process over the
postings copy with and without the validity filter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import CommandCounter, hash_vectors, machine, summary, write_results
from hce import CHUNK, DIMENSIONS, SOCKET_TIMEOUT, _timed, conversation
from redmem.fields._bm25 import CachedBM25Search
from redmem.fields.search_protocol import run_search
from redmem.recipes.hce import HCEInteraction, HCEPipeline
from redmem.recipes.hce._validity import Visibility
from redmem.store._scripts import lua_files, script
from redmem_driver import TimedProvider

#: Commands a script runs are counted by the server both alone and inside the script's own time.
SCRIPT_COMMANDS = ("cmdstat_eval", "cmdstat_evalsha")


def _pipeline(url: str, size: int) -> HCEPipeline:
    redmem.connect(url, socket_timeout=SOCKET_TIMEOUT)
    provider = TimedProvider(lambda texts: hash_vectors(texts, DIMENSIONS), DIMENSIONS)
    return HCEPipeline(session_id=f"bench-{size}", embedding_provider=provider)


def ingest(url: str, size: int) -> None:
    pipe = _pipeline(url, size)
    pairs, _ = conversation(size)
    for start in range(0, size, CHUNK):
        pipe.update_many(pairs[start : start + CHUNK])


def per_script(client: Any, queries: int) -> dict[str, float]:
    """Server milliseconds per query of each script (by name) and other command, from the slow log."""
    names = {script(name).sha: name for name in lua_files()[0]}
    spent: dict[str, float] = {}
    for entry in client.slowlog_get(-1):
        words = entry["command"].split()
        name = words[0].decode().lower()
        if name == "evalsha" and len(words) > 1:
            name = names.get(words[1].decode(), name)
        elif name == "eval":  # named by the first words of its source (the slow log keeps 128 bytes)
            name = "eval: " + b" ".join(words[1:7]).decode(errors="replace")
        spent[name] = spent.get(name, 0.0) + entry["duration"] / 1000 / queries
    return dict(sorted(spent.items(), key=lambda item: -item[1]))


def ask(url: str, size: int, label: str, queries: int, breakdown: bool = False) -> dict[str, Any]:
    pipe = _pipeline(url, size)
    texts = conversation(size)[1][:queries]
    vectors = [pipe.embed_query(t) for t in texts]
    pipe.retrieve_candidates(texts[0], query_vector=vectors[0])  # the process's matrices load here
    CommandCounter.install()
    client, load = pipe.client, os.getloadavg()[0]
    client.config_resetstat()
    if breakdown:
        client.config_set("slowlog-max-len", 1_000_000)
        client.config_set("slowlog-log-slower-than", 0)
        client.slowlog_reset()
    rows = [_timed(pipe, t, v) for t, v in zip(texts, vectors)]
    stats = client.info("commandstats")
    scripts_by_name = per_script(client, len(rows)) if breakdown else {}
    if breakdown:
        client.config_set("slowlog-log-slower-than", 10_000)
    again = [_timed(pipe, t, v)["ms"] for t, v in zip(texts, vectors)]
    scripts = sum(stats.get(name, {}).get("usec", 0) for name in SCRIPT_COMMANDS) / 1000 / len(rows)
    calls = {name[len("cmdstat_") :]: v["usec"] / 1000 / len(rows) for name, v in stats.items()}
    ms = sorted(r["ms"] for r in rows)
    return {
        "label": label,
        "interactions": size,
        "queries": len(rows),
        "load_average": [load, os.getloadavg()[0]],
        "retrieve_p50_ms": statistics.median(ms),
        "retrieve_p95_ms": ms[int(0.95 * (len(ms) - 1))],
        "retrieve_again_p50_ms": statistics.median(again),
        "client_cpu_p50_ms": statistics.median(r["cpu_ms"] for r in rows),
        "server_script_ms_per_query": scripts,
        "server_ms_per_command_per_query": calls,
        "server_ms_per_script_per_query": scripts_by_name,
        "round_trips_max": max(r["round_trips"] for r in rows),
        "time": time.strftime("%H:%M:%S"),
    }


def keyword(url: str, size: int, queries: int, budgets: list[int | None]) -> dict[str, Any]:
    """HCE's keyword search alone on the stored session (its validity filter), inside Redis for each
    postings budget (None: the exact top, the bounded walk unbounded) and in-process over the
    postings copy, with the filter and without (a search with no filter, the ContextAssembler's):
    server ms and client CPU per query, postings read, the share of the exact top 50 each variant
    returns; plus the query words' document frequencies. Each variant is warmed by the queries."""
    pipe = _pipeline(url, size)
    field, space = HCEInteraction.text_bm25, pipe.graph.space
    where, depth = Visibility(None).where, pipe.tree.leaf_limit
    texts = conversation(size)[1][:queries]
    client = pipe.client
    n = int(client.hlen(field.keys_in(space).lengths))
    dfs = [[int(client.zcard(field.keys_in(space).posting(t))) for t in field.term_counts(text)] for text in texts]

    def run(make: Any) -> tuple[list[Any], dict[str, Any]]:
        for text in texts:  # warm: the copy loads its lists here (asked again, as by a long-lived process)
            run_search(client, make(text))
        client.config_resetstat()
        found, cpu = [], []
        for text in texts:
            began = time.process_time()
            found.append(run_search(client, make(text)))
            cpu.append((time.process_time() - began) * 1000)
        stats = client.info("commandstats")
        server = sum(v["usec"] for name, v in stats.items() if name != "cmdstat_config|resetstat") / 1000
        return found, {"server_ms_per_query": server / len(texts), "client_cpu_ms": summary(cpu),
                       "postings_read": summary([f.postings_read for f in found])}

    exact, out = None, {}
    variants: list[tuple[str, Any]] = [
        (f"budget {b}" if b else "exact (bounded walk)",
         lambda text, b=b: field.server_searcher(space, field.term_counts(text), depth, where=where,
                                                 postings_budget=b)) for b in budgets]
    variants.append(("in-process copy, validity filter",
                     lambda text: CachedBM25Search(field, space, field.term_counts(text), depth, where)))
    variants.append(("in-process copy, no filter", lambda text: field.searcher(space, text, depth)))
    for name, make in variants:
        found, row = run(make)
        if exact is None:
            exact = found
        row["overlap_with_exact_top"] = statistics.fmean(
            len({r for r, _ in f.ranked} & {r for r, _ in e.ranked}) / max(1, len(e.ranked)) for f, e in zip(found, exact))
        out[name] = row
    flat = [df for row in dfs for df in row]
    return {"interactions": n, "queries": len(texts), "limit": depth, "load_average": os.getloadavg()[0],
            "query_terms_p50": statistics.median(len(row) for row in dfs),
            "df_p50": statistics.median(flat), "df_max_per_query_p50": statistics.median(max(row) for row in dfs if row),
            "postings_per_query_p50": statistics.median(sum(row) for row in dfs), "variants": out}


def markdown(runs: list[dict[str, Any]], m: dict[str, Any]) -> str:
    lines = [
        "# HCE retrieve latency, side by side",
        "",
        f"{m['system']}, {m['cores']} cores, Python {m['python']}; git {m['git']}, {m['date']}. One stored "
        "session, the versions asked alternately (load average at the start / end of each run).",
        "",
        "| run | version | interactions | load avg | retrieve p50 / p95 ms | asked again p50 ms | client CPU p50 ms "
        "| server script ms / query | round trips max |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(runs, 1):
        lines.append(
            f"| {n} | {r['label']} | {r['interactions']:,} | {r['load_average'][0]:.1f} / "
            f"{r['load_average'][1]:.1f} | {r['retrieve_p50_ms']:.2f} / {r['retrieve_p95_ms']:.2f} | "
            f"{r['retrieve_again_p50_ms']:.2f} | {r['client_cpu_p50_ms']:.2f} | "
            f"{r['server_script_ms_per_query']:.2f} | {r['round_trips_max']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["ingest", "ask", "keyword", "report"])
    parser.add_argument("runs", nargs="?", type=Path, help="report: the JSON lines of the ask runs")
    parser.add_argument("--url", default="", help="the redis-server holding the session")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--label", default="")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="hce_side_by_side")
    parser.add_argument("--budgets", default="none,2048,1024,512,256", help="keyword: postings budgets ('none': exact)")
    parser.add_argument("--cache-filtered", action="store_true",
                        help="ask: the keyword field ranks its filtered searches in-process (BM25Field cache_filtered)")
    parser.add_argument("--per-script", action="store_true", help="ask: server time per script (slow log)")
    args = parser.parse_args(argv)
    if args.command == "ingest":
        ingest(args.url, args.size)
    elif args.command == "ask":
        if args.cache_filtered:
            HCEInteraction.text_bm25.cache_filtered = True
        print(json.dumps(ask(args.url, args.size, args.label, args.queries, args.per_script)))
    elif args.command == "keyword":
        budgets = [None if b == "none" else int(b) for b in args.budgets.split(",")]
        print(json.dumps(keyword(args.url, args.size, args.queries, budgets)))
    else:
        runs = [json.loads(line) for line in args.runs.read_text().splitlines() if line.strip()]
        m = machine()
        write_results(args.out, {"benchmark": "hce_side_by_side", "machine": m, "runs": runs}, markdown(runs, m))


if __name__ == "__main__":
    main()
