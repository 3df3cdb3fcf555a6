"""Every entry point a user takes into redmem, side by side: LoCoMo and the user-scenario suite.

    .venv/bin/python benchmarks/quality.py --out quality              # every path, both parts (MiniLM)
    .venv/bin/python benchmarks/quality.py --quick --hashing --out ''  # first conversation, 10 cases, no model
    .venv/bin/python benchmarks/quality.py --paths readme,mcp --parts scenarios --split held_out
    .venv/bin/python benchmarks/quality.py --parts locomo --skip-conversations 3   # LoCoMo held-out half
    .venv/bin/python benchmarks/quality.py --paths hybrid --no-question-cues       # every assembler without question cues

Paths (``--paths``, see :data:`quality_paths.PATHS`): README's ``Memory`` (lexical) and with an
EmbeddingField (auto = hybrid), ``DefaultMemory``, ``HybridMemory``, ``ChatMemory`` through the
functions behind the MCP ``remember`` / ``recall`` tools, ``ConversationMemory``
(``ingest_conversation`` + ``conversation_assembler()``), FrameMemory ATTENTION (``recall()``
then ``frame()``) and ``HCEPipeline`` at 500 and 1,500 tokens. Each is called as its
documentation says, with its own defaults; every embedding is the offline MiniLM
(``redmem.embeddings.MiniLMEmbeddings``, in this process, so the query's embedding is inside
the timed call), or hashed words with ``--hashing`` (fast, meaningless rankings: the smoke test).

Parts (``--parts``):

- ``locomo``: each LoCoMo conversation (``--data``, read in place, never copied: CC BY-NC 4.0)
  is one tenant; every turn one memory stored as ``speaker: text`` (ConversationMemory and
  ChatMemory are given speaker and text apart: they write the speaker into the indexed line
  themselves; ChatMemory also gets the session and the session's date, as MCP ``remember``
  takes them; DefaultMemory and HybridMemory get the session and the date, as
  ``Memory.add(text, session=..., said_at=...)`` takes them); every
  question of categories 1-4 is asked once all turns are stored. Scored with
  ``locomo.scores``: R@1/5/10 and MRR of the evidence turns, per category; *evidence in 1,000
  tokens*: the share of questions with an evidence turn inside a 1,000-token context (how each
  path is asked for one: quality_paths' docstring); items per context; p50/p95 ms of the
  answering call, query embedding included; round trips (``common.CommandCounter``);
  ``metadata["below_floor"]`` of the assembler's result, when it reports one.
- ``scenarios``: the cases of ``scenarios/cases.json`` (the metrics of ``scenarios/SPEC.md``),
  one tenant per case and path, the ``dev`` and ``held_out`` halves reported apart.

Results: ``results/<out>.json`` and ``results/<out>.md``. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import quality_paths
import redmem
from common import hash_vectors, machine, write_results
from locomo import CATEGORIES, load, scores
from quality_paths import PATHS, Answer, Item, MemoryPath, build_paths
from quality_report import markdown
from quality_scenarios import SPLITS, items_of, load_cases, score_case, summarize
from redmem.cli_commands import _memory as memory
from redmem.context._tokens import exact_counter
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, minilm_function

log = logging.getLogger("benchmarks.quality")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
LOCOMO_DATE = "%I:%M %p on %d %B, %Y"
#: Scenario cases per category under ``--quick``.
QUICK_CASES = 2


# ----------------------------------------------------------------------------- inputs
def iso_date(said: str) -> str | None:
    """A LoCoMo session date (``1:56 pm on 8 May, 2023``) as ISO 8601 UTC; None when unreadable."""
    try:
        return datetime.strptime(said, LOCOMO_DATE).replace(tzinfo=UTC).isoformat()
    except ValueError:
        return None


def locomo_tenants(args: argparse.Namespace) -> list[dict[str, Any]]:
    """LoCoMo conversations as tenants: ``{tenant, items, questions}``."""
    talks = load(args.data)[args.skip_conversations:]
    talks = talks[: 1 if args.quick else args.conversations]
    tenants = []
    for talk in talks:
        turns = talk["turns"][: args.max_turns]
        items = [Item(t["dia_id"], f"{t['speaker']}: {t['text']}", t["text"], t["speaker"], t["session"],
                      iso_date(t["said_at"])) for t in turns]
        tenants.append({"tenant": talk["agent_id"], "items": items,
                        "questions": talk["questions"][: args.max_questions]})
    return tenants


def scenario_tenants(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The suite's cases of the chosen split(s) as tenants (``scn-<case id>``), one question each."""
    background, cases = load_cases()
    chosen = [c for c in cases if args.split == "both" or c["split"] == args.split]
    if args.quick:
        chosen = [c for c in chosen if _number_in_category(c, chosen) <= QUICK_CASES]
    return [{"tenant": f"scn-{c['id']}", "items": items_of(c, background), "questions": [{"question": c["question"]}],
             "case": c} for c in chosen]


