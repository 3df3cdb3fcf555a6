"""LoCoMo's temporal questions through the shipped memory, read now and as of a time: the fact
lifecycle's second view.

    .venv/bin/python benchmarks/lifecycle_locomo.py --data ../shared/data/locomo-dev.json
    .venv/bin/python benchmarks/lifecycle_locomo.py --data ... --only 2,4     # one conversation of each half
    .venv/bin/python benchmarks/lifecycle_locomo.py --data ... --conversations 1 --out ''   # a smoke run

Every dialog turn is stored through :func:`redmem.cli_commands.mcp_server.store_memory` (the MCP
``remember`` tool: ``ChatMemory``, a lifecycle model whose turns hold from when they were said),
one call per turn in conversation order, for the agent named by the sample id. Each question of
the temporal category (LoCoMo category 2) is asked through
:func:`~redmem.cli_commands.mcp_server.recall_context` (the ``recall`` tool, ``max_items=10``,
2,000 tokens), scored as in ``locomo.py`` (any-hit Recall@1/@5/@10, MRR), three ways:

- ``now``: the default read (current turns; the shipped lifecycle supersedes nothing on its own,
  so this is every turn);
- ``as of the evidence``: ``as_of`` = the end of the day of the latest session holding the
  question's evidence, the turns said by then (an oracle of the question's date: LoCoMo gives
  none; it shows what a question date does through ``as_of``, not a system's accuracy);
- ``all``: ``as_of="all"``, every version (equals ``now`` when nothing was superseded).

Conversations 1-3 and 4-6 are reported apart (nothing here was tuned on either).

The data set is read from the path given and never copied (CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import redmem
from common import machine, write_json
from locomo import first_hit, load, scores
from redmem.cli_commands._conversation import parse_when
from redmem.cli_commands._memory import ChatMemory, choose_embeddings
from redmem.cli_commands.mcp_server import recall_context, store_memory
from redmem.store._embedded import EmbeddedServer

log = logging.getLogger("benchmarks.lifecycle_locomo")
TEMPORAL = 2
READS = ("now", "as of the evidence", "all")


def evidence_time(talk: dict[str, Any], evidence: list[str]) -> str | None:
    """The end of the day of the latest session holding the evidence (ISO 8601), None without one."""
    said = {turn["dia_id"]: turn["said_at"] for turn in talk["turns"]}
    times = [parse_when(said[dia], "said_at") for dia in evidence if said.get(dia)]
    if not times:
        return None
    latest: datetime = max(times)
    return (latest.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)).isoformat()


def run(conversations: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """Store every conversation (with its 1-based number), ask its temporal questions the three
    ways; hits per read and half (conversations 1-3, 4-6)."""
    hits: dict[str, dict[str, list[int | None]]] = {read: {"1-3": [], "4-6": []} for read in READS}
    merged = superseded = stored = 0
    for number, talk in conversations:
        agent, to_dia = talk["agent_id"], {}
        for turn in talk["turns"]:
            memory = store_memory(agent, turn["text"], turn["speaker"], turn["session"], 1.0, False, turn["said_at"])
            to_dia.setdefault(memory.memory_id, turn["dia_id"])
        records = ChatMemory.query.filter(agent_id=agent).no_track().all()
        stored += len(records)
        merged += sum((r.seen_count or 1) - 1 for r in records)
        superseded += sum(r.valid_to is not None for r in records)
        half = "1-3" if number <= 3 else "4-6"
        for question in talk["questions"]:
            if question["category"] != TEMPORAL:
                continue
            at = evidence_time(talk, question["evidence"])
            for read, as_of in (("now", None), ("as of the evidence", at), ("all", "all")):
                recalled = recall_context(agent, question["question"], 2000, 10, "structured", as_of=as_of)
                hits[read][half].append(first_hit([to_dia[m.memory_id] for m in recalled.memories],
                                                  question["evidence"]))
        log.info("%s: %d turns", agent, len(talk["turns"]))
    return {"reads": {read: {half: scores(found) for half, found in halves.items()} | {
                "all": scores(halves["1-3"] + halves["4-6"])} for read, halves in hits.items()},
            "turns": sum(len(t["turns"]) for _, t in conversations), "records": stored, "merged": merged,
            "superseded": superseded}


def table(payload: dict[str, Any]) -> str:
    lines = ["# Fact lifecycle: LoCoMo temporal questions", "",
             "`benchmarks/lifecycle_locomo.py` (spec in its docstring): every turn stored through MCP `remember` "
             "(`ChatMemory`), the temporal category (2) asked through `recall`, now / as of the evidence's day "
             "(an oracle question date) / `all`.", "", f"Command: `{payload['command']}`", "",
             "| lifecycle | read | conversations | questions | R@1 | R@5 | R@10 | MRR |", "|---|---|---|---|---|---|---|---|"]
    for name, result in payload["results"].items():
        for read, halves in result["reads"].items():
            for half in ("1-3", "4-6", "all"):
                s = halves[half]
                if not s["questions"]:
                    continue
                lines.append(f"| {name} | {read} | {half} | {s['questions']} | {s['recall@1']:.3f} | {s['recall@5']:.3f} "
                             f"| {s['recall@10']:.3f} | {s['mrr']:.3f} |")
    lines += ["", "| lifecycle | turns | records | restatements merged | turns superseded |", "|---|---|---|---|---|"]
    for name, result in payload["results"].items():
        lines.append(f"| {name} | {result['turns']} | {result['records']} | {result['merged']} | {result['superseded']} |")
    lines += ["", f"Machine: {payload['machine'].get('cpu', '')}, load {payload['machine'].get('load_average')}; "
              f"{payload['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="path of locomo-dev.json (never copied)")
    parser.add_argument("--conversations", type=int, default=None, help="use the first N conversations")
    parser.add_argument("--only", default="", help="comma-separated 1-based conversation numbers to use (default all)")
    parser.add_argument("--out", default="lifecycle_locomo", help="results/<out>.json and .md ('' none)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    conversations = load(args.data, args.conversations)
    numbers = [int(n) for n in args.only.split(",") if n.strip()]
    picked = [(n, conversations[n - 1]) for n in numbers] or list(enumerate(conversations, 1))
    provider, note = choose_embeddings("auto")
    if note:
        log.warning(note)
    started = time.perf_counter()
    with EmbeddedServer() as server:
        redmem.connect(server.url, socket_timeout=120)
        redmem.configure(embedding_provider=provider)
        results = {"shipped": run(picked)}
    payload = {"benchmark": "lifecycle_locomo", "data": args.data.name,
               "command": "python benchmarks/lifecycle_locomo.py " + " ".join(argv or sys.argv[1:]),
               "embeddings": type(provider).__name__, "conversations": [c["agent_id"] for _, c in picked],
               "machine": machine(), "seconds": time.perf_counter() - started, "results": results}
    if args.out:
        write_json(args.out, payload)
        (common.RESULTS / f"{args.out}.md").write_text(table(payload))
    print(table(payload))
    return payload


if __name__ == "__main__":
    main()
