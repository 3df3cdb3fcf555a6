"""Memories bigger than the whole budget: truncated (the default), skipped, or admitted over it.

``oversize`` is one option of every recipe that packs a token budget:

- ``"truncate"``: the memory is cut so it fits the room the memories that fit leave, its text
  ending in :data:`TRUNCATION_MARKER` (left out when no room is left);
- ``"skip"``: the memory is left out;
- ``"admit"``: the strategy's own rule of the seeds: the ContextAssembler's first record and a
  frame's guaranteed blocks are admitted whatever their size (the budget may be exceeded).

A cut keeps the longest prefix of each long text whose rendering still fits, found with the
real token counter (:func:`longest_fit`), so the cut falls on a token boundary of what is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store._errors import ValidationError

__all__ = ["OVERSIZE", "TRUNCATION_MARKER", "Cuttable", "Oversize", "check_oversize", "cut", "cuttable_text",
           "longest_fit", "truncate_text"]

OVERSIZE = ("truncate", "skip", "admit")
#: What ends a truncated text.
TRUNCATION_MARKER = "…[truncated]"


def check_oversize(value: Any) -> str:
    """``value`` if it is one of :data:`OVERSIZE`, else ValidationError naming them."""
    if not isinstance(value, str) or value not in OVERSIZE:
        raise ValidationError(f"oversize must be one of {list(OVERSIZE)}, got {value!r}")
    return value


def cut(text: str, chars: int) -> str:
    """``text`` whole when it has at most ``chars`` characters, else its first ``chars`` and the marker."""
    return text if len(text) <= chars else text[:chars] + TRUNCATION_MARKER


@dataclass(frozen=True)
class Cuttable:
    """One item's text at any cut: ``render(n)`` keeps at most ``n`` characters of each of its
    long texts; ``longest`` is the ``n`` from which nothing is cut (``render(longest)``: whole)."""

    longest: int
    render: Callable[[int], str]

    @property
    def whole(self) -> str:
        return self.render(self.longest)


def cuttable_text(text: str) -> Cuttable:
    """A plain text as a :class:`Cuttable` (cut with :func:`cut`)."""
    return Cuttable(len(text), lambda chars: cut(text, chars))


def longest_fit(item: Cuttable, cost: Callable[[str], int], room: int) -> str | None:
    """``item.render(n)`` for the largest ``n`` in [1, longest) whose ``cost`` is at most ``room``;
    None when even one character does not fit. The search doubles ``n`` from 1, then bisects, so
    it only costs texts about the size of the one that fits (never the whole of a huge text)."""
    if item.longest < 2 or cost(item.render(1)) > room:
        return None
    good, bad = 1, item.longest
    probe = 2
    while probe < bad and cost(item.render(probe)) <= room:
        good, probe = probe, probe * 2
    bad = min(bad, probe)
    while bad - good > 1:
        middle = (good + bad) // 2
        if cost(item.render(middle)) <= room:
            good = middle
        else:
            bad = middle
    return item.render(good)


def truncate_text(text: str, max_tokens: int, counter: Callable[[str], int]) -> str:
    """``text`` whole when it counts at most ``max_tokens``, else its longest cut that does (the
    marker alone when none does)."""
    if counter(text) <= max_tokens:
        return text
    return longest_fit(cuttable_text(text), counter, max_tokens) or TRUNCATION_MARKER


@dataclass(frozen=True)
class Oversize:
    """What happened to the items bigger than the whole budget, by index (admission order)."""

    truncated: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    admitted: list[int] = field(default_factory=list)

    def report(self, names: Sequence[str]) -> dict[str, list[str]]:
        """The report as ``metadata["oversize"]``: each list of indices as the items' ``names``."""
        return {kind: [names[i] for i in getattr(self, kind)] for kind in ("truncated", "skipped", "admitted")}
