"""Where an HCE retrieve's time goes, on a server ``hce.py --server URL`` loaded (issue 29).

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/hce_profile.py --server redis://127.0.0.1:7140 \\
        --size 100000 --out hce29l_profile_100k

The server holds the session ``hce.py`` stored for N interactions (``--reuse`` there). Per call,
over ``--queries`` of its queries (hash vectors, embedded beforehand, as ``hce.py`` asks them):
wall ms, the calling thread's CPU ms, round trips; the server's time per call, per command and per
script (SLOWLOG with every command logged, microseconds); the client's CPU per stage (cProfile,
cumulative ms per call). ``--replies`` writes each call's answer (selected and offered candidates:
text, source, utility, token cost, metadata; the block) to a JSON file, to compare two versions' answers.
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
from common import CommandCounter, hash_vectors, machine, summary, write_results
from frames_profile import script_names, server_cpu_seconds, top_functions
from hce import DIMENSIONS, conversation
from redmem.recipes.hce import HCEPipeline
from redmem.store._scripts import script
from redmem_driver import TimedProvider

#: The pipeline's functions whose cumulative client time is reported, by a short label.
STAGES = {
    "retrieve_candidates": "the whole retrieve (retrieve_candidates)",
    "retrieve": "round trips 1-2: lists, riders, graph, fused (retrieve)",
    "finish": "replies parsed into lists (finish, every search)",
    "hits": "tree members scored (SemanticTree.hits)",
    "_shown": "round trip 3: rows read and decoded (_shown)",
    "_candidates": "candidates built and labelled (_candidates)",
    "fit_context": "knapsack (fit_context)",
    "superseded_hits": "superseded twin (superseded_hits)",
    "__init__": "constructors (__init__, all)",
}
#: The name the profiled client's connections carry (SLOWLOG keeps only theirs: the host may be shared).
CLIENT_NAME = "hce-profile"
#: SLOWLOG's entries sent by the client itself (the others, run by the scripts, are nested in them).
TOP_LEVEL = ("exec", "multi", "get", "mget", "lrange", "llen", "eval ?", "evalsha ?")


def server_entries(client: Any, names: dict[str, str]) -> list[tuple[str, int]]:
    """The commands :data:`CLIENT_NAME`'s connections sent since the last reset, oldest first:
    (label, microseconds); a queued script (EVAL with its source) is named by its source."""
    sources = {_text(script(name).script).strip()[:60]: name for name in names.values()}
    out = []
    for entry in reversed(client.slowlog_get(100_000)):
        if entry.get("client_name", b"") not in (CLIENT_NAME, CLIENT_NAME.encode()):
            continue
        parts = entry["command"].split(b" ", 2) if isinstance(entry["command"], bytes) else [b"?"]
        label = parts[0].decode(errors="replace").lower()
        if label == "evalsha" and len(parts) > 1:
            label = names.get(parts[1].decode(errors="replace"), "evalsha ?")
        elif label == "eval" and len(parts) > 1:
            body = entry["command"][5:].decode(errors="replace").strip()
            label = next((n for src, n in sources.items() if src and body.startswith(src)), "eval ?")
        out.append((label, int(entry["duration"])))
    return out


def _text(source: str | bytes) -> str:
    return source.decode(errors="replace") if isinstance(source, bytes) else source


def answer(found: Any) -> dict[str, Any]:
    """What a retrieve returns that a change must keep: the block, the selected and offered
    candidates (text, source, utility, tokens, interaction id), the token count, round trips."""
    def rows(candidates: list[Any]) -> list[list[Any]]:
        return [[c.content, c.source, c.utility, c.token_cost, repr(sorted(c.metadata.items()))] for c in candidates]
    return {"block": found.block, "selected": rows(found.selected), "candidates": rows(found.candidates),
            "token_count": found.token_count, "round_trips": found.round_trips}


def profile(args: Any) -> dict[str, Any]:
    provider = TimedProvider(lambda texts: hash_vectors(texts, DIMENSIONS), DIMENSIONS)
    redmem.connect(args.server, socket_timeout=60.0, client_name=CLIENT_NAME)
    client = redis.Redis.from_url(args.server)
    pipe = HCEPipeline(session_id=f"bench-{args.size}", embedding_provider=provider)
    queries = conversation(args.size)[1][:args.queries]
    vectors = [pipe.embed_query(q) for q in queries]
    for text, vector in list(zip(queries, vectors))[:args.warmup]:
        pipe.retrieve_candidates(text, query_vector=vector)
    CommandCounter.install()
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 100_000)
    names, rows, answers = script_names(), [], []
    profiler = cProfile.Profile()
    load_before, server_cpu = os.getloadavg(), server_cpu_seconds(client)
    client.slowlog_reset()
    for text, vector in zip(queries, vectors):
        trips = CommandCounter.snapshot()[0]
        wall, cpu = time.perf_counter(), time.thread_time()
        if args.profile:
            profiler.enable()
        found = pipe.retrieve_candidates(text, query_vector=vector)
        if args.profile:
            profiler.disable()
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        answers.append(answer(found))
        rows.append({"ms": wall * 1000, "cpu_ms": cpu * 1000, "round_trips": CommandCounter.snapshot()[0] - trips})
    server_cpu, load_after = server_cpu_seconds(client) - server_cpu, os.getloadavg()
    entries = [e for e in server_entries(client, names) if e[0] not in ("slowlog", "config")]
    client.config_set("slowlog-log-slower-than", 10_000)
    per_command: Counter[str] = Counter()
    counted: Counter[str] = Counter()
    for label, micros in entries:
        per_command[label] += micros
        counted[label] += 1
    calls = len(queries)
    stats = pstats.Stats(profiler) if args.profile else None
    stages: dict[str, float] = {}
    for (_, _, function), (_, _, _, cumulative, _) in stats.stats.items() if stats else ():  # type: ignore[attr-defined]
        if function in STAGES:
            stages[STAGES[function]] = stages.get(STAGES[function], 0.0) + cumulative * 1000 / calls
    if args.replies:
        Path(args.replies).write_text(json.dumps(answers))
    top = [k for k in per_command if k in TOP_LEVEL or k in names.values()]
    return {
        "benchmark": "hce_profile", "size": args.size, "queries": calls, "load_before": load_before,
        "load_after": load_after, "wall_ms": summary([r["ms"] for r in rows]),
        "cpu_ms": summary([r["cpu_ms"] for r in rows]),
        "round_trips": statistics.median(r["round_trips"] for r in rows),
        "round_trips_max": max(r["round_trips"] for r in rows),
        "server_cpu_ms_per_call": server_cpu * 1000 / calls,
        "server_ms_per_call": sum(per_command[k] for k in top) / 1000 / calls,
        "server_ms_per_call_by_command": {k: v / 1000 / calls for k, v in per_command.most_common()},
        "server_commands_per_call": {k: v / calls for k, v in counted.most_common()},
        "client_ms_per_call_by_stage": dict(sorted(stages.items(), key=lambda kv: -kv[1])),
        "top_functions": top_functions(stats, calls, 40) if stats else [], "profiled": args.profile,
    }


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# HCE retrieve profile at {payload['size']:,} interactions ({payload['queries']} queries)", "",
             f"load average {payload['load_before'][0]:.2f} -> {payload['load_after'][0]:.2f}; "
             f"wall p50 {payload['wall_ms']['p50']:.2f} ms, p95 {payload['wall_ms']['p95']:.2f}; calling thread's "
             f"CPU p50 {payload['cpu_ms']['p50']:.2f} ms{' (cProfile on)' if payload['profiled'] else ''}; "
             f"server {payload['server_ms_per_call']:.2f} ms per call (SLOWLOG), "
             f"{payload['server_cpu_ms_per_call']:.2f} ms CPU; round trips {payload['round_trips']:.0f} "
             f"(max {payload['round_trips_max']})", "",
             f"git {payload.get('machine', {}).get('git')}; `{payload.get('command', '')}`", "",
             "| server, per command or script (commands a script runs are also listed alone) | ms per call | "
             "runs per call |", "|---|---|---|"]
    lines += [f"| {k} | {v:.3f} | {payload['server_commands_per_call'][k]:.1f} |"
              for k, v in payload["server_ms_per_call_by_command"].items()]
    if payload["profiled"]:
        lines += ["", "| client stage (cumulative, nested) | ms per call |", "|---|---|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in payload["client_ms_per_call_by_stage"].items()]
        lines += ["", "| function (own time) | own ms per call | cumulative ms per call |", "|---|---|---|"]
        lines += [f"| `{name}` | {own:.3f} | {cumulative:.3f} |" for name, own, cumulative in payload["top_functions"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="the Redis URL of a server hce.py loaded")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20, help="queries asked first, unmeasured")
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="leave cProfile off: the CPU per call without the profiler's own cost")
    parser.add_argument("--replies", default=None, help="write each call's answer to this JSON file")
    parser.add_argument("--out", default="", help="results/<out>.json and .md ('' writes nothing)")
    args = parser.parse_args(argv)
    payload = profile(args)
    payload["machine"] = machine()
    payload["command"] = " ".join(["benchmarks/hce_profile.py", *(sys.argv[1:] if argv is None else argv)])
    if args.out:
        write_results(args.out, payload, markdown(payload))
    print(markdown(payload))
    return payload


if __name__ == "__main__":
    main()
