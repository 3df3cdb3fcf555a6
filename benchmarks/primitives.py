"""Memory primitives at 1k, 10k and 100k records in one partition: p50/p95 latency and round trips.

    .venv/bin/python benchmarks/primitives.py            # 1k, 10k, 100k; writes results/primitives.{json,md}
    .venv/bin/python benchmarks/primitives.py --quick    # 1k and 10k, fewer calls (< 60 s); prints only

Operations (each a top 10 where it ranks): ``top_by_decay`` on the power curve alone, on the
power curve with a base score and confidence modulation, and on the exponential curve;
``composite_score`` of decay (0.6) and confidence (0.3), and with a cyclic score (0.1) added;
``above_cyclic_threshold`` (0.5, the assembler's surfacing threshold) on a cyclic field without
and with pressure (0.05 per day); ``update_confidence`` of one record; ``propagate`` from three
seeds at depth 2; and ``composite_score`` of the decay signal alone, the same ranking as the second
``top_by_decay`` (its walk chooses which sorted set to read next; ``top_by_decay`` reads them in
turn). Latency is end to end, hydration of the returned records included; the operations take
turns, one call each per round.

Data, generated here from a fixed seed: last-updated times uniform over the 30 days before the
query time, base scores log-normal (median 1), one confidence update (signal uniform in [0, 1])
on 30% of the records, a co-occurrence graph in which every record links to two earlier records
(mean degree 4, weights uniform in [0.05, 1]). Records are bulk-loaded with ``Model.save_many``;
the spread last-updated times are then written straight into the fields' sorted sets (what
``touch(now=t)`` writes, and the cyclic field's last-resolved time = t; for the exponential curve the static key ``log2(base) + t/half_life``
beside it); confidence updates and links go through the public calls, pipelined. Query times
vary uniformly over the day after the newest record.

Everything runs against a private server (``EmbeddedServer``, unix socket) through one client
whose connections count what they send: one send is one round trip (a pipeline is one).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import platform
import random
import time
from collections.abc import Callable
from typing import Any

import redis

import redmem
from common import write_results
from redmem import AutoKeyField, DbKey, FloatField, KeyField, Model
from redmem.fields import ConfidenceField, CoOccurrenceField, CyclicDecayField, DecayingSortedField, TemporalPeriod
from redmem.fields._composite import composite_score  # noqa: F401  (registers the query method)
from redmem.fields._decay import exponential_order_key
from redmem.store._embedded import EmbeddedServer

log = logging.getLogger("benchmarks.primitives")

SEED = 20250603
DAY = 86400.0
NOW = 1_750_000_000.0
AGENT = "bench"
CONFIDENCE_SHARE = 0.3
LINKS_PER_RECORD = 2
CHUNK = 2000
CYCLES = [(TemporalPeriod.DAILY, 0.5, NOW), (TemporalPeriod.WEEKLY, -0.2, NOW + 2 * DAY)]


class PowerMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    relevance = DecayingSortedField(partition_by="agent_id")


class Memory(Model):
    """Power curve with base and confidence modulation, confidence, two cyclic scores (without and
    with pressure), a graph."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    rhythm = CyclicDecayField(base_score_field="importance", cycles=CYCLES, partition_by="agent_id")
    urge = CyclicDecayField(base_score_field="importance", cycles=CYCLES, pressure_rate=0.05, partition_by="agent_id")
    associations = CoOccurrenceField()


class FadingMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", half_life=7 * DAY, partition_by="agent_id")


