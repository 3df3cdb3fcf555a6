"""How the chunk sizes of ``Model.save_many`` set its rate: first chunk, growth, and the shape.

    .venv/bin/python benchmarks/bulk_schedule.py            # writes results/bulk_schedule.{json,md}

``save_many`` sends one MULTI/EXEC per chunk and builds the next chunk while the server runs
the one before (redmem.model._bulk). The first chunk is ``chunk_size / start`` records
and each next one ``growth`` times larger, up to ``chunk_size`` (1000); the library mirrors the
sizes at the end ("both ends"), the alternative measured here grows only ("rising"). A small
first chunk lets the server start early, a small last one leaves little unoverlapped at the
end; growth near the ratio of the server's time per record to the client's keeps either side
from waiting, and fewer, larger chunks touch each posting list fewer times. Each run saves the latency benchmark's memories (model and
corpus) in a fresh process with its own server, as latency.py does: ``single`` memories one by
one, then the rest in bulk -- 800 after 200 (the 1k case) and 8,000 after 2,000 (the 10k case).
A fresh process matters: the first time a word is analysed costs more than later times. The
rate is the median over ``--repeats`` runs, the schedules taking turns.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, synthetic_texts, write_results
from redmem.model import _bulk as bulk
from redmem.store._embedded import EmbeddedServer
from redmem_driver import memory_model

#: (first chunk = chunk_size / start, growth, shape): the default first, then the ones it was chosen over.
SCHEDULES = [(16, 1.5, "both ends"), (8, 1.5, "both ends"), (8, 2.0, "both ends"), (16, 1.25, "both ends"),
             (16, 1.5, "rising"), (8, 1.5, "rising"), (8, 2.0, "rising"), (4, 1.5, "rising")]
CASES = [(1000, 200), (10000, 2000)]
DEFAULT = (bulk.CHUNK_START, bulk.CHUNK_GROWTH, "both ends")


def rising(records: list[Any], chunk_size: int) -> list[list[Any]]:
    """The library's chunks without the mirrored end: sizes only grow, up to ``chunk_size``."""
    chunks, start, size = [], 0, max(1.0, chunk_size / bulk.CHUNK_START)
    while start < len(records):
        chunks.append(records[start : start + int(size)])
        start += int(size)
        size = min(size * bulk.CHUNK_GROWTH, chunk_size)
    return chunks


def run(total: int, single: int, schedule: tuple[int, float, str]) -> float:
    """Bulk memories/s of one save_many after ``single`` saves, with ``schedule`` (in this process)."""
    bulk.CHUNK_START, bulk.CHUNK_GROWTH, shape = schedule
    if shape == "rising":
        bulk._chunks = rising
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        model = memory_model("BulkSchedule")
        records = [model(agent_id="agent-1", content=text) for text in synthetic_texts(total)]
        for record in records[:single]:
            record.save()
        started = time.perf_counter()
        model.save_many(records[single:])
        return (total - single) / (time.perf_counter() - started)


def run_apart(total: int, single: int, schedule: tuple[int, float, str]) -> float:
    """:func:`run` in a fresh Python process."""
    command = [sys.executable, __file__, "--one", str(total), str(single), *map(str, schedule)]
    return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| first chunk | growth | shape | bulk/s, 800 after 200 | bulk/s, 8,000 after 2,000 |",
             "|---|---|---|---|---|"]
    for row in rows:
        rates = " | ".join(f"{row['rates'][str(total)]:,.0f}" for total, _ in CASES)
        default = " (default)" if (row["start"], row["growth"], row["shape"]) == DEFAULT else ""
        lines.append(f"| chunk_size / {row['start']}{default} | {row['growth']} | {row['shape']} | {rates} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bulk_schedule", help="results/<out>.{json,md} ('' prints only)")
    parser.add_argument("--one", nargs=5, metavar=("TOTAL", "SINGLE", "START", "GROWTH", "SHAPE"),
                        help="measure one run here and print its rate (used by the runs themselves)")
    args = parser.parse_args(argv)
    if args.one:
        total, single, start, growth, shape = args.one
        print(run(int(total), int(single), (int(start), float(growth), shape)))
        return {}
    measured: dict[tuple, dict[int, list[float]]] = {s: {total: [] for total, _ in CASES} for s in SCHEDULES}
    for _ in range(args.repeats):
        for schedule in SCHEDULES:
            for total, single in CASES:
                measured[schedule][total].append(run_apart(total, single, schedule))
    rows = [{"start": s[0], "growth": s[1], "shape": s[2], "rates": {str(t): statistics.median(r) for t, r in by.items()},
             "all": {str(t): r for t, r in by.items()}} for s, by in measured.items()]
    payload = {"benchmark": "bulk_schedule", "repeats": args.repeats, "default": list(DEFAULT), "machine": machine(),
               "results": rows}
    print(table(rows))
    if args.out:
        write_results(args.out, payload, "# save_many chunk schedules (`benchmarks/bulk_schedule.py`)\n\n" + table(rows) + "\n")
    return payload


if __name__ == "__main__":
    main()