def _number_in_category(case: dict[str, Any], cases: list[dict[str, Any]]) -> int:
    """1-based position of ``case`` among the cases of its category in ``cases``."""
    return [c["id"] for c in cases if c["category"] == case["category"]].index(case["id"]) + 1


# ----------------------------------------------------------------------------- running
def run(paths: Sequence[MemoryPath], tenants: list[dict[str, Any]], part: str) -> tuple[dict[str, list[Answer]],
                                                                                       dict[str, Any]]:
    """Every path stores every tenant's items and answers its questions: answers per system, seconds per path."""
    answers: dict[str, list[Answer]] = defaultdict(list)
    seconds: dict[str, Any] = {}
    for path in paths:
        stored = asked = 0.0
        for n, tenant in enumerate(tenants, 1):
            started = time.perf_counter()
            path.store(tenant["tenant"], tenant["items"])
            middle = time.perf_counter()
            for system, found in path.answer(tenant["tenant"], [q["question"] for q in tenant["questions"]]).items():
                answers[system].extend(found)
            stored, asked = stored + middle - started, asked + time.perf_counter() - middle
            if part == "locomo" or n % 20 == 0 or n == len(tenants):
                log.info("%s %s: %d/%d tenants (store %.0f s, ask %.0f s)", part, "/".join(path.systems), n,
                         len(tenants), stored, asked)
        seconds[", ".join(path.systems)] = {"store": stored, "ask": asked}
    return dict(answers), seconds


# ----------------------------------------------------------------------------- scoring
def first_group(answer: Answer, evidence: Sequence[str]) -> int | None:
    """0-based rank of the first returned memory holding an evidence turn, or None."""
    wanted = set(evidence)
    return next((i for i, group in enumerate(answer.ranked) if wanted & set(group)), None)


