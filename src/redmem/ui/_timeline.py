"""A memory's scores over time, for the inspector's one-memory page (pure but for one read).

The decay score restarts at each touch (a save, an acted-on read) and then follows the field's
curve with the memory's current confidence, so its course since the last touch, and where it is
heading, is the curve itself: :func:`decay_timeline` samples it from the last touch to
:data:`AHEAD_DAYS` past now, with now and the confirmed accesses marked. Confidence has no stored
history (only its evidence counts), so the page shows its value now beside the curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..fields._decay import DecayingSortedField

__all__ = ["decay_timeline", "AHEAD_DAYS", "SAMPLE_DAYS"]

DAY = 86400.0
#: How far past now the curve is drawn, in days.
AHEAD_DAYS = 30.0
#: Days after the touch the curve is sampled at (those past the drawn span are left out).
SAMPLE_DAYS = (0.0, 0.25, 0.5, 1, 2, 3, 5, 7, 10, 14, 21, 30, 45, 60, 90, 120, 180, 270, 365, 540, 730)


def decay_timeline(field: DecayingSortedField, base: float, touched: float, confidence: float | None, now: float,
                   accesses: Sequence[float] = ()) -> dict[str, Any]:
    """Points ``{"days", "at", "decay", "past"}`` of the decay curve from ``touched`` to ``AHEAD_DAYS``
    after ``now`` (now itself included), and ``accesses`` (epoch seconds) as days after the touch
    (negative: before it)."""
    elapsed = max((now - touched) / DAY, 0.0)
    span = elapsed + AHEAD_DAYS
    days = sorted({*(d for d in SAMPLE_DAYS if d <= span), elapsed, span})
    points = [{"days": d, "at": _when(touched + d * DAY), "decay": field.score(base, touched, confidence, touched + d * DAY),
               "past": d <= elapsed} for d in days]
    return {"touched": _when(touched), "now_days": elapsed, "points": points,
            "accesses": [{"days": (t - touched) / DAY, "at": _when(t)} for t in accesses]}


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")
