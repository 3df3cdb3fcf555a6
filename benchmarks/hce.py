"""The HCE pipeline: retrieve_context latency at growing session sizes, and LoCoMo evidence recall.

    .venv/bin/python benchmarks/hce.py                                  # 1k and 10k, no LoCoMo
    .venv/bin/python benchmarks/hce.py --sizes 1000,10000,100000 --data ../shared/data/locomo-dev.json
    .venv/bin/python benchmarks/hce.py --sizes "" --data ../shared/data/locomo-dev.json --follow-members \
        --out hce_follow_members                                        # topic vectors that follow members
    .venv/bin/python benchmarks/hce.py --sizes "" --data ../shared/data/locomo-dev.json --nest-threshold 0.35 \
        --out hce_nested                                                # topics grouped under parent topics

Latency: one session per size holds N interactions (turn pairs) of a synthetic conversation:
each turn pair belongs to one of 200 topics (12 topic words plus ``common.synthetic_texts``
words) and names two people from a pool of 3,000 (Zipf-distributed, so a few names are hubs).
Vectors: ``common.hash_vectors`` at 256 dimensions, through a timed provider, so the query's
embedding is timed apart (``embed_ms``) and excluded from ``retrieve_ms``. Each query is three
words of a stored turn and one person's name (a graph seed), asked through
``HCEPipeline.retrieve_candidates(query, query_vector=...)``; round trips are counted at the client.
The queries are asked twice: ``retrieve_ms`` the first time (every candidate's text counted
afresh), ``retrieve_again_ms`` the second (the counts remembered); ``loaded_p50`` is how many
interactions a query loads. On a shared, loaded host the wall-clock milliseconds mostly measure
waiting for a core, so each size also reports the calling thread's CPU time per query
(``retrieve_cpu_ms``: the pipeline's own work, the worker thread's vector work excluded) and the
server's command time per query (``server_ms_per_query``, from ``INFO commandstats``).

Quality: each LoCoMo dev conversation is one session; consecutive turns form one interaction
(the first speaker's turn as ``user``, the next as ``assistant``); every question of categories
1-4 is asked once all turns are stored. A question's evidence is recalled when any evidence turn
is in the context block (an interaction holds two turns; the focus buffer's entries one).
ContextAssembler answers the same questions over the seed's Memory model (one turn per memory,
hybrid retrieval) with the same token budget and the exact cl100k_base counter; both use the
same MiniLM vectors. The data set is read from the path given and never copied (CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import pickle
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import CommandCounter, hash_vectors, machine, summary, synthetic_texts, write_results
from locomo import CATEGORIES, load
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.hce import HCEInteraction, HCEPipeline, HCETopic, SemanticTree
from redmem.recipes.hce._tree import FOLLOW_MEMBERS, NEST_THRESHOLD
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, memory_model, minilm_function

log = logging.getLogger("benchmarks.hce")

DIMENSIONS = 256
TOPICS = 200
PEOPLE = 3000
CHUNK = 250
TARGETS = {"p50_ms_at_100k": 10.0, "growth_100k_over_10k": 2.0}
#: Seconds a reply may take: an import's transaction of CHUNK exchanges can pass the library's
#: default (1.2 s) on a loaded host.
SOCKET_TIMEOUT = 60.0


# ----------------------------------------------------------------------------- synthetic sessions
def _people(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "ta", "su", "vo", "pe", "dri", "an", "el", "or", "zi", "nu", "ba"]
    names: dict[str, None] = {}
    while len(names) < PEOPLE:
        names["".join(rng.choices(syllables, k=rng.randint(2, 3))).capitalize() + rng.choice("xyzq")] = None
    return list(names)


def conversation(n: int, seed: int = 7) -> tuple[list[tuple[str, str]], list[str]]:
    """``n`` turn pairs and a query pool: three words of a stored turn plus a person's name."""
    rng = random.Random(seed)
    people = _people(rng)
    weights = [1 / (rank + 1) for rank in range(PEOPLE)]
    words = synthetic_texts(2 * n + 12 * TOPICS, seed=seed)
    topic_words = [" ".join(words[2 * n + t].split()[:12]) for t in range(TOPICS)]
    pairs, queries = [], []
    for i in range(n):
        a, b = rng.choices(people, weights, k=2)
        topic = topic_words[rng.randrange(TOPICS)]
        pairs.append((f"{topic} {words[2 * i]} with {a} and {b}", f"{words[2 * i + 1]} about {a}"))
    for _ in range(200):
        user, _ = pairs[rng.randrange(n)]
        picked = rng.sample(user.split()[:-4], 3)
        queries.append(f"{' '.join(picked)} {rng.choices(people, weights)[0]}")
    return pairs, queries


