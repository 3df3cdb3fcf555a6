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
the commands they run) plus the other top-level commands, each counted once.
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
from common import CommandCounter, hash_vectors, machine, write_results
from hce import CHUNK, DIMENSIONS, SOCKET_TIMEOUT, _timed, conversation
from redmem.recipes.hce import HCEPipeline
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


def ask(url: str, size: int, label: str, queries: int) -> dict[str, Any]:
    pipe = _pipeline(url, size)
    texts = conversation(size)[1][:queries]
    vectors = [pipe.embed_query(t) for t in texts]
    pipe.retrieve_candidates(texts[0], query_vector=vectors[0])  # the process's matrices load here
    CommandCounter.install()
    client, load = pipe.client, os.getloadavg()[0]
    client.config_resetstat()
    rows = [_timed(pipe, t, v) for t, v in zip(texts, vectors)]
    stats = client.info("commandstats")
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
        "round_trips_max": max(r["round_trips"] for r in rows),
        "time": time.strftime("%H:%M:%S"),
    }


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
    parser.add_argument("command", choices=["ingest", "ask", "report"])
    parser.add_argument("runs", nargs="?", type=Path, help="report: the JSON lines of the ask runs")
    parser.add_argument("--url", default="", help="the redis-server holding the session")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--label", default="")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="hce_side_by_side")
    args = parser.parse_args(argv)
    if args.command == "ingest":
        ingest(args.url, args.size)
    elif args.command == "ask":
        print(json.dumps(ask(args.url, args.size, args.label, args.queries)))
    else:
        runs = [json.loads(line) for line in args.runs.read_text().splitlines() if line.strip()]
        m = machine()
        write_results(args.out, {"benchmark": "hce_side_by_side", "machine": m, "runs": runs}, markdown(runs, m))


if __name__ == "__main__":
    main()
