"""HCE's keyword search inside Redis, two versions of ``bm25_search.lua`` side by side on one stored session.

    # a session stored by benchmarks/hce.py --server URL (kept on that server), then
    git show <old commit>:src/redmem/fields/lua/bm25_search.lua > /tmp/bm25_search_old.lua
    PYTHONPATH=src .venv/bin/python benchmarks/bm25_walk.py --url redis://localhost:7400 --size 100000 \
        /tmp/bm25_search_old.lua src/redmem/fields/lua/bm25_search.lua --out hce29k_walk_100k

Each script is loaded as given (its ``--#include`` lines expanded as the library does) and asked
the benchmark's 200 queries (three stored words and a name, HCE's limit and its validity filter
of a current read) with the arguments ``BM25Field.server_searcher`` builds, the versions taking
turns query by query (so both face the same load), ``--rounds`` times. Reported per version:
postings read and records scored exactly (the script's own counts, independent of the host's
load), the server's time per call (``INFO commandstats``, reset before each call), and whether
each reply -- ids and scores, as bytes -- is the first version's.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, summary, write_results
from hce import SOCKET_TIMEOUT, conversation
from redmem.recipes.hce import HCEInteraction, HCEPipeline
from redmem.recipes.hce._validity import Visibility
from redmem.store._scripts import lua_files

#: A line naming a shared snippet, replaced by it (``redmem.store._scripts`` does the same).
INCLUDE = re.compile(r"^--#include ([a-z_]+)[ \t]*$", re.MULTILINE)


def expanded(path: Path) -> str:
    snippets = lua_files()[1]
    return INCLUDE.sub(lambda m: snippets[m.group(1)].read_text(), path.read_text())


def compare(url: str, size: int, paths: list[Path], rounds: int) -> dict[str, Any]:
    redmem.connect(url, socket_timeout=SOCKET_TIMEOUT)
    pipe = HCEPipeline(session_id=f"bench-{size}")
    field, space, client = HCEInteraction.text_bm25, pipe.graph.space, pipe.client
    where, depth = Visibility(None).where, pipe.tree.leaf_limit
    calls = [field.server_searcher(space, field.term_counts(text), depth, where=where).call
             for text in conversation(size)[1]]
    shas = [client.script_load(expanded(path)) for path in paths]
    replies: list[list[Any]] = [[] for _ in paths]
    micros: list[list[float]] = [[] for _ in paths]
    for round_ in range(rounds):
        for call in calls:
            for v, sha in enumerate(shas):
                client.config_resetstat()
                reply = client.evalsha(sha, len(call.keys), *call.keys, *call.args)
                micros[v].append(client.info("commandstats")["cmdstat_evalsha"]["usec"])
                if round_ == 0:
                    replies[v].append(reply)
    first = replies[0]
    return {"interactions": int(client.hlen(field.keys_in(space).lengths)), "queries": len(calls), "rounds": rounds,
            "versions": [{
                "script": str(path),
                "server_us_per_call": summary(micros[v]),
                "postings_read": summary([int(r[1]) for r in replies[v]]),
                "records_scored": summary([int(r[2]) for r in replies[v]]),
                "replies_identical_to_first": sum(a[3:] == b[3:] for a, b in zip(first, replies[v])),
            } for v, path in enumerate(paths)]}


def markdown(payload: dict[str, Any]) -> str:
    m, load = payload["machine"], payload["load_average"]
    lines = [f"# HCE keyword search inside Redis: {payload['interactions']:,} interactions", "",
             f"{m['system']}, {m['cores']} cores, Redis {payload['redis_version']}; load average "
             f"{load['before'][0]:.1f} at the start, {load['after'][0]:.1f} at the end; git {m['git']}, {m['date']}. "
             f"{payload['queries']} queries x {payload['rounds']} rounds, the versions taking turns.", "",
             f"Command: `{payload['command']}`.", "",
             "| script | postings read p50 / p95 / mean | records scored p50 / mean | server us p50 / p95 / mean "
             "| replies identical to the first |", "|---|---|---|---|---|"]
    for v in payload["versions"]:
        r, s, us = v["postings_read"], v["records_scored"], v["server_us_per_call"]
        lines.append(f"| `{v['script']}` | {r['p50']:.0f} / {r['p95']:.0f} / {r['mean']:.0f} | {s['p50']:.0f} / "
                     f"{s['mean']:.0f} | {us['p50']:.0f} / {us['p95']:.0f} / {us['mean']:.0f} | "
                     f"{v['replies_identical_to_first']} / {payload['queries']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scripts", nargs="+", type=Path, help="bm25_search.lua versions (the first is the reference)")
    parser.add_argument("--url", required=True, help="the redis-server holding hce.py's session")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="", help="results/<out>.json and .md ('' prints the table only)")
    args = parser.parse_args(argv)
    before, started = os.getloadavg(), time.perf_counter()
    payload = compare(args.url, args.size, args.scripts, args.rounds)
    payload.update(benchmark="bm25_walk", machine=machine(), seconds=time.perf_counter() - started,
                   command=" ".join(["benchmarks/bm25_walk.py", *(sys.argv[1:] if argv is None else argv)]),
                   redis_version=HCEInteraction._meta.client.info("server")["redis_version"],
                   load_average={"before": list(before), "after": list(os.getloadavg())})
    payload["median_server_us"] = statistics.median(v["server_us_per_call"]["p50"] for v in payload["versions"])
    if args.out:
        write_results(args.out, payload, markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()
