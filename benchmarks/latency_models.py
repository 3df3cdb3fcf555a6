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
is shared). Beside the wall clock, which on a shared host is mostly waiting for a core, each
call's CPU time in this process (``time.process_time``: redmem's work and the query's
embedding, all threads) and the embedding's own wall ms, and the Redis server's time per call
(``INFO commandstats`` before and after the timed passes, divided by the calls): these move far
less with the load. Results: ``results/<out>.json`` and ``.md``.
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


def server_usec(client: Any) -> tuple[int, int]:
    """(calls, microseconds) the server has spent on commands other than INFO since it started."""
    stats = client.info("commandstats")
    return (sum(s["calls"] for k, s in stats.items() if k != "cmdstat_info"),
            sum(s["usec"] for k, s in stats.items() if k != "cmdstat_info"))


def timed(assemblers: dict[str, ContextAssembler], questions: list[str], repeats: int,
          provider: TimedProvider) -> dict[str, Any]:
    """Each assembler asked every question in turn (alternating, so that both see the same load):
    per assembler the first pass and the next ``repeats`` passes, ms per call (embedding
    included), CPU ms of this process per call and the embedding's ms per call (timed passes),
    round trips, the server's ms per call of the timed passes (every assembler's calls
    together), and the load average around the whole."""
    CommandCounter.install()
    for question in questions[:WARMUP]:
        for assembler in assemblers.values():
            assembler.assemble(question, agent_id=AGENT)
    passes: dict[str, list[list[float]]] = {name: [] for name in assemblers}
    cpu: dict[str, list[float]] = {name: [] for name in assemblers}
    embedding: dict[str, list[float]] = {name: [] for name in assemblers}
    trips: dict[str, list[int]] = {name: [] for name in assemblers}
    client = next(iter(assemblers.values())).model_class._meta.client
    load_before = list(os.getloadavg())
    server_before = (0, 0)
    for number in range(repeats + 1):
        if number == 1:
            server_before = server_usec(client)
        for name in assemblers:
            passes[name].append([])
        for question in questions:
            for name, assembler in assemblers.items():
                before, embedded = CommandCounter.snapshot(), provider.seconds
                started, process = time.perf_counter(), time.process_time()
                assembler.assemble(question, agent_id=AGENT)
                passes[name][-1].append((time.perf_counter() - started) * 1000)
                if number:
                    cpu[name].append((time.process_time() - process) * 1000)
                    embedding[name].append((provider.seconds - embedded) * 1000)
                trips[name].append(CommandCounter.since(before)[0])
    server_after = server_usec(client) if repeats else server_before
    load = {"before": load_before, "after": list(os.getloadavg())}
    calls = max(1, sum(len(c) for c in cpu.values()))
    server = {"ms_per_call": (server_after[1] - server_before[1]) / 1000 / calls,
              "commands_per_call": (server_after[0] - server_before[0]) / calls}
    return {
        name: {
            "first_pass": summary(runs[0]),
            **summary([m for p in runs[1:] for m in p]),
            "cpu_ms": summary(cpu[name]),
            "embedding_ms": summary(embedding[name]),
            "server": server,
            "round_trips_p50": statistics.median(trips[name]),
            "round_trips_max": max(trips[name]),
            "load_average": load,
        }
        for name, runs in passes.items()
    }


def markdown(payload: dict[str, Any]) -> str:
    rows = [
        "| model | N | question_cues | p50 ms | p95 ms | p99 ms | CPU ms p50 / mean | embedding ms p50 | "
        "server ms / call | round trips (p50 / max) | load average before → after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, models in payload["results"].items():
        for name, runs in models.items():
            for cues, r in runs["assemble"].items():
                load = f"{r['load_average']['before'][0]:.1f} → {r['load_average']['after'][0]:.1f}"
                cpu, embedding = r.get("cpu_ms", {}), r.get("embedding_ms", {})
                rows.append(
                    f"| {name} | {n} | {cues} | {r['p50']:.2f} | {r['p95']:.2f} | {r['p99']:.2f} | "
                    f"{cpu.get('p50', float('nan')):.2f} / {cpu.get('mean', float('nan')):.2f} | "
                    f"{embedding.get('p50', float('nan')):.2f} | {r.get('server', {}).get('ms_per_call', float('nan')):.2f} | "
                    f"{r['round_trips_p50']:g} / {r['round_trips_max']} | {load} |"
                )
    return (
        f"# assemble() latency of the ready-made models\n\n{payload['questions']} questions x "
        f"{payload['repeats']} passes after a first pass; MiniLM in the process. CPU ms: this process's "
        "CPU time per call (redmem and the query's embedding, every thread); server ms: Redis's time per "
        "call (INFO commandstats, every assembler's calls together).\n\n"
        + (f"Command: `{payload['command']}`; commit {payload['machine'].get('git')}.\n\n" if "command" in payload else "")
        + "\n".join(rows) + "\n"
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
        "command": " ".join(["benchmarks/latency_models.py", *(sys.argv[1:] if argv is None else argv)]),
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
                runs = timed(assemblers, questions, args.repeats, provider)
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
