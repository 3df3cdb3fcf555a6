"""The frames recipe measured: frame() latency and round trips at N blocks per agent, side by side
with elfmem 0.20.0 (the seed's own project), and the ATTENTION frame's retrieval quality on LoCoMo.

    .venv/bin/python benchmarks/frames.py --data ../shared/data/locomo-dev.json       # full sizes
    .venv/bin/python benchmarks/frames.py --data ... --quick      # N = 1k, 2k; 50 queries; 1 conversation

Three parts (``--parts``), written to ``results/frames.json`` and ``results/frames.md``:

- ``latency``: for each N (``--sizes``, default 1k, 10k, 100k; a fresh private server each) one
  agent's ``FrameMemory`` learns N blocks of :mod:`facts` (plain-English facts, events and 40
  self/* blocks), about N/2 edges (``connect``, degree <= 5) and N/500 contradiction pairs. Then
  ``frame("attention", q, top_k=5)`` over ``--queries`` natural-language questions (worded
  apart from the blocks they ask about), after 5 warm-up questions, ``--repeats`` times: p50 /
  p95 / p99 ms in total and without the query embedding (timed apart: the provider's share),
  round trips and commands per call (``common.CommandCounter``), and a PING's median ms (the
  floor of one round trip under the machine's load at the time). The SELF frame (``top_k=10``): its
  first call (cold), then ``--self-calls`` calls served from its cache (round trips, ms). Ingest: blocks/s
  of ``learn`` (document embedding left out: vectors are computed before, in one batch), Redis
  bytes per block.
- ``elfmem``: elfmem 0.20.0 in its own venv (``elfmem_bridge.py``), at each N up to
  ``--elfmem-up-to`` (10k): the same blocks, edges, contradiction pairs, vectors and questions
  (the first ``--elfmem-queries`` of them), its SQLite file on tmpfs, its mock LLM, near-duplicate
  detection and similarity edges off so it keeps exactly the same blocks and graph; its own
  ``frame("attention", q, top_k=5)`` and ``frame("self")`` (cold, then cached).
- ``quality``: LoCoMo (``--data``, read in place, never copied): each conversation's dialog turns
  learned as blocks of one agent (``agent_id`` = sample id), twice: the turn's text alone (what
  locomo.py's memories hold) and the turn as an agent would note it, ``[session date] speaker:
  text``. Every question of categories 1-4 is asked with the pure ``recall("attention", q,
  top_k=10)`` first, then with ``frame("attention", q, top_k=10)`` in question order (each
  frame's reinforcement seen by the next questions, as in use); the returned blocks are scored
  against the evidence turns with ``locomo.evaluate`` (R@1/5/10, MRR, per category), next to
  ``ContextAssembler`` (hybrid and lexical, ``locomo.run_redmem``) on the same turns, questions
  and embeddings.
- ``sequence`` (issue 29.2): the same LoCoMo turns and questions, the clock stepped by hand: the
  pure ``recall()`` first (nothing written), then ``frame("attention", q, top_k=10)`` in question
  order with the clock advancing ``SEQUENCE_HOURS`` (0.5) active hour after each question, once
  with the damped default (``feedback_cap`` = ``FEEDBACK_CAP``) and once with the seed's raw
  weights (``feedback_cap=None``, the behaviour before issue 29). Written to
  ``results/<out>.json``/``.md`` like the others (``--out frames_sequence`` keeps it apart), with
  R@5 on each half of the conversations (the first, ``dev``, where defaults were chosen; the
  second, ``held-out``). ``--variants`` and ``--scorings`` pick a subset.

``--no-wiring`` builds every ``FrameMemory`` with ``wiring=None`` (``learn()`` links nothing), as
before issue 29.4.

Vectors: ``--vectors minilm`` (default) embeds every block, question and turn with
all-MiniLM-L6-v2 int8 (``redmem.embeddings.MiniLMEmbeddings``; 100k blocks take a few minutes, once
per run, before anything is timed); ``--vectors hash`` uses ``common.hash_vectors`` (fast,
meaningless rankings: for the smoke test). The load average is recorded before and after each
N (``os.getloadavg``): the machine is shared.
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import redis

import facts
import locomo
import redmem
from common import CommandCounter, hash_vectors, machine, save_rdb, summary, write_results
from frames_bulk import bulk_learn
from latency import latency_figures, used_memory
from locomo import evaluate, load
from peers.elfmem_bridge import ELFMEM_VERSION, ElfmemProcess
from redmem.context._tokens import exact_counter
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._scoring import FEEDBACK_CAP
from redmem.recipes.frames._wiring import DEFAULT_WIRING, LearnWiring
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, minilm_function

log = logging.getLogger("benchmarks.frames")

AGENT = "agent-1"
WARMUP = 5
TOP_K = 5
#: The SELF frame's top_k: room for the 6 constitutional blocks it guarantees (in both libraries) and more.
SELF_TOP_K = 10
QUALITY_TOP_K = 10
#: Active hours the clock moves after each question of the ``sequence`` part.
SEQUENCE_HOURS = 0.5
#: The ``sequence`` part's scorings: the damped default and the seed's raw weights.
SEQUENCE_SCORINGS: dict[str, float | None] = {"damped (default)": FEEDBACK_CAP, "seed raw weights": None}
TARGETS = {
    "p50_100k": "frame('attention') p50 <= 5 ms at 100k blocks, query embedding left out",
    "growth": "p50(100k) / p50(10k) <= 2",
    "round_trips": "<= 3 round trips per frame('attention')",
    "self_cached": "SELF frame from its cache: 1 round trip",
}


# ----------------------------------------------------------------------------- workload
def vector_function(kind: str) -> Callable[[list[str]], np.ndarray]:
    return minilm_function() if kind == "minilm" else hash_vectors


def workload(n: int, queries: int) -> dict[str, Any]:
    """Blocks, questions (text, asked block), edges and contradiction pairs of the run at N."""
    return {"blocks": facts.blocks(n), "questions": facts.questions(n, queries), "edges": facts.edges(n),
            "contradictions": facts.contradictions(n)}


# ----------------------------------------------------------------------------- redmem
def ingest_frames(memory: FrameMemory, work: dict[str, Any], bulk: bool = False) -> dict[str, float]:
    """Learn the blocks (``bulk``: :func:`frames_bulk.bulk_learn`, the same keys in pipelined
    batches), connect the edges, record the contradictions: the seconds of each."""
    started = time.perf_counter()
    ids = bulk_learn(memory, work["blocks"]) if bulk else [
        memory.learn(b["text"], tags=b["tags"], category=b["category"]) for b in work["blocks"]]
    learned = time.perf_counter()
    for a, b, weight in work["edges"]:
        memory.connect(ids[a], ids[b], weight=weight)
    connected = time.perf_counter()
    for a, b in work["contradictions"]:
        memory.contradict(ids[a], ids[b])
    return {"learn_seconds": learned - started, "connect_seconds": connected - learned,
            "contradict_seconds": time.perf_counter() - connected}


def frames_many(memory: FrameMemory, name: str, queries: list[str | None], provider: TimedProvider,
                top_k: int = TOP_K, after_each: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    """One ``frame(name, q)`` per query (``after_each`` run after each, untimed):
    ``{ids, ms, embed_ms, round_trips, commands, cached, text}`` each."""
    CommandCounter.install()
    rows = []
    for query in queries:
        before, embedded = CommandCounter.snapshot(), provider.seconds
        started = time.perf_counter()
        result = memory.frame(name, query, top_k=top_k)
        ms = (time.perf_counter() - started) * 1000
        trips, commands = CommandCounter.since(before)
        rows.append({"ids": [b.id for b in result.blocks], "ms": ms,
                     "embed_ms": (provider.seconds - embedded) * 1000, "round_trips": trips,
                     "commands": commands, "cached": result.cached, "text": result.text})
        after_each()
    return rows


def self_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """ms and round trips of SELF frame calls (cold: the first; cached: the rest)."""
    cached = rows[1:]
    return {"cold_ms": rows[0]["ms"], "cold_round_trips": rows[0]["round_trips"], "cold_cached": rows[0]["cached"],
            "cold_blocks": len(rows[0]["ids"]),
            "cached_ms": summary([r["ms"] for r in cached]),
            "cached_round_trips": statistics.median(r["round_trips"] for r in cached),
            "cached_round_trips_max": max(r["round_trips"] for r in cached),
            "cached_share": sum(r["cached"] for r in cached) / len(cached), "calls": len(cached)}


def ping_ms(client: Any, count: int = 200) -> float:
    """Median ms of a PING: the floor of one round trip on this machine at this moment."""
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        client.ping()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


#: Set on a server once the run's N blocks are learned there: ``--reuse`` skips learning when it is.
LOADED_KEY = "frames-benchmark:loaded:{n}"


def run_redmem(n: int, work: dict[str, Any], provider: TimedProvider, args: Any, clients: list[Any]) -> dict[str, Any]:
    """Ingest, ATTENTION and SELF figures of one FrameMemory holding the run's N blocks (learned
    unless ``--reuse`` finds them already on the server: then no ingest figures)."""
    before = used_memory(clients)
    memory = FrameMemory(agent_id=AGENT, wiring=None if args.no_wiring else DEFAULT_WIRING)
    memory.begin_session()
    ingest: dict[str, Any] = {"reused": True}
    if not (args.reuse and clients[0].exists(LOADED_KEY.format(n=n))):
        ingest = ingest_frames(memory, work, args.bulk)
        ingest.update(blocks_per_s=n / ingest["learn_seconds"], bulk=args.bulk, bytes_per_block=(used_memory(clients) - before) / n,
                      edges=len(work["edges"]), contradictions=len(work["contradictions"]))
        clients[0].set(LOADED_KEY.format(n=n), 1)
        if args.save:
            save_rdb(clients[0])  # the RDB holds the partition as learned, before any frame() reinforced it
    questions = [q for q, _ in work["questions"]]
    frames_many(memory, "attention", questions[:WARMUP], provider)
    runs = [frames_many(memory, "attention", questions, provider) for _ in range(args.repeats)]
    attention = latency_figures(runs)
    attention["blocks_returned_p50"] = statistics.median(len(r["ids"]) for rows in runs for r in rows)
    first = runs[0][: args.elfmem_queries]
    attention["first_questions"] = {"count": len(first), "p50": summary([r["ms"] for r in first])["p50"],
                                    "p50_without_embedding": summary([r["ms"] - r["embed_ms"] for r in first])["p50"]}
    selves = frames_many(memory, "self", [None] * (args.self_calls + 1), provider, top_k=SELF_TOP_K)
    memory.end_session()
    return {"ingest": ingest, "attention": attention, "self": self_figures(selves), "ping_ms": ping_ms(clients[0])}


# ----------------------------------------------------------------------------- elfmem
def elfmem_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Summary of elfmem's frame() calls: ms in total and without the (lookup) embedding."""
    total, bare = summary([r["ms"] for r in rows]), summary([r["ms"] - r["embed_ms"] for r in rows])
    return {"p50": total["p50"], "p95": total["p95"], "p99": total["p99"],
            "p50_without_embedding": bare["p50"], "p95_without_embedding": bare["p95"],
            "queries": len(rows), "blocks_returned_p50": statistics.median(len(r["ids"]) for r in rows)}


