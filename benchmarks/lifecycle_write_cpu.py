"""Client CPU of a lifecycle write against a plain save, repeated, and two codes side by side.

    .venv/bin/python benchmarks/lifecycle_write_cpu.py                                  # 1k memories, 3 runs
    .venv/bin/python benchmarks/lifecycle_write_cpu.py --before /path/to/old/src       # also the code at that path

Only the write phase of ``benchmarks/lifecycle.py`` (the same generator, models, filler and
lockstep writes, :func:`lifecycle.write`): per run a fresh server and tenant of ``--sizes``
memories, every statement saved to the lifecycle model and to its plain-save baseline in turn;
per model the client CPU (``time.process_time``) and wall ms p50 per ``save()``, round trips p50,
and the ratio lifecycle / plain save. ``--repeats`` runs per size (each its own subprocess, so a
run's caches start cold as a user's process does); the median run's ratio is reported beside
every run's. With ``--before SRC`` each run is also made with redmem imported from SRC, the two
codes alternating run by run, so the host's load reaches both alike. Results in
``results/<out>.{json,md}`` with the load average before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

SRC = str(Path(__file__).resolve().parent.parent / "src")


def one_run(size: int, entities: int) -> dict[str, Any]:
    """The write phase of ``lifecycle.py`` at ``size`` memories, in this process."""
    import redmem
    from lifecycle import fill, generate, models, write
    from redmem.store._embedded import EmbeddedServer

    entities = min(entities, size // 5)
    world = generate(entities)
    with EmbeddedServer() as server:
        redmem.connect(server.url, socket_timeout=120)
        lifecycle_model, baseline_model = models(str(size))
        both = {"lifecycle": lifecycle_model, "baseline": baseline_model}
        for model in both.values():
            fill(model, max(0, size - len(world.statements)))
        written = write(both, world)
    return {name: {"cpu_p50": w["cpu_ms"]["p50"], "wall_p50": w["ms"]["p50"], "round_trips": w["round_trips_p50"],
                   "records": w["records"]} for name, w in written.items()}


def in_subprocess(src: str, size: int, entities: int) -> dict[str, Any]:
    """:func:`one_run` with redmem imported from ``src``, and the load average around it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(Path(__file__).resolve().parent)])}
    load = list(os.getloadavg())
    done = subprocess.run([sys.executable, __file__, "--one", str(size), "--entities", str(entities)], env=env,
                          check=True, capture_output=True, text=True)
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    result["load_before"], result["load_after"] = load, list(os.getloadavg())
    for measure in ("cpu_p50", "wall_p50"):
        result[f"ratio_{measure}"] = result["lifecycle"][measure] / result["baseline"][measure]
    return result


def table(payload: dict[str, Any]) -> str:
    lines = ["# Lifecycle write: client CPU against a plain save", "",
             f"`{payload['command']}` at git {payload['git']}; {payload['seconds']:.0f} s. Per run: p50 per `save()` "
             "over the statements of `benchmarks/lifecycle.py` (lifecycle model and plain-save baseline in lockstep).", "",
             "| code | memories | run | client CPU p50 ms: write / plain save | vs plain save, CPU | "
             "wall p50 ms: write / plain save | vs plain save, wall | round trips (plain save) | records | load 1-min before / after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for code, sizes in payload["runs"].items():
        for size, runs in sizes.items():
            for i, r in enumerate(runs, 1):
                lc, base = r["lifecycle"], r["baseline"]
                lines.append(
                    f"| {code} | {int(size):,} | {i} | {lc['cpu_p50']:.3f} / {base['cpu_p50']:.3f} | "
                    f"{r['ratio_cpu_p50']:.2f}x | {lc['wall_p50']:.3f} / {base['wall_p50']:.3f} | {r['ratio_wall_p50']:.2f}x | "
                    f"{lc['round_trips']} ({base['round_trips']}) | {lc['records']} | "
                    f"{r['load_before'][0]:.2f} / {r['load_after'][0]:.2f} |")
    lines += ["", "Median over runs (vs plain save, client CPU p50 / wall p50):", ""]
    for code, sizes in payload["runs"].items():
        for size, runs in sizes.items():
            cpu = statistics.median(r["ratio_cpu_p50"] for r in runs)
            wall = statistics.median(r["ratio_wall_p50"] for r in runs)
            lines.append(f"- {code}, {int(size):,} memories: {cpu:.2f}x / {wall:.2f}x ({len(runs)} runs)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--entities", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default="", help="a src directory to measure too (the code before a change)")
    parser.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)  # a run in this process, JSON out
    parser.add_argument("--out", default="lifecycle_write_cpu", help="results/<out>.json and .md ('' none)")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_run(args.one, args.entities)))
        return {}
    from common import machine, write_results

    started = time.perf_counter()
    codes = {"this code": SRC, **({"before": args.before} if args.before else {})}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {code: {} for code in codes}
    for size in (int(s) for s in args.sizes.split(",")):
        for repeat in range(args.repeats):
            order = list(codes) if repeat % 2 == 0 else list(codes)[::-1]
            for code in order:
                result = in_subprocess(codes[code], size, args.entities)
                runs[code].setdefault(str(size), []).append(result)
                print(code, size, json.dumps(result), flush=True)
    info = machine()
    payload = {"benchmark": "lifecycle_write_cpu", "git": info["git"],
               "command": "python benchmarks/lifecycle_write_cpu.py " + " ".join(argv or sys.argv[1:]),
               "runs": runs, "machine": info, "seconds": time.perf_counter() - started}
    print(table(payload))
    if args.out:
        write_results(args.out, payload, table(payload))
    return payload


if __name__ == "__main__":
    main()
