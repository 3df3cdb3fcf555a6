"""BM25Field at 10k and 100k records in one partition: latency, round trips, postings read, agreement.

    .venv/bin/python benchmarks/retrieval_bm25.py            # 10k and 100k; writes results/retrieval_bm25.{json,md}
    .venv/bin/python benchmarks/retrieval_bm25.py --quick    # 5k records, 60 queries (< 60 s); prints only

The corpus is generated here, deterministically: pseudo-words built from syllables, drawn with
Zipf-like frequencies (rank ** -1.05 over 30,000 words), so the commonest terms occur in most
records; document lengths are log-normal (median about 35 terms). Everything runs against a
private server (``EmbeddedServer``) with one client whose connections count their round trips.

Per query: end-to-end ``keyword_search`` latency and round trips (the Lua call plus the
hydration pipeline); postings read by the bounded search against the total length of the
query terms' posting lists; whether its top 10 equals the exact top 10 computed here in
Python from the texts (``Reference``), and the same for the exhaustive search (every posting
scored, the fallback path). Two query classes: ``document`` (3 words of a random record) and
``zipf`` (2-4 words drawn from the head-heavy word distribution: common terms, long lists).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import platform
import random
import statistics
import time
from typing import Any

import redis

import redmem
from common import write_results
from redmem import AutoKeyField, KeyField, Model, StringField
from redmem.fields._bm25 import BM25Field
from redmem.fields._bm25_math import idf, tf_norm
from redmem.store._embedded import EmbeddedServer

log = logging.getLogger("benchmarks.retrieval_bm25")

VOCABULARY = 30_000
ZIPF_EXPONENT = 1.05
SEED = 20250601


class Memory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


class PlainMemory(Model):
    """The same records without the index: the ingest baseline."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()

    class Meta:
        name = "PlainMemory"