def run_elfmem(work: dict[str, Any], vectors: np.ndarray, query_vectors: np.ndarray, args: Any) -> dict[str, Any]:
    """The same blocks, graph, vectors and questions in elfmem: ingest, ATTENTION and SELF figures."""
    texts = [b["text"] for b in work["blocks"]]
    questions = [q for q, _ in work["questions"]][: max(args.elfmem_queries, WARMUP)]
    with ElfmemProcess(texts + questions, np.vstack([vectors, query_vectors[: len(questions)]])) as elfmem:
        ingest = elfmem.call("learn", blocks=work["blocks"])
        ingest["connect_seconds"] = elfmem.call("connect", edges=work["edges"])["seconds"]
        ingest["contradict_seconds"] = elfmem.call("contradict", pairs=work["contradictions"])["seconds"]
        ingest["blocks_per_s"] = len(texts) / (ingest["learn_seconds"] + ingest["consolidate_seconds"])
        elfmem.call("frame", name="attention", queries=questions[:WARMUP], top_k=TOP_K)
        rows = elfmem.call("frame", name="attention", queries=questions[: args.elfmem_queries], top_k=TOP_K)["results"]
        selves = elfmem.call("frame", name="self", queries=[None] * (args.self_calls + 1), top_k=SELF_TOP_K)["results"]
    cached = selves[1:]
    return {"ingest": ingest, "attention": elfmem_figures(rows),
            "self": {"cold_ms": selves[0]["ms"], "cold_blocks": len(selves[0]["ids"]),
                     "cached_ms": summary([r["ms"] for r in cached]),
                     "cached_share": sum(r["cached"] for r in cached) / len(cached), "calls": len(cached)}}


