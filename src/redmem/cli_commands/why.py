"""``redmem ask --why``: an assembly's explanation as tables (:mod:`redmem.context.explain`)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from ..context.explain import Explanation

__all__ = ["why_tables"]


def why_tables(explanation: Explanation) -> Group:
    """The selected items (arms with rank, score, weight and contribution; boosts that acted) and
    what was left out with its reason, under a line of the settings every item was judged by."""
    chosen = Table(title=f"why: {explanation.mode} mode, {explanation.fusion} fusion, weights {explanation.weights}, "
                         f"tenant {explanation.tenant}, filters {explanation.filters or 'none'}",
                   title_justify="left")
    for column in ("#", "memory", "score", "fused", "arms (rank, score, weight -> adds)", "boosts"):
        chosen.add_column(column)
    for item in explanation.items:
        arms = "\n".join(f"{a.arm}: #{a.rank if a.rank is not None else '-'} {a.score:.3f} x{a.weight:g} "
                         f"-> {a.contribution:.4f}" for a in item.arms)
        boosts = "\n".join(f"{b.name}: {b.note}" for b in item.boosts if b.value is not None or "moved above" in b.note)
        fused = "" if item.fused is None else f"{item.fused:.4f}"
        chosen.add_row(str(item.rank), item.record_id, f"{item.score:.3f}", fused, arms, boosts or "-")
    cut = Table(title="left out", title_justify="left")
    for column in ("memory", "reason", "score", "detail"):
        cut.add_column(column)
    for out in explanation.left_out:
        cut.add_row(out.record_id, out.reason, f"{out.score:.3f}", out.detail)
    return Group(chosen, cut)