#: Set on a server once a session of N interactions is stored there: ``--reuse`` skips the ingest when it is.
LOADED_KEY = "hce-benchmark:loaded:{n}"


def latency(size: int, queries_per_size: int, reuse: bool = False) -> dict[str, Any]:
    """One size's figures; with ``reuse`` a session a former run left on the server (``LOADED_KEY``)
    is asked again instead of being stored anew (then no ingest figures)."""
    provider = TimedProvider(lambda texts: hash_vectors(texts, DIMENSIONS), DIMENSIONS)
    pipe = HCEPipeline(session_id=f"bench-{size}", embedding_provider=provider)
    pairs, queries = conversation(size)
    client = HCEInteraction._meta.client
    reused = reuse and bool(client.exists(LOADED_KEY.format(n=size)))
    started, embedded = time.perf_counter(), provider.seconds
    if not reused:
        for start in range(0, size, CHUNK):
            pipe.update_many(pairs[start:start + CHUNK])
        client.set(LOADED_KEY.format(n=size), 1)
    ingest_s, ingest_embed_s = time.perf_counter() - started, provider.seconds - embedded
    vectors = []
    embed_ms = []
    for text in queries[:queries_per_size]:
        began = time.perf_counter()
        vectors.append(pipe.embed_query(text))
        embed_ms.append((time.perf_counter() - began) * 1000)
    pipe.retrieve_candidates(queries[0], query_vector=vectors[0])  # the process's matrices load here
    CommandCounter.install()
    client.config_resetstat()
    rows = [_timed(pipe, text, vector) for text, vector in zip(queries, vectors)]
    server_ms = _server_ms(client) / len(rows)
    again = [_timed(pipe, text, vector)["ms"] for text, vector in zip(queries, vectors)]
    topics = HCETopic.query.filter(session_id=pipe.session_id).count()
    return {
        "interactions": size, "topics": topics, "entities": len(pipe.graph.entities()),
        "reused": reused, "ingest_seconds": None if reused else ingest_s,
        "ingest_embed_seconds": None if reused else ingest_embed_s,
        "ingest_per_s_excluding_embedding": None if reused else size / max(ingest_s - ingest_embed_s, 1e-9),
        "retrieve_ms": summary([r["ms"] for r in rows]), "retrieve_again_ms": summary(again),
        "retrieve_cpu_ms": summary([r["cpu_ms"] for r in rows]), "server_ms_per_query": server_ms,
        "embed_ms": summary(embed_ms), "loaded_p50": statistics.median(r["loaded"] for r in rows),
        "round_trips": {"p50": statistics.median(r["round_trips"] for r in rows),
                        "max": max(r["round_trips"] for r in rows)},
        "selected_p50": statistics.median(r["selected"] for r in rows),
        "queries_with_graph_candidates": sum(r["graph"] > 0 for r in rows) / len(rows),
        "queries": len(rows),
    }


def _timed(pipe: HCEPipeline, text: str, vector: np.ndarray) -> dict[str, Any]:
    """One retrieval: its milliseconds, round trips, interactions loaded, selected and graph candidates."""
    before = CommandCounter.snapshot()
    began, cpu = time.perf_counter(), time.thread_time()
    found = pipe.retrieve_candidates(text, query_vector=vector)
    ms, cpu_ms = (time.perf_counter() - began) * 1000, (time.thread_time() - cpu) * 1000
    return {"ms": ms, "cpu_ms": cpu_ms, "round_trips": CommandCounter.since(before)[0], "selected": len(found.selected),
            "loaded": sum(c.source != "buffer" for c in found.candidates),
            "graph": sum(c.metadata.get("sources", [c.source])[0] == "graph" for c in found.candidates)}


