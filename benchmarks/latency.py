"""assemble() latency and cost at N memories in one partition, redmem and popoto 1.10.1 side by side.

    .venv/bin/python benchmarks/latency.py                       # N = 1k, 10k, 100k; both libraries
    .venv/bin/python benchmarks/latency.py --quick               # N = 1k, 2k; 50 queries, 1 repeat
    .venv/bin/python benchmarks/latency.py --workload questions --sizes 10000,100000   # LoCoMo questions
    .venv/bin/python benchmarks/latency.py --cluster --systems redmem --out latency_cluster

For each N (a fresh private server each; ``--cluster``: a 3-master cluster, redmem only) and each
library, two models hold the same N synthetic memories (``common.synthetic_texts``) of one
agent: a lexical one (the seed's Memory fields) and a hybrid one (the same plus an
EmbeddingField fed deterministic hashed vectors, ``common.hash_vectors``; the real model's cost
is the LoCoMo run's business). Measured per library and N:

- ingest: the first ``single`` memories one ``save()`` each, the rest in bulk (redmem
  ``Model.save_many``, popoto ``Model.bulk_create``); memories/s with the embedding time left
  out (it is reported apart); ``--ingest-repeats`` ingests per N (the extra ones on fresh
  servers, with no assembles), figures are their medians, each run kept under ``runs``;
- Redis memory per memory: ``used_memory`` delta over the model's ingest / N (summed over the
  cluster's nodes);
- ``assemble()`` (max_items 10) per mode — lexical and hybrid, and redmem's composite up to
  ``--composite-up-to`` memories (default 100k, every N; every memory ties on this workload's
  composite, which the selection settles by record id, without reading the partition) — over
  ``--queries`` queries (3 words of a random memory), after 5 warm-up queries, ``--repeats``
  times: p50/p95/p99 in ms (total, and without query embedding), round trips and commands sent
  per call (median). Reported figures are the medians over repeats.

``--workload questions`` (redmem only): the natural-language workload of ``questions.py`` --
N memories of LoCoMo dialog sentences read from ``--data``, the LoCoMo questions of 6-15 words
as queries (``--queries`` of them, every one by default), the seed's Memory model (lexical, and
hybrid with hashed vectors) assembled with ``score_weights={"relevance": 1.0}``, max_items 10.
Per N and mode: assemble() (p50/p95/p99 with and without the query embedding, round trips; the
first pass apart, as it fills the process's copy of the postings; the server's CPU per
question from ``INFO commandstats`` over the other passes); ``keyword_search`` alone; what each
BM25 search read inside Redis (postings, records scored); and the top-k exactness check:
redmem's BM25 top 10 against an exact BM25 computed in Python over the same corpus with the
same formulas (``retrieval_bm25.Reference``), on the questions and on ``--word-queries``
3-word queries of stored memories, every disagreeing query kept; and what the process's copy
of the lexical model's postings holds after its passes (``PostingsCopy.footprint``). The load
average is recorded around each mode (the machine is shared). Written to
``results/latency_questions.json``. ``--vector-prescans exact,binary``: the hybrid model is
timed once per vector pre-scan of its EmbeddingField (mode ``hybrid`` for the first, then
``hybrid-<prescan>``, the field's ``prescan`` switched between passes; for ``hnsw`` the process's
graph is built after the warm-up, before the timed passes, and its build time recorded), and the vector top 10
of each approximate pre-scan is compared with the exact one on every question
(``vector_recall``: recall of the exact top 10, share of identical lists). ``--vectors minilm``:
the hybrid model's vectors come from the offline MiniLM (dense, as a real model's) instead of
hashed words (sparse; no model); embedding time is left out of every figure either way.
``--vectors minilm-remote``: the same vectors, the questions' computed in batches before the
timed passes, so no model runs between two assembles (as when a remote service embeds).

popoto's hybrid model is measured up to ``--popoto-hybrid-up-to`` memories (default 10k): it
writes one vector file per memory and its ingest slows as N grows (about 40 memories/s by
25k memories on the reference run), so 100k would take hours. Results are written after each N.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import (
    CommandCounter,
    machine,
    median_of,
    summary,
    synthetic_queries,
    synthetic_texts,
    write_json,
)
from peers.popoto_bridge import PopotoProcess
from questions import dialog_corpus, locomo_questions
from redmem import DatetimeField
from redmem.fields._bm25_postings import copies
from redmem.fields._embedding_search import matrices
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer
from redmem.store._embedded_cluster import EmbeddedCluster
from redmem_driver import (
    TimedProvider,
    assemble_many,
    graph_ready,
    hash_provider,
    ingest_measured,
    memory_model,
    minilm_function,
)
from retrieval_bm25 import Reference

log = logging.getLogger("benchmarks.latency")

AGENT = "agent-1"
WARMUP = 5
TARGETS = {
    "p50_ratio_10k": "redmem p50 <= 1/4 of popoto's at 10k (lexical and hybrid)",
    "p50_ratio_100k": "redmem p50 <= 1/20 of popoto's at 100k",
    "growth": "redmem p50(100k) / p50(10k) <= 2",
    "round_trips": "<= 4 round trips per assemble() at every N",
    "single_save": "single save() >= 1.5x popoto's rate",
    "bulk": "bulk path >= 10x popoto's single-save rate",
    "memory": "Redis memory per memory <= popoto's",
}
QUESTION_TARGETS = {
    "latency": "lexical assemble p50 <= 4 ms and p95 <= 10 ms at 100k",
    "growth": "p50(100k) / p50(10k) <= 1.5",
    "round_trips": "<= 3 round trips per assemble()",
    "exact": "BM25 top 10 identical to exact BM25 for >= 99.5% of queries",
}
REFERENCE = {"popoto p50 ms (reference machine)": {"1000": 10.8, "10000": 43.5, "100000": 464},
             "popoto round trips": 8, "popoto commands": 101, "popoto single saves/s": "650-800",
             "popoto bytes per memory": 3000}


# ----------------------------------------------------------------------------- servers
@contextmanager
def servers(cluster: bool) -> Iterator[tuple[str, list[Any]]]:
    """(url, clients of every node) of a fresh private server or 3-master cluster."""
    if cluster:
        with EmbeddedCluster(masters=3) as nodes:
            yield nodes.url, [server.client() for server in nodes.servers]
    else:
        with EmbeddedServer() as server:
            yield server.url, [server.client()]


def used_memory(clients: list[Any]) -> int:
    return sum(int(client.info("memory")["used_memory"]) for client in clients)


# ----------------------------------------------------------------------------- measuring
def ingest_figures(part: dict[str, Any], memory_bytes: int, n: int) -> dict[str, Any]:
    """Rates (memories/s, embedding left out) and bytes per memory of one ingest."""
    def rate(kind: str) -> float | None:
        count, seconds = part[f"{kind}_count"], part[f"{kind}_seconds"] - part[f"{kind}_embed_seconds"]
        return count / seconds if count and seconds > 0 else None

    return {"single_per_s": rate("single"), "bulk_per_s": rate("bulk"),
            "embed_seconds": part["single_embed_seconds"] + part["bulk_embed_seconds"],
            "bytes_per_memory": memory_bytes / n}


def latency_figures(repeats: list[list[dict]]) -> dict[str, Any]:
    """Median over repeats of each repeat's summary: total ms, ms without embedding, trips, commands."""
    def per(rows: list[dict]) -> dict[str, float]:
        total, bare = summary([r["ms"] for r in rows]), summary([r["ms"] - r["embed_ms"] for r in rows])
        return {"p50": total["p50"], "p95": total["p95"], "p99": total["p99"],
                "p50_without_embedding": bare["p50"], "p95_without_embedding": bare["p95"],
                "embed_ms_p50": statistics.median(r["embed_ms"] for r in rows),
                "round_trips": statistics.median(r["round_trips"] for r in rows),
                "round_trips_max": max(r["round_trips"] for r in rows),
                "commands": statistics.median(r["commands"] for r in rows), "queries": len(rows)}

    return {**median_of([per(rows) for rows in repeats]), "repeats": len(repeats)}


