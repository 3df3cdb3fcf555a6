"""Context candidates, their token cost and the knapsack that fits them into a budget.

The three sources score on different scales (graph activation, tree similarity, buffer recency
and overlap), so each candidate's utility is divided by the most its source can give
(:func:`normalised`): every source's best possible candidate weighs 1.0 and any source can win;
raised to a power (``sharpness``), the differences outweigh the texts' lengths.
:func:`context_budgeting` is the shared packer's ``greedy_knapsack`` strategy: by
``utility / token_cost`` descending, skipping what does not fit. :func:`fit_context` is the
pipeline's: the same knapsack in the shared budget stage (:func:`redmem.context._packing.fit`),
costing each text with the pipeline's counter and cutting a text bigger than the whole budget
as ``oversize`` says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...context._oversize import cuttable_text
from ...context._packing import Budget, Fitted, Layout, fit, pack
from ...context._tokens import TokenCounter
from ...store._errors import ValidationError
from ...store._validation import is_int, is_real, non_negative_int

__all__ = ["ContextCandidate", "SOURCES", "context_budgeting", "fit_context", "CostTable", "normalised", "BLOCK_LAYOUT"]

#: Where a candidate comes from.
SOURCES = ("graph", "tree", "keyword", "buffer")

#: The context block: the texts one per line.
BLOCK_LAYOUT = Layout(lambda position, piece: piece, lambda indices, pieces: "\n".join(pieces))


@dataclass(frozen=True)
class ContextCandidate:
    """A piece of text offered to the context block: its ``source`` ("graph", "tree" or "buffer"),
    its ``utility`` (>= 0; normalised to [0, 1] by the pipeline), its ``token_cost`` and where it
    came from (``metadata``: interaction id, raw score, every source that found it)."""

    content: str
    source: str
    utility: float
    token_cost: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The plain float / int first: the pipeline makes some 60 candidates per query, and the
        # general checks (``numbers.Real``, an ABC) cost more than the rest of a candidate.
        utility, cost = self.utility, self.token_cost
        if self.source not in SOURCES:
            raise ValidationError(f"a candidate's source is one of {list(SOURCES)}, not {self.source!r}")
        if not (type(utility) is float and 0.0 <= utility < math.inf) and (
                not is_real(utility) or not math.isfinite(utility) or utility < 0):
            raise ValidationError(f"a candidate's utility is a finite number >= 0, not {utility!r}")
        if not (type(cost) is int and cost >= 0) and (not is_int(cost) or cost < 0):
            raise ValidationError(f"a candidate's token_cost is an int >= 0, not {cost!r}")


def normalised(candidates: Sequence[ContextCandidate], scales: Mapping[str, float],
               sharpness: float = 1.0) -> list[ContextCandidate]:
    """Each candidate with utility ``min(1, utility / scale) ** sharpness``, ``scale`` the most its
    source can give; the raw utility is kept in ``metadata["raw_utility"]``.

    ``sharpness`` > 1 keeps the order and [0, 1] but stretches the differences: the knapsack ranks
    by utility per token, so with flat utilities the cheapest texts win whatever their relevance.
    """
    return [
        ContextCandidate(c.content, c.source, min(1.0, c.utility / scales[c.source]) ** sharpness, c.token_cost,
                         {**c.metadata, "raw_utility": c.utility})
        for c in candidates
    ]


def context_budgeting(candidates: Sequence[ContextCandidate], budget: int) -> list[ContextCandidate]:
    """The candidates a greedy knapsack admits within ``budget`` tokens: by ``utility / token_cost``
    descending (ties keep input order), skipping any that no longer fits. A budget below the
    smallest cost admits nothing."""
    budget = non_negative_int("budget", budget)
    packed = pack([c.token_cost for c in candidates], Budget(max_tokens=budget), "greedy_knapsack",
                  utilities=[c.utility for c in candidates])
    return [candidates[i] for i in packed.selected]


class CostTable:
    """A counter that answers from ``known`` (text -> tokens) and counts any other text with
    ``counter``, remembering it (the packer counts the composed block twice)."""

    def __init__(self, known: dict[str, int], counter: TokenCounter) -> None:
        self.known, self.counter = known, counter

    def __call__(self, text: str) -> int:
        found = self.known.get(text)
        if found is None:
            found = self.known[text] = self.counter(text)
        return found


def fit_context(candidates: Sequence[ContextCandidate], budget: int, counter: TokenCounter,
                oversize: str = "truncate") -> tuple[list[ContextCandidate], Fitted]:
    """The candidates the greedy knapsack admits within ``budget`` tokens of the block (each whole
    candidate costing its ``token_cost``, a cut one ``counter(piece + "\\n")``), a truncated one
    with its cut text (``metadata["truncated"]``), and the fit (the block's text, its token count
    by ``counter``, the oversize report). The block is counted whole before it is returned and
    the last admitted dropped while it exceeds ``budget``, so the budget holds even where the
    costs under-count."""
    budget = non_negative_int("budget", budget)
    costed = CostTable({c.content + BLOCK_LAYOUT.separator: c.token_cost for c in candidates}, counter)
    fitted = fit([cuttable_text(c.content) for c in candidates], BLOCK_LAYOUT, costed, Budget(max_tokens=budget),
                 "greedy_knapsack", oversize, utilities=[c.utility for c in candidates])
    cut = set(fitted.oversize.truncated)
    chosen = [replace(candidates[i], content=piece, token_cost=counter(piece + "\n"),
                      metadata={**candidates[i].metadata, "truncated": True}) if i in cut else candidates[i]
              for i, piece in zip(fitted.selected, fitted.pieces)]
    return chosen, fitted
