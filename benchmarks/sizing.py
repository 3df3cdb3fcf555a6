"""Redis memory per memory at 10k, 100k and 1M memories: the figures of docs/operations.md "Sizing".

Each run starts a fresh private server (``EmbeddedServer``), saves N memories of the latency
benchmark's model (``redmem_driver.memory_model``: content, importance, decaying relevance,
confidence, BM25 over content, co-occurrence graph, access tracking; the hybrid kind adds a
384-d float16 ``EmbeddingField``) with ``Model.save_many`` in chunks of ``--batch`` records, and
records:

- ``bytes_per_memory``: (``used_memory`` after - before) / N, the data and index size;
- ``rss_bytes_per_memory``: the same over ``used_memory_rss`` (what the process takes from the OS);
- ``keys_per_memory``: DBSIZE / N;
- ``rdb_bytes_per_memory``: size of the RDB file a BGSAVE then writes / N (the backup size);
- ``bytes_per_memory_by_kind`` (N <= ``--breakdown-up-to``): MEMORY USAGE of every key, summed
  by the key's kind (``r`` record hashes, ``bm25`` postings, ``vec`` vectors, ...) / N.

Texts are ``common.synthetic_texts`` (8-40 pseudo-words, median ~20, about 150 bytes), vectors
``common.hash_vectors``; memories go to ``--tenants`` agents round-robin. Results are written
after each run to ``results/sizing.json`` (``--name``) (a run that is cut short keeps the earlier ones)::

    python benchmarks/sizing.py                              # lexical 10k,100k,1M; hybrid 10k,100k
    python benchmarks/sizing.py --lexical 10000 --hybrid ''  # one quick run
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import hash_vectors, machine, synthetic_texts, write_json
from redmem.store._embedded import EmbeddedServer
from redmem_driver import memory_model


class HashProvider:
    """Deterministic hashed vectors, nothing remembered (1M memories would not fit a memo)."""

    dimensions = 384
    max_batch_size = 1000

    def embed(self, texts: list[str], input_type: str = "document") -> Any:
        return hash_vectors(texts, self.dimensions)


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _memory(client: Any) -> tuple[int, int]:
    info = client.info("memory")
    return int(info["used_memory"]), int(info["used_memory_rss"])


def _kind(key: bytes) -> str:
    """The kind part of ``<prefix>:<Model>:{<tag>}:<kind>[:...]`` (the first part after the tag)."""
    rest = key.split(b"}:", 1)[1] if b"}:" in key else b"?"
    return rest.split(b":", 1)[0].decode()


def _breakdown(client: Any, n: int) -> dict[str, float]:
    usage: Counter[str] = Counter()
    keys = list(client.scan_iter(count=1000))
    for start in range(0, len(keys), 1000):
        pipe = client.pipeline(transaction=False)
        for key in keys[start : start + 1000]:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(keys[start : start + 1000], pipe.execute()):
            usage[_kind(key)] += int(size or 0)
    return {kind: round(total / n, 1) for kind, total in usage.most_common()}


def _rdb_bytes(client: Any, workdir: str) -> tuple[int, float]:
    """BGSAVE, wait for it, and return the RDB file's size and the seconds it took."""
    started = time.perf_counter()
    last = client.lastsave()
    client.bgsave()
    while client.lastsave() == last:
        time.sleep(0.2)
    seconds = time.perf_counter() - started
    name = client.config_get("dbfilename")["dbfilename"]
    return os.path.getsize(os.path.join(workdir, name)), seconds


def measure(kind: str, n: int, tenants: int, batch: int, breakdown_up_to: int) -> dict[str, Any]:
    """One ingest of ``n`` memories on a fresh server; the figures listed in the module docstring."""
    with EmbeddedServer() as server:
        client = redmem.connect(server.url)
        redmem.configure(client=client, key_prefix="size")
        model = memory_model(f"Size{kind.title()}", HashProvider() if kind == "hybrid" else None)
        texts = synthetic_texts(n)
        before, rss_before = _memory(client)
        started = time.perf_counter()
        for start in range(0, n, batch):
            chunk = texts[start : start + batch]
            records = [model(agent_id=f"agent-{(start + i) % tenants}", content=t) for i, t in enumerate(chunk)]
            model.save_many(records, chunk_size=1000)
            if start and start % (10 * batch) == 0:
                print(f"  {kind} {start:,}/{n:,} after {time.perf_counter() - started:.0f} s", flush=True)
        seconds = time.perf_counter() - started
        after, rss_after = _memory(client)
        row = {
            "kind": kind, "n": n, "tenants": tenants, "ingest_seconds": round(seconds, 1),
            "memories_per_s": round(n / seconds), "used_memory_bytes": after - before,
            "bytes_per_memory": round((after - before) / n, 1),
            "rss_bytes_per_memory": round((rss_after - rss_before) / n, 1),
            "keys_per_memory": round(client.dbsize() / n, 3),
        }
        if n <= breakdown_up_to:
            row["bytes_per_memory_by_kind"] = _breakdown(client, n)
        rdb, rdb_seconds = _rdb_bytes(client, server.workdir)
        row.update(rdb_bytes_per_memory=round(rdb / n, 1), bgsave_seconds=round(rdb_seconds, 1))
        client.close()
        return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lexical", default="10000,100000,1000000", help="sizes of the lexical runs")
    parser.add_argument("--hybrid", default="10000,100000", help="sizes of the float16-vector runs")
    parser.add_argument("--tenants", type=int, default=1, help="agents the memories are spread over")
    parser.add_argument("--batch", type=int, default=10_000, help="records built and saved per save_many call")
    parser.add_argument("--breakdown-up-to", type=int, default=100_000, help="largest N with a per-kind breakdown")
    parser.add_argument("--name", default="sizing", help="results/<name>.json")
    args = parser.parse_args(argv)
    runs = [("lexical", n) for n in _sizes(args.lexical)] + [("hybrid", n) for n in _sizes(args.hybrid)]
    runs.sort(key=lambda run: run[1])
    out: dict[str, Any] = {"benchmark": "sizing", "command": "python benchmarks/sizing.py " + " ".join(argv or sys.argv[1:]),
                           "tenants": args.tenants, "machine": machine(), "results": []}
    for kind, n in runs:
        print(f"{kind} N={n:,}", flush=True)
        row = measure(kind, n, args.tenants, args.batch, args.breakdown_up_to)
        print(f"  {row}", flush=True)
        out["results"].append(row)
        write_json(args.name, out)


if __name__ == "__main__":
    main()