def ingest_redmem(n: int, texts: list[str], args: Any, clients: list[Any]) -> tuple[dict[str, type], dict[str, Any]]:
    """The lexical and hybrid models of N memories, and the ingest figures of each."""
    provider = hash_provider()
    models = {"lexical": memory_model(f"LatLex{n}"), "hybrid": memory_model(f"LatHyb{n}", provider)}
    ingest = {}
    for kind, model in models.items():
        before = used_memory(clients)
        part = ingest_measured(model, AGENT, texts, min(args.single, n // 5), provider if kind == "hybrid" else None,
                               chunk_size=args.chunk_size)
        ingest[kind] = ingest_figures(part, used_memory(clients) - before, n)
    return models, ingest


def run_redmem(n: int, texts: list[str], queries: list[str], args: Any, clients: list[Any]) -> dict[str, Any]:
    provider = hash_provider()
    models, ingest = ingest_redmem(n, texts, args, clients)
    out: dict[str, Any] = {"ingest": ingest, "assemble": {}}
    modes = [("lexical", models["lexical"]), ("hybrid", models["hybrid"])]
    if n <= args.composite_up_to:
        modes.append(("composite", models["lexical"]))
    for mode, model in modes:
        assemble_many(model, mode, AGENT, queries[:WARMUP], provider=provider)
        runs = [assemble_many(model, mode, AGENT, queries, provider=provider) for _ in range(args.repeats)]
        out["assemble"][mode] = latency_figures(runs)
        log.info("redmem N=%d %s: %s", n, mode, _short(out["assemble"][mode]))
    return out


def popoto_kinds(n: int, args: Any) -> tuple[str, ...]:
    return ("lexical", "hybrid") if n <= args.popoto_hybrid_up_to else ("lexical",)


def ingest_popoto(popoto: PopotoProcess, n: int, texts: list[str], args: Any, clients: list[Any]) -> dict[str, Any]:
    """popoto's models of N memories (set up in ``popoto``), and the ingest figures of each."""
    ingest = {}
    for kind in popoto_kinds(n, args):
        name = f"PopotoLat{kind.title()}{n}"
        popoto.call("setup", name=name, embedding="hash" if kind == "hybrid" else None)
        before = used_memory(clients)
        part = popoto.call("ingest", name=name, agent_id=AGENT, texts=texts, single=min(args.single, n // 5))
        ingest[kind] = ingest_figures(part, used_memory(clients) - before, n)
    return ingest


def popoto_url(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "db=1"


def run_popoto(n: int, texts: list[str], queries: list[str], args: Any, url: str, clients: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"ingest": {}, "assemble": {}}
    with PopotoProcess(popoto_url(url)) as popoto:
        out["ingest"] = ingest_popoto(popoto, n, texts, args, clients)
        for kind in popoto_kinds(n, args):
            name = f"PopotoLat{kind.title()}{n}"
            popoto.call("assemble", name=name, agent_id=AGENT, queries=queries[:WARMUP], mode=kind)
            runs = [popoto.call("assemble", name=name, agent_id=AGENT, queries=queries, mode=kind)["results"]
                    for _ in range(args.repeats)]
            out["assemble"][kind] = latency_figures(runs)
            log.info("popoto N=%d %s: %s", n, kind, _short(out["assemble"][kind]))
    return out


def ingest_alone(n: int, texts: list[str], args: Any, systems: list[str]) -> dict[str, dict[str, Any]]:
    """One more ingest of every system on a fresh server (no assembles): figures by system."""
    found: dict[str, dict[str, Any]] = {}
    with servers(args.cluster) as (url, clients):
        redmem.connect(url, cluster=args.cluster)
        if "redmem" in systems:
            found["redmem"] = ingest_redmem(n, texts, args, clients)[1]
        if "popoto" in systems:
            with PopotoProcess(popoto_url(url)) as popoto:
                found["popoto"] = ingest_popoto(popoto, n, texts, args, clients)
    return found


def median_ingest(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Figures by system and model kind: the median of each over ``runs``, the runs themselves kept."""
    out: dict[str, dict[str, Any]] = {}
    for system in runs[0]:
        out[system] = {kind: {**median_of([run[system][kind] for run in runs]),
                              "runs": [run[system][kind] for run in runs]}
                       for kind in runs[0][system]}
    return out


# ----------------------------------------------------------------------------- natural-language questions
def keyword_search_alone(model: type, queries: list[str], repeats: int) -> dict[str, Any]:
    """``keyword_search(q, limit=10)`` alone, timed as assemble() is: the median over repeats of p50/p95/p99."""
    CommandCounter.install()
    search = model.query.filter(agent_id=AGENT)
    runs = []
    for _ in range(repeats):
        rows = []
        for text in queries:
            before, started = CommandCounter.snapshot(), time.perf_counter()
            search.keyword_search(text, limit=10)
            ms = (time.perf_counter() - started) * 1000
            rows.append({"ms": ms, "embed_ms": 0.0, "round_trips": CommandCounter.since(before)[0],
                         "commands": CommandCounter.since(before)[1]})
        runs.append(rows)
    return latency_figures(runs)


def exactness(model: type, ids: list[str], texts: list[str], queries: list[str]) -> dict[str, Any]:
    """redmem's BM25 top 10 against the exact top 10 over the same corpus; what each search read in Redis."""
    field = model.content_bm25
    space = model.query.filter(agent_id=AGENT).partition()
    reference = Reference(field, dict(zip(ids, texts)))
    misses, read, scored, modes = [], [], [], Counter[str]()
    for text in queries:
        found = field.search(space, text, 10)
        exact = reference.top(text, 10)
        read.append(found.postings_read)
        scored.append(found.records_scored)
        modes[found.mode] += 1
        if [record for record, _ in found.ranked] != exact:
            misses.append({"query": text, "redmem": [record for record, _ in found.ranked], "exact": exact})
    return {"queries": len(queries), "identical": (len(queries) - len(misses)) / len(queries),
            "misses": misses, "modes": dict(modes), "postings_read": summary(read),
            "records_scored": summary(scored)}


def server_usec(client: Any) -> dict[str, dict[str, float]]:
    """``INFO commandstats`` of the server: calls and microseconds by command (since the last RESETSTAT)."""
    return {name.removeprefix("cmdstat_"): {"calls": stats["calls"], "usec": stats["usec"]}
            for name, stats in client.info("commandstats").items()}


def timed_questions(model: type, mode: str, queries: list[str], args: Any, client: Any,
                    provider: Any) -> dict[str, Any]:
    """assemble() of every question in ``mode`` (relevance only, max_items 10), ``--repeats`` times after
    the warm-up: figures as ``latency_figures`` (medians over repeats), the first pass apart (it
    fills the process's copy of the postings), and the CPU per question over the other passes: the
    server's (``INFO commandstats`` usec, reset after the first pass) and this process's
    (``time.process_time``, embedding included). ``provider``: the hybrid model's."""
    assembler = ContextAssembler(model, score_weights={"relevance": 1.0}, max_items=10, retrieval_mode=mode)
    load_before = list(os.getloadavg())
    assemble_many(model, mode, AGENT, queries[:WARMUP], assembler=assembler, provider=provider)
    graph_seconds = graph_ready(model, AGENT) if mode == "hybrid" else None
    runs = [assemble_many(model, mode, AGENT, queries, assembler=assembler, provider=provider)]
    client.config_resetstat()
    cpu = time.process_time()
    runs += [assemble_many(model, mode, AGENT, queries, assembler=assembler, provider=provider)
             for _ in range(args.repeats - 1)]
    cpu, stats, asked = time.process_time() - cpu, server_usec(client), len(queries) * (args.repeats - 1)
    return {**latency_figures(runs), "first_pass": latency_figures(runs[:1]),
            "hnsw_build_seconds": graph_seconds,
            "client_cpu_ms_per_query": 1000 * cpu / asked if asked else None,
            "server_usec_per_query": sum(s["usec"] for s in stats.values()) / asked if asked else None,
            "server_commandstats": stats,
            "load_average": {"before": load_before, "after": list(os.getloadavg())}}


def vector_recall(model: type, queries: list[str], prescan: str, provider: TimedProvider) -> dict[str, Any]:
    """The hybrid model's vector top 10 with ``prescan`` against the exact one, per question."""
    field = model.embedding
    matrix = matrices.get(model._meta.client, field.keys(model.query.filter(agent_id=AGENT).partition())[0])
    recalls, identical = [], 0
    with matrix.lock:
        for vector in provider.embed(queries, "query"):
            exact = [i for i, _ in matrix.search(vector, 10)]
            found = [i for i, _ in matrix.search(vector, 10, prescan)]
            recalls.append(len(set(exact) & set(found)) / len(exact) if exact else 1.0)
            identical += found == exact
    return {"prescan": prescan, "queries": len(queries), "recall_at_10": statistics.fmean(recalls),
            "identical": identical / len(queries), "recall": summary(recalls)}


def run_questions(n: int, texts: list[str], queries: list[str], args: Any, client: Any) -> dict[str, Any]:
    """Ingest N dialog memories (a lexical and a hybrid model), time assemble() in both modes and
    keyword_search alone, check exactness on the questions and on 3-word queries of stored memories."""
    vectors = {"hash": hash_provider, "minilm": lambda: TimedProvider(minilm_function()),
               "minilm-remote": lambda: TimedProvider(minilm_function(), queries=queries)}[args.vectors]
    providers = {"lexical": None, "hybrid": vectors()}
    dated = {"created_at": DatetimeField(auto_now_add=True)} if args.dated else None
    models = {"lexical": memory_model(f"LatQ{n}", extra=dated),
              "hybrid": memory_model(f"LatQH{n}", providers["hybrid"], extra=dated)}
    ingest = {mode: ingest_measured(model, AGENT, texts, 0, providers[mode], chunk_size=args.chunk_size)
              for mode, model in models.items()}
    out: dict[str, Any] = {"ingest_seconds": {mode: part["bulk_seconds"] for mode, part in ingest.items()},
                           "assemble": {}}
    prescans = args.vector_prescans.split(",")
    for mode, model in models.items():
        for prescan in prescans if mode == "hybrid" else [None]:
            name = mode if prescan in (None, prescans[0]) else f"{mode}-{prescan}"
            if prescan is not None:
                model.embedding.prescan = prescan
            out["assemble"][name] = timed_questions(model, mode, queries, args, client, providers[mode])
            if prescan not in (None, "exact"):
                out.setdefault("vector_recall", {})[prescan] = vector_recall(model, queries, prescan, providers[mode])
    lexical = models["lexical"]
    out["postings_copy"] = copies.get(lexical._meta.client, lexical.content_bm25.keys_in(
        lexical.query.filter(agent_id=AGENT).partition()).lengths).footprint()
    out["keyword_search"] = keyword_search_alone(models["lexical"], queries, args.repeats)
    words = synthetic_queries(texts, args.word_queries)
    out["exactness"] = exactness(models["lexical"], ingest["lexical"]["ids"], texts, queries)
    out["exactness_words"] = exactness(models["lexical"], ingest["lexical"]["ids"], texts, words)
    log.info("questions N=%d lexical %s hybrid %s keyword_search %s identical %.4f / words %.4f", n,
             _short(out["assemble"]["lexical"]), _short(out["assemble"]["hybrid"]), _short(out["keyword_search"]),
             out["exactness"]["identical"], out["exactness_words"]["identical"])
    return out


def main_questions(args: Any) -> dict[str, Any]:
    """The natural-language workload at every N of ``args.sizes``: results by N, growth of the p50s."""
    path = Path(args.data)
    queries = locomo_questions(path)[:args.queries or None]
    results: dict[str, Any] = {}
    payload = {"benchmark": "latency", "workload": "questions", "vectors": args.vectors, "sizes": args.sizes,
               "queries": len(queries),
               "repeats": args.repeats, "warmup": WARMUP, "chunk_size": args.chunk_size,
               "targets": QUESTION_TARGETS, "results": results}
    started, out = time.perf_counter(), args.out if args.out is not None else "latency_questions"
    sizes = [int(size) for size in args.sizes.split(",")]
    for n in sizes:
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=120)  # a bulk chunk of 1,000 on a loaded shared host
            results[str(n)] = run_questions(n, dialog_corpus(path, n), queries, args, server.client())
            payload["redis_version"] = server.client().info("server").get("redis_version")
        smallest = results[str(sizes[0])]
        figures = {"keyword_search": lambda r: r["keyword_search"],
                   **{mode: lambda r, mode=mode: r["assemble"][mode] for mode in smallest["assemble"]}}
        payload["growth"] = {
            what: {"p50": pick(results[str(n)])["p50_without_embedding"] / pick(smallest)["p50_without_embedding"],
                   "p95": pick(results[str(n)])["p95_without_embedding"] / pick(smallest)["p95_without_embedding"]}
            for what, pick in figures.items()}
        payload.update(machine=machine(), seconds=time.perf_counter() - started)
        if out:
            write_json(out, payload)
    return payload


def _short(figures: dict[str, Any]) -> dict[str, float]:
    return {k: round(figures[k], 2) for k in ("p50", "p95", "p99", "round_trips", "commands")}


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--workload", choices=("words", "questions"), default="words",
                        help="words: 3 words of a synthetic memory (both libraries); questions: LoCoMo "
                             "questions over LoCoMo dialog memories (redmem, lexical)")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"),
                        help="the LoCoMo file of --workload questions (read, never copied)")
    parser.add_argument("--queries", type=int, default=None,
                        help="queries per N (default: 200 words; every question of 6-15 words)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--word-queries", type=int, default=200,
                        help="--workload questions: 3-word queries of stored memories checked for exactness too")
    parser.add_argument("--ingest-repeats", type=int, default=3,
                        help="ingests per N and system (the extra ones on fresh servers); figures are medians")
    parser.add_argument("--single", type=int, default=2000, help="memories saved one by one (at most N/5)")
    parser.add_argument("--systems", default="redmem,popoto")
    parser.add_argument("--chunk-size", type=int, default=1000, help="redmem save_many chunk_size of the bulk ingest")
    parser.add_argument("--composite-up-to", type=int, default=100_000,
                        help="measure redmem's composite mode only up to this N")
    parser.add_argument("--popoto-hybrid-up-to", type=int, default=10_000,
                        help="measure popoto's hybrid model only up to this N (its ingest slows as N grows)")
    parser.add_argument("--cluster", action="store_true", help="3-master cluster (redmem only)")
    parser.add_argument("--quick", action="store_true", help="N = 1k, 2k; 50 queries; 1 repeat")
    parser.add_argument("--vector-prescans", default="exact",
                        help="questions workload: the hybrid model's EmbeddingField prescan(s), e.g. exact,binary,hnsw")
    parser.add_argument("--vectors", choices=("hash", "minilm", "minilm-remote"), default="hash",
                        help="questions workload: the hybrid model's vectors, hashed words (no model) or the "
                             "offline MiniLM's (dense, as a model's; embedding 100k texts takes minutes); "
                             "minilm-remote: the questions' vectors computed before the timed passes, so no "
                             "model runs in the timed process, as with a remote embedding service")
    parser.add_argument("--dated", action="store_true",
                        help="questions workload: the models carry created_at, as README's Memory does, so the "
                             "assembler's newer-first stage runs")
    parser.add_argument("--out", default=None, help="results/<out>.json (default latency or latency_cluster; '' none)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.repeats, args.ingest_repeats = "1000,2000", 50, 1, 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.workload == "questions":
        return main_questions(args)
    args.queries = args.queries or 200
    systems = [s for s in args.systems.split(",") if not (args.cluster and s == "popoto")]
    results: dict[str, Any] = {}
    started, version = time.perf_counter(), None
    out = args.out if args.out is not None else ("latency_cluster" if args.cluster else "latency")
    payload = {"benchmark": "latency", "cluster": args.cluster, "sizes": args.sizes, "queries": args.queries,
               "chunk_size": args.chunk_size, "ingest_repeats": args.ingest_repeats,
               "repeats": args.repeats, "warmup": WARMUP, "targets": TARGETS, "reference": REFERENCE,
               "results": results}
    for n in (int(size) for size in args.sizes.split(",")):
        texts = synthetic_texts(n)
        queries = synthetic_queries(texts, args.queries)
        ingests = [ingest_alone(n, texts, args, systems) for _ in range(args.ingest_repeats - 1)]
        with servers(args.cluster) as (url, clients):
            redmem.connect(url, cluster=args.cluster)
            results[str(n)] = {}
            if "redmem" in systems:
                results[str(n)]["redmem"] = run_redmem(n, texts, queries, args, clients)
            if "popoto" in systems:
                results[str(n)]["popoto"] = run_popoto(n, texts, queries, args, url, clients)
            version = clients[0].info("server").get("redis_version")
        ingests.append({system: found["ingest"] for system, found in results[str(n)].items()})
        for system, figures in median_ingest(ingests).items():
            results[str(n)][system]["ingest"] = figures
        payload.update(machine=machine(), redis_version=version, seconds=time.perf_counter() - started)
        if out:
            write_json(out, payload)  # after every N, so a long run keeps what it measured
    return payload

if __name__ == "__main__":
    main()
