"""HSCA eval 5 (bridging) alone, with every unrelated control: how often a side of one pair shares
the bridge domain with the B side of *any* other pair of its half whose domains both differ from
the bridge (eval 5 itself draws one control a pair, the next such case, so 16 controls a half
say little about a false-bridge rate of 10 %).

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/hsca_bridging_controls.py --split tuning
    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/hsca_bridging_controls.py --split held_out --out NAME

Settings are fixed (``--floor``, ``--margin``, ``--bridge``, written prototypes; default: the
ones :func:`hsca_evals.calibrate_meaning` chose on the tuning half, floor 0.15, margin 0.05,
bridge 0.2), so the run takes seconds, not the calibration's minutes. Reports per split: the
pairs passed, eval 5's own false bridges (one control a pair), the false bridges over every
control, the ids, the client CPU seconds and the load average at start and end.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import common
import hsca_evals as evals
import redmem
from redmem.recipes.hsca import HSCAEngine
from redmem.store._embedded import EmbeddedServer


def every_control(cases: list[dict[str, Any]], make_engine: Any) -> dict[str, Any]:
    """Each pair's A side with the B side of every other case of ``cases`` whose domains both
    differ from the pair's bridge: the controls sharing the bridge (>= 0.2 on both sides)."""
    false, controls = [], 0
    for case in cases:
        for other in cases:
            if other is case or case["bridge"] in (other["domain_a"], other["domain_b"]):
                continue
            controls += 1
            shared, _, _ = evals.shared_bridge(make_engine, case["turns_a"], other["turns_b"], case["bridge"])
            if shared >= 0.2:
                false.append(f"{case['id']}+{other['id']}")
    return {"controls": controls, "false_bridges": len(false), "false_rate": round(len(false) / controls, 4),
            "false_ids": false}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=evals.SPLITS, default="tuning")
    parser.add_argument("--floor", type=float, default=0.15)
    parser.add_argument("--margin", type=float, default=0.05)
    parser.add_argument("--bridge", type=float, default=0.2)
    parser.add_argument("--out", default=None, help="results/<out>.json and .md (none: print only)")
    args = parser.parse_args()
    load_start = list(os.getloadavg())
    settings = {"prototypes": "written", "floor": args.floor, "margin": args.margin, "bridge": args.bridge}
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        redmem.configure(key_prefix="hsca")
        from redmem.embeddings import MiniLMEmbeddings

        cases = {name: evals.load_cases(name) for name in evals.FROZEN}
        meaning = evals.meaning_of(MiniLMEmbeddings(), settings, evals.prototype_sets(cases))
        split = [c for c in cases["eval5_bridging.json"] if c["split"] == args.split]
        started = time.process_time()
        rows = evals.eval_bridging(split, lambda: HSCAEngine(domain_model=meaning))
        spread = every_control(split, lambda: HSCAEngine(domain_model=meaning))
        cpu_s = time.process_time() - started
    payload = {
        "split": args.split, "settings": settings, "pairs": len(rows), "passed": sum(r["passed"] for r in rows),
        "missed_ids": [r["id"] for r in rows if not r["passed"]],
        "eval5_false_bridges": sum(r["false_bridge"] for r in rows),
        "eval5_false_ids": [r["id"] for r in rows if r["false_bridge"]], "every_control": spread,
        "client_cpu_s": round(cpu_s, 1), "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
        "machine": common.machine(),
    }
    text = (f"# HSCA eval 5, every control ({args.split} half)\n\nSettings {settings}. Pairs passed "
            f"{payload['passed']}/{len(rows)} (missed {', '.join(payload['missed_ids']) or 'none'}); eval 5's false "
            f"bridges (one control a pair) {payload['eval5_false_bridges']}/{len(rows)}; over every control "
            f"{spread['false_bridges']}/{spread['controls']} = {spread['false_rate']:.1%}. Client CPU "
            f"{payload['client_cpu_s']} s; load average {load_start[0]:.1f} -> {payload['load_average_end'][0]:.1f}.\n")
    if args.out:
        common.write_results(args.out, payload, text)
    print(text)


if __name__ == "__main__":
    main()