# ----------------------------------------------------------------------------- round trips
class CountingConnection(redis.UnixDomainSocketConnection):
    """A connection that counts its sends: one send is one round trip (a pipeline is one)."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


def counting_client(server: EmbeddedServer) -> redis.Redis:
    pool = redis.ConnectionPool(connection_class=CountingConnection, path=server.socket_path)
    return redis.Redis(connection_pool=pool)


# ----------------------------------------------------------------------------- loading
def load(model: type, size: int, rng: random.Random, client: redis.Redis) -> list[Any]:
    """``size`` records of ``model`` in the benchmark partition, last-updated times spread over 30 days."""
    has_base = "importance" in model._meta.fields
    records = [model(agent_id=AGENT, **({"importance": rng.lognormvariate(0, 0.5)} if has_base else {}))
               for _ in range(size)]
    model.save_many(records, chunk_size=CHUNK)
    space = model._meta.keyspace((AGENT,))
    times = {r.db_key.record_id: NOW - rng.uniform(0, 30 * DAY) for r in records}
    field = model.relevance
    keys = field.keys_in(space)
    ids = list(times)
    for start in range(0, size, CHUNK):
        chunk = {rid: times[rid] for rid in ids[start : start + CHUNK]}
        client.zadd(keys.updated, chunk)
        if field.half_life is not None:
            bases = {r.db_key.record_id: r.importance for r in records[start : start + CHUNK]}
            client.zadd(keys.order, {rid: exponential_order_key(bases[rid], t, field.half_life)
                                     for rid, t in chunk.items()})
        for cyclic in [f.keys_in(space) for f in model._meta.fields.values() if isinstance(f, CyclicDecayField)]:
            client.zadd(cyclic.updated, chunk)
            client.zadd(cyclic.resolved, chunk)
    return records


def add_evidence_and_links(records: list[Any], rng: random.Random, client: redis.Redis) -> None:
    """One confidence update on 30% of the records; two links from every record to earlier ones."""
    for start in range(0, len(records), CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for i in range(start, min(start + CHUNK, len(records))):
                record = records[i]
                if rng.random() < CONFIDENCE_SHARE:
                    ConfidenceField.update_confidence(record, "confidence", rng.random(), pipeline=pipe)
                for j in rng.sample(range(i), min(i, LINKS_PER_RECORD)):
                    Memory.associations.link(record, records[j], rng.uniform(0.05, 1.0), pipeline=pipe)
            pipe.execute()


# ----------------------------------------------------------------------------- measuring
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def measure(calls: dict[str, Callable[[random.Random], Any]], rounds: int) -> dict[str, dict[str, Any]]:
    """p50/p95 latency (ms) and round trips of each call, run ``rounds`` times after 10 warm-up runs.

    The calls take turns (one of each per round), so a load spike on a shared machine falls on
    all of them alike.
    """
    rngs = {name: random.Random(SEED) for name in calls}
    for name, call in calls.items():
        for _ in range(10):
            call(rngs[name])
    latencies: dict[str, list[float]] = {name: [] for name in calls}
    trips: dict[str, list[int]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            before = CountingConnection.sent
            start = time.perf_counter()
            call(rngs[name])
            latencies[name].append((time.perf_counter() - start) * 1000)
            trips[name].append(CountingConnection.sent - before)
    return {name: {"calls": rounds, "p50_ms": percentile(latencies[name], 0.50),
                   "p95_ms": percentile(latencies[name], 0.95), "round_trips_max": max(trips[name]),
                   "round_trips_mean": sum(trips[name]) / rounds} for name in calls}


def operations(memories: list[Any]) -> dict[str, Callable[[random.Random], Any]]:
    """The measured calls, each drawing its query time, record or seeds from ``rng``."""
    def at(rng: random.Random) -> float:
        return NOW + rng.uniform(0, DAY)

    def seeds(rng: random.Random) -> list[DbKey]:
        return [m.db_key for m in rng.sample(memories, 3)]

    power, rich, fading = (m.query.filter(agent_id=AGENT) for m in (PowerMemory, Memory, FadingMemory))
    return {
        "top_by_decay (power)": lambda rng: power.top_by_decay(n=10, as_of=at(rng)),
        "top_by_decay (power + base + confidence)": lambda rng: rich.top_by_decay(n=10, as_of=at(rng)),
        "top_by_decay (exponential)": lambda rng: fading.top_by_decay(n=10, as_of=at(rng)),
        "composite_score (decay 0.6 + confidence 0.3)": lambda rng: rich.composite_score(
            indexes={"relevance": 0.6, "confidence": 0.3}, limit=10, as_of=at(rng)),
        "composite_score (decay alone)": lambda rng: rich.composite_score(
            indexes={"relevance": 1.0}, limit=10, as_of=at(rng)),
        "composite_score (decay 0.6 + confidence 0.3 + cyclic 0.1)": lambda rng: rich.composite_score(
            indexes={"relevance": 0.6, "confidence": 0.3, "rhythm": 0.1}, limit=10, as_of=at(rng)),
        "above_cyclic_threshold (0.5, limit 10)": lambda rng: rich.above_cyclic_threshold(
            0.5, as_of=at(rng), limit=10, field="rhythm"),
        "above_cyclic_threshold (0.5, limit 10, pressure 0.05/day)": lambda rng: rich.above_cyclic_threshold(
            0.5, as_of=at(rng), limit=10, field="urge"),
        "update_confidence": lambda rng: ConfidenceField.update_confidence(
            rng.choice(memories), "confidence", rng.random()),
        "propagate (3 seeds, depth 2)": lambda rng: Memory.associations.propagate(seeds(rng), depth=2),
    }


def run_size(size: int, calls: int, client: redis.Redis) -> dict[str, Any]:
    rng = random.Random(SEED + size)
    client.flushall()
    start = time.perf_counter()
    load(PowerMemory, size, rng, client)
    memories = load(Memory, size, rng, client)
    load(FadingMemory, size, rng, client)
    add_evidence_and_links(memories, rng, client)
    load_seconds = time.perf_counter() - start
    log.info("%d records per model loaded in %.1f s", size, load_seconds)
    results = measure(operations(memories), calls)
    memory = client.info("memory")["used_memory"]
    return {"records": size, "calls": calls, "load_seconds": load_seconds,
            "used_memory_mb": memory / 2**20, "operations": results}


# ----------------------------------------------------------------------------- report
def ratios(runs: list[dict[str, Any]], high: int, low: int) -> dict[str, float]:
    """p50 latency at ``high`` records over p50 at ``low``, per operation."""
    by_size = {run["records"]: run["operations"] for run in runs}
    if high not in by_size or low not in by_size:
        return {}
    return {name: by_size[high][name]["p50_ms"] / by_size[low][name]["p50_ms"] for name in by_size[high]}


def markdown(report: dict[str, Any]) -> str:
    runs, ratio = report["runs"], report["ratio_p50"]
    high, low = report["ratio_sizes"]
    sizes = [run["records"] for run in runs]
    lines = [
        "# Primitives benchmark",
        "",
        f"{report['machine']}, {os.cpu_count()} CPUs (load average {report['load_average_at_start'][0]:.1f} "
        f"at start: a shared machine); server {report['server']} on a unix socket; one partition.",
        "Latency is end to end (selection and hydration); round trips counted at the client.",
        "",
        "| operation | " + " | ".join(f"{s:,}: p50 / p95 ms" for s in sizes) + " | round trips | "
        + f"p50 {high // 1000}k / {low // 1000}k |",
        "|---|" + "---|" * len(sizes) + "---|---|",
    ]
    for name in runs[0]["operations"]:
        cells = [f"{run['operations'][name]['p50_ms']:.2f} / {run['operations'][name]['p95_ms']:.2f}" for run in runs]
        trips = max(run["operations"][name]["round_trips_max"] for run in runs)
        factor = f"{ratio[name]:.2f}" if name in ratio else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {trips} | {factor} |")
    lines += ["", "| records per model | calls per operation | load s (3 models, evidence, graph) | used memory MB |",
              "|---|---|---|---|"]
    for run in runs:
        lines.append(f"| {run['records']:,} | {run['calls']} | {run['load_seconds']:.1f} | {run['used_memory_mb']:,.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k records, 100 calls, no files written")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sizes, calls = ([1_000, 10_000], 100) if args.quick else ([1_000, 10_000, 100_000], 300)
    with EmbeddedServer() as server:
        client = counting_client(server)
        redmem.configure(client=client, key_prefix="bench")
        version, load_average = client.info("server"), os.getloadavg()
        runs = [run_size(size, calls, client) for size in sizes]
        high, low = (sizes[-1], sizes[-2])
        report = {
            "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
            "server": f"{version.get('server_name', 'redis')} {version['redis_version']}",
            "load_average_at_start": load_average,
            "runs": runs,
            "ratio_sizes": [high, low],
            "ratio_p50": ratios(runs, high, low),
        }
    text = markdown(report)
    print(text)
    if not args.quick:
        write_results("primitives", report, text)


if __name__ == "__main__":
    main()
