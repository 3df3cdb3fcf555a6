"""How the chunk sizes of ``Model.save_many`` set its rate: the first chunk and the growth.

    .venv/bin/python benchmarks/bulk_schedule.py            # writes results/bulk_schedule.{json,md}

``save_many`` sends one MULTI/EXEC per chunk and builds the next chunk while the server runs
the one before (redmem.model.persistence). The first chunk is ``chunk_size / start`` records
and each next one ``growth`` times larger, up to ``chunk_size`` (1000). A small first chunk lets
the server start early; growth near the ratio of the server's time per record to the client's
keeps either side from waiting. Each schedule saves the same memories (the latency benchmark's
model and corpus) into a fresh partition holding ``single`` memories saved one by one, as in
latency.py: 800 in bulk after 200 (the 1k case) and 8,000 after 2,000 (the 10k case); the
rate is the median over ``--repeats`` runs in one process, each schedule in turn.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem  # noqa: E402
from common import machine, synthetic_texts, write_json  # noqa: E402
from redmem.model import persistence  # noqa: E402
from redmem.store.embedded import EmbeddedServer  # noqa: E402
from redmem_driver import memory_model  # noqa: E402

#: (first chunk = chunk_size / start, growth): the default first, then the ones it was chosen over.
SCHEDULES = [(16, 1.5), (8, 2.0), (16, 1.25), (32, 1.5), (16, 2.0)]
CASES = [(1000, 200), (10000, 2000)]


def run(total: int, single: int, schedule: tuple[int, float], name: str) -> float:
    """Bulk memories/s of one save_many after ``single`` saves, with ``schedule``."""
    model = memory_model(name)
    records = [model(agent_id="agent-1", content=text) for text in synthetic_texts(total)]
    for record in records[:single]:
        record.save()
    persistence.CHUNK_START, persistence.CHUNK_GROWTH = schedule
    started = time.perf_counter()
    model.save_many(records[single:])
    return (total - single) / (time.perf_counter() - started)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| first chunk | growth | bulk/s, 800 after 200 | bulk/s, 8,000 after 2,000 |", "|---|---|---|---|"]
    for row in rows:
        rates = " | ".join(f"{row['rates'][str(total)]:,.0f}" for total, _ in CASES)
        default = " (default)" if (row["start"], row["growth"]) == SCHEDULES[0] else ""
        lines.append(f"| chunk_size / {row['start']}{default} | {row['growth']} | {rates} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bulk_schedule", help="results/<out>.{json,md} ('' prints only)")
    args = parser.parse_args(argv)
    default = (persistence.CHUNK_START, persistence.CHUNK_GROWTH)
    measured: dict[tuple, dict[int, list[float]]] = {s: {total: [] for total, _ in CASES} for s in SCHEDULES}
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        for repeat in range(args.repeats):
            for number, schedule in enumerate(SCHEDULES):
                for total, single in CASES:
                    measured[schedule][total].append(run(total, single, schedule, f"Bulk{repeat}x{number}x{total}"))
    persistence.CHUNK_START, persistence.CHUNK_GROWTH = default
    rows = [{"start": s[0], "growth": s[1], "rates": {str(t): statistics.median(r) for t, r in by.items()},
             "all": {str(t): r for t, r in by.items()}} for s, by in measured.items()]
    payload = {"benchmark": "bulk_schedule", "repeats": args.repeats, "machine": machine(), "results": rows}
    print(table(rows))
    if args.out:
        write_json(args.out, payload)
        (Path(__file__).resolve().parent / "results" / f"{args.out}.md").write_text(
            "# save_many chunk schedules (`benchmarks/bulk_schedule.py`)\n\n" + table(rows) + "\n")
    return payload


if __name__ == "__main__":
    main()
