"""Where a frame('attention') call's time goes, on a server the frames benchmark loaded (issue 29).

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/frames_profile.py --server unix:///tmp/x/redis.sock \\
        --size 100000 --vectors hash --mode recall --out frames29h_profile_100k

The server holds one agent's N blocks as ``frames.py --parts latency --server URL --sizes N``
left them (``--reuse``). Per call, over ``--queries`` of the benchmark's questions after its
warm-up: wall and process CPU ms, the query embedding's ms, round trips; the server's time per
call, per command and per script (SLOWLOG with every command logged, durations in microseconds);
the client's CPU per stage (cProfile, cumulative ms per call of the pipeline's functions).
``--mode recall`` writes nothing (the same state for every run); ``frame`` is what the latency
part measures (reinforcement written after each). ``--ids`` writes each call's returned ids and
scores to a JSON file (to compare two versions' answers).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

import redmem
from common import CommandCounter, machine, summary, write_results
from frames import AGENT, TOP_K, WARMUP, vector_function, workload
from redmem.fields.search_protocol import run_search
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._models import Block
from redmem.recipes.frames._retrieval import MIN_RANKED, N_SEEDS_MULTIPLIER, RANKING_MULTIPLIER
from redmem.recipes.frames._wiring import DEFAULT_WIRING
from redmem.store._scripts import lua_files, script
from redmem_driver import TimedProvider

#: The pipeline's functions whose cumulative client time is reported, by a short label.
STAGES = {
    "_chosen": "stages 1-4 and selection (_chosen)",
    "embed_texts": "query embedding",
    "retrieve": "round trip 1: keyword + vector rankings, fused (retrieve)",
    "rank": "vector ranking in-process (VectorMatrix.rank)",
    "run_search": "round trip 2: the candidate script (run_search)",
    "_parsed": "candidate reply parsed (_parsed)",
    "score_candidates": "composite scores (score_candidates)",
    "scored_block": "chosen blocks' fields decoded (scored_block)",
    "_render": "rendering (_render)",
    "apply_effects": "round trip 3: reinforcement (apply_effects)",
}


def script_names() -> dict[str, str]:
    """Each recipe or field script's SHA -> its name (to label SLOWLOG's EVALSHA entries)."""
    return {script(name).sha: name for name in lua_files()[0]}


def server_entries(client: Any, names: dict[str, str]) -> list[tuple[str, int]]:
    """The commands logged since the last reset, oldest first: (label, microseconds)."""
    out = []
    for entry in reversed(client.slowlog_get(100_000)):
        command = [part.decode(errors="replace") if isinstance(part, bytes) else str(part)
                   for part in entry["command"].split()[:2]] if isinstance(entry["command"], bytes) else []
        label = command[0].lower() if command else "?"
        if label == "evalsha" and len(command) > 1:
            label = names.get(command[1], "evalsha ?")
        elif label == "eval":
            label = "eval (queued script)"
        out.append((label, int(entry["duration"])))
    return out


#: SLOWLOG's entries sent by the client itself (the others, run by the scripts, are nested in them).
TOP_LEVEL = ("eval (queued script)", "exec", "multi", "get", "mget")


def command_micros(client: Any) -> dict[str, tuple[int, int]]:
    """INFO commandstats: each command's (calls, microseconds) so far. Unlike SLOWLOG with every
    command logged, it costs the server nothing per command: the sounder server time per script
    (EVALSHA: the candidate script; EVAL: round trip 1's queued scripts)."""
    return {name.removeprefix("cmdstat_"): (int(stats["calls"]), int(stats["usec"]))
            for name, stats in client.info("commandstats").items()}


def server_cpu_seconds(client: Any) -> float:
    """The server's CPU seconds so far (user + system, every thread)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def vector_rank_ms(memory: FrameMemory, provider: TimedProvider, questions: list[str]) -> dict[str, float]:
    """The in-process vector ranking alone (what round trip 1 scores on a worker thread), ms per query."""
    limit = max(TOP_K * N_SEEDS_MULTIPLIER * RANKING_MULTIPLIER, MIN_RANKED)
    vectors = provider.embed(questions, "query")
    searcher = Block.embedding.searcher(memory.space, vectors[0], limit)
    run_search(memory.client, searcher)
    timings = []
    for vector in vectors:
        started = time.perf_counter()
        searcher.matrix.rank(vector, limit, Block.embedding.prescan)
        timings.append((time.perf_counter() - started) * 1000)
    return summary(timings)


def profile(args: Any) -> dict[str, Any]:
    provider = TimedProvider(vector_function(args.vectors), 384)
    redmem.connect(args.server)
    redmem.configure(embedding_provider=provider)
    client = redis.Redis.from_url(args.server)
    memory = FrameMemory(agent_id=AGENT, wiring=DEFAULT_WIRING)
    questions = [q for q, _ in workload(args.size, args.queries)["questions"]]
    call = memory.recall if args.mode == "recall" else memory.frame
    for question in questions if args.warm else questions[:WARMUP]:
        call("attention", question, top_k=TOP_K)
    CommandCounter.install()
    if args.slowlog:
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 100_000)
    names, rows, answers = script_names(), [], []
    profiler = cProfile.Profile(time.process_time) if args.cpu_profile else cProfile.Profile()
    load_before, server_cpu, commands = os.getloadavg(), server_cpu_seconds(client), command_micros(client)
    client.slowlog_reset()
    for question in questions:
        trips, embedded = CommandCounter.snapshot()[0], provider.seconds
        wall, cpu = time.perf_counter(), time.process_time()
        if args.profile:
            profiler.enable()
        result = call("attention", question, top_k=TOP_K)
        if args.profile:
            profiler.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        blocks = result if args.mode == "recall" else result.blocks
        answers.append([(b.id, b.score) for b in blocks])
        rows.append({"ms": wall * 1000, "cpu_ms": cpu * 1000, "embed_ms": (provider.seconds - embedded) * 1000,
                     "round_trips": CommandCounter.snapshot()[0] - trips})
    server_cpu, load_after = server_cpu_seconds(client) - server_cpu, os.getloadavg()
    commands = {name: (calls - commands.get(name, (0, 0))[0], micros - commands.get(name, (0, 0))[1])
                for name, (calls, micros) in command_micros(client).items()}
    entries = [e for e in server_entries(client, names) if e[0] not in ("slowlog", "config")] if args.slowlog else []
    client.config_set("slowlog-log-slower-than", 10_000)
    per_command: Counter[str] = Counter()
    counted: Counter[str] = Counter()
    for label, micros in entries:
        per_command[label] += micros
        counted[label] += 1
    calls = len(questions)
    stats = pstats.Stats(profiler) if args.profile else None
    stages: dict[str, float] = {}
    for (_, _, function), (_, _, _, cumulative, _) in stats.stats.items() if stats else ():  # type: ignore[attr-defined]
        if function in STAGES:
            stages[STAGES[function]] = stages.get(STAGES[function], 0.0) + cumulative * 1000 / calls
    if args.ids:
        Path(args.ids).write_text(json.dumps(answers))
    return {
        "benchmark": "frames_profile", "size": args.size, "mode": args.mode, "vectors": args.vectors,
        "queries": calls, "top_k": TOP_K, "warm": args.warm, "cpu_profile": args.cpu_profile, "load_before": load_before, "load_after": load_after,
        "wall_ms": summary([r["ms"] for r in rows]),
        "wall_ms_without_embedding": summary([r["ms"] - r["embed_ms"] for r in rows]),
        "cpu_ms": summary([r["cpu_ms"] for r in rows]),
        "round_trips": statistics.median(r["round_trips"] for r in rows),
        "round_trips_max": max(r["round_trips"] for r in rows),
        "server_cpu_ms_per_call": server_cpu * 1000 / calls,
        "commandstats_ms_per_call": {name: micros / 1000 / calls for name, (n, micros) in commands.items()
                                     if n and name not in ("info", "slowlog", "config")},
        "server_ms_per_call": sum(v for k, v in per_command.items() if k in TOP_LEVEL or k in names.values()) / 1000 / calls,
        "server_ms_per_call_by_command": {k: v / 1000 / calls for k, v in per_command.most_common()},
        "server_commands_per_call": {k: v / calls for k, v in counted.most_common()},
        "vector_rank_ms": vector_rank_ms(memory, provider, questions),
        "client_ms_per_call_by_stage": dict(sorted(stages.items(), key=lambda kv: -kv[1])),
        "top_functions": top_functions(stats, calls) if stats else [], "profiled": args.profile,
    }


def top_functions(stats: pstats.Stats, calls: int, count: int = 25) -> list[tuple[str, float, float]]:
    """The functions of highest own time: (file:line function, own ms per call, cumulative ms per call)."""
    rows = [(f"{Path(file).name}:{line} {function}", own * 1000 / calls, cumulative * 1000 / calls)
            for (file, line, function), (_, _, own, cumulative, _) in stats.stats.items()]  # type: ignore[attr-defined]
    return sorted(rows, key=lambda row: -row[1])[:count]


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# frames profile: {payload['mode']}('attention') at {payload['size']:,} blocks "
             f"({payload['vectors']} vectors, {payload['queries']} queries, top_k {payload['top_k']})", "",
             f"load average {payload['load_before'][0]:.2f} -> {payload['load_after'][0]:.2f}; "
             f"wall p50 {payload['wall_ms']['p50']:.2f} ms, p95 {payload['wall_ms']['p95']:.2f}; without the "
             f"query embedding p50 {payload['wall_ms_without_embedding']['p50']:.2f}; process CPU p50 "
             f"{payload['cpu_ms']['p50']:.2f} ms; server {payload['server_ms_per_call']:.2f} ms per call (SLOWLOG), "
             f"{payload['server_cpu_ms_per_call']:.2f} ms CPU; vector ranking alone p50 {payload['vector_rank_ms']['p50']:.2f} ms; "
             f"round trips {payload['round_trips']:.0f} (max {payload['round_trips_max']})", "",
             "commandstats, server ms per call: " + ", ".join(
                 f"{k} {v:.3f}" for k, v in sorted(payload["commandstats_ms_per_call"].items(), key=lambda kv: -kv[1])), "",
             f"git {payload.get('machine', {}).get('git')}; `{payload.get('command', '')}`", "",
             "| server, per command or script (commands a script runs are also listed alone) | ms per call | "
             "runs per call |", "|---|---|---|"]
    lines += [f"| {k} | {v:.3f} | {payload['server_commands_per_call'][k]:.1f} |"
              for k, v in payload["server_ms_per_call_by_command"].items()]
    lines += ["", "| client stage (cumulative, nested) | ms per call |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in payload["client_ms_per_call_by_stage"].items()]
    lines += ["", "| function (own time) | own ms per call | cumulative ms per call |", "|---|---|---|"]
    lines += [f"| `{name}` | {own:.3f} | {cumulative:.3f} |" for name, own, cumulative in payload["top_functions"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="the Redis URL of a server the frames benchmark loaded")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", choices=["minilm", "hash"], default="hash")
    parser.add_argument("--mode", choices=["recall", "frame"], default="recall")
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="leave cProfile off: the process CPU per call without the profiler's own cost")
    parser.add_argument("--cpu-profile", action="store_true",
                        help="cProfile times by process CPU (every thread), not wall clock: on a loaded host "
                             "the wall clock charges waiting for a core to whatever function ran")
    parser.add_argument("--warm", action="store_true",
                        help="ask every question once before measuring (each query word's postings then held, as in "
                             "frames.py's later repeats)")
    parser.add_argument("--no-slowlog", dest="slowlog", action="store_false",
                        help="log no command in SLOWLOG (it costs the server per nested command): commandstats only")
    parser.add_argument("--ids", default=None, help="write each call's (id, score) pairs to this JSON file")
    parser.add_argument("--out", default="", help="results/<out>.json and .md ('' writes nothing)")
    args = parser.parse_args(argv)
    payload = profile(args)
    payload["machine"] = machine()
    payload["command"] = " ".join(sys.argv)
    if args.out:
        write_results(args.out, payload, markdown(payload))
    print(markdown(payload))
    return payload


if __name__ == "__main__":
    main()
