"""What the asyncio API costs over the sync one: the same operation through ``save`` and ``asave``.

    .venv/bin/python benchmarks/asyncio_overhead.py        # writes results/asyncio_overhead.{json,md}

Both run the same code and send the same commands (tests/integration/store/test_asyncio.py checks the stored
state); the async one runs it in a greenlet and awaits each Redis call on the event loop
through ``redis.asyncio`` (redmem.store._aio). Per operation: the median wall time of
``--repeats`` calls, the sync call's round trips (common.CommandCounter) and the async call's
awaits (each Redis call the sync code makes: one per round trip, plus the release of a
pipeline's connection). Then ``--concurrent`` saves at once with ``asyncio.gather`` against the
same saves one after another, and redis-py alone (a MULTI/EXEC, sync against redis.asyncio) to
tell what the asyncio client costs by itself. Wall times on a shared machine are noisy: the
load average is recorded beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
import redis.asyncio

import redmem
import redmem.store._aio as aio
from common import CommandCounter, machine, synthetic_queries, synthetic_texts, write_results
from redmem.store._embedded import EmbeddedServer
from redmem_driver import make_assembler, memory_model


def _median_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def measure(model: Any, texts: list[str], queries: list[str], repeats: int) -> dict[str, Any]:
    """Per operation: sync and async median ms, sync round trips, async awaits."""
    assembler = make_assembler(model, "lexical")
    model.save_many([model(agent_id="bench", content=t) for t in texts])
    probe = model.query.filter(agent_id="bench").first()
    operations: dict[str, tuple[Callable[[int], Any], Callable[[int], Awaitable[Any]]]] = {
        "save (new record)": (lambda i: model(agent_id="s", content=texts[i]).save(),
                              lambda i: model(agent_id="a", content=texts[i]).asave()),
        "query.get": (lambda i: model.query.get(agent_id="bench", memory_id=probe.memory_id),
                      lambda i: model.query.aget(agent_id="bench", memory_id=probe.memory_id)),
        "assemble (lexical, 10 items)": (lambda i: assembler.assemble(queries[i % len(queries)], agent_id="bench"),
                                         lambda i: assembler.aassemble(queries[i % len(queries)], agent_id="bench")),
    }
    awaits = [0]
    real = aio.await_only

    def counting(awaitable: Awaitable[Any]) -> Any:
        awaits[0] += 1
        return real(awaitable)

    aio.await_only = counting  # the facade made below resolves through it
    rows: dict[str, Any] = {}
    try:
        for name, (sync, asynchronous) in operations.items():
            sync_times, async_times = [], []
            before = CommandCounter.snapshot()
            for i in range(repeats):
                start = time.perf_counter()
                sync(i)
                sync_times.append(time.perf_counter() - start)
            trips = CommandCounter.since(before)[0] / repeats

            async def run_async(asynchronous: Callable[[int], Awaitable[Any]] = asynchronous,
                                async_times: list[float] = async_times) -> None:
                await asynchronous(0)  # the loop's client is made and connected first
                awaits[0] = 0
                for i in range(repeats):
                    start = time.perf_counter()
                    await asynchronous(i)
                    async_times.append(time.perf_counter() - start)
                await redmem.aclose_clients()

            asyncio.run(run_async())
            rows[name] = {"sync_ms": _median_ms(sync_times), "async_ms": _median_ms(async_times),
                          "sync_round_trips": trips, "async_awaits": awaits[0] / repeats}
    finally:
        aio.await_only = real
    return rows


def concurrency(model: Any, texts: list[str], count: int) -> dict[str, Any]:
    """``count`` saves one after another (sync) against ``count`` asaves gathered on one loop (its
    connection pool warmed by a first gather: each coroutine in flight holds a connection)."""
    records = [model(agent_id=f"c{i % 8}", content=t) for i, t in enumerate(texts[:count])]
    start = time.perf_counter()
    for record in records:
        record.save()
    sequential = time.perf_counter() - start

    async def gathered() -> float:
        def fresh(tag: str) -> list[Any]:
            return [model(agent_id=f"{tag}{i % 8}", content=t) for i, t in enumerate(texts[:count])]

        await asyncio.gather(*(record.asave() for record in fresh("w")))  # the pool opens its connections
        start = time.perf_counter()
        await asyncio.gather(*(record.asave() for record in fresh("g")))
        elapsed = time.perf_counter() - start
        await redmem.aclose_clients()
        return elapsed

    return {"saves": count, "sequential_sync_s": round(sequential, 4), "gathered_async_s": round(asyncio.run(gathered()), 4)}


def raw_pipelines(url: str, count: int) -> dict[str, float]:
    """redis-py alone, without redmem: median ms of a MULTI/EXEC of 10 HSETs, sync and redis.asyncio."""
    sync_client = redis.Redis.from_url(url)
    sync_times = []
    for i in range(count):
        start = time.perf_counter()
        with sync_client.pipeline(transaction=True) as pipe:
            for j in range(10):
                pipe.hset(f"raw:s{i}", f"f{j}", j)
            pipe.execute()
        sync_times.append(time.perf_counter() - start)
    sync_client.close()

    async def asynchronous() -> list[float]:
        client = redis.asyncio.Redis.from_url(url)
        await client.ping()
        times = []
        for i in range(count):
            start = time.perf_counter()
            async with client.pipeline(transaction=True) as pipe:
                for j in range(10):
                    pipe.hset(f"raw:a{i}", f"f{j}", j)
                await pipe.execute()
            times.append(time.perf_counter() - start)
        await client.aclose()
        return times

    return {"sync_ms": _median_ms(sync_times), "async_ms": _median_ms(asyncio.run(asynchronous()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=200)
    args = parser.parse_args()
    CommandCounter.install()
    texts = synthetic_texts(max(args.records, args.repeats, args.concurrent))
    queries = synthetic_queries(texts, 50)
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        model = memory_model("AsyncBench")
        rows = measure(model, texts[: args.records], queries, args.repeats)
        gathered = concurrency(model, texts, args.concurrent)
        raw = raw_pipelines(server.url, args.repeats)
    payload = {"machine": machine(), "args": vars(args), "operations": rows, "concurrency": gathered,
               "redis_py_alone": raw}
    lines = [
        "# asyncio API overhead",
        "",
        f"`benchmarks/asyncio_overhead.py` ({args.records} records, {args.repeats} calls each; load average "
        f"{', '.join(f'{x:.2f}' for x in payload['machine']['load_average'])} on {payload['machine']['cores']} cores).",
        "",
        "| operation | sync ms | async ms | sync round trips | async awaits |",
        "|---|---:|---:|---:|---:|",
        *(f"| {name} | {r['sync_ms']} | {r['async_ms']} | {r['sync_round_trips']:g} | {r['async_awaits']:g} |"
          for name, r in rows.items()),
        "",
        f"{gathered['saves']} saves: {gathered['sequential_sync_s']} s one after another (sync), "
        f"{gathered['gathered_async_s']} s gathered on one loop (async).",
        "",
        f"redis-py alone (no redmem), a MULTI/EXEC of 10 HSETs: {raw['sync_ms']} ms sync, "
        f"{raw['async_ms']} ms with redis.asyncio.",
    ]
    write_results("asyncio_overhead", payload, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
