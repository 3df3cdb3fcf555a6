"""Two versions of the frames recipe timed on the same server, one after the other, at the same load.

``frames.py --parts latency`` builds its own server per run, so two versions measured with it
run minutes apart, at whatever load the shared machine has then. This script times the version
of redmem on ``PYTHONPATH`` against a server that already holds ``frames.py``'s blocks (the
server is left running between versions), so runs of the old and the new code can alternate:

    python frames_side_by_side.py --socket /tmp/frames.sock --build 100000          # once: learn the blocks
    PYTHONPATH=/old/src python frames_side_by_side.py --socket ... --label old      # then, alternating:
    PYTHONPATH=../src   python frames_side_by_side.py --socket ... --label new

A run asks ``frame("attention", q, top_k=5)`` for every question once untimed (so both versions
start with their in-process caches warm, as ``frames.py``'s later repeats do), then
``--repeats`` times timed: p50 / p95 ms without the query embedding, round trips and commands
per call, the server's time per call (``INFO commandstats``, reset before: the ``usec`` of the
scripts, which include the commands they run), and the load
average before and after; ``--learn N`` also times ``learn()`` of N blocks in a session of a
fresh agent (blocks/s, round trips per learn). Each run appends one row to
``results/<--out>.json`` and rewrites ``results/<--out>.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

import frames
import redmem
from common import CommandCounter, hash_vectors, machine, read_json, write_results
from redmem.recipes.frames import FrameMemory
from redmem_driver import TimedProvider

#: The commands that run scripts (a script's ``usec`` includes the commands it runs).
SCRIPT_COMMANDS = ("cmdstat_eval", "cmdstat_evalsha")


def connect(socket: str, questions: list[str]) -> TimedProvider:
    redmem.connect(f"unix://{socket}", socket_timeout=60)  # a fresh process loads 100k postings and vectors
    provider = TimedProvider(hash_vectors, 384, queries=questions)
    redmem.configure(embedding_provider=provider)
    return provider


def build(n: int, socket: str) -> None:
    """Learn ``frames.py``'s N blocks, edges and contradictions (``wiring=None``), as its latency part does."""
    work = frames.workload(n, 200)
    connect(socket, [])
    memory = FrameMemory(agent_id=frames.AGENT, wiring=None)
    memory.begin_session()
    print(frames.ingest_frames(memory, work))


def server_ms(client: Any, calls: int) -> float:
    """The server's ms per call: the scripts' time (every command a frame sends is a script, and
    the commands a script runs count inside its time)."""
    stats = client.info("commandstats")
    return sum(stats.get(name, {}).get("usec", 0) for name in SCRIPT_COMMANDS) / calls / 1000


def learn_figures(count: int, label: str) -> dict[str, Any]:
    """learn() of ``count`` blocks in one session of a fresh agent: blocks/s and round trips per learn."""
    memory = FrameMemory(agent_id=f"learn-{label}-{time.time_ns()}", wiring=None)
    memory.begin_session()
    texts = [b["text"] for b in frames.facts.blocks(count)]
    before = CommandCounter.snapshot()
    started = time.perf_counter()
    for text in texts:
        memory.learn(text)
    seconds = time.perf_counter() - started
    trips, _ = CommandCounter.since(before)
    return {"blocks": count, "blocks_per_s": count / seconds, "round_trips_per_learn": trips / count}


def run(args: Any) -> dict[str, Any]:
    work = frames.workload(args.size, 200)
    questions = [q for q, _ in work["questions"]]
    provider = connect(args.socket, questions)
    client = redis.Redis(unix_socket_path=args.socket)
    memory = FrameMemory(agent_id=frames.AGENT, wiring=None)
    frames.frames_many(memory, "attention", questions, provider)  # warm: every query's postings and the vectors
    client.config_resetstat()
    load_before = os.getloadavg()
    rows = [row for _ in range(args.repeats) for row in frames.frames_many(memory, "attention", questions, provider)]
    figures = {"label": args.label, "size": args.size, "calls": len(rows), "load_before": list(load_before)}
    ms = sorted(row["ms"] - row["embed_ms"] for row in rows)
    figures.update(
        p50=statistics.median(ms),
        p95=ms[int(0.95 * (len(ms) - 1))],
        server_ms=server_ms(client, len(rows)),
        round_trips=statistics.median(row["round_trips"] for row in rows),
        round_trips_max=max(row["round_trips"] for row in rows),
        commands=statistics.median(row["commands"] for row in rows),
        load_after=list(os.getloadavg()),
    )
    if args.learn:
        figures["learn"] = learn_figures(args.learn, args.label)
    return figures


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# frames: two versions on one server (frames_side_by_side.py, hash vectors, top_k 5)",
        "",
        "| run | N | ATTENTION p50 ms (no embedding) | p95 ms | server ms per call | round trips | commands | "
        "learn blocks/s | learn round trips | load average before / after (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        learned = row.get("learn", {})
        lines.append(
            f"| {row['label']} | {row['size']:,} | {row['p50']:.2f} | {row['p95']:.2f} | {row['server_ms']:.2f} | "
            f"{row['round_trips']:g} (max {row['round_trips_max']}) | {row['commands']:g} | "
            f"{learned.get('blocks_per_s', float('nan')):.0f} | {learned.get('round_trips_per_learn', float('nan')):.1f} | "
            f"{row['load_before'][0]:.1f} / {row['load_after'][0]:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--socket", required=True, help="the unix socket of a server holding the blocks")
    parser.add_argument("--build", type=int, default=0, help="learn this many blocks into the server, then stop")
    parser.add_argument("--size", type=int, default=100_000, help="the N the server was built with")
    parser.add_argument("--label", default="this")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--learn", type=int, default=0, help="also time learn() of this many blocks")
    parser.add_argument("--out", default="frames_side_by_side", help="results/<out>.json and .md ('' writes nothing)")
    args = parser.parse_args(argv)
    if args.build:
        build(args.build, args.socket)
        return
    CommandCounter.install()
    figures = run(args)
    print(figures)
    if args.out:
        payload = read_json(args.out) or {"benchmark": "frames_side_by_side", "runs": []}
        payload["runs"].append(figures | {"machine": machine()})
        write_results(args.out, payload, markdown(payload["runs"]))


if __name__ == "__main__":
    main()