# ----------------------------------------------------------------------------- quality
#: How a LoCoMo turn becomes a block: its text alone (the content ContextAssembler's memories hold
#: in locomo.py), or written as an agent would note it, with the session date and the speaker.
TURN_TEXTS = {"turn text": lambda turn: turn["text"],
              "dated turn": lambda turn: f"[{turn['said_at']}] {turn['speaker']}: {turn['text']}"}


def as_blocks(conversations: list[dict[str, Any]], variant: str) -> list[dict[str, Any]]:
    """The conversations with each turn's text written as ``variant`` of :data:`TURN_TEXTS` says."""
    written = TURN_TEXTS[variant]
    return [{**talk, "turns": [{**turn, "text": written(turn)} for turn in talk["turns"]]} for talk in conversations]


class SteppedClock:
    """Wall time (seconds) that moves only when :meth:`step` is called."""

    def __init__(self, hours: float) -> None:
        self.now, self.hours = 1_000_000.0, hours

    def __call__(self) -> float:
        return self.now

    def step(self) -> None:
        self.now += self.hours * 3600


def run_quality(conversations: list[dict[str, Any]], provider: TimedProvider, clock: SteppedClock | None = None,
                feedback_cap: float | None = FEEDBACK_CAP, agent_suffix: str = "",
                wiring: LearnWiring | None = DEFAULT_WIRING) -> dict[str, list[dict[str, Any]]]:
    """Answers of the ATTENTION frame per question, with the dia ids returned: ``recall`` (pure,
    asked first, on the blocks as learned) and ``frame`` (then, in question order, each frame's
    reinforcement seen by the next; ``clock`` stepped after each when given, else wall time)."""
    redmem.configure(embedding_provider=provider)
    answers: dict[str, list[dict[str, Any]]] = {"recall": [], "frame": []}
    for talk in conversations:
        memory = FrameMemory(agent_id=talk["agent_id"] + agent_suffix, feedback_cap=feedback_cap,
                             clock=time.time if clock is None else clock, wiring=wiring)
        memory.begin_session()
        ids = [memory.learn(turn["text"]) for turn in talk["turns"]]
        to_dia = {str(i): turn["dia_id"] for i, turn in zip(ids, talk["turns"])}
        questions = [q["question"] for q in talk["questions"]]
        CommandCounter.install()
        for question in questions:
            before, embedded, started = CommandCounter.snapshot(), provider.seconds, time.perf_counter()
            found = memory.recall("attention", question, top_k=QUALITY_TOP_K)
            ms = (time.perf_counter() - started) * 1000
            trips, _ = CommandCounter.since(before)
            answers["recall"].append({"dia_ids": [to_dia[b.id] for b in found], "ms": ms,
                                      "embed_ms": (provider.seconds - embedded) * 1000, "round_trips": trips,
                                      "formatted": "\n".join(b.content for b in found)})
        for row in frames_many(memory, "attention", questions, provider, top_k=QUALITY_TOP_K,
                               after_each=clock.step if clock is not None else lambda: None):
            answers["frame"].append({**row, "formatted": row["text"], "dia_ids": [to_dia[i] for i in row["ids"]]})
        memory.end_session()
    return answers


