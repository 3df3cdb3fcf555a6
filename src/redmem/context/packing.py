"""Fitting ranked items into a budget: one packer, three strategies (pure functions, no I/O).

- ``skip_not_break`` (ContextAssembler): rank order; an item that does not fit is skipped and
  later, smaller items are still tried; the first item is always admitted.
- ``stop_at_first_miss`` (Frames): guaranteed items are admitted first, then rank order until the
  first item that does not fit.
- ``greedy_knapsack`` (HCE): by utility per token, highest first, skipping what does not fit.

:func:`pack_slices` packs rendered slices (see :mod:`redmem.context.rendering`), each costed as
the text it adds to the composed context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, cast

from .rendering import LINE_FORMATS, frame_line

__all__ = ["Budget", "Packed", "pack", "pack_slices", "STRATEGIES", "Costs"]

#: Token costs in rank order, or ``cost(index, position)`` when an item's cost depends on the
#: 1-based position it would take (numbered lines).
Costs: TypeAlias = Sequence[int] | Callable[[int, int], int]


@dataclass(frozen=True)
class Budget:
    """Limits of one packing: at most ``max_items`` items and ``max_tokens`` tokens (None: no limit)."""

    max_items: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_items", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")


@dataclass(frozen=True)
class Packed:
    """Which items were admitted (indices into the input, in admission order) and their tokens."""

    selected: list[int]
    token_count: int
    skipped: list[int] = field(default_factory=list)


def _fits(used: int, cost: int, budget: Budget) -> bool:
    return budget.max_tokens is None or used + cost <= budget.max_tokens


def _full(count: int, budget: Budget) -> bool:
    return budget.max_items is not None and count >= budget.max_items


def skip_not_break(costs: Costs, budget: Budget, *, count: int | None = None) -> Packed:
    """Rank order, skip what does not fit, always admit the first item (it may overshoot).

    With callable ``costs``, ``count`` gives the number of items.
    """
    selected: list[int] = []
    skipped: list[int] = []
    used = 0
    total = len(cast(Sequence[int], costs)) if count is None else count
    for index in range(total):
        if _full(len(selected), budget):
            break
        cost = costs(index, len(selected) + 1) if callable(costs) else costs[index]
        if not selected or _fits(used, cost, budget):
            selected.append(index)
            used += cost
        else:
            skipped.append(index)
    return Packed(selected, used, skipped)


def stop_at_first_miss(
    costs: Sequence[int], budget: Budget, *, guaranteed: Sequence[int] = ()
) -> Packed:
    """Admit ``guaranteed`` indices first (even over budget), then rank order until one misses."""
    selected = list(dict.fromkeys(guaranteed))
    used = sum(costs[i] for i in selected)
    for index, cost in enumerate(costs):
        if index in selected:
            continue
        if _full(len(selected), budget) or not _fits(used, cost, budget):
            break
        selected.append(index)
        used += cost
    return Packed(selected, used, [i for i in range(len(costs)) if i not in selected])


def greedy_knapsack(
    costs: Sequence[int], budget: Budget, *, utilities: Sequence[float] = ()
) -> Packed:
    """Admit items by ``utility / max(cost, 1)`` descending (ties keep rank order) while they fit."""
    if len(utilities) != len(costs):
        raise ValueError("greedy_knapsack needs one utility per item")
    order = sorted(range(len(costs)), key=lambda i: (-utilities[i] / max(costs[i], 1), i))
    selected: list[int] = []
    skipped: list[int] = []
    used = 0
    for index in order:
        if _full(len(selected), budget):
            break
        if _fits(used, costs[index], budget):
            selected.append(index)
            used += costs[index]
        else:
            skipped.append(index)
    return Packed(selected, used, skipped)


STRATEGIES: dict[str, Callable[..., Packed]] = {
    "skip_not_break": skip_not_break,
    "stop_at_first_miss": stop_at_first_miss,
    "greedy_knapsack": greedy_knapsack,
}


def pack(costs: Costs, budget: Budget, strategy: str = "skip_not_break", **options: object) -> Packed:
    """Pack items whose token costs are ``costs`` (in rank order) with the named strategy."""
    try:
        chosen = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown packing strategy {strategy!r}; use one of {sorted(STRATEGIES)}") from None
    return chosen(costs, budget, **options)


def pack_slices(
    slices: Sequence[str], output_format: str, counter: Callable[[str], int], budget: Budget,
) -> tuple[Packed, list[str]]:
    """Pack rendered slices (rank order) skip-not-break; returns the packing and the admitted
    pieces, framed for :func:`~redmem.context.rendering.compose`.

    A slice costs ``counter`` of the text it adds: the slice itself, or in the line formats the
    line it becomes at the position it would take, line break included (the last line's break
    is not emitted: at most one token over).
    """
    if output_format in LINE_FORMATS:
        def cost(index: int, position: int) -> int:
            return counter(frame_line(output_format, position, slices[index]) + "\n")

        packed = pack(cost, budget, "skip_not_break", count=len(slices))
    else:
        packed = pack([counter(piece) for piece in slices], budget, "skip_not_break")
    pieces = [frame_line(output_format, position, slices[i]) for position, i in enumerate(packed.selected, 1)]
    return packed, pieces
