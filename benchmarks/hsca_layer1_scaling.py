"""Layer 1's CPU time against turn length: one recurring vocabulary, 1,000 to 14,000 sentences.

A set copy per term and sentence once made layer 1 quadratic (16.7 s of CPU for the 1 MB turn);
this keeps the scaling a measurement instead of a timing assert in the tests. Reported: CPU
seconds of ``HSCAEngine().ingest_turn`` per size (best of ``--repeats``) and the ratio of each
size's time per sentence to the smallest size's (about 1 when linear).

    PYTHONPATH=src:benchmarks python benchmarks/hsca_layer1_scaling.py
"""

from __future__ import annotations

import argparse
import os
import time

from common import write_results
from redmem.recipes.hsca import HSCAEngine

SENTENCE = "the deploy failed because the database migration locked the orders table while users"
SIZES = (1_000, 2_000, 4_000, 8_000, 14_000)


def cpu_seconds(sentences: int, repeats: int) -> float:
    """The least CPU time of ``repeats`` layer-1 scorings of a turn of ``sentences`` sentences."""
    text = " ".join(f"{SENTENCE} {i}." for i in range(sentences))
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        HSCAEngine().ingest_turn(text)
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cpu_seconds(100, 1)  # the domain model loads on the first scoring: not part of any size
    rows = [{"sentences": n, "cpu_s": cpu_seconds(n, args.repeats)} for n in SIZES]
    base = rows[0]["cpu_s"] / rows[0]["sentences"]
    for row in rows:
        row["per_sentence_vs_smallest"] = row["cpu_s"] / row["sentences"] / base
    load = os.getloadavg()[0]
    lines = [
        "# HSCA layer 1: CPU time against turn length",
        "",
        f"`python benchmarks/hsca_layer1_scaling.py --repeats {args.repeats}`, load average {load:.1f}",
        "",
        "| sentences | CPU s (best) | per sentence vs 1,000 |",
        "|---:|---:|---:|",
    ]
    lines += [f"| {r['sentences']:,} | {r['cpu_s']:.2f} | {r['per_sentence_vs_smallest']:.2f} |" for r in rows]
    write_results("hsca_layer1_scaling", {"rows": rows, "load": load, "repeats": args.repeats}, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
