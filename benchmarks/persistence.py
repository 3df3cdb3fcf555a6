"""What durability costs: redmem's write rates with no AOF, AOF ``everysec`` and AOF ``always``.

For each setting a fresh private server (``EmbeddedServer``, its directory on the local disk)
gets ``--single`` memories saved one ``save()`` each (one MULTI/EXEC round trip per memory)
and then ``--bulk`` memories with ``Model.save_many``, on the latency benchmark's lexical model
(``redmem_driver.memory_model``). Reported per setting: single saves per second and their
p50 / p99 latency in ms, bulk memories per second, and the AOF size per memory. Each setting
runs ``--repeats`` times, interleaved, and the medians are kept (the machine is shared)::

    python benchmarks/persistence.py             # writes results/persistence.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, summary, synthetic_texts, write_json
from redmem.store._embedded import EmbeddedServer
from redmem_driver import memory_model

SETTINGS = {
    "no AOF": ["--appendonly", "no"],
    "AOF everysec": ["--appendonly", "yes", "--appendfsync", "everysec"],
    "AOF always": ["--appendonly", "yes", "--appendfsync", "always"],
}


def _aof_bytes(workdir: str) -> int:
    return sum(path.stat().st_size for path in Path(workdir).rglob("*.aof"))


def measure(args: list[str], single: int, bulk: int) -> dict[str, Any]:
    """Single-save and bulk rates on a fresh server started with ``args``."""
    with EmbeddedServer(extra_args=args) as server:
        client = redmem.connect(server.url)
        redmem.configure(client=client, key_prefix="dur")
        model = memory_model("Durable")
        texts = synthetic_texts(single + bulk)
        timings = []
        for text in texts[:single]:
            started = time.perf_counter()
            model(agent_id="agent-1", content=text).save()
            timings.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        model.save_many([model(agent_id="agent-1", content=t) for t in texts[single:]])
        bulk_seconds = time.perf_counter() - started
        aof = _aof_bytes(server.workdir)
        client.close()
    latency = summary(timings)
    return {"single_per_s": single / (sum(timings) / 1000), "single_p50_ms": latency["p50"],
            "single_p99_ms": latency["p99"], "bulk_per_s": bulk / bulk_seconds,
            "aof_bytes_per_memory": aof / (single + bulk)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=2000, help="memories saved one save() each")
    parser.add_argument("--bulk", type=int, default=20000, help="memories saved with save_many")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in SETTINGS}
    for repeat in range(args.repeats):
        for name, server_args in SETTINGS.items():
            runs[name].append(measure(server_args, args.single, args.bulk))
            print(f"{repeat + 1}/{args.repeats} {name}: {runs[name][-1]}", flush=True)
    results = {name: {metric: round(statistics.median(r[metric] for r in rows), 2) for metric in rows[0]}
               for name, rows in runs.items()}
    out = {"benchmark": "persistence", "command": "python benchmarks/persistence.py " + " ".join(argv or sys.argv[1:]),
           "single": args.single, "bulk": args.bulk, "repeats": args.repeats,
           "machine": machine(), "results": results, "runs": runs}
    write_json("persistence", out)
    for name, row in results.items():
        print(name, row)


if __name__ == "__main__":
    main()
