"""EmbeddingField at 10k and 100k records in one partition: search latency, round trips, ingest.

    .venv/bin/python benchmarks/retrieval_vector.py            # 10k and 100k; writes results/retrieval_vector.{json,md}
    .venv/bin/python benchmarks/retrieval_vector.py --quick    # 10k only, fewer queries (< 60 s); prints only

Vectors come from ``HashingEmbeddings(256)`` (what a corpus of this size costs to embed with a
real model is a property of the model, reported in docs/primitives/embeddings.md); the search
work — a 256-d float32 matrix of every record of the partition, exact cosine, top 10 — is the
same as with any model of that width. The corpus is generated here: pseudo-words of consonant-
vowel syllables drawn with Zipf-like frequencies, log-normal lengths (median about 35 words).
Everything runs against a private server (``EmbeddedServer``) through one client whose
connections count their round trips (one send = one round trip; a pipeline is one).

Search is measured three ways: ``cold`` (the first search of a process: the matrix loads from
the vectors hash in HSCAN pages of about 5,000 vectors), ``warm`` (nothing changed since the
last search) and ``after a write`` (one record was saved just before each search, so the matrix
applies one change). Query embedding time is reported apart from the end-to-end latency.
"""

from __future__ import annotations

import argparse
import logging
import math
import platform
import random
import statistics
import time
from typing import Any

import numpy as np
import redis

import redmem
from common import write_results
from redmem import AutoKeyField, KeyField, Model, StringField
from redmem.embeddings import HashingEmbeddings
from redmem.fields._embedding import EmbeddingField, matrices
from redmem.store._embedded import EmbeddedServer

log = logging.getLogger("benchmarks.retrieval_vector")

VOCABULARY = 30_000
ZIPF_EXPONENT = 1.05
SEED = 20250602
DIMENSIONS = 256


class TimedEmbeddings(HashingEmbeddings):
    """Hashing vectors, with the seconds spent embedding added up in ``seconds``."""

    seconds = 0.0

    def embed(self, texts: Any, input_type: str = "document") -> np.ndarray:
        start = time.perf_counter()
        try:
            return super().embed(texts, input_type)
        finally:
            TimedEmbeddings.seconds += time.perf_counter() - start


PROVIDER = TimedEmbeddings(DIMENSIONS)


class Memory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=PROVIDER, partition_by="agent_id")


class PlainMemory(Model):
    """The same records without vectors: the ingest baseline."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()


# ----------------------------------------------------------------------------- round trips
class CountingConnection(redis.UnixDomainSocketConnection):
    """A connection that counts what it sends: one send is one round trip (a pipeline is one)."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


def counting_client(server: EmbeddedServer) -> redis.Redis:
    pool = redis.ConnectionPool(connection_class=CountingConnection, path=server.socket_path)
    return redis.Redis(connection_pool=pool)


