"""MCP ``recall`` cost of two source trees, asked in alternating runs on one stored corpus (ChatMemory).

    redis-server --port 7100 --save '' --appendonly no --daemonize yes
    git archive <before> src | tar -x -C /tmp/before
    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/mcp_recall_ab.py --url redis://localhost:7100/0 \\
        --before /tmp/before/src --after src --superseded 0,100 --runs 2 --out mcp_recall_ab

``--size`` LoCoMo dialog memories (``questions.dialog_corpus``) are stored once per agent in the
server at ``--url`` with ``store_turns`` (sessions of 20, one day apart, fixed ids so that ties
are broken the same way in every run; ``HashingEmbeddings(384)``: the model does not change the
round trips or the server's work), one agent per ``--superseded`` count: that agent has that
many memories superseded by hand, each by the turn after it (spread evenly over the corpus).
Then each tree answers the first ``--queries`` LoCoMo questions of 6-15 words through
``mcp_server.recall_context(agent, question, 2000, 10, "structured")`` (the MCP tool's
defaults), in a child process of its own, before / after / before / ... ``--runs`` times each
(5 warm-up questions per child first). Per call: round trips, the Redis server's ms (INFO
commandstats), this process's CPU ms, wall ms; the load average around each run.
Results: ``results/<out>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, summary, write_results
from latency_ab import run_in_tree

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data" / "locomo-dev.json"
WARMUP = 5
SESSION = 20


def agent_of(superseded: int) -> str:
    return f"recall-ab-{superseded}"


def stored(size: int, superseded: int, data: Path) -> None:
    """Store the agent's ``size`` memories and supersede ``superseded`` of them (once per server)."""
    from questions import dialog_corpus
    from redmem.cli_commands._conversation import ChatTurn
    from redmem.cli_commands._ingest import store_turns
    from redmem.cli_commands._memory import ChatMemory
    from redmem.lifecycle import supersede

    agent, client = agent_of(superseded), ChatMemory._meta.client
    marker = f"mcp_recall_ab:{agent}:{size}"
    if client.get(marker):
        return
    day = datetime(2023, 1, 1, tzinfo=UTC)
    turns = [ChatTurn(text=text.split(": ", 1)[1], at=day + timedelta(days=i // SESSION, minutes=i % SESSION),
                      session=f"s{i // SESSION}", speaker=text.split(": ", 1)[0])
             for i, text in enumerate(dialog_corpus(data, size))]
    ids = [f"m{i:06d}" for i in range(size)]
    store_turns(turns, agent, ids=ids)
    step = size // superseded if superseded else 0
    for n in range(superseded):
        older, newer = (ChatMemory.query.no_track().get(agent_id=agent, memory_id=ids[n * step + k]) for k in (0, 1))
        supersede(older, newer)
    client.set(marker, 1)


def child(url: str, size: int, queries: int, superseded: int, data: Path, query_vectors: str) -> dict[str, Any]:
    """One tree's run (in the child process): per call wall and CPU ms; the server's ms and the
    round trips per call; the load average around it. ``query_vectors`` "minilm": the questions
    are embedded by the offline MiniLM in this process (the stored vectors stay hashed: the
    matrix scanned has the same size, the ranking means nothing)."""
    import latency_models
    import redmem
    from common import CommandCounter
    from questions import locomo_questions
    from redmem.cli_commands._memory import ChatMemory
    from redmem.cli_commands.mcp_server import recall_context
    from redmem.embeddings import HashingEmbeddings

    redmem.connect(url, socket_timeout=120)
    redmem.configure(embedding_provider=HashingEmbeddings(384))
    stored(size, superseded, data)
    if query_vectors == "minilm":
        from redmem_driver import TimedProvider, minilm_function

        redmem.configure(embedding_provider=TimedProvider(minilm_function(), 384))
    client, agent = ChatMemory._meta.client, agent_of(superseded)
    questions = locomo_questions(data)[:queries]
    for question in questions[:WARMUP]:
        recall_context(agent, question, 2000, 10, "structured")
    CommandCounter.install()
    load_before, server_before, counted = os.getloadavg()[0], latency_models.server_usec(client), CommandCounter.snapshot()
    walls, cpus = [], []
    for question in questions:
        started, process = time.perf_counter(), time.process_time()
        recall_context(agent, question, 2000, 10, "structured")
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - process) * 1000)
    server_after, trips = latency_models.server_usec(client), CommandCounter.since(counted)[0]
    return {"wall_ms": summary(walls), "cpu_ms": summary(cpus),
            "server_ms_per_call": (server_after[1] - server_before[1]) / 1000 / len(questions),
            "round_trips_per_call": trips / len(questions), "load_average": [load_before, os.getloadavg()[0]]}


