"""Fitting ranked items into a budget: one packer, three strategies (pure functions, no I/O).

- ``skip_not_break`` (ContextAssembler): rank order; an item that does not fit is skipped and
  later, smaller items are still tried; the first item is admitted whatever its size when
  ``admit_first`` (the seed's rule).
- ``stop_at_first_miss`` (Frames): guaranteed items are admitted first (over the budget when
  ``over_budget``, the seed's rule), then rank order until the first item that does not fit.
- ``greedy_knapsack`` (HCE): by utility per token, highest first, skipping what does not fit.

:func:`fit` is the budget stage every recipe shares: it costs each item as the text it adds to
the composed context, deals with the items bigger than the whole budget as ``oversize`` says
(:mod:`redmem.context._oversize`), packs the others with a strategy, composes the text, and
counts it: unless an oversized item was admitted on purpose, ``token_count <= max_tokens``.
:class:`Layout` says how the pieces become one text (the output formats' layouts are in
:mod:`redmem.context._rendering`, with :func:`~redmem.context._rendering.pack_slices`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from ..store._validation import is_int
from ._oversize import Cuttable, Oversize, check_oversize, longest_fit
from ._tokens import is_own_counter

__all__ = ["Budget", "Packed", "Fitted", "Layout", "pack", "fit", "STRATEGIES", "Costs"]

#: Token costs in rank order, or ``cost(index, position)`` when an item's cost depends on the
#: 1-based position it would take (numbered lines).
Costs: TypeAlias = Sequence[int] | Callable[[int, int], int]


@dataclass(frozen=True)
class Layout:
    """How packed pieces become one text, for the packer to cost: ``frame(position, piece)`` is the
    text a piece adds at its 1-based position, counted with ``separator``; ``compose(indices,
    pieces)`` joins the framed pieces of the chosen items; ``framing`` is the text the
    composition adds once (headings, brackets), counted once."""

    frame: Callable[[int, str], str]
    compose: Callable[[Sequence[int], Sequence[str]], str]
    separator: str = "\n"
    framing: str = ""


@dataclass(frozen=True)
class Budget:
    """Limits of one packing: at most ``max_items`` items and ``max_tokens`` tokens (None: no limit)."""

    max_items: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_items", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (not is_int(value) or value < 0):
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


def skip_not_break(costs: Costs, budget: Budget, *, count: int | None = None, admit_first: bool = True) -> Packed:
    """Rank order, skip what does not fit; ``admit_first``: the first item is admitted whatever
    its size (it may overshoot).

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
        if (admit_first and not selected) or _fits(used, cost, budget):
            selected.append(index)
            used += cost
        else:
            skipped.append(index)
    return Packed(selected, used, skipped)


def stop_at_first_miss(
    costs: Sequence[int], budget: Budget, *, guaranteed: Sequence[int] = (), over_budget: bool = True,
) -> Packed:
    """Admit ``guaranteed`` indices first (even over budget when ``over_budget``, else those that
    fit), then rank order until one misses."""
    selected: list[int] = []
    used = 0
    for index in dict.fromkeys(guaranteed):
        if over_budget or _fits(used, costs[index], budget):
            selected.append(index)
            used += costs[index]
    for index, cost in enumerate(costs):
        if index in guaranteed and index not in selected:
            continue
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


@dataclass(frozen=True)
class Fitted:
    """What :func:`fit` admitted (indices in admission order, which is the order of the text),
    their framed pieces (a truncated one cut), the composed text, its token count, and what
    happened to the oversized items."""

    selected: list[int]
    pieces: list[str]
    text: str
    token_count: int
    oversize: Oversize


def fit(
    items: Sequence[Cuttable], layout: Layout, counter: Callable[[str], int], budget: Budget,
    strategy: str = "skip_not_break", oversize: str = "truncate", **options: Any,
) -> Fitted:
    """Pack ``items`` (rank order) into ``budget`` with ``strategy`` and compose them with ``layout``.

    An item costs ``counter`` of its framed piece plus the layout's separator, at the position
    it would take; the layout's framing is costed once. An item is *oversized* when it costs more
    than the whole budget alone. ``oversize`` (see :mod:`redmem.context._oversize`): ``"skip"``
    packs the others; ``"truncate"`` keeps a place for it (costing nothing), then cuts it to fit
    the room left (left out when none is); ``"admit"`` runs the strategy on every item as the
    seeds did. Then the text is counted whole: while it exceeds ``max_tokens`` (the counter is
    not additive) the last admitted item is dropped; with nothing left, the text is "" when even
    the empty composition does not fit.
    """
    oversize = check_oversize(oversize)
    room = None if budget.max_tokens is None else max(budget.max_tokens - counter(layout.framing), 0)
    costs = _Costs(items, layout, counter)
    big = set() if room is None else {i for i in range(len(items)) if costs.alone(i) > room}
    hard = oversize != "admit"
    kept = [i for i in range(len(items)) if not (oversize == "skip" and i in big)]
    reserved = big if hard else set()
    # Without max_tokens a cost bounds nothing (the knapsack still ranks by it): redmem's own
    # counter, which nobody watches, then counts no piece; a user's receives each, as documented.
    uncounted = room is None and strategy != "greedy_knapsack" and is_own_counter(counter)
    packed = _strategy(kept, reserved, costs, Budget(budget.max_items, room), strategy, hard, uncounted, options)
    selected = [kept[i] for i in packed.selected]
    pieces = {i: layout.frame(p, costs.whole(i)) for p, i in enumerate(selected, 1) if i not in reserved}
    truncated: list[int] = []
    if oversize == "truncate" and room is not None:
        priority = set(options.get("guaranteed", ())) if strategy == "stop_at_first_miss" else set()
        truncated = _truncate(selected, big, priority, pieces, costs, room)
    chosen = [i for i in selected if i in pieces]
    text = _within(chosen, pieces, layout, counter, budget.max_tokens if hard else None)
    report = Oversize(truncated=[i for i in truncated if i in chosen], skipped=[i for i in sorted(big) if i not in chosen],
                      admitted=[i for i in chosen if i in big and i not in truncated])
    return Fitted(chosen, [pieces[i] for i in chosen], text, counter(text), report)


