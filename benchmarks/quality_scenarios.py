"""The user-scenario suite of ``scenarios/cases.json`` and ``changes_dev.json``: loaded, checked against SPEC.md, scored.

:func:`load_cases` refuses a file that breaks the specification (split rule, ids, the
paraphrase rule, dates going backwards); :func:`score_case` scores one path's answer to one case
and :func:`summarize` averages those rows per split and per category, as SPEC.md defines.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import summary
from quality_paths import Answer, Item
from redmem.text._analyzer import Analyzer

__all__ = ["CASES", "DEV_ONLY", "CATEGORIES", "SPLITS", "load_cases", "items_of", "score_case", "summarize"]

CASES = Path(__file__).resolve().parent / "scenarios" / "cases.json"
#: Dev-only cases (SPEC.md, "Dev-only cases"): all ``dev``, so the split rule of :data:`CASES`
#: (odd / even within a category) does not apply to them.
DEV_ONLY = Path(__file__).resolve().parent / "scenarios" / "changes_dev.json"
CATEGORIES = ("paraphrase", "changed_fact", "distractors", "multi_session", "keyword")
SPLITS = ("dev", "held_out")


def load_cases(path: Path = CASES, dev_only: Path = DEV_ONLY) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(background, cases)`` of the suite, checked against SPEC.md (ValueError when it is broken):
    the cases of ``path``, then those of ``dev_only`` (every one ``dev``; its ids unused in ``path``)."""
    payload = json.loads(path.read_text())
    cases = payload["cases"]
    numbers: dict[str, int] = defaultdict(int)
    analyzer = Analyzer()
    for case in cases:
        numbers[case["category"]] += 1
        _check(case, numbers[case["category"]], analyzer)
    if sorted(numbers) != sorted(CATEGORIES) or min(numbers.values()) < 12:
        raise ValueError(f"every category needs 12 cases or more, got {dict(numbers)}")
    extra = json.loads(dev_only.read_text())["cases"]
    if {c["id"] for c in extra} & {c["id"] for c in cases} or any(c["category"] not in CATEGORIES for c in extra):
        raise ValueError(f"{dev_only.name}: ids must be new and categories those of {path.name}")
    for case in extra:
        _check(case, 1, analyzer)  # number 1: the split rule's dev
    return payload["background"], cases + extra


def _check(case: dict[str, Any], number: int, analyzer: Analyzer) -> None:
    where = case["id"]
    expected = "dev" if number % 2 else "held_out"
    if case["split"] != expected:
        raise ValueError(f"{where}: case {number} of its category belongs to {expected}, not {case['split']}")
    ids = [m["id"] for m in case["memories"]]
    named = set(case["relevant"]) | set(case.get("irrelevant", ())) | {case.get("current"), case.get("superseded")}
    if not case["relevant"] or not named - {None} <= set(ids) or set(case["relevant"]) & set(case.get("irrelevant", ())):
        raise ValueError(f"{where}: relevant / irrelevant / current / superseded must name its memories, apart")
    times = [m["said_at"] for m in case["memories"]]
    if times != sorted(times):
        raise ValueError(f"{where}: said_at goes backwards")
    if case["category"] == "changed_fact" and (
            case["relevant"] != [case["current"]] or ids.index(case["superseded"]) > ids.index(case["current"])):
        raise ValueError(f"{where}: a changed fact's only relevant memory is the current one, written last")
    if case["category"] == "paraphrase":
        asked = set(analyzer.tokens(case["question"]))
        for memory in case["memories"]:
            shared = asked & set(analyzer.tokens(memory["text"]))
            if memory["id"] in case["relevant"] and shared:
                raise ValueError(f"{where}: the question shares {sorted(shared)} with relevant {memory['id']}")


def items_of(case: dict[str, Any], background: dict[str, Any]) -> list[Item]:
    """The background memories (labels ``bg1``...) and then the case's memories, in writing order."""
    first = [Item(f"bg{n}", text, text, None, background["session"], background["said_at"])
             for n, text in enumerate(background["texts"], 1)]
    return first + [Item(m["id"], m["text"], m["text"], m.get("speaker"), m.get("session"), m.get("said_at"))
                    for m in case["memories"]]


def score_case(case: dict[str, Any], answer: Answer) -> dict[str, Any]:
    """One row of SPEC.md's metrics for one case."""
    ranked = [group[0] for group in answer.ranked]
    relevant = set(case["relevant"])
    first = next((i for i, label in enumerate(ranked) if label in relevant), None)
    noise = [label for label in ranked if label not in relevant]
    current, superseded = case.get("current"), case.get("superseded")
    newer_first = None
    if current is not None:
        position = {label: i for i, label in enumerate(ranked)}
        newer_first = current in position and position.get(superseded, len(ranked)) > position[current]
        if newer_first:
            noise = [label for label in noise if label != superseded]
    traps = set(case.get("irrelevant", ()))
    return {"id": case["id"], "category": case["category"], "split": case["split"], "first": first,
            "all@5": relevant <= set(ranked[:5]), "newer_first": newer_first, "irrelevant": len(noise),
            "traps": sum(label in traps for label in ranked), "items": len(ranked), "ms": answer.ms,
            "round_trips": answer.round_trips, "ranked": ranked}


def _recall(rows: Sequence[dict[str, Any]], k: int) -> float:
    return sum(r["first"] is not None and r["first"] < k for r in rows) / len(rows)


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """SPEC.md's metrics over ``rows`` (one path, one split), overall and per category."""
    changed = [r for r in rows if r["newer_first"] is not None]
    paraphrase = [r for r in rows if r["category"] == "paraphrase"]
    by_category = defaultdict(list)
    for row in rows:
        by_category[row["category"]].append(row)
    return {
        "cases": len(rows),
        "recall@1": _recall(rows, 1), "recall@3": _recall(rows, 3), "recall@5": _recall(rows, 5),
        "all@5": statistics.fmean(r["all@5"] for r in rows),
        "paraphrase_top3": _recall(paraphrase, 3) if paraphrase else None,
        "newer_first": statistics.fmean(r["newer_first"] for r in changed) if changed else None,
        "irrelevant_per_context": statistics.fmean(r["irrelevant"] for r in rows),
        "traps_per_context": statistics.fmean(r["traps"] for r in rows),
        "items_per_context": statistics.fmean(r["items"] for r in rows),
        "ms": summary([r["ms"] for r in rows]),
        "round_trips_p50": statistics.median(r["round_trips"] for r in rows),
        "by_category": {name: {"cases": len(found), "recall@1": _recall(found, 1), "recall@3": _recall(found, 3),
                               "recall@5": _recall(found, 5)}
                        for name, found in sorted(by_category.items())},
    }