def _server_ms(client: Any) -> float:
    """Milliseconds the server spent on commands since its statistics were reset (a transaction's
    commands are counted once, not again in its EXEC)."""
    stats = client.info("commandstats")
    return sum(v["usec"] for name, v in stats.items() if name not in ("cmdstat_exec", "cmdstat_config|resetstat")) / 1000


# ----------------------------------------------------------------------------- LoCoMo
def pairs_of(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Consecutive turns, two by two (a last odd turn alone, with an empty reply)."""
    return [turns[i:i + 2] for i in range(0, len(turns), 2)]


def hce_sessions(talks: list[dict[str, Any]], provider: TimedProvider, follow_members: bool = FOLLOW_MEMBERS,
                 nest_threshold: float | None = NEST_THRESHOLD) -> dict[str, dict[str, list[str]]]:
    """Each conversation stored as one HCE session (topics following their members or not, nested
    under groups or not); per session, each interaction's dia ids."""
    sessions = {}
    for talk in talks:
        tree = SemanticTree(talk["agent_id"], follow_members=follow_members, nest_threshold=nest_threshold)
        pipe = HCEPipeline(session_id=talk["agent_id"], embedding_provider=provider, tree=tree)
        pairs = pairs_of(talk["turns"])
        ids = pipe.update_many([(p[0]["text"], p[1]["text"] if len(p) > 1 else "") for p in pairs])
        sessions[talk["agent_id"]] = {rid: [t["dia_id"] for t in p] for rid, p in zip(ids, pairs)}
    return sessions


def hce_locomo(talks: list[dict[str, Any]], provider: TimedProvider, budget: int,
               sessions: dict[str, dict[str, list[str]]], nest_threshold: float | None = NEST_THRESHOLD,
               **options: Any) -> list[dict[str, Any]]:
    """Every question asked of its conversation's session (the exact cl100k_base counter, the
    default), searched as the sessions were built (nested or not)."""
    rows = []
    for talk in talks:
        tree = SemanticTree(talk["agent_id"], nest_threshold=nest_threshold)
        pipe = HCEPipeline(session_id=talk["agent_id"], context_budget=budget, embedding_provider=provider, tree=tree,
                           **options)
        dia, focus = sessions[talk["agent_id"]], pipe.focus.get_recent()
        for question in talk["questions"]:
            began = time.perf_counter()
            found = pipe.retrieve_candidates(question["question"])
            ms = (time.perf_counter() - began) * 1000
            rows.append({"dia_ids": shown(found.selected, dia, focus), "pool": shown(found.candidates, dia, focus),
                         "ms": ms,
                         "tokens": found.token_count, "items": len(found.selected)})
    return rows


def shown(candidates: list[Any], dia: dict[str, list[str]], focus: list[Any]) -> list[str]:
    """The dia ids of the turns ``candidates`` show (a focus entry one turn, an interaction two)."""
    out = []
    for c in candidates:
        if c.source == "buffer":
            entry = focus[c.metadata["position"]]
            out.append(dia[entry.interaction_id][0 if entry.role == "user" else -1])
        else:
            out += dia[c.metadata["interaction_id"]]
    return out


def assembler_memories(talks: list[dict[str, Any]], provider: TimedProvider) -> tuple[type, dict[str, str]]:
    """The seed's Memory model holding every turn, one memory each; each memory's dia id."""
    model = memory_model("HCELocomoMemory", provider)
    dia = {}
    for talk in talks:
        records = [model(agent_id=talk["agent_id"], content=t["text"]) for t in talk["turns"]]
        model.embedding.embed_many(records)
        model.save_many(records)
        dia.update({r.memory_id: t["dia_id"] for r, t in zip(records, talk["turns"])})
    return model, dia


def assembler_locomo(talks: list[dict[str, Any]], model: type, dia: dict[str, str], budget: int,
                     ) -> list[dict[str, Any]]:
    """Every question through a ContextAssembler of the default retrieval (hybrid), exact counts."""
    assembler = ContextAssembler(model, max_items=100, max_tokens=budget, output_format="content",
                                 token_counter="cl100k_base")
    rows = []
    for talk in talks:
        for question in talk["questions"]:
            began = time.perf_counter()
            result = assembler.assemble(query_cues={"query": question["question"]}, agent_id=talk["agent_id"])
            ms = (time.perf_counter() - began) * 1000
            rows.append({"dia_ids": [dia[r.memory_id] for r in result.records], "ms": ms,
                         "tokens": result.metadata["token_count"], "items": len(result.records)})
    return rows


def recall(rows: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, Any]:
    hits = [bool(set(r["dia_ids"]) & set(q["evidence"])) for r, q in zip(rows, questions)]
    pool = [bool(set(r.get("pool", r["dia_ids"])) & set(q["evidence"])) for r, q in zip(rows, questions)]
    complete = [bool(q["evidence"]) and set(q["evidence"]) <= set(r["dia_ids"]) for r, q in zip(rows, questions)]
    by_category: dict[str, list[bool]] = {}
    for hit, q in zip(hits, questions):
        by_category.setdefault(CATEGORIES[q["category"]], []).append(hit)
    return {
        "evidence_recall_any": statistics.fmean(hits), "evidence_recall_all": statistics.fmean(complete),
        "pool_recall_any": statistics.fmean(pool),
        "by_category": {k: statistics.fmean(v) for k, v in sorted(by_category.items())},
        "tokens_mean": statistics.fmean(r["tokens"] for r in rows),
        "items_mean": statistics.fmean(r["items"] for r in rows),
        "ms": summary([r["ms"] for r in rows]), "questions": len(rows),
    }


def _lazy_minilm() -> Any:
    """MiniLM, loaded at its first call (a fully cached run never loads it)."""
    model: list[Any] = []

    def embed(texts: list[str]) -> Any:
        if not model:
            model.append(minilm_function())
        return model[0](texts)
    return embed


def halves(talks: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The dev half (the first half of the conversations, where HCE's defaults were tuned), the
    held-out half (the rest) and all."""
    cut = (len(talks) + 1) // 2
    return {"dev": talks[:cut], "held-out": talks[cut:], "all": talks}


def cached_vectors(function: Any, path: Path | None) -> Any:
    """``function`` (texts -> vectors) with its vectors kept by text in the pickle ``path``
    (written after each new batch; None: no cache): a rerun embeds only the texts it has not seen."""
    if path is None:
        return function
    cache: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}

    def embed(texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            cache.update(zip(missing, np.asarray(function(missing), dtype=np.float32)))
            path.write_bytes(pickle.dumps(cache))
        return np.stack([cache[t] for t in texts])
    return embed


def quality(path: Path, budgets: list[int], conversations: int | None, vector_cache: Path | None = None,
            follow_members: bool = FOLLOW_MEMBERS, nest_threshold: float | None = NEST_THRESHOLD) -> dict[str, Any]:
    talks = load(path, conversations)
    questions = [q for t in talks for q in t["questions"]]
    provider = TimedProvider(cached_vectors(_lazy_minilm(), vector_cache), 384,
                             queries=[q["question"] for q in questions])
    parts = {name: [t["agent_id"] for t in part] for name, part in halves(talks).items()}
    out: dict[str, Any] = {"conversations": [t["agent_id"] for t in talks], "questions": len(questions),
                           "halves": parts}
    redmem.configure(key_prefix="hce-q")
    out["follow_members"], out["nest_threshold"] = follow_members, nest_threshold
    sessions = hce_sessions(talks, provider, follow_members, nest_threshold)
    model, dia = assembler_memories(talks, provider)
    for budget in budgets:
        rows = {"HCEPipeline": hce_locomo(talks, provider, budget, sessions, nest_threshold),
                "ContextAssembler (hybrid)": assembler_locomo(talks, model, dia, budget)}
        out[str(budget)] = {name: {half: recall(*_part(found, talks, ids)) for half, ids in parts.items()}
                            for name, found in rows.items()}
        log.info("budget %d: %s", budget, {k: {h: round(r["evidence_recall_any"], 3) for h, r in v.items()}
                                           for k, v in out[str(budget)].items()})
    return out


def _part(rows: list[dict[str, Any]], talks: list[dict[str, Any]], ids: list[str],
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows and questions of the conversations ``ids`` (rows are in question order)."""
    picked_rows, picked_questions, start = [], [], 0
    for talk in talks:
        end = start + len(talk["questions"])
        if talk["agent_id"] in ids:
            picked_rows += rows[start:end]
            picked_questions += talk["questions"]
        start = end
    return picked_rows, picked_questions


# ----------------------------------------------------------------------------- report
def markdown(payload: dict[str, Any]) -> str:
    """The results as the tables of docs/benchmarks.md."""
    m = payload["machine"]
    lines = [
        "# HCE pipeline benchmark", "",
        f"{m['system']}, {m['cores']} cores, Python {m['python']}, Redis {payload.get('redis_version')}; "
        f"load average {payload['load_average']['before'][0]:.1f} at the start, "
        f"{payload['load_average']['after'][0]:.1f} at the end; git {m['git']}, {m['date']}.",
        *([f"Command: `{payload['command']}`."] if "command" in payload else []),
    ]
    if payload["latency"]:
        lines += ["", "| interactions | topics | entities | retrieve p50 / p95 ms | asked again p50 / p95 ms "
                  "| client CPU p50 ms | server ms / query | embed p50 ms | round trips p50 / max | loaded p50 "
                  "| ingest / s (excl. embedding) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for size, row in payload["latency"].items():
        again = row.get("retrieve_again_ms", {"p50": float("nan"), "p95": float("nan")})
        lines.append(
            f"| {int(size):,} | {row['topics']:,} | {row['entities']:,} | {row['retrieve_ms']['p50']:.2f} / "
            f"{row['retrieve_ms']['p95']:.2f} | {again['p50']:.2f} / {again['p95']:.2f} | "
            f"{row.get('retrieve_cpu_ms', {}).get('p50', float('nan')):.2f} | "
            f"{row.get('server_ms_per_query', float('nan')):.2f} | "
            f"{row['embed_ms']['p50']:.3f} | {row['round_trips']['p50']:g} / "
            f"{row['round_trips']['max']} | {row.get('loaded_p50', float('nan')):g} | "
            f"{'reused' if row.get('reused') else format(row['ingest_per_s_excluding_embedding'], '.0f')} |")
    if "growth_100k_over_10k" in payload:
        lines += ["", f"p50 growth 100k / 10k: {payload['growth_100k_over_10k']:.2f} (target <= 2); "
                      f"p50 at 100k: {payload['latency']['100000']['retrieve_ms']['p50']:.2f} ms (target <= 10)."]
    if "locomo" in payload:
        q = payload["locomo"]
        halves_of = q.get("halves", {})
        lines += ["", f"LoCoMo dev: {len(q['conversations'])} conversations, {q['questions']} questions "
                      "(categories 1-4); evidence recall of the context block (any / all evidence turns shown), "
                      "and of HCE's candidate pool. HCE's defaults were tuned on the dev half "
                      f"({', '.join(halves_of.get('dev', []))}); the held-out half "
                      f"({', '.join(halves_of.get('held-out', []))}) was not looked at. Same MiniLM vectors, "
                      "same exact cl100k_base counter.", "",
                  "| budget (tokens) | system | half | recall any | recall all | pool any | multi-hop | temporal "
                  "| open-domain | single-hop | items | tokens | p50 ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for budget, systems in ((b, v) for b, v in q.items() if b.isdigit()):
            for name, parts in systems.items():
                for half, r in parts.items():
                    c = r["by_category"]
                    lines.append(
                        f"| {budget} | {name} | {half} | {r['evidence_recall_any']:.3f} | "
                        f"{r['evidence_recall_all']:.3f} | {r['pool_recall_any']:.3f} | "
                        f"{c.get('multi-hop', 0):.3f} | {c.get('temporal', 0):.3f} | {c.get('open-domain', 0):.3f} | "
                        f"{c.get('single-hop', 0):.3f} | {r['items_mean']:.1f} | {r['tokens_mean']:.0f} | "
                        f"{r['ms']['p50']:.1f} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="interactions per session, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per size")
    parser.add_argument("--data", type=Path, default=None, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--budgets", default="500,1500", help="context budgets (tokens) for LoCoMo")
    parser.add_argument("--conversations", type=int, default=None, help="use the first N LoCoMo conversations")
    parser.add_argument("--vector-cache", type=Path, default=None,
                        help="a pickle of MiniLM vectors by text, read and extended (kept outside the repo)")
    parser.add_argument("--follow-members", action="store_true",
                        help="LoCoMo sessions whose topic vectors follow their members (SemanticTree option)")
    parser.add_argument("--nest-threshold", type=float, default=NEST_THRESHOLD,
                        help="LoCoMo sessions whose topics group under parent topics at this cosine (SemanticTree option)")
    parser.add_argument("--server", default=None,
                        help="latency: a Redis URL to use (kept afterwards) instead of a fresh private server")
    parser.add_argument("--reuse", action="store_true",
                        help="latency: with --server, ask the sessions a former run left there instead of storing them")
    parser.add_argument("--out", default="hce", help="results/<out>.json ('' writes nothing)")
    args = parser.parse_args(argv)
    if args.reuse and not args.server:
        parser.error("--reuse needs --server URL")
    if args.data is not None and args.server:
        parser.error("--data (LoCoMo) runs on a private server: leave out --server")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    started, load_before = time.perf_counter(), os.getloadavg()
    payload: dict[str, Any] = {"benchmark": "hce", "machine": machine(), "targets": TARGETS, "latency": {},
                               "command": " ".join(["benchmarks/hce.py", *(sys.argv[1:] if argv is None else argv)])}
    with contextlib.ExitStack() as stack:
        if args.server:
            redmem.connect(args.server, socket_timeout=SOCKET_TIMEOUT)
            payload["redis_version"] = HCEInteraction._meta.client.info("server")["redis_version"]
        else:
            server = stack.enter_context(EmbeddedServer())
            redmem.connect(server.url, socket_timeout=SOCKET_TIMEOUT)
            payload["redis_version"] = server.version.get("redis_version")
        for size in (int(s) for s in args.sizes.split(",") if s):
            payload["latency"][str(size)] = result = latency(size, args.queries, args.reuse)
            result["load_after"] = list(os.getloadavg())
            log.info("%d: retrieve p50 %.2f ms p95 %.2f ms, server %.2f ms/query, round trips %s", size,
                     result["retrieve_ms"]["p50"], result["retrieve_ms"]["p95"], result["server_ms_per_query"],
                     result["round_trips"])
            if not args.server:
                HCEInteraction._meta.client.flushdb()
        if args.data is not None:
            payload["locomo"] = quality(args.data, [int(b) for b in args.budgets.split(",")], args.conversations,
                                        args.vector_cache, args.follow_members, args.nest_threshold)
    sizes = payload["latency"]
    if "10000" in sizes and "100000" in sizes:
        payload["growth_100k_over_10k"] = sizes["100000"]["retrieve_ms"]["p50"] / sizes["10000"]["retrieve_ms"]["p50"]
    payload["load_average"] = {"before": list(load_before), "after": list(os.getloadavg())}
    payload["seconds"] = time.perf_counter() - started
    if args.out:
        write_results(args.out, payload, markdown(payload))
    return payload


if __name__ == "__main__":
    main()