# ----------------------------------------------------------------------------- corpus
def corpus(size: int, seed: int = SEED) -> tuple[list[str], list[str], list[float]]:
    """``size`` texts, the vocabulary (frequency-rank order) and its cumulative Zipf weights."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))] = None
    vocabulary = list(words)
    cumulative = list(np.cumsum(np.arange(1, VOCABULARY + 1, dtype=float) ** -ZIPF_EXPONENT))
    texts = [" ".join(rng.choices(vocabulary, cum_weights=cumulative, k=5 + int(rng.lognormvariate(3.4, 0.5))))
             for _ in range(size)]
    return texts, vocabulary, cumulative


def queries(texts: list[str], count: int) -> list[str]:
    """``count`` queries of 3-6 words of random records (a paraphrase-free stand-in for questions)."""
    rng = random.Random(SEED + 1)
    out = []
    for _ in range(count):
        words = rng.choice(texts).split()
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(3, 6)))))
    return out


# ----------------------------------------------------------------------------- measures
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def ingest(model: type, texts: list[str], agent: str) -> dict[str, float]:
    """Save every text as one record (one atomic save each); rates and embedding seconds."""
    TimedEmbeddings.seconds = 0.0
    start = time.perf_counter()
    for text in texts:
        model.create(agent_id=agent, content=text)
    elapsed = time.perf_counter() - start
    embedding = TimedEmbeddings.seconds
    return {"records": len(texts), "per_s": len(texts) / elapsed, "seconds": elapsed,
            "embedding_seconds": embedding, "per_s_without_embedding_time": len(texts) / (elapsed - embedding)}


def timed_search(agent: str, text: str) -> dict[str, float]:
    TimedEmbeddings.seconds = 0.0
    before = CountingConnection.sent
    start = time.perf_counter()
    found = Memory.query.filter(agent_id=agent).semantic_search(text, limit=10)
    latency = time.perf_counter() - start
    return {"latency_ms": latency * 1000, "embed_ms": TimedEmbeddings.seconds * 1000,
            "round_trips": CountingConnection.sent - before, "hits": len(found)}


def summarise(rows: list[dict[str, float]]) -> dict[str, float]:
    return {
        "queries": len(rows),
        "p50_ms": percentile([r["latency_ms"] for r in rows], 0.50),
        "p95_ms": percentile([r["latency_ms"] for r in rows], 0.95),
        "query_embedding_p50_ms": percentile([r["embed_ms"] for r in rows], 0.50),
        "round_trips_max": max(r["round_trips"] for r in rows),
        "round_trips_mean": statistics.mean(r["round_trips"] for r in rows),
        "hits_mean": statistics.mean(r["hits"] for r in rows),
    }


def run_size(size: int, query_count: int, client: redis.Redis) -> dict[str, Any]:
    texts, _, _ = corpus(size + query_count)
    agent = f"bench-{size}"
    log.info("ingesting %d records with embeddings", size)
    with_vectors = ingest(Memory, texts[:size], agent)
    baseline = ingest(PlainMemory, texts[: min(size, 10_000)], agent)
    memory = client.info("memory")["used_memory"]
    query_list = queries(texts[:size], query_count)
    log.info("searching: cold, %d warm, %d after a write", query_count, query_count)
    matrices.clear()
    cold = timed_search(agent, query_list[0])
    warm = [timed_search(agent, text) for text in query_list]
    after_write = []
    for text, new in zip(query_list, texts[size:]):
        Memory.create(agent_id=agent, content=new)
        after_write.append(timed_search(agent, text))
    client.flushall()
    return {"records": size, "ingest": with_vectors, "ingest_without_vectors": baseline,
            "used_memory_mb": memory / 2**20, "cold": cold,
            "warm": summarise(warm), "after_write": summarise(after_write)}


# ----------------------------------------------------------------------------- report
def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Vector retrieval benchmark",
        "",
        f"{report['machine']}; server {report['server']}; {DIMENSIONS}-d vectors (HashingEmbeddings), "
        "exact cosine top 10 in one partition; latency end to end (query embedding, matrix "
        "refresh, scoring, hydration of 10 records).",
        "",
        "| records | search | queries | p50 ms | p95 ms | query embedding p50 ms | round trips (max / mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        cold = run["cold"]
        lines.append(f"| {run['records']:,} | cold (matrix loads) | 1 | {cold['latency_ms']:.1f} | - | "
                     f"{cold['embed_ms']:.2f} | {cold['round_trips']} |")
        for name, label in (("warm", "warm"), ("after_write", "after a write")):
            q = run[name]
            lines.append(f"| {run['records']:,} | {label} | {q['queries']} | {q['p50_ms']:.2f} | {q['p95_ms']:.2f} | "
                         f"{q['query_embedding_p50_ms']:.2f} | {q['round_trips_max']} / {q['round_trips_mean']:.2f} |")
    lines += ["", "| records | ingest with EmbeddingField (records/s) | embedding time (s) | "
              "records/s without embedding time | ingest without vectors (records/s) | used memory MB |",
              "|---|---|---|---|---|---|"]
    for run in report["runs"]:
        ing = run["ingest"]
        lines.append(f"| {run['records']:,} | {ing['per_s']:,.0f} | {ing['embedding_seconds']:.1f} of "
                     f"{ing['seconds']:.1f} | {ing['per_s_without_embedding_time']:,.0f} | "
                     f"{run['ingest_without_vectors']['per_s']:,.0f} | {run['used_memory_mb']:,.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k records, 50 queries, no files written")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sizes, query_count = ([10_000], 50) if args.quick else ([10_000, 100_000], 200)
    with EmbeddedServer() as server:
        client = counting_client(server)
        redmem.configure(client=client, key_prefix="bench")
        version = client.info("server")
        report = {
            "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
            "server": f"{version.get('server_name', 'redis')} {version['redis_version']}",
            "dimensions": DIMENSIONS,
            "runs": [run_size(size, query_count, client) for size in sizes],
        }
    text = markdown(report)
    print(text)
    if not args.quick:
        write_results("retrieval_vector", report, text)


if __name__ == "__main__":
    main()
