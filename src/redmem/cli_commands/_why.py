"""``redmem ask --why``: a result's explanation as tables (:mod:`redmem.context._explain`), the same
form for every recipe (assembler, frames, HCE, HSCA: :class:`redmem.context._result.ContextResult`)."""

from __future__ import annotations

from rich.console import Group
from rich.markup import escape
from rich.table import Table

from ..context._explain import Explanation, ItemExplanation

__all__ = ["why_tables"]


def why_tables(explanation: Explanation) -> Group:
    """The selected items (arms with rank, score, weight and contribution; boosts that acted; the
    cost and packing priority where the recipe packs by them) and what was left out with its
    reason, under a line of the settings every item was judged by, then the recipe's notes."""
    costed = any(item.cost is not None for item in explanation.items)
    chosen = Table(title=escape(f"why: {explanation.recipe}, {explanation.mode} mode, {explanation.fusion} fusion, "
                                f"weights {_weights(explanation.weights)}, tenant {explanation.tenant}, "
                                f"filters {explanation.filters or 'none'}"), title_justify="left")
    columns = ["#", "memory", "score", "fused", "arms (rank, score, weight -> adds)", "boosts"]
    for column in columns + (["tokens", "per token"] if costed else []):
        chosen.add_column(column)
    for item in explanation.items:
        fused = "" if item.fused is None else f"{item.fused:.4f}"
        row = [str(item.rank), escape(item.record_id), f"{item.score:.3f}", fused, escape(_arms(item)),
               escape(_boosts(item)) or "-"]
        if costed:
            row += [str(item.cost if item.cost is not None else "-"),
                    "-" if item.priority is None else f"{item.priority:.4g}"]
        chosen.add_row(*row)
    cut = Table(title="left out", title_justify="left")
    for column in ("memory", "reason", "score", "detail"):
        cut.add_column(column)
    for out in explanation.left_out:
        cut.add_row(escape(out.record_id), out.reason, f"{out.score:.3f}", escape(out.detail))
    notes = [escape(note) for note in explanation.notes]
    return Group(chosen, cut, *notes)


def _weights(weights: dict[str, float]) -> str:
    return "{" + ", ".join(f"{name}: {weight:.4g}" for name, weight in weights.items()) + "}"


def _arms(item: ItemExplanation) -> str:
    return "\n".join(f"{a.arm}: #{a.rank if a.rank is not None else '-'} {a.score:.3f} x{a.weight:.4g} "
                     f"-> {a.contribution:.4f}" for a in item.arms)


def _boosts(item: ItemExplanation) -> str:
    """The boosts that read a value (or moved the item), with the value and how it acted."""
    return "\n".join(f"{b.name}{'' if b.value is None else f' {b.value:.3g}'}: {b.note}" for b in item.boosts
                     if b.value is not None or "moved above" in b.note)