def locomo_part(args: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The conversations asked (their questions cut to ``--max-questions``) and all their questions."""
    conversations = load(args.data, 1 if args.quick else args.conversations)
    for talk in conversations:
        talk["questions"] = talk["questions"][: args.max_questions]
    return conversations, [q for talk in conversations for q in talk["questions"]]


#: The two halves of the conversations asked: the first (``dev``, where the defaults were chosen)
#: and the second (``held-out``, looked at only to report).
HALVES = ("dev", "held-out")


def conversation_halves(conversations: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The conversations' ids in each half (the first half rounded up)."""
    cut = (len(conversations) + 1) // 2
    return {"dev": [c["agent_id"] for c in conversations[:cut]], "held-out": [c["agent_id"] for c in conversations[cut:]]}


def question_slices(conversations: list[dict[str, Any]]) -> dict[str, slice]:
    """Where each half's questions lie among all the questions, in conversation order."""
    cut = (len(conversations) + 1) // 2
    first = sum(len(c["questions"]) for c in conversations[:cut])
    return {"dev": slice(0, first), "held-out": slice(first, None)}


def sequence(args: Any, provider: TimedProvider) -> dict[str, Any]:
    """R@1/5/10 of pure ``recall()`` and of ``frame()`` asked in sequence, the clock advancing
    ``SEQUENCE_HOURS`` per question, with the damped default and with the seed's raw weights."""
    conversations, questions = locomo_part(args)
    count = exact_counter("cl100k_base")
    halves = question_slices(conversations)
    results: dict[str, Any] = {}
    for variant in args.variants.split(","):
        written = as_blocks(conversations, variant)
        provider.embed([turn["text"] for talk in written for turn in talk["turns"]])
        with EmbeddedServer() as server:
            redmem.connect(server.url)
            for i, scoring in enumerate(args.scorings.split(",")):
                rows = run_quality(written, provider, SteppedClock(SEQUENCE_HOURS), SEQUENCE_SCORINGS[scoring], f"-{i}",
                                   None if args.no_wiring else DEFAULT_WIRING)
                for mode, label in (("recall", "recall() (pure)"), ("frame", "frame() in sequence")):
                    key = f"{label}, {scoring}, {variant}"
                    results[key] = {**evaluate(rows[mode], questions, count), "variant": variant, "scoring": scoring,
                                    "halves": {half: evaluate(rows[mode][part], questions[part], count)
                                               for half, part in halves.items() if questions[part]}}
                    log.info("%s: R@5 %.3f", key, results[key]["recall@5"])
    return {"data": args.data.name, "conversations": [c["agent_id"] for c in conversations],
            "questions": len(questions), "turns": sum(len(c["turns"]) for c in conversations),
            "wiring": "none" if args.no_wiring else repr(DEFAULT_WIRING), "hours_per_question": SEQUENCE_HOURS, "top_k": QUALITY_TOP_K, "results": results,
            "halves": {half: conversation_halves(conversations)[half] for half in HALVES}}


def quality(args: Any, provider: TimedProvider) -> dict[str, Any]:
    """R@1/5/10 and MRR of the ATTENTION frame and of ContextAssembler on LoCoMo, per turn variant."""
    conversations, questions = locomo_part(args)
    count = exact_counter("cl100k_base")
    results: dict[str, Any] = {}
    for variant in TURN_TEXTS:
        written = as_blocks(conversations, variant)
        provider.embed([turn["text"] for talk in written for turn in talk["turns"]])
        with EmbeddedServer() as server:
            redmem.connect(server.url)
            runs = {f"FrameMemory ATTENTION {'recall() (pure)' if mode == 'recall' else 'frame()'}, top_k 10": rows
                    for mode, rows in run_quality(written, provider).items()}
            runs |= {f"ContextAssembler {mode}, max_items 10": rows
                     for mode, rows in locomo.run_redmem(written, provider, ["hybrid", "lexical"]).items()}
        for label, rows in runs.items():
            results[f"{label}, {variant}"] = {**evaluate(rows, questions, count), "variant": variant}
            log.info("%s, %s: R@1 %.3f R@5 %.3f", label, variant, results[f"{label}, {variant}"]["recall@1"],
                     results[f"{label}, {variant}"]["recall@5"])
    return {"data": args.data.name, "conversations": [c["agent_id"] for c in conversations],
            "questions": len(questions), "turns": sum(len(c["turns"]) for c in conversations),
            "turn_texts": {"turn text": "the turn's text", "dated turn": "[session date] speaker: text"},
            "results": results}


# ----------------------------------------------------------------------------- main
def parse(argv: list[str] | None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--parts", default="latency,elfmem,quality",
                        help="comma-separated: latency, elfmem, quality, sequence")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--self-calls", type=int, default=50, help="SELF frame calls after the first (from cache)")
    parser.add_argument("--elfmem-up-to", type=int, default=10_000, help="measure elfmem only up to this N")
    parser.add_argument("--elfmem-queries", type=int, default=50, help="questions asked of elfmem per N")
    parser.add_argument("--vectors", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: the first N conversations")
    parser.add_argument("--max-questions", type=int, default=None, help="LoCoMo: at most N questions per conversation")
    parser.add_argument("--variants", default=",".join(TURN_TEXTS), help="sequence: the turn texts, comma-separated")
    parser.add_argument("--scorings", default=",".join(SEQUENCE_SCORINGS), help="sequence: the scorings, comma-separated")
    parser.add_argument("--vector-cache", type=Path, default=None,
                        help="a pickle of {'doc': {text: vector}, 'query': {...}}: read first when it exists, written at the end")
    parser.add_argument("--no-wiring", action="store_true", help="learn() wires no edge (FrameMemory(wiring=None))")
    parser.add_argument("--server", default=None,
                        help="latency: a Redis URL to use (one size per server) instead of a fresh private server")
    parser.add_argument("--reuse", action="store_true",
                        help="latency: with --server, skip learning when a former run left the N blocks there")
    parser.add_argument("--bulk", action="store_true",
                        help="latency: load the blocks with frames_bulk.bulk_learn (what learn() writes, pipelined)")
    parser.add_argument("--save", action="store_true",
                        help="latency: with --server, SAVE the server's RDB once the N blocks are learned (before any frame)")
    parser.add_argument("--quick", action="store_true", help="N = 1k, 2k; 50 queries; 1 repeat; 1 conversation")
    parser.add_argument("--out", default="frames", help="results/<out>.json and .md ('' writes nothing)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.repeats, args.self_calls = "1000,2000", 50, 1, 20
        args.elfmem_up_to, args.elfmem_queries = 1000, 20
    args.parts = args.parts.split(",")
    if args.reuse and not args.server:
        parser.error("--reuse needs --server URL")
    if {"quality", "sequence"} & set(args.parts) and args.data is None:
        parser.error("the quality and sequence parts need --data PATH (or leave them out of --parts)")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    sizes = [int(size) for size in args.sizes.split(",")] if {"latency", "elfmem"} & set(args.parts) else []
    provider = TimedProvider(vector_function(args.vectors), 384)
    if args.vector_cache is not None and args.vector_cache.exists():
        cached = pickle.loads(args.vector_cache.read_bytes())
        provider._memo.update(cached.get("doc", {}))  # a rerun's vectors: the same texts embed the same
        provider._queries.update(cached.get("query", {}))
    started = time.perf_counter()
    results: dict[str, Any] = {"latency": {}}
    payload: dict[str, Any] = {
        "benchmark": "frames", "vectors": args.vectors, "sizes": sizes, "queries": args.queries,
        "repeats": args.repeats, "warmup": WARMUP, "top_k": TOP_K, "elfmem": ELFMEM_VERSION,
        "elfmem_up_to": args.elfmem_up_to, "elfmem_queries": args.elfmem_queries, "targets": TARGETS,
        "results": results,
    }
    if sizes:
        embedding_started = time.perf_counter()
        vectors = provider.embed([b["text"] for b in workload(max(sizes), args.queries)["blocks"]])
        payload["document_embedding_seconds"] = time.perf_counter() - embedding_started
    for n in sizes:
        work = workload(n, args.queries)
        query_vectors = provider.embed([q for q, _ in work["questions"]])
        row: dict[str, Any] = {"load_before": list(os.getloadavg())}
        if "latency" in args.parts and args.server:
            redmem.connect(args.server)
            redmem.configure(embedding_provider=provider)
            client = redis.Redis.from_url(args.server)
            row["redmem"] = run_redmem(n, work, provider, args, [client])
            payload["redis_version"] = client.info("server")["redis_version"]
        elif "latency" in args.parts:
            with EmbeddedServer() as server:
                redmem.connect(server.url)
                redmem.configure(embedding_provider=provider)
                row["redmem"] = run_redmem(n, work, provider, args, [server.client()])
                payload["redis_version"] = server.version.get("redis_version")
            log.info("redmem N=%d: %s", n, _short(row["redmem"]))
        if "elfmem" in args.parts and n <= args.elfmem_up_to:
            row["elfmem"] = run_elfmem(work, vectors[:n], query_vectors, args)
            log.info("elfmem N=%d: %s", n, _short(row["elfmem"]))
        row["load_after"] = list(os.getloadavg())
        results["latency"][str(n)] = row
        _write(args, payload, started)
    if "quality" in args.parts:
        results["quality"] = quality(args, provider)
        _write(args, payload, started)
    if "sequence" in args.parts:
        results["sequence"] = sequence(args, provider)
        _write(args, payload, started)
    if args.vector_cache is not None:
        args.vector_cache.write_bytes(pickle.dumps({"doc": provider._memo, "query": provider._queries}))
    return payload


def _short(figures: dict[str, Any]) -> dict[str, Any]:
    attention = figures["attention"]
    return {k: round(attention[k], 2) for k in ("p50", "p95", "p50_without_embedding") if k in attention} | {
        "round_trips": attention.get("round_trips"), "self_cached_ms": round(figures["self"]["cached_ms"]["p50"], 2)}


def _write(args: Any, payload: dict[str, Any], started: float) -> None:
    payload.update(machine=machine(), seconds=time.perf_counter() - started)
    if args.out:
        write_results(args.out, payload, markdown(payload))


# ----------------------------------------------------------------------------- report
def markdown(payload: dict[str, Any]) -> str:
    """The results as markdown tables, with the issue's targets and verdicts."""
    lines = [f"# frames benchmark ({payload['vectors']} vectors, top_k {payload['top_k']})", ""]
    latency = payload["results"]["latency"]
    lines += [] if not latency else ["| N | system | ATTENTION p50 ms | p95 ms | p50 without embedding | p95 without embedding | "
              "query embedding p50 ms | round trips | commands | SELF cached p50 ms | SELF cached round trips | "
              "learn blocks/s | bytes/block | PING ms | load before |", "|" + "---|" * 15]
    for n, row in latency.items():
        for system in ("redmem", "elfmem"):
            if system not in row:
                continue
            a, s, i = row[system]["attention"], row[system]["self"], row[system]["ingest"]
            lines.append(
                f"| {int(n):,} | {system} | {a['p50']:.2f} | {a['p95']:.2f} | {a['p50_without_embedding']:.2f} | "
                f"{a['p95_without_embedding']:.2f} | {_fmt(a.get('embed_ms_p50'))} | {_fmt(a.get('round_trips'), 0)} | "
                f"{_fmt(a.get('commands'), 0)} | {s['cached_ms']['p50']:.3f} | {_fmt(s.get('cached_round_trips'), 0)} | "
                f"{_fmt(i.get('blocks_per_s'), 0)} | {_fmt(i.get('bytes_per_block'), 0)} | {_fmt(row[system].get('ping_ms'), 3)} | "
                f"{row['load_before'][0]:.2f} |")
    if latency:
        lines += ["", "| target | measured | verdict |", "|---|---|---|", *verdicts(latency), ""]
    side = [(n, row) for n, row in latency.items() if "elfmem" in row and "redmem" in row]
    if side:
        lines += [f"## Side by side with elfmem {payload['elfmem']} (the same blocks, graph, vectors; "
                  f"the first {payload['elfmem_queries']} questions)", "",
                  "| N | redmem ATTENTION p50 ms (w/o embedding) | elfmem | elfmem / redmem | redmem SELF cached p50 ms | "
                  "elfmem | redmem learn blocks/s | elfmem learn + consolidate blocks/s |", "|---|---|---|---|---|---|---|---|"]
        for n, row in side:
            mine, theirs = row["redmem"], row["elfmem"]
            ours = mine["attention"]["first_questions"]["p50_without_embedding"]
            lines.append(f"| {int(n):,} | {ours:.2f} | {theirs['attention']['p50_without_embedding']:.1f} | "
                         f"{theirs['attention']['p50_without_embedding'] / ours:,.0f}x | "
                         f"{mine['self']['cached_ms']['p50']:.2f} | {theirs['self']['cached_ms']['p50']:.2f} | "
                         f"{mine['ingest']['blocks_per_s']:,.0f} | {theirs['ingest']['blocks_per_s']:,.0f} |")
        lines.append("")
    if "quality" in payload["results"]:
        q = payload["results"]["quality"]
        lines += [f"## LoCoMo ({q['questions']} questions, {q['turns']} turns, {len(q['conversations'])} conversations)",
                  "", "| system | R@1 | R@5 | R@10 | MRR | tokens/context (mean) | p50 ms |", "|---|---|---|---|---|---|---|"]
        for label, r in q["results"].items():
            lines.append(f"| {label} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['recall@10']:.3f} | "
                         f"{r['mrr']:.3f} | {r['tokens_per_context']['mean']:.0f} | {r['assemble_ms']['p50']:.2f} |")
    if "sequence" in payload["results"]:
        q = payload["results"]["sequence"]
        lines += ["", f"## LoCoMo in sequence ({q['questions']} questions, {q['turns']} turns, "
                  f"{len(q['conversations'])} conversations; the clock advances {q['hours_per_question']} active hour "
                  f"per question; top_k {q['top_k']})", "", "| run | R@1 | R@5 | R@10 | MRR |", "|---|---|---|---|---|"]
        for label, r in q["results"].items():
            lines.append(f"| {label} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['recall@10']:.3f} | {r['mrr']:.3f} |")
        if "halves" in q:
            lines += ["", "R@5 by half of the conversations (" + "; ".join(
                f"{half}: {', '.join(ids)}" for half, ids in q["halves"].items()) + ")", "",
                "| run | " + " | ".join(f"R@5 {half}" for half in q["halves"]) + " |",
                "|---|" + "---|" * len(q["halves"])]
            for label, r in q["results"].items():
                lines.append(f"| {label} | " + " | ".join(
                    f"{r['halves'][half]['recall@5']:.3f}" if half in r["halves"] else "-"  # a half with no question
                    for half in q["halves"]) + " |")
    return "\n".join(lines) + "\n"


def verdicts(latency: dict[str, Any]) -> list[str]:
    """Rows of the targets table from the redmem figures measured."""
    def p50(n: str) -> float | None:
        return latency.get(n, {}).get("redmem", {}).get("attention", {}).get("p50_without_embedding")

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    rows = []
    if p50("100000") is not None:
        rows.append(f"| {TARGETS['p50_100k']} | {p50('100000'):.2f} ms | {verdict(p50('100000') <= 5)} |")
    if p50("100000") is not None and p50("10000") is not None:
        growth = p50("100000") / p50("10000")
        rows.append(f"| {TARGETS['growth']} | {growth:.2f} | {verdict(growth <= 2)} |")
    trips = {n: row["redmem"]["attention"]["round_trips_max"] for n, row in latency.items() if "redmem" in row}
    if trips:
        rows.append(f"| {TARGETS['round_trips']} | max {max(trips.values())} "
                    f"({', '.join(f'{t} at {int(n):,}' for n, t in trips.items())}) | {verdict(max(trips.values()) <= 3)} |")
    selves = {n: row["redmem"]["self"]["cached_round_trips_max"] for n, row in latency.items() if "redmem" in row}
    if selves:
        rows.append(f"| {TARGETS['self_cached']} | max {max(selves.values())} | {verdict(max(selves.values()) == 1)} |")
    return rows


def _fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


if __name__ == "__main__":
    main()
