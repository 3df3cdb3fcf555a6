"""LoCoMo through the shipped memory: MCP ``remember`` one turn at a time, ``recall`` per question.

    .venv/bin/python benchmarks/locomo_mcp.py --data ../shared/data/locomo-dev.json
    .venv/bin/python benchmarks/locomo_mcp.py --data ... --no-graph-links     # turns not linked in the graph
    .venv/bin/python benchmarks/locomo_mcp.py --data ... --variants '{"convex": {"fusion": "convex"}}'

Every dialog turn is stored through :func:`redmem.cli_commands.mcp_server.store_memory` (what
the MCP ``remember`` tool runs), one call per turn in conversation order, with its speaker, its
session and when it was said (the session's LoCoMo date, ``1:56 pm on 8 May, 2023``), for
the agent named by the sample id; every question of categories 1-4 is asked through
:func:`~redmem.cli_commands.mcp_server.recall_context` (the ``recall`` tool) with
``max_items=10`` and the tool's default budget of 2,000 tokens, scored as in ``locomo.py``
(any-hit Recall@1/@5/@10, MRR). Also the latency of each ``remember`` (p50/p95, embedding
included: the offline MiniLM model the CLI picks). A library without ``said_at`` (before the
change) is called without it.

The data set is read from the path given and never copied (CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, write_json
from locomo import first_hit, load, scores
from redmem.cli_commands import _ingest as ingest
from redmem.cli_commands import _memory as memory
from redmem.cli_commands._memory import choose_embeddings
from redmem.cli_commands.mcp_server import recall_context, store_memory
from redmem.store._embedded import EmbeddedServer

log = logging.getLogger("benchmarks.locomo_mcp")


def run(conversations: list[dict[str, Any]], variants: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Store every conversation through ``remember``, then ask each question once per variant
    (ContextAssembler options added to ``memory.ASSEMBLER_OPTIONS`` for that variant's recalls)."""
    dated = "said_at" in inspect.signature(store_memory).parameters
    base = dict(getattr(memory, "ASSEMBLER_OPTIONS", {}))
    latencies: list[float] = []
    hits: dict[str, list[int | None]] = {name: [] for name in variants}
    for talk in conversations:
        agent, to_dia = talk["agent_id"], {}
        for turn in talk["turns"]:
            options = {"said_at": turn["said_at"]} if dated else {}
            started = time.perf_counter()
            stored = store_memory(agent, turn["text"], turn["speaker"], turn["session"], 1.0, False, **options)
            latencies.append((time.perf_counter() - started) * 1000)
            to_dia[stored.memory_id] = turn["dia_id"]
        for name, variant in variants.items():
            if variant and not hasattr(memory, "ASSEMBLER_OPTIONS"):
                raise SystemExit("this version of redmem has no memory.ASSEMBLER_OPTIONS")
            if hasattr(memory, "ASSEMBLER_OPTIONS"):
                memory.ASSEMBLER_OPTIONS.clear()
                memory.ASSEMBLER_OPTIONS.update({**base, **variant})
            for question in talk["questions"]:
                recalled = recall_context(agent, question["question"], 2000, 10, "structured")
                hits[name].append(first_hit([to_dia[m.memory_id] for m in recalled.memories], question["evidence"]))
        log.info("%s: %d turns, %d questions", agent, len(talk["turns"]), len(talk["questions"]))
    ordered = sorted(latencies)
    return {
        "said_at": dated, "variants": {name: {"options": {**base, **variant}, **scores(hits[name])}
                                       for name, variant in variants.items()},
        "remember_ms": {"p50": statistics.median(ordered), "p95": ordered[int(0.95 * (len(ordered) - 1))],
                        "mean": statistics.fmean(ordered), "calls": len(ordered)},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="path of locomo-dev.json (never copied)")
    parser.add_argument("--conversations", type=int, default=None, help="use the first N conversations")
    parser.add_argument("--no-graph-links", action="store_true", help="do not link consecutive turns in the graph")
    parser.add_argument("--variants", default='{"default": {}}',
                        help="JSON {name: ContextAssembler options added to memory.ASSEMBLER_OPTIONS}: recall "
                             "variants, each asking every question over the same stored turns")
    parser.add_argument("--out", default="", help="results/<out>.json ('' writes nothing)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.no_graph_links:
        ingest.LINK_TURNS = False
    variants = json.loads(args.variants)
    conversations = load(args.data, args.conversations)
    provider, note = choose_embeddings("auto")
    if note:
        log.warning(note)
    started = time.perf_counter()
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        redmem.configure(embedding_provider=provider)
        result = run(conversations, variants)
    payload = {"benchmark": "locomo_mcp", "data": args.data.name, "graph_links": not args.no_graph_links,

               "conversations": [c["agent_id"] for c in conversations], "machine": machine(),
               "seconds": time.perf_counter() - started, "result": result}
    log.info("graph links %s: %s", not args.no_graph_links, json.dumps(result, indent=1))
    if args.out:
        write_json(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
