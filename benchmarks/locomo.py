"""LoCoMo retrieval quality, LLM-free, for redmem and popoto 1.10.1 in the same run.

    .venv/bin/python benchmarks/locomo.py --data ../shared/data/locomo-dev.json
    .venv/bin/python benchmarks/locomo.py --data ... --quick        # first conversation only

Every dialog turn is stored as one memory of its conversation's agent (agent_id = sample id);
every question of categories 1-4 is asked through ``ContextAssembler.assemble()`` with that
agent_id and ``max_items=10``; the returned memories are scored against the question's
evidence turn ids: any-hit Recall@1/@5/@10 and MRR (reciprocal rank of the first evidence
turn within the 10, else 0), overall and per category. Evidence ids are read with the pattern
``D<session>:<turn>`` (a few ids in the file are written ``D8:6; D9:17`` or ``D:11:26``); a
question with no readable id counts as a miss. Tokens per context: the exact cl100k_base count
of ``result.formatted`` (the default ``structured`` format).

Systems (same server, same run; popoto in its own venv, see popoto_bridge.py):

- ``redmem``: the seed's Memory model, one turn's text per memory; modes lexical, hybrid
  (MiniLM int8), composite (``score_weights`` relevance 0.6 / confidence 0.3, fused with BM25).
- ``push``: the same model plus a CyclicDecayField on ``importance``, so every memory is above
  the surfacing threshold and the push path offers memories unrelated to the question; modes
  lexical and hybrid. Scored as the others, plus the proactive items of each context (the
  records ``result.proactive`` returns): how many there are, and the share that are evidence
  turns of the question.
- ``conversation``: ``redmem.recipes.conversation.ConversationMemory`` via
  ``ingest_conversation(turns, agent_id, window=2)``; modes lexical, hybrid (RRF with the
  query-adaptive weights) and ``convex`` (the recipe's ``conversation_assembler()``: hybrid,
  convex score fusion, keyword and vector lists weighing the same).
- ``popoto``: the same Memory fields in popoto; modes lexical, hybrid (same MiniLM files),
  and lexical over turns prefixed with the session date (``popoto-dated``).

``--reproducible`` freezes the clock every stamp and score reads (``time.time``) and draws
record ids from a seeded generator, so two runs, or two revisions of the library, give the
same results to the last digit (a wall clock makes decay and cyclic scores, and random ids make
the order of ties, differ run to run); it is how a refactor is shown to change nothing.

The data set is read from the path given and never copied (CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import re
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json

import redmem
from common import hash_vectors, machine, summary, write_json
from peers.popoto_bridge import PopotoProcess
from redmem.context._tokens import exact_counter
from redmem.embeddings._local import bundled_model_path, bundled_tokenizer_path
from redmem.recipes.conversation import ConversationMemory, conversation_assembler, ingest_conversation
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, assemble_many, memory_model, minilm_function

log = logging.getLogger("benchmarks.locomo")

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
#: Targets and reference figures quoted from the issue.
TARGETS = {"recall@5": 0.70, "recall@1": 0.40}
REFERENCE = {
    "popoto lexical (reference)": {"recall@1": 0.324, "recall@5": 0.549, "recall@10": 0.635, "mrr": 0.422},
    "popoto lexical, date-prefixed (reference)": {"recall@1": 0.347, "recall@5": 0.573, "recall@10": 0.647,
                                                  "mrr": 0.442},
}


# ----------------------------------------------------------------------------- data
def load(path: Path, conversations: int | None = None) -> list[dict[str, Any]]:
    """Conversations: ``{agent_id, turns: [{dia_id, speaker, text, session, said_at}], questions}``."""
    samples = json.loads(path.read_text())[:conversations]
    out = []
    for sample in samples:
        talk, turns, n = sample["conversation"], [], 1
        while f"session_{n}" in talk:
            for turn in talk[f"session_{n}"]:
                turns.append({"dia_id": turn["dia_id"], "speaker": turn["speaker"], "text": turn["text"],
                              "session": str(n), "said_at": talk.get(f"session_{n}_date_time", "")})
            n += 1
        questions = [
            {"question": qa["question"], "category": qa["category"],
             "evidence": sorted({f"D{a}:{b}" for e in qa["evidence"] for a, b in EVIDENCE.findall(str(e))})}
            for qa in sample["qa"] if qa.get("category") in CATEGORIES
        ]
        out.append({"agent_id": sample["sample_id"], "turns": turns, "questions": questions})
    return out


# ----------------------------------------------------------------------------- scoring
def first_hit(ranked: list[str], evidence: list[str]) -> int | None:
    """0-based rank of the first evidence turn in ``ranked``, or None."""
    wanted = set(evidence)
    return next((i for i, dia in enumerate(ranked) if dia in wanted), None)


def scores(hits: list[int | None]) -> dict[str, float]:
    n = len(hits) or 1
    return {
        "recall@1": sum(h is not None and h < 1 for h in hits) / n,
        "recall@5": sum(h is not None and h < 5 for h in hits) / n,
        "recall@10": sum(h is not None and h < 10 for h in hits) / n,
        "mrr": sum(1 / (h + 1) for h in hits if h is not None) / n,
        "questions": len(hits),
    }


def proactive_share(rows: list[dict], questions: list[dict]) -> dict[str, float]:
    """Proactive items per context, and how many of them are evidence turns of their question."""
    shown = evidence = 0
    for row, question in zip(rows, questions):
        wanted = set(question["evidence"])
        shown += len(row["proactive_dia_ids"])
        evidence += sum(dia in wanted for dia in row["proactive_dia_ids"])
    n = len(rows) or 1
    return {"items": shown, "per_context": shown / n, "evidence": evidence, "not_evidence": shown - evidence,
            "evidence_share": evidence / shown if shown else 0.0,
            "not_evidence_per_context": (shown - evidence) / n}


def evaluate(rows: list[dict], questions: list[dict], count_tokens: Any) -> dict[str, Any]:
    """Overall and per-category scores, tokens and latency of one system's answers (and its proactive
    items, for a system that reports them)."""
    hits, by_category = [], defaultdict(list)
    for row, question in zip(rows, questions):
        hit = first_hit(row["dia_ids"], question["evidence"])
        hits.append(hit)
        by_category[CATEGORIES[question["category"]]].append(hit)
    tokens = [count_tokens(row["formatted"]) for row in rows]
    pushed = {"proactive": proactive_share(rows, questions)} if rows and "proactive_dia_ids" in rows[0] else {}
    return {
        **scores(hits),
        **pushed,
        "by_category": {name: scores(found) for name, found in sorted(by_category.items())},
        "tokens_per_context": {"mean": statistics.fmean(tokens), "p50": statistics.median(tokens)},
        "assemble_ms": summary([row["ms"] for row in rows]),
        "round_trips_p50": statistics.median(row["round_trips"] for row in rows),
    }


# ----------------------------------------------------------------------------- systems
def run_redmem(conversations: list[dict], provider: TimedProvider, modes: list[str],
               push: bool = False) -> dict[str, list[dict]]:
    hybrid_model = memory_model("LocomoPushMemory" if push else "LocomoMemory", provider, push=push)
    answers: dict[str, list[dict]] = {mode: [] for mode in modes}
    for talk in conversations:
        records = [hybrid_model(agent_id=talk["agent_id"], content=t["text"]) for t in talk["turns"]]
        hybrid_model.embedding.embed_many(records)
        hybrid_model.save_many(records)
        to_dia = {r.memory_id: t["dia_id"] for r, t in zip(records, talk["turns"])}
        _ask(answers, hybrid_model, talk, to_dia, modes, provider)
    return answers


def run_conversation(conversations: list[dict], provider: TimedProvider, modes: list[str]) -> dict[str, list[dict]]:
    redmem.configure(embedding_provider=provider)
    answers: dict[str, list[dict]] = {mode: [] for mode in modes}
    for talk in conversations:
        records = ingest_conversation(talk["turns"], talk["agent_id"], window=2)
        to_dia = {r.memory_id: t["dia_id"] for r, t in zip(records, talk["turns"])}
        _ask(answers, ConversationMemory, talk, to_dia, modes, provider)
    return answers


def _ask(answers: dict, model: type, talk: dict, to_dia: dict, modes: list[str], provider: TimedProvider) -> None:
    queries = [q["question"] for q in talk["questions"]]
    for mode in modes:
        recipe = conversation_assembler(model, max_items=10) if mode == "convex" else None
        for row in assemble_many(model, mode, talk["agent_id"], queries, provider=provider, formatted=True,
                                 assembler=recipe):
            row["dia_ids"] = [to_dia[i] for i in row["ids"]]
            row["proactive_dia_ids"] = [to_dia[i] for i in row["proactive"]]
            answers[mode].append(row)


def run_popoto(url: str, conversations: list[dict], modes: list[str]) -> dict[str, list[dict]]:
    answers: dict[str, list[dict]] = {}
    paths = {"model_path": str(bundled_model_path()), "tokenizer_path": str(bundled_tokenizer_path())}
    with PopotoProcess(url) as popoto:
        for mode in modes:
            name = {"lexical": "PopotoLexical", "hybrid": "PopotoHybrid", "dated": "PopotoDated"}[mode]
            popoto.call("setup", name=name, embedding="minilm" if mode == "hybrid" else None, **paths)
            answers[mode] = []
            for talk in conversations:
                texts = [(f"[{t['said_at']}] " if mode == "dated" else "") + t["text"] for t in talk["turns"]]
                ids = popoto.call("ingest", name=name, agent_id=talk["agent_id"], texts=texts)["ids"]
                to_dia = {i: t["dia_id"] for i, t in zip(ids, talk["turns"])}
                queries = [q["question"] for q in talk["questions"]]
                rows = popoto.call("assemble", name=name, agent_id=talk["agent_id"], queries=queries,
                                   mode="lexical" if mode == "dated" else mode, formatted=True)["results"]
                for row in rows:
                    row["dia_ids"] = [to_dia[i] for i in row["ids"]]
                answers[mode].extend(rows)
    return answers


# ----------------------------------------------------------------------------- main
#: The instant ``--reproducible`` stops the clock at (2026-01-01 00:00 UTC).
FROZEN_EPOCH = 1_767_225_600.0


@contextlib.contextmanager
def reproducible(enabled: bool, seed: int = 0) -> Any:
    """Inside the block: ``time.time()`` is ``FROZEN_EPOCH`` and ``uuid.uuid4()`` comes from a seeded generator."""
    if not enabled:
        yield
        return
    clock, ids, rng = time.time, uuid.uuid4, random.Random(seed)
    time.time = lambda: FROZEN_EPOCH
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    try:
        yield
    finally:
        time.time, uuid.uuid4 = clock, ids


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="path of locomo-dev.json (never copied)")
    parser.add_argument("--quick", action="store_true", help="first conversation only")
    parser.add_argument("--conversations", type=int, default=None, help="use the first N conversations")
    parser.add_argument("--max-questions", type=int, default=None, help="ask at most N questions per conversation")
    parser.add_argument("--systems", default="redmem,conversation,popoto",
                        help="comma-separated: redmem, push, conversation, popoto")
    parser.add_argument("--no-hybrid", action="store_true", help="skip the embedding model (lexical/composite only)")
    parser.add_argument("--out", default="locomo", help="results/<out>.json ('' writes nothing)")
    parser.add_argument("--reproducible", action="store_true",
                        help="frozen clock and seeded record ids: identical results run to run")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    conversations = load(args.data, 1 if args.quick else args.conversations)
    for talk in conversations:
        talk["questions"] = talk["questions"][: args.max_questions]
    questions = [q for talk in conversations for q in talk["questions"]]
    systems = args.systems.split(",")
    hybrid = [] if args.no_hybrid else ["hybrid"]
    count = exact_counter("cl100k_base")
    provider = TimedProvider(minilm_function() if hybrid else hash_vectors, 384)
    results: dict[str, Any] = {}
    started = time.perf_counter()
    with EmbeddedServer() as server, reproducible(args.reproducible):
        redmem.connect(server.url)
        runs: dict[str, dict[str, list[dict]]] = {}
        if "redmem" in systems:
            runs["redmem"] = run_redmem(conversations, provider, ["lexical", *hybrid, "composite"])
        if "push" in systems:
            runs["redmem push"] = run_redmem(conversations, provider, ["lexical", *hybrid], push=True)
        if "conversation" in systems:
            convex = ["convex"] if hybrid else []
            runs["redmem ConversationMemory"] = run_conversation(conversations, provider, ["lexical", *hybrid, *convex])
        if "popoto" in systems:
            url = server.url + ("&" if "?" in server.url else "?") + "db=1"
            runs["popoto"] = run_popoto(url, conversations, ["lexical", *hybrid, "dated"])
        server_version = server.version.get("redis_version")
    for system, by_mode in runs.items():
        for mode, rows in by_mode.items():
            names = {"dated": "lexical, date-prefixed turns", "convex": "hybrid, convex fusion"}
            label = f"{system} {names.get(mode, mode)}"
            results[label] = evaluate(rows, questions, count)
            log.info("%s: %s", label, {k: round(v, 3) for k, v in results[label].items() if isinstance(v, float)})
    payload = {
        "benchmark": "locomo", "data": args.data.name, "conversations": [c["agent_id"] for c in conversations],
        "questions": len(questions), "turns": sum(len(c["turns"]) for c in conversations),
        "max_items": 10, "machine": machine(), "redis_version": server_version,
        "document_embedding_seconds": provider.seconds, "seconds": time.perf_counter() - started,
        "targets": TARGETS, "reference": REFERENCE, "results": results,
    }
    if args.out:
        write_json(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
