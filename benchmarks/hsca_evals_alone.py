"""Chosen HSCA evals alone, with ``hsca_evals.py``'s own functions, cases and baselines.

    .venv/bin/python benchmarks/hsca_evals_alone.py --evals 1 2 4 --out hsca30k_evals124
    .venv/bin/python benchmarks/hsca_evals_alone.py --evals 2 --split tuning --out scratch   # engine work
    .venv/bin/python benchmarks/hsca_evals_alone.py --evals 3 --steps 0 100 1000 --out hsca30k_eval3

A full ``hsca_evals.py`` run takes most of an hour on the shared host; a round that changes one
eval's cases or engine path re-runs that eval here on the same frozen cases (hashes checked), with
its baselines and, for evals 1, 2 and 4, the written cases beside. ``--split tuning`` keeps the
held-out half out of sight (engine work); the verdict needs both halves. Eval 3 runs with the
same history and tuner as the full run (its steps given); ``--max-queries`` lets the tuner read
more of a long history than :data:`~redmem.recipes.hsca._tuning.MAX_QUERIES` (a diagnostic: how
far a more informative history moves the parameters, the shrink being ``n / (n + PRIOR_QUERIES)``);
``--eval3-on tuning`` measures eval 3 on the tuning half (history and AUC both there, in sample):
the column a tuner setting is chosen on without the held-out half.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from typing import Any

import common
import hsca_evals as he
import redmem
from redmem.recipes.hsca import HSCAEngine, tune
from redmem.recipes.hsca._tuning import MAX_QUERIES
from redmem.store._embedded import EmbeddedServer

RUNS = {1: ("eval1_fidelity", he.eval_fidelity, he.fidelity_baselines),
        2: ("eval2_macro", he.eval_macro, he.macro_baselines),
        4: ("eval4_adversarial", he.eval_adversarial, he.adversarial_baselines)}


def only(cases: list[dict[str, Any]], split: str | None) -> list[dict[str, Any]]:
    return cases if split is None else [c for c in cases if c["split"] == split]


def summary(name: str, results: list[dict[str, Any]], trivial: dict[str, list[dict[str, Any]]],
            split: str | None) -> dict[str, Any]:
    """Per split: the engine's pass rate and each baseline's; with both halves, the verdict too."""
    record: dict[str, Any] = {"pass_rates": he.pass_rates(results),
                              "baseline_rates": {b: he.pass_rates(rows) for b, rows in trivial.items()},
                              "cases": results}
    if split is None:
        judged = he.judged(name, results, trivial)
        record |= {k: judged[k] for k in ("verdict", "held_out", "best_baseline", "baselines", "baseline_passes")}
    return record


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# HSCA evals alone: {payload['out']}", "",
             f"Load average at the start {payload['load_average_start']}, at the end {payload['load_average_end']} "
             f"(2 shared cores); CPU {payload['cpu_s']} s, wall {payload['wall_s']} s. Split: "
             f"{payload['split'] or 'both'}.", "",
             "| eval | cases | engine tuning | engine held-out | best baseline held-out | verdict |",
             "|---|---|---|---|---|---|"]
    for name, row in payload["evals"].items():
        if name == "eval3_self_improvement":
            continue
        rates = row["pass_rates"]
        best = row.get("best_baseline")
        best_shown = f"{best}: {row['baselines'][best]['rate']:.0%}" if best else ""
        lines.append(f"| {name} | {row['kind']} | {rates['tuning']['rate']:.0%} | {rates['held_out']['rate']:.0%} | "
                     f"{best_shown} | {row.get('verdict', '')} |")
    if "eval3_self_improvement" in payload["evals"]:
        row = payload["evals"]["eval3_self_improvement"]
        lines += ["", "Eval 3: " + ", ".join(f"N={s['interactions']}: AUC {s['rate']:.3f} (eval 1 {s['eval1_rate']:.0%})"
                                             for s in row["steps"]) + f"; monotone {row['monotone']}, passed {row['passed']}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, nargs="+", choices=(1, 2, 3, 4), required=True)
    parser.add_argument("--split", choices=he.SPLITS, default=None, help="one half only (engine work: tuning)")
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 100, 1000], help="eval 3's history sizes")
    parser.add_argument("--max-queries", type=int, default=MAX_QUERIES,
                        help="eval 3: the most queries one tuning reads (tune()'s max_queries; a diagnostic)")
    parser.add_argument("--eval3-on", choices=he.SPLITS, default="held_out",
                        help="eval 3's AUC on this half (tuning: in sample, for choosing settings)")
    parser.add_argument("--no-written", action="store_true", help="skip the written cases of evals 1, 2, 4")
    parser.add_argument("--out", required=True, help="results/<out>.json and .md")
    args = parser.parse_args(argv)
    load_start, wall, cpu = list(os.getloadavg()), time.perf_counter(), time.process_time()
    evals: dict[str, Any] = {}
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        redmem.configure(key_prefix="hsca")
        for number in sorted(set(args.evals) - {3}):
            name, run, trivial = RUNS[number]
            kinds = [("real", he.load_real_cases(name))]
            if not args.no_written:
                kinds.append(("written", he.load_cases(f"{name}.json")))
            for kind, cases in kinds:
                cases = only(cases, args.split)
                key = name if kind == "real" else f"{name}_written"
                evals[key] = {"kind": kind} | summary(name, run(cases, HSCAEngine), trivial(cases), args.split)
        if 3 in args.evals:
            he.tune = functools.partial(tune, max_queries=args.max_queries)
            cases = he.load_real_cases("eval1_fidelity")
            if args.eval3_on == "tuning":
                tuning = [c for c in cases if c["split"] == "tuning"]
                cases = tuning + [c | {"split": "held_out"} for c in tuning]
            evals["eval3_self_improvement"] = he.eval_self_improvement(cases, args.steps)
    payload = {"out": args.out, "machine": common.machine(), "load_average_start": load_start,
               "load_average_end": list(os.getloadavg()), "split": args.split,
               "eval3_max_queries": args.max_queries, "eval3_on": args.eval3_on, "cpu_s": round(time.process_time() - cpu, 1), "wall_s": round(time.perf_counter() - wall, 1),
               "frozen_real_cases": he.FROZEN_REAL, "evals": evals}
    common.write_results(args.out, payload, markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()