class _Costs:
    """The token cost of items' pieces in a layout, each whole item rendered when first needed
    (a packing stopped by ``max_items`` never renders the rest) and counted once per framing."""

    def __init__(self, items: Sequence[Cuttable], layout: Layout, counter: Callable[[str], int]) -> None:
        self.items, self.layout, self.counter = items, layout, counter
        self._whole: dict[int, str] = {}
        self._counted: dict[tuple[int, str], int] = {}

    def whole(self, index: int) -> str:
        """Item ``index`` rendered whole."""
        if index not in self._whole:
            self._whole[index] = self.items[index].whole
        return self._whole[index]

    def of(self, piece: str) -> int:
        """What a framed piece adds: its text and the separator."""
        return self.counter(piece + self.layout.separator)

    def at(self, index: int, position: int) -> int:
        """The cost of item ``index`` whole at 1-based ``position``."""
        key = (index, self.layout.frame(position, ""))
        if key not in self._counted:
            self._counted[key] = self.of(self.layout.frame(position, self.whole(index)))
        return self._counted[key]

    def alone(self, index: int) -> int:
        return self.at(index, 1)

    def framed(self, index: int, position: int) -> Cuttable:
        """Item ``index`` framed at ``position``, at any cut."""
        item, frame = self.items[index], self.layout.frame
        return Cuttable(item.longest, lambda chars: frame(position, item.render(chars)))


def _truncate(selected: list[int], big: set[int], priority: set[int], pieces: dict[int, str], costs: _Costs,
              room: int) -> list[int]:
    """Cut the oversized items of ``selected`` into ``pieces`` (admission order); returns those cut.

    A ``priority`` (guaranteed) item is cut to the room its fellow priority items leave, and the
    last other pieces are dropped until everything fits again; any other oversized item is cut
    to the room every admitted piece leaves (so the memories that fit keep their place)."""
    cut: list[int] = []

    def used(among: set[int] | None = None) -> int:
        return sum(costs.of(piece) for i, piece in pieces.items() if among is None or i in among)

    for first in (True, False):
        for position, index in enumerate(selected, 1):
            if index not in big or (index in priority) != first:
                continue
            piece = longest_fit(costs.framed(index, position), costs.of, room - used(priority if first else None))
            if piece is not None:
                pieces[index] = piece
                cut.append(index)
        droppable = [i for i in selected if i in pieces and i not in priority]
        while droppable and used() > room:
            pieces.pop(droppable.pop())
    return cut


def _strategy(kept: list[int], reserved: set[int], costs: _Costs, budget: Budget, strategy: str, hard: bool,
              uncounted: bool, options: dict[str, Any]) -> Packed:
    """Run ``strategy`` over the ``kept`` items (indices into ``kept``); a ``reserved`` item costs
    nothing; ``hard``: the seeds' over-budget admissions (first record, guaranteed items) are off;
    ``uncounted``: no item is counted (each costs 0), for a budget whose costs decide nothing
    (the text is still counted once, whole, by :func:`fit`)."""

    def cost(index: int, position: int) -> int:
        return 0 if uncounted or kept[index] in reserved else costs.at(kept[index], position)

    if strategy == "skip_not_break":
        return skip_not_break(cost, budget, count=len(kept), admit_first=not hard)
    if strategy == "stop_at_first_miss":
        options = {**options, "over_budget": not hard,
                   "guaranteed": [kept.index(i) for i in options.get("guaranteed", ()) if i in kept]}
    if strategy == "greedy_knapsack":
        options = {**options, "utilities": [options["utilities"][i] for i in kept]}
    return pack([cost(i, 1) for i in range(len(kept))], budget, strategy, **options)


def _within(chosen: list[int], pieces: dict[int, str], layout: Layout, counter: Callable[[str], int],
            limit: int | None) -> str:
    """The composed text of ``chosen``, the last ones dropped (from ``chosen``) while it counts over
    ``limit``; "" when not even the empty composition fits."""
    text = layout.compose(chosen, [pieces[i] for i in chosen])
    while limit is not None and counter(text) > limit:
        if not chosen:
            return ""
        chosen.pop()
        text = layout.compose(chosen, [pieces[i] for i in chosen])
    return text