def locomo_scores(answers: list[Answer], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """R@1/5/10 and MRR (overall, per category), evidence in 1,000 tokens, items, ms, round trips."""
    hits, by_category, within = [], defaultdict(list), []
    for answer, question in zip(answers, questions):
        hit = first_group(answer, question["evidence"])
        hits.append(hit)
        by_category[CATEGORIES[question["category"]]].append(hit)
        within.append(bool(set(answer.within) & set(question["evidence"])))
    floors = [a.below_floor for a in answers if a.below_floor is not None]
    return {
        **scores(hits),
        "evidence_in_1000_tokens": statistics.fmean(within),
        "by_category": {name: scores(found) for name, found in sorted(by_category.items())},
        "items_per_context": statistics.fmean(len(a.ranked) for a in answers),
        "items_in_1000_tokens": statistics.fmean(a.within_items for a in answers),
        "ms": common.summary([a.ms for a in answers]),
        "round_trips_p50": statistics.median(a.round_trips for a in answers),
        "below_floor_mean": statistics.fmean(floors) if floors else None,
    }


def scenario_scores(answers: list[Answer], tenants: list[dict[str, Any]]) -> dict[str, Any]:
    """SPEC.md's metrics per split (and the per-case rows)."""
    rows = [score_case(t["case"], answer) for t, answer in zip(tenants, answers)]
    halves = {split: summarize([r for r in rows if r["split"] == split]) for split in SPLITS
              if any(r["split"] == split for r in rows)}
    return {**halves, "cases": rows}


# ----------------------------------------------------------------------------- main
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--parts", default="locomo,scenarios", help="comma-separated: locomo, scenarios")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated: {', '.join(PATHS)}")
    parser.add_argument("--split", choices=["dev", "held_out", "both"], default="both", help="scenario cases asked")
    parser.add_argument("--quick", action="store_true",
                        help=f"first LoCoMo conversation, {QUICK_CASES} scenario cases per category")
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: the first N conversations")
    parser.add_argument("--skip-conversations", type=int, default=0,
                        help="LoCoMo: leave out the first N conversations (held-out runs: --skip-conversations 3)")
    parser.add_argument("--max-questions", type=int, default=None, help="LoCoMo: at most N questions per conversation")
    parser.add_argument("--max-turns", type=int, default=None, help="LoCoMo: store the first N turns only (smoke)")
    parser.add_argument("--hashing", action="store_true", help="hashed-word vectors instead of MiniLM (smoke)")
    parser.add_argument("--socket-timeout", type=float, default=30.0,
                        help="seconds a Redis reply may take (a save_many chunk on a host loaded 10x over exceeds 1.2 s)")
    parser.add_argument("--no-question-cues", action="store_true",
                        help="every assembler (MCP recall's too) with question_cues=False: the baseline of the cues")
    parser.add_argument("--out", default="quality", help="results/<out>.json and .md ('' writes nothing)")
    args = parser.parse_args(argv)
    args.parts, args.paths = args.parts.split(","), args.paths.split(",")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.no_question_cues:
        quality_paths.ASSEMBLER_EXTRA["question_cues"] = False
        memory.ASSEMBLER_OPTIONS["question_cues"] = False
    provider = TimedProvider(hash_vectors if args.hashing else minilm_function(), 384)
    count = exact_counter("cl100k_base")
    started, load_before = time.perf_counter(), os.getloadavg()
    payload: dict[str, Any] = {"benchmark": "quality", "vectors": "hashing" if args.hashing else "minilm",
                               "question_cues": not args.no_question_cues,
                               "paths": {name: PATHS[name] for name in args.paths}, "quick": args.quick}
    with EmbeddedServer() as server:
        redmem.connect(server.url, socket_timeout=args.socket_timeout)
        redmem.configure(embedding_provider=provider)
        payload["redis_version"] = server.version.get("redis_version")
        if "scenarios" in args.parts:
            tenants = scenario_tenants(args)
            answers, seconds = run(build_paths(args.paths, provider, count, paired=False), tenants, "scenarios")
            payload["scenarios"] = {"cases": len(tenants), "split": args.split, "seconds": seconds,
                                    "results": {s: scenario_scores(a, tenants) for s, a in answers.items()}}
        if "locomo" in args.parts:
            tenants = locomo_tenants(args)
            questions = [q for t in tenants for q in t["questions"]]
            answers, seconds = run(build_paths(args.paths, provider, count, paired=True), tenants, "locomo")
            payload["locomo"] = {"data": args.data.name, "conversations": [t["tenant"] for t in tenants],
                                 "questions": len(questions), "turns": sum(len(t["items"]) for t in tenants),
                                 "seconds": seconds,
                                 "results": {s: locomo_scores(a, questions) for s, a in answers.items()}}
    payload.update(machine=machine(), load_average={"before": list(load_before), "after": list(os.getloadavg())},
                   embedding_seconds=provider.seconds, seconds=time.perf_counter() - started)
    if args.out:
        write_results(args.out, payload, markdown(payload))
    return payload


if __name__ == "__main__":
    main()
