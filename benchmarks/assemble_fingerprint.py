"""What the default read paths return, question by question, to prove a speed change left it alone.

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/assemble_fingerprint.py --out /tmp/before.json
    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/assemble_fingerprint.py --out /tmp/after.json \\
        --compare /tmp/before.json

A change meant only to make ``assemble()`` cheaper must return the same records in the same
order with the same scores and the same text. This asks every LoCoMo question (categories 1-4,
``--data`` read in place, never copied) on the default paths of issue 26 and writes, per
question, what came back:

- ``hybrid``: ``HybridMemory`` with each conversation's sessions appended in order with their
  dates (``quality_paths.append_sessions``), one tenant per conversation, asked with
  ``ContextAssembler(HybridMemory)`` defaults;
- ``mcp``: ``ChatMemory`` written and read by the functions behind the MCP ``remember`` and
  ``recall`` tools (``quality_paths.McpPath``, the tool defaults);
- ``corpus``: with ``--corpus N``, the setting of ``latency_models.py``: N memories of LoCoMo
  dialog of one agent in ``HybridMemory``, asked with ``question_cues`` on and off.

Per answer: the records (by LoCoMo turn id, or by position in the corpus), the hits' scores and
signals as ``repr`` (bit-exact floats), the formatted text (its ``created_at`` values, which
are the time of the run, blanked) and the metadata but its timing. ``--compare`` prints the
questions whose answer differs from an earlier run's and exits 1 when any does. The embeddings
are the offline MiniLM in this process.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency_models
import quality
import redmem
from quality_paths import RECALL_DEFAULTS, McpPath, append_sessions
from questions import dialog_corpus, locomo_questions
from redmem.cli_commands import mcp_server
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.default_memory import HybridMemory
from redmem.store._embedded import EmbeddedServer
from redmem_driver import TimedProvider, minilm_function

log = logging.getLogger("benchmarks.assemble_fingerprint")
#: A rendered ISO 8601 ``created_at`` value: the time of the run, not of the data.
CREATED_AT = re.compile(r'("created_at": ")[^"]*(")')


def stable_text(text: str) -> str:
    """The formatted context with the run's clock blanked out."""
    return CREATED_AT.sub(r"\1…\2", text)


def assembled(result: Any, label: dict[str, str]) -> dict[str, Any]:
    """One ``assemble()`` result as comparable values."""
    metadata = {k: v for k, v in result.metadata.items() if k != "timing_ms"}
    return {
        "records": [label[str(r.memory_id)] for r in result.records],
        "proactive": [label[str(r.memory_id)] for r in result.proactive],
        "hits": [repr((h.score, sorted(h.signals.items()))) for h in result.hits],
        "text": stable_text(result.formatted),
        "metadata": repr(sorted(metadata.items())),
    }


def recalled(context: Any, label: dict[str, str]) -> dict[str, Any]:
    """One MCP ``recall`` reply as comparable values."""
    return {
        "records": [label[m.memory_id] for m in context.memories],
        "scores": [repr((m.source, m.score)) for m in context.memories],
        "text": stable_text(context.context),
        "token_count": context.token_count,
        "below_floor": context.below_floor,
    }


def hybrid_answers(tenants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assembler = ContextAssembler(HybridMemory)
    out = []
    for tenant in tenants:
        records = append_sessions(HybridMemory, tenant["tenant"], tenant["items"])
        label = {str(r.memory_id): item.label for r, item in zip(records, tenant["items"])}
        for q in tenant["questions"]:
            out.append({"question": q["question"],
                        **assembled(assembler.assemble(q["question"], agent_id=tenant["tenant"]), label)})
    return out


def mcp_answers(tenants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = McpPath()
    out = []
    for tenant in tenants:
        path.store(tenant["tenant"], tenant["items"])
        label = path.labels[tenant["tenant"]]
        for q in tenant["questions"]:
            context = mcp_server.recall_context(tenant["tenant"], q["question"], *RECALL_DEFAULTS)
            out.append({"question": q["question"], **recalled(context, label)})
    return out


def corpus_answers(data: Path, size: int) -> list[dict[str, Any]]:
    texts = dialog_corpus(data, size)
    latency_models.store(HybridMemory, texts, 20)
    label = {str(r.memory_id): f"#{texts.index(r.content)}"
             for r in HybridMemory.query.filter(agent_id=latency_models.AGENT).no_track().all()}
    out = []
    for cues in (True, False):
        assembler = ContextAssembler(HybridMemory, question_cues=cues)
        for question in locomo_questions(data):
            result = assembler.assemble(question, agent_id=latency_models.AGENT)
            out.append({"question": question, "question_cues": cues, **assembled(result, label)})
    return out


def differences(before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]) -> list[str]:
    """A line per answer that differs (or is missing) between two runs."""
    lines = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path, []), after.get(path, [])
        if len(old) != len(new):
            lines.append(f"{path}: {len(old)} answers before, {len(new)} after")
        for n, (a, b) in enumerate(zip(old, new)):
            if a != b:
                keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
                lines.append(f"{path} #{n} {a.get('question')!r}: {', '.join(keys)} differ")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=quality.DATA, help="locomo-dev.json (read in place, never copied)")
    parser.add_argument("--paths", default="hybrid,mcp", help="comma-separated: hybrid, mcp")
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: the first N conversations")
    parser.add_argument("--corpus", type=int, default=0, help="also N corpus memories of one agent (0: not)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the answers (JSON)")
    parser.add_argument("--compare", type=Path, default=None, help="an earlier --out to compare with")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    tenants = quality.locomo_tenants(quality.parse(["--data", str(args.data), "--parts", "locomo",
                                                    *(["--conversations", str(args.conversations)]
                                                      if args.conversations else [])]))
    answers: dict[str, list[dict[str, Any]]] = {}
    makers = {"hybrid": hybrid_answers, "mcp": mcp_answers}
    for name in args.paths.split(","):
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=120)
            redmem.configure(embedding_provider=TimedProvider(minilm_function(), 384))
            answers[name] = makers[name](tenants)
            log.info("%s: %d answers", name, len(answers[name]))
    if args.corpus:
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=120)
            redmem.configure(embedding_provider=TimedProvider(minilm_function(), 384))
            answers["corpus"] = corpus_answers(args.data, args.corpus)
            log.info("corpus %d: %d answers", args.corpus, len(answers["corpus"]))
    args.out.write_text(json.dumps(answers, indent=1, ensure_ascii=False))
    if args.compare is None:
        return 0
    lines = differences(json.loads(args.compare.read_text()), answers)
    print("\n".join(lines) if lines else f"identical: {sum(map(len, answers.values()))} answers")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