def run_tree(src: str, superseded: int, args: argparse.Namespace) -> dict[str, Any]:
    return run_in_tree(__file__, src, ["--url", args.url, "--size", str(args.size), "--queries", str(args.queries),
                                       "--superseded", str(superseded), "--data", str(args.data),
                                       "--query-vectors", args.query_vectors])


def markdown(payload: dict[str, Any]) -> str:
    rows = []
    for superseded, runs in payload["runs"].items():
        for label in ("before", "after"):
            for n, run in enumerate(runs[label], 1):
                rows.append(
                    f"| {superseded} | {label} | {n} | {run['round_trips_per_call']:.2f} | "
                    f"{run['server_ms_per_call']:.2f} | {run['cpu_ms']['p50']:.2f} / {run['cpu_ms']['mean']:.2f} | "
                    f"{run['wall_ms']['p50']:.2f} / {run['wall_ms']['p95']:.2f} | "
                    f"{run['load_average'][0]:.1f} → {run['load_average'][1]:.1f} |")
    return "\n".join([
        f"# MCP recall at {payload['size']:,} memories: before / after, alternating runs",
        "",
        f"ChatMemory of one agent per superseded count, {payload['size']} LoCoMo dialog memories stored with "
        "store_turns (sessions of 20, dated, fixed ids), HashingEmbeddings(384); questions embedded by "
        f"{payload.get('query_vectors', 'hashing')}; "
        f"recall_context(agent, question, 2000, 10, 'structured'), {payload['queries']} questions a run, "
        f"{WARMUP} warm-up calls. Server ms: Redis per call (INFO commandstats); CPU ms: this process per call.",
        "",
        f"Command: `{payload['command']}`; commit {payload['machine'].get('git', '?')}.",
        "",
        "| superseded | code | run | round trips / call | server ms / call | CPU ms p50 / mean | wall p50 / p95 ms "
        "| load average |",
        "|---|---|---|---|---|---|---|---|",
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
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--superseded", default="0,100",
                        help="comma-separated: memories superseded, one agent each (child: one count)")
    parser.add_argument("--runs", type=int, default=2, help="runs of each tree, alternating")
    parser.add_argument("--query-vectors", choices=("hashing", "minilm"), default="hashing",
                        help="what embeds the questions (the stored vectors are hashed either way)")
    parser.add_argument("--out", default="mcp_recall_ab")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.superseded.split(",")]
    if args.child:
        print(json.dumps(child(args.url, args.size, args.queries, counts[0], args.data, args.query_vectors)))
        return 0
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {str(n): {"before": [], "after": []} for n in counts}
    for superseded in counts:
        for _ in range(args.runs):
            for label, src in (("before", args.before), ("after", args.after)):
                runs[str(superseded)][label].append(run_tree(src, superseded, args))
                print(superseded, label, json.dumps(runs[str(superseded)][label][-1]), flush=True)
    payload = {"benchmark": "mcp_recall_ab", "size": args.size, "queries": args.queries, "runs": runs, "query_vectors": args.query_vectors,
               "command": " ".join(["benchmarks/mcp_recall_ab.py", *(sys.argv[1:] if argv is None else argv)]),
               "machine": machine()}
    write_results(args.out, payload, markdown(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
