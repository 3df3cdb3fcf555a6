"""assemble() latency of the ready-made models at N memories: HybridMemory and DefaultMemory as shipped.

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/latency_models.py --sizes 10000 --out latency_models

``latency.py --workload questions`` times the README's model (one bare text per memory). This
times the models a user gets, with what they do on every read: neighbour context in the keyword
index, the relevance floor, newer-first, question cues. N memories of LoCoMo dialog
(``questions.dialog_corpus``, ``"<speaker>: <text>"``, read in place from ``--data``) of one
agent, in sessions of ``--session`` memories written in order with ``append_turns`` (what
``Memory.add(text, session=...)`` does one at a time), each with a ``said_at`` date;
``HybridMemory`` embeds with the offline MiniLM in this process. Then every LoCoMo question of
6-15 words is asked with ``ContextAssembler(model)`` defaults after 5 warm-up questions, the
first pass apart (it fills the process's copy of the postings), ``--repeats`` passes timed: p50
/ p95 / p99 ms of the ``assemble()`` call (the query's embedding included) and round trips per
call, with ``question_cues`` on (the default) and off, asked alternately question by question
so that both see the same load, and the load average around them (``/proc/loadavg``: the host
is shared). Results: ``results/<out>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import CommandCounter, machine, summary, write_results
from questions import dialog_corpus, locomo_questions
from redmem import EmbeddingField
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.conversation_append import append_turns
from redmem.recipes.default_memory import DefaultMemory, HybridMemory
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, minilm_function

log = logging.getLogger("benchmarks.latency_models")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
AGENT = "agent-lat"
WARMUP = 5
MODELS = {"HybridMemory": HybridMemory, "DefaultMemory": DefaultMemory}


def store(model: type, texts: list[str], session: int) -> float:
    """The texts as one agent's memories, ``session`` per session, appended in order: seconds."""
    started, day = time.perf_counter(), datetime(2023, 1, 1, tzinfo=UTC)
    for number, first in enumerate(range(0, len(texts), session)):
        records = [
            model(agent_id=AGENT, content=text, session=f"s{number}", said_at=day + timedelta(days=number))
            for text in texts[first : first + session]
        ]
        for embedding in model._meta.fields_of(EmbeddingField):
            embedding.embed_many(records)
        append_turns(records)
    return time.perf_counter() - started


def timed(assemblers: dict[str, ContextAssembler], questions: list[str], repeats: int) -> dict[str, Any]:
    """Each assembler asked every question in turn (alternating, so that both see the same load):
    per assembler the first pass and the next ``repeats`` passes, ms per call (embedding
    included), round trips, and the load average around the whole."""
    CommandCounter.install()
    for question in questions[:WARMUP]:
        for assembler in assemblers.values():
            assembler.assemble(question, agent_id=AGENT)
    passes: dict[str, list[list[float]]] = {name: [] for name in assemblers}
    trips: dict[str, list[int]] = {name: [] for name in assemblers}
    load_before = list(os.getloadavg())
    for _ in range(repeats + 1):
        for name in assemblers:
            passes[name].append([])
        for question in questions:
            for name, assembler in assemblers.items():
                before, started = CommandCounter.snapshot(), time.perf_counter()
                assembler.assemble(question, agent_id=AGENT)
                passes[name][-1].append((time.perf_counter() - started) * 1000)
                trips[name].append(CommandCounter.since(before)[0])
    load = {"before": load_before, "after": list(os.getloadavg())}
    return {
        name: {
            "first_pass": summary(runs[0]),
            **summary([m for p in runs[1:] for m in p]),
            "round_trips_p50": statistics.median(trips[name]),
            "round_trips_max": max(trips[name]),
            "load_average": load,
        }
        for name, runs in passes.items()
    }


def markdown(payload: dict[str, Any]) -> str:
    rows = [
        "| model | N | question_cues | p50 ms | p95 ms | p99 ms | round trips (p50 / max) | load average before → after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, models in payload["results"].items():
        for name, runs in models.items():
            for cues, r in runs["assemble"].items():
                load = f"{r['load_average']['before'][0]:.1f} → {r['load_average']['after'][0]:.1f}"
                rows.append(
                    f"| {name} | {n} | {cues} | {r['p50']:.2f} | {r['p95']:.2f} | {r['p99']:.2f} | "
                    f"{r['round_trips_p50']:g} / {r['round_trips_max']} | {load} |"
                )
    return (
        f"# assemble() latency of the ready-made models\n\n{payload['questions']} questions x "
        f"{payload['repeats']} passes after a first pass; MiniLM in the process.\n\n" + "\n".join(rows) + "\n"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated: {', '.join(MODELS)}")
    parser.add_argument("--session", type=int, default=20, help="memories per session")
    parser.add_argument("--queries", type=int, default=None, help="at most N questions")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="latency_models")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    questions = locomo_questions(args.data)[: args.queries]
    provider = TimedProvider(minilm_function(), 384)
    results: dict[str, Any] = {}
    payload: dict[str, Any] = {
        "benchmark": "latency_models",
        "questions": len(questions),
        "repeats": args.repeats,
        "session": args.session,
        "results": results,
    }
    for n in (int(size) for size in args.sizes.split(",")):
        texts = dialog_corpus(args.data, n)
        for name in args.models.split(","):
            with EmbeddedServer() as server:
                redmem.connect(server.url, socket_timeout=120)
                redmem.configure(embedding_provider=provider)
                seconds = store(MODELS[name], texts, args.session)
                assemblers = {str(cues): ContextAssembler(MODELS[name], question_cues=cues) for cues in (True, False)}
                runs = timed(assemblers, questions, args.repeats)
                results.setdefault(str(n), {})[name] = {"store_seconds": seconds, "assemble": runs}
                log.info(
                    "%s N=%d stored in %.0f s: %s", name, n, seconds, {c: round(r["p50"], 2) for c, r in runs.items()}
                )
    payload.update(machine=machine(), embedding_seconds=provider.seconds)
    if args.out:
        write_results(args.out, payload, markdown(payload))
    return payload


if __name__ == "__main__":
    main()
