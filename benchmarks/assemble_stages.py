"""Where one HybridMemory ``assemble()`` at N memories spends its time, stage by stage (issue 26).

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/assemble_stages.py --url redis://localhost:7100/0 \\
        --queries 300 --out q26m_stages

The server at ``--url`` holds the corpus ``latency_ab.py`` stores (``--size`` LoCoMo dialog
memories of one agent, MiniLM vectors; stored here when missing). The first ``--queries``
LoCoMo questions of 6-15 words are asked with ``ContextAssembler(HybridMemory)`` defaults after
10 warm-up questions, the query's MiniLM embedding included. Each stage the assembler calls is
timed where it is called (a wrapper around the module's name): wall ms (``perf_counter``) and
this thread's CPU ms (``thread_time``; the embedding's own threads are not in it) per call. The
query embedding is timed where it runs, on the caller's thread before the first round trip
(before q26m) or in the vector search's work on a worker thread (after). Per call also the
whole call's wall and caller-thread CPU. At a load above the cores the wall figures are mostly
waiting for a core; the CPU figures move less. Results: ``results/<out>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency_ab
import latency_models
import redmem
import redmem.context._retrieval as retrieval_module
import redmem.fields._embedding as embedding_module
import redmem.recipes.assembler._context_assembler as assembler_module
from common import machine, summary, write_results
from questions import dialog_corpus, locomo_questions
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.default_memory import HybridMemory
from redmem_driver import TimedProvider, minilm_function

#: (module, name, label): the stages timed, in the order assemble() reaches them.
STAGES = [
    (embedding_module, "_query_vector", "query embedding"),
    (assembler_module, "plan_pull", "plan the pull (before q26m: with the embedding)"),
    (retrieval_module, "run_searches", "first round trip (searches; waits for the vector search)"),
    (retrieval_module, "_candidates", "fusion"),
    (assembler_module.ContextAssembler, "_load", "load the candidates (round trip 2)"),
    (assembler_module.ContextAssembler, "_distinct", "duplicates"),
    (assembler_module.ContextAssembler, "_rescored", "question cues"),
    (assembler_module.ContextAssembler, "_newer_first", "newer first"),
    (assembler_module, "above_floor", "relevance floor"),
    (assembler_module.ContextAssembler, "fit", "render and pack"),
    (assembler_module, "apply_post_effects", "post-effects (round trip 3)"),
]
WARMUP = 10


def timed(function: Callable[..., Any], totals: list[float]) -> Callable[..., Any]:
    """``function`` adding its wall and thread-CPU seconds to ``totals``."""

    def run(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            totals[0] += time.perf_counter() - wall
            totals[1] += time.thread_time() - cpu

    return run


def measure(url: str, size: int, queries: int, data: Path) -> dict[str, Any]:
    provider = TimedProvider(minilm_function(), 384)
    redmem.connect(url, socket_timeout=120)
    redmem.configure(embedding_provider=provider)
    client = HybridMemory._meta.client
    if not client.get(latency_ab.STORED):
        latency_models.store(HybridMemory, dialog_corpus(data, size), 20)
        client.set(latency_ab.STORED, size)
    questions = locomo_questions(data)[: WARMUP + queries]
    totals: dict[str, list[float]] = {}
    for owner, name, label in STAGES:
        if hasattr(owner, name):
            totals[label] = [0.0, 0.0]
            setattr(owner, name, timed(getattr(owner, name), totals[label]))
    assembler = ContextAssembler(HybridMemory)
    for question in questions[:WARMUP]:
        assembler.assemble(question, agent_id=latency_models.AGENT)
    for pair in totals.values():
        pair[:] = [0.0, 0.0]
    load_before, walls, cpus = os.getloadavg()[0], [], []
    for question in questions[WARMUP:]:
        wall, cpu = time.perf_counter(), time.thread_time()
        assembler.assemble(question, agent_id=latency_models.AGENT)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.thread_time() - cpu) * 1000)
    count = len(walls)
    return {"wall_ms": summary(walls), "caller_cpu_ms": summary(cpus), "load_average": [load_before, os.getloadavg()[0]],
            "stages": {label: {"wall_ms": w * 1000 / count, "cpu_ms": c * 1000 / count} for label, (w, c) in totals.items()}}


def markdown(payload: dict[str, Any]) -> str:
    result = payload["result"]
    rows = [f"| {label} | {stage['wall_ms']:.3f} | {stage['cpu_ms']:.3f} |" for label, stage in result["stages"].items()]
    return "\n".join([
        "# Where a HybridMemory assemble() spends its time, stage by stage",
        "",
        f"{payload['size']} memories, {payload['queries']} LoCoMo questions, MiniLM query embedding included; "
        f"wall p50 {result['wall_ms']['p50']:.2f} ms, caller-thread CPU p50 {result['caller_cpu_ms']['p50']:.2f} ms; "
        f"load {result['load_average'][0]:.1f} → {result['load_average'][1]:.1f}.",
        "",
        f"Command: `{payload['command']}`; commit {payload['machine'].get('git', '?')}.",
        "",
        "| stage | wall ms / call | caller-thread CPU ms / call |",
        "|---|---|---|",
        *rows,
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="a Redis server of your own (the corpus is stored there once)")
    parser.add_argument("--data", type=Path, default=latency_ab.DATA, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", default="assemble_stages")
    args = parser.parse_args(argv)
    payload = {"benchmark": "assemble_stages", "size": args.size, "queries": args.queries,
               "result": measure(args.url, args.size, args.queries, args.data),
               "command": " ".join(["benchmarks/assemble_stages.py", *(sys.argv[1:] if argv is None else argv)]),
               "machine": machine()}
    write_results(args.out, payload, markdown(payload))
    print(markdown(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
