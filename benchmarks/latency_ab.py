"""assemble() cost of two source trees, asked in alternating runs on one stored corpus (HybridMemory).

    redis-server --port 7401 --save '' --appendonly no --daemonize yes
    git archive <before> src | tar -x -C /tmp/before
    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/latency_ab.py --url redis://localhost:7401/0 \\
        --before /tmp/before/src --after src --runs 3 --out latency_ab

A speed change is judged on a shared host by what moves little with the load: this process's
CPU per call, the Redis server's time per call and the round trips, with the wall clock and the
load average beside them. ``--size`` memories of LoCoMo dialog of one agent are stored once in
the server at ``--url`` (``latency_models.store``: sessions of 20, dated, appended in order, MiniLM
vectors; skipped when the server holds them), then each tree answers the first ``--queries``
LoCoMo questions of 6-15 words with ``ContextAssembler(HybridMemory)`` defaults, the query's MiniLM
embedding included, in a child process of its own, before / after / before / ... ``--runs`` times
each (5 warm-up questions per child first). ``--repeats R`` asks each question R times in a row
and reports each question's least wall ms beside the rest: on a host loaded past its cores, the
asking that waited least for one. Results: ``results/<out>.json`` and ``.md``.
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

from common import machine, summary, write_results

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data" / "locomo-dev.json"
STORED = "latency_ab:stored"


def child(url: str, size: int, queries: int, data: Path, repeats: int = 1) -> dict[str, Any]:
    """One tree's run (in the child process): per call wall, CPU and embedding ms; the server's
    ms and the round trips per call; the load average around it. With ``repeats`` > 1 each
    question is asked that many times in a row, and ``least_wall_ms`` summarises each question's
    least wall ms: on a host loaded past its cores, the call with the least waiting for one."""
    import latency_models
    import redmem
    from common import CommandCounter
    from questions import dialog_corpus, locomo_questions
    from redmem.recipes.context_assembler import ContextAssembler
    from redmem.recipes.default_memory import HybridMemory
    from redmem_driver import TimedProvider, minilm_function

    provider = TimedProvider(minilm_function(), 384)
    redmem.connect(url, socket_timeout=120)
    redmem.configure(embedding_provider=provider)
    client = HybridMemory._meta.client
    if not client.get(STORED):
        latency_models.store(HybridMemory, dialog_corpus(data, size), 20)
        client.set(STORED, size)
    questions = locomo_questions(data)[:queries]
    assembler = ContextAssembler(HybridMemory)
    for question in questions[: latency_models.WARMUP]:
        assembler.assemble(question, agent_id=latency_models.AGENT)
    CommandCounter.install()
    load_before, server_before, counted = os.getloadavg()[0], latency_models.server_usec(client), CommandCounter.snapshot()
    walls, cpus, embedded, least = [], [], [], []
    for question in questions:
        for _ in range(repeats):
            seconds = provider.seconds
            started, process = time.perf_counter(), time.process_time()
            assembler.assemble(question, agent_id=latency_models.AGENT)
            walls.append((time.perf_counter() - started) * 1000)
            cpus.append((time.process_time() - process) * 1000)
            embedded.append((provider.seconds - seconds) * 1000)
        least.append(min(walls[-repeats:]))
    server_after, trips = latency_models.server_usec(client), CommandCounter.since(counted)[0]
    return {"wall_ms": summary(walls), "cpu_ms": summary(cpus), "embedding_ms": summary(embedded),
            "least_wall_ms": summary(least), "server_ms_per_call": (server_after[1] - server_before[1]) / 1000 / len(walls),
            "round_trips_per_call": trips / len(walls), "load_average": [load_before, os.getloadavg()[0]]}


def run_in_tree(script: str, src: str, arguments: list[str]) -> dict[str, Any]:
    """``script --child arguments`` in a child process importing redmem from ``src``: the JSON
    object its last line prints (an A/B benchmark runs each tree in its own process)."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    command = [sys.executable, script, "--child", *arguments]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def run_tree(src: str, args: argparse.Namespace) -> dict[str, Any]:
    return run_in_tree(__file__, src, ["--url", args.url, "--size", str(args.size), "--queries", str(args.queries),
                                       "--data", str(args.data), "--repeats", str(args.repeats)])


def markdown(payload: dict[str, Any]) -> str:
    rows = []
    for label in ("before", "after"):
        for n, run in enumerate(payload["runs"][label], 1):
            rows.append(
                f"| {label} | {n} | {run['wall_ms']['p50']:.2f} | {run['wall_ms']['p95']:.2f} | "
                f"{run.get('least_wall_ms', run['wall_ms'])['p50']:.2f} | "
                f"{run['cpu_ms']['p50']:.2f} / {run['cpu_ms']['mean']:.2f} | {run['embedding_ms']['p50']:.2f} | "
                f"{run['server_ms_per_call']:.2f} | {run['round_trips_per_call']:.2f} | "
                f"{run['load_average'][0]:.1f} → {run['load_average'][1]:.1f} |")
    return "\n".join([
        "# assemble() before / after, alternating runs on one stored corpus",
        "",
        f"HybridMemory, {payload['size']} memories, {payload['queries']} LoCoMo questions a run, each asked "
        f"{payload.get('repeats', 1)} time(s) in a row, MiniLM query "
        "embedding included. CPU ms: this process per call (every thread); server ms: Redis per call "
        "(INFO commandstats).",
        "",
        f"Command: `{payload['command']}`; commit {payload['machine'].get('git', '?')}.",
        "",
        "| tree | run | wall p50 ms | wall p95 ms | least wall of each question's askings, p50 ms | CPU ms p50 / mean "
        "| embedding ms p50 | server ms / call | round trips / call | load average before → after |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="a Redis server of your own (the corpus is stored there once)")
    parser.add_argument("--before", help="the src folder of the code before")
    parser.add_argument("--after", help="the src folder of the code after")
    parser.add_argument("--data", type=Path, default=DATA, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3, help="runs of each tree, alternating")
    parser.add_argument("--repeats", type=int, default=1, help="askings of each question in a row (least wall kept)")
    parser.add_argument("--out", default="latency_ab")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.url, args.size, args.queries, args.data, args.repeats)))
        return 0
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(args.runs):
        for label, src in (("before", args.before), ("after", args.after)):
            runs[label].append(run_tree(src, args))
            print(label, json.dumps(runs[label][-1]), flush=True)
    payload = {"benchmark": "latency_ab", "size": args.size, "queries": args.queries, "repeats": args.repeats, "runs": runs,
               "command": " ".join(["benchmarks/latency_ab.py", *(sys.argv[1:] if argv is None else argv)]),
               "machine": machine()}
    write_results(args.out, payload, markdown(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
