"""Tables and panels the commands print: the assembled context, its trace, outcomes and scores."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ._scores import Scores

__all__ = [
    "number", "said", "tokens", "summary", "context_panel", "trace_table", "outcome_table", "turn_table", "SIGNALS",
]

#: Score components of the trace, in the order shown: pull signals, fusion, push.
SIGNALS = ("bm25", "vector", "graph", "composite", "rrf", "convex", "match", "cyclic")
#: Console width from which the trace also shows each record's relevance and confidence.
WIDE = 120
#: Width the columns of turn_table other than the memory's text take, padding included.
TURN_COLUMNS = 52
#: Digits shown per component (fused RRF scores are small: 1 / (60 + rank) per list).
DIGITS = {"rrf": 4}


def number(value: float | None, digits: int = 3) -> str:
    """A score for a table cell: fixed digits, ``-`` when absent."""
    return "-" if value is None else f"{value:.{digits}f}"


def tokens(result: Any, max_tokens: int | None) -> str:
    """``used / budget tokens`` (``used tokens`` without a budget)."""
    used = result.metadata["token_count"]
    return f"{used} / {max_tokens} tokens" if max_tokens is not None else f"{used} tokens"


def summary(result: Any, max_tokens: int | None) -> str:
    """One line: records by path, candidates, tokens against the budget, mode, time."""
    meta = result.metadata
    both = meta["pull_count"] + meta["push_count"] - len(result.records)
    paths = f"{meta['pull_count']} pull, {meta['push_count']} push" + (f", {both} of them both" if both else "")
    return (
        f"{len(result.records)} records ({paths}) of {meta['total_candidates']} candidates, "
        f"{tokens(result, max_tokens)}, {meta['retrieval_mode']} retrieval, {meta['timing_ms']:.0f} ms"
    )


def context_panel(result: Any, output_format: str, max_tokens: int | None) -> Panel:
    """The formatted context exactly as it would be sent, titled with its format and token count."""
    body = Text(result.formatted or "(empty: nothing in memory matches)")
    return Panel(body, title=f"context ({output_format}, {tokens(result, max_tokens)})", title_align="left")


def _compact(title: str) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)


def said(record: Any) -> str:
    """``speaker: text`` of a memory (the text alone without a speaker)."""
    text = getattr(record, "content", None) or ""
    speaker = getattr(record, "speaker", None)
    return f"{speaker}: {text}" if speaker else text


def trace_table(result: Any, scores: dict[str, Scores] | None = None, *, keys: bool = False) -> Table:
    """Per selected record: rank, source path, combined score and each score component.

    ``scores`` adds the record's relevance (decay) and confidence; ``keys`` its Redis key.
    """
    shown = [s for s in SIGNALS if any(s in row["signals"] for row in result.metadata["trace"])]
    table = _compact("trace: rank, path, combined score and its components")
    numbers = ["score", *shown] + (["relevance", "confidence"] if scores is not None else [])
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("source", no_wrap=True)
    for name in numbers:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("memory", overflow="fold", ratio=2)
    if keys:
        table.add_column("key", overflow="fold", ratio=1)
    for row, record in zip(result.metadata["trace"], result.records):
        cells: list[Any] = [str(row["rank"]), row["source"], number(row["score"])]
        cells += [number(row["signals"].get(name), DIGITS.get(name, 3)) for name in shown]
        if scores is not None:
            now = scores[record.db_key.redis_key]
            cells += [number(now.relevance), number(now.confidence)]
        cells.append(Text(said(record)))
        if keys:
            cells.append(Text(record.db_key.redis_key))
        table.add_row(*cells)
    return table


def _moved(before: float | None, after: float | None) -> Text:
    if before is None or after is None:
        return Text("-")
    style = "green" if after > before + 1e-9 else "red" if after < before - 1e-9 else "dim"
    return Text(f"{before:.3f} -> {after:.3f}", style=style)


def outcome_table(
    records: list[Any], outcomes: dict[str, str], before: dict[str, Scores], after: dict[str, Scores]
) -> Table:
    """Per record given an outcome: the outcome and its scores before and after it was reported."""
    table = _compact("outcomes reported, scores before -> after")
    for name in ("outcome", "confidence", "relevance", "rhythm"):
        table.add_column(name, no_wrap=True)
    table.add_column("memory", overflow="fold", ratio=1)
    for record in records:
        key = record.db_key.redis_key
        if key not in outcomes:
            continue
        old, new = before[key], after[key]
        rhythm = _moved(old.rhythm, new.rhythm) if record.routine else Text("-")
        table.add_row(outcomes[key], _moved(old.confidence, new.confidence),
                      _moved(old.relevance, new.relevance), rhythm, Text(said(record)))
    return table


def turn_table(
    result: Any, outcomes: dict[str, str], before: dict[str, Scores], after: dict[str, Scores], width: int
) -> Table:
    """One line per selected record: rank, path, combined score, outcome, confidence before -> after, text.

    The text is cut to what is left of ``width`` (the console's) after the other columns.
    """
    table = _compact("records chosen, outcome reported, confidence before -> after")
    for name in ("rank", "source", "score", "outcome", "confidence"):
        table.add_column(name, no_wrap=True, justify="right" if name in ("rank", "score") else "left")
    table.add_column("memory", no_wrap=True, overflow="ellipsis", max_width=max(width - TURN_COLUMNS, 20))
    for row, record in zip(result.metadata["trace"], result.records):
        key = record.db_key.redis_key
        table.add_row(str(row["rank"]), row["source"], number(row["score"]), outcomes.get(key, "-"),
                      _moved(before[key].confidence, after[key].confidence), Text(said(record)))
    return table