# ----------------------------------------------------------------------------- round trips
class CountingConnection(redis.UnixDomainSocketConnection):
    """A connection that counts what it sends: one send is one round trip (a pipeline is one)."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


def counting_client(server: EmbeddedServer) -> redis.Redis:
    pool = redis.ConnectionPool(connection_class=CountingConnection, path=server.socket_path, socket_timeout=120)
    return redis.Redis(connection_pool=pool)


# ----------------------------------------------------------------------------- corpus
def vocabulary(rng: random.Random) -> list[str]:
    """Distinct pseudo-words of 2-4 consonant-vowel syllables, in frequency-rank order."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def corpus(size: int, seed: int = SEED) -> tuple[list[str], list[str], list[float]]:
    """``size`` texts, the vocabulary, and its cumulative Zipf weights."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    cumulative, total = [], 0.0
    for rank in range(1, len(words) + 1):
        total += rank ** -ZIPF_EXPONENT
        cumulative.append(total)
    texts = []
    for _ in range(size):
        length = 5 + int(rng.lognormvariate(3.4, 0.5))
        texts.append(" ".join(rng.choices(words, cum_weights=cumulative, k=length)))
    return texts, words, cumulative


def queries(texts: list[str], words: list[str], cumulative: list[float], count: int) -> list[tuple[str, str]]:
    """``count`` (class, text) queries, half of each class, from a seed of their own."""
    rng = random.Random(SEED + 1)
    out = []
    for i in range(count):
        if i % 2 == 0:
            terms = sorted(set(rng.choice(texts).split()))
            out.append(("document", " ".join(rng.sample(terms, min(3, len(terms))))))
        else:
            out.append(("zipf", " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(2, 4)))))
    return out


# ----------------------------------------------------------------------------- exact reference
class Reference:
    """Exact BM25 top-k computed here in Python from the texts (``redmem.fields._bm25_math``)."""

    def __init__(self, field: BM25Field, texts: dict[str, str]) -> None:
        self.field = field
        self.postings: dict[str, list[tuple[str, int]]] = {}
        self.lengths: dict[str, int] = {}
        for record_id, text in texts.items():
            counts = field.term_counts(text)
            self.lengths[record_id] = sum(counts.values())
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((record_id, tf))
        self.avgdl = sum(self.lengths.values()) / len(self.lengths)

    def scores(self, text: str) -> dict[str, float]:
        """The exact BM25 score of every record matching ``text``; each sum runs in term order like the Lua."""
        query, n, sums = self.field.term_counts(text), len(self.lengths), {}
        for term in sorted(query):
            postings = self.postings.get(term, [])
            weight = query[term] * idf(n, len(postings))
            for record_id, tf in postings:
                norm = tf_norm(tf, self.lengths[record_id], self.avgdl, self.field.k1, self.field.b)
                sums[record_id] = sums.get(record_id, 0.0) + weight * norm
        return sums

    def top(self, text: str, limit: int) -> list[str]:
        """Record ids of the exact top ``limit``, ties by id."""
        return [rid for rid, _ in sorted(self.scores(text).items(), key=lambda pair: (-pair[1], pair[0]))[:limit]]


# ----------------------------------------------------------------------------- measures
def ingest(model: type, texts: list[str], agent: str) -> tuple[float, dict[str, str]]:
    """Save every text as one record (one atomic save each): records per second, texts by id."""
    saved = {}
    start = time.perf_counter()
    for text in texts:
        saved[model.create(agent_id=agent, content=text)._saved_key.record_id] = text
    return len(texts) / (time.perf_counter() - start), saved


def lua_microseconds(client: redis.Redis) -> int:
    """Time the server has spent in EVALSHA so far (INFO commandstats)."""
    return client.info("commandstats").get("cmdstat_evalsha", {}).get("usec", 0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def run_queries(agent: str, query_list: list[tuple[str, str]], reference: Reference, client: redis.Redis) -> dict:
    field, search = Memory.content_bm25, Memory.query.filter(agent_id=agent)
    space = search.partition()
    keys = field.keys_in(space)
    search.keyword_search(query_list[0][1])  # loads the script into the server's cache
    rows = []
    for kind, text in query_list:
        lua_before = lua_microseconds(client)
        before = CountingConnection.sent
        start = time.perf_counter()
        found = search.keyword_search(text, limit=10)
        latency = time.perf_counter() - start
        trips = CountingConnection.sent - before
        lua = lua_microseconds(client) - lua_before
        bounded = field.search(space, text, 10)
        start = time.perf_counter()
        exhaustive = field.search(space, text, 10, exhaustive=True)
        exhaustive_latency = time.perf_counter() - start
        with client.pipeline(transaction=False) as pipe:
            for term in field.term_counts(text):
                pipe.zcard(keys.posting(term))
            lengths = pipe.execute()
        exact = reference.top(text, 10)
        rows.append({
            "class": kind, "latency_ms": latency * 1000, "lua_ms": lua / 1000,
            "exhaustive_ms": exhaustive_latency * 1000,
            "round_trips": trips, "postings_read": bounded.postings_read,
            "records_scored": bounded.records_scored, "postings_total": sum(lengths),
            "agree": [m._saved_key.record_id for m in found] == [r for r, _ in bounded.ranked] == exact,
            "exhaustive_agrees": [r for r, _ in exhaustive.ranked] == exact,
        })
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def block(selected: list[dict[str, Any]]) -> dict[str, Any]:
        read = sum(r["postings_read"] for r in selected)
        total = sum(r["postings_total"] for r in selected)
        return {
            "queries": len(selected),
            "p50_ms": percentile([r["latency_ms"] for r in selected], 0.50),
            "p95_ms": percentile([r["latency_ms"] for r in selected], 0.95),
            "lua_p50_ms": percentile([r["lua_ms"] for r in selected], 0.50),
            "lua_p95_ms": percentile([r["lua_ms"] for r in selected], 0.95),
            "exhaustive_p50_ms": percentile([r["exhaustive_ms"] for r in selected], 0.50),
            "exhaustive_p95_ms": percentile([r["exhaustive_ms"] for r in selected], 0.95),
            "round_trips_max": max(r["round_trips"] for r in selected),
            "round_trips_mean": statistics.mean(r["round_trips"] for r in selected),
            "postings_read_mean": read / len(selected),
            "postings_total_mean": total / len(selected),
            "postings_read_fraction": read / total if total else 0.0,
            "postings_read_p95": percentile([r["postings_read"] for r in selected], 0.95),
            "records_scored_mean": statistics.mean(r["records_scored"] for r in selected),
            "top10_agreement": sum(r["agree"] for r in selected) / len(selected),
            "exhaustive_top10_agreement": sum(r["exhaustive_agrees"] for r in selected) / len(selected),
        }

    summary = {"all": block(rows)}
    for kind in sorted({r["class"] for r in rows}):
        summary[kind] = block([r for r in rows if r["class"] == kind])
    return summary


def run_size(size: int, query_count: int, client: redis.Redis) -> dict[str, Any]:
    texts, words, cumulative = corpus(size)
    agent = f"bench-{size}"
    log.info("ingesting %d records", size)
    rate, saved = ingest(Memory, texts, agent)
    baseline, _ = ingest(PlainMemory, texts[: min(size, 10_000)], agent)
    memory = client.info("memory")["used_memory"]
    log.info("running %d queries", query_count)
    reference = Reference(Memory.content_bm25, saved)
    result = run_queries(agent, queries(texts, words, cumulative, query_count), reference, client)
    client.flushall()
    return {"records": size, "ingest_per_s": rate, "ingest_without_index_per_s": baseline,
            "used_memory_mb": memory / 2**20, "queries": result}


# ----------------------------------------------------------------------------- report
def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# BM25 retrieval benchmark",
        "",
        f"{report['machine']}, {os.cpu_count()} CPUs, shared with other work (load average "
        f"{report['load_average_at_start'][0]:.1f} at start, {report['load_average_at_end'][0]:.1f} at end); "
        f"server {report['server']}; top-10 per query, one partition.",
        "Latency is end to end (`keyword_search`: Lua ranking + hydration of 10 records); Lua is the",
        "time the server spent in the ranking script (INFO commandstats), less exposed to the load of",
        "other processes; exhaustive is the fallback that scores every posting.",
        "",
        "| records | queries | class | p50 / p95 ms | Lua p50 / p95 ms | exhaustive p50 / p95 ms | round trips | "
        "postings read / total (mean) | postings read p95 | records scored | top-10 = exact (exhaustive) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        for kind, q in run["queries"].items():
            lines.append(
                f"| {run['records']:,} | {q['queries']} | {kind} | {q['p50_ms']:.2f} / {q['p95_ms']:.2f} | "
                f"{q['lua_p50_ms']:.2f} / {q['lua_p95_ms']:.2f} | "
                f"{q['exhaustive_p50_ms']:.2f} / {q['exhaustive_p95_ms']:.2f} | {q['round_trips_max']} | "
                f"{q['postings_read_mean']:,.0f} / {q['postings_total_mean']:,.0f} "
                f"({100 * q['postings_read_fraction']:.1f}%) | {q['postings_read_p95']:,} | "
                f"{q['records_scored_mean']:,.0f} | "
                f"{100 * q['top10_agreement']:.1f}% ({100 * q['exhaustive_top10_agreement']:.1f}%) |"
            )
    lines += ["", "| records | ingest with BM25Field (records/s) | without (records/s) | used memory MB |",
              "|---|---|---|---|"]
    for run in report["runs"]:
        lines.append(f"| {run['records']:,} | {run['ingest_per_s']:,.0f} | "
                     f"{run['ingest_without_index_per_s']:,.0f} | {run['used_memory_mb']:,.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5k records, 60 queries, no files written")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sizes, query_count = ([5_000], 60) if args.quick else ([10_000, 100_000], 240)
    with EmbeddedServer() as server:
        client = counting_client(server)
        redmem.configure(client=client, key_prefix="bench")
        version = client.info("server")
        report = {
            "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
            "server": f"{version.get('server_name', 'redis')} {version['redis_version']}",
            "load_average_at_start": os.getloadavg(),
            "runs": [run_size(size, query_count, client) for size in sizes],
            "load_average_at_end": os.getloadavg(),
        }
    text = markdown(report)
    print(text)
    if not args.quick:
        write_results("retrieval_bm25", report, text)


if __name__ == "__main__":
    main()
