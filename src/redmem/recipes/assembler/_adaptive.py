"""AdaptiveAssembler: tune a ContextAssembler's ``score_weights`` by trial, keep what scores better.

The loop is a one-step hill climb measured on live traffic, in cycles of two windows of
``window_size`` calls each:

1. **baseline**: every ``assemble()`` runs with the current weights and records
   ``metric(quality)`` of its result (``assess_quality`` is always on);
2. **candidate**: ``weight_perturbation`` of weight moves from one ``score_weights`` key (the
   donor) to another (the receiver), and the next window runs with those trial weights;
3. **decision**: keep the trial weights if ``mean(candidate window) >= mean(baseline window)``,
   else revert to the weights before the trial. The next cycle starts with a fresh baseline.

The pairs (donor, receiver) are every ordered pair of distinct keys, taken round robin in the
order of ``score_weights``. A move never takes the donor below ``MIN_WEIGHT`` nor the receiver
above ``MAX_WEIGHT``: the amount moved is ``min(p, w_donor - 0.05, 0.9 - w_receiver)``, so
the sum of the weights never changes; a pair that cannot move is passed over. With fewer than
two keys there is nothing to tune and calls are only recorded. The default metric is
``fok_score * avg_confidence``. Defaults (``window_size`` 20, ``weight_perturbation`` 0.05) and
the keep/revert rule are those of popoto's AdaptiveAssembler. Not thread-safe: share one per worker.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

from ...store._aio import async_variant
from ...store._errors import ValidationError
from ...store._validation import is_real, positive_int
from ._quality import RetrievalQuality

__all__ = ["AdaptiveAssembler", "AdaptationStep", "default_metric", "perturbed", "MIN_WEIGHT", "MAX_WEIGHT"]

logger = logging.getLogger(__name__)

MIN_WEIGHT, MAX_WEIGHT = 0.05, 0.9
Metric = Callable[[RetrievalQuality], float]


def default_metric(quality: RetrievalQuality) -> float:
    """``fok_score * avg_confidence``: memory seemed to know, and what it found is believed."""
    return quality.fok_score * quality.avg_confidence


def perturbed(weights: dict[str, float], donor: str, receiver: str, amount: float) -> dict[str, float] | None:
    """``weights`` with ``min(amount, w_donor - 0.05, 0.9 - w_receiver)`` moved from donor to
    receiver; None when that is not positive (the pair cannot move)."""
    moved = min(amount, weights[donor] - MIN_WEIGHT, MAX_WEIGHT - weights[receiver])
    if moved <= 0:
        return None
    return {**weights, donor: weights[donor] - moved, receiver: weights[receiver] + moved}


@dataclass(frozen=True)
class AdaptationStep:
    """One finished trial: the move, both windows' mean metric, and whether it was kept."""

    donor: str
    receiver: str
    before: dict[str, float]
    trial: dict[str, float]
    baseline_mean: float
    candidate_mean: float
    kept: bool


@dataclass
class _Trial:
    donor: str
    receiver: str
    before: dict[str, float]
    trial: dict[str, float]
    baseline: list[float] = field(default_factory=list)


class AdaptiveAssembler:
    """Wraps a ContextAssembler; ``assemble()`` delegates and tunes the weights (module docstring).

    Args:
        inner: the assembler whose ``score_weights`` are tuned in place.
        window_size: calls per baseline and per candidate window (int >= 1).
        metric: ``RetrievalQuality -> float``, higher is better (default :func:`default_metric`).
        weight_perturbation: weight moved per trial, in (0, 1).
    """

    def __init__(
        self, inner: Any, window_size: int = 20, metric: Metric | None = None, weight_perturbation: float = 0.05,
    ) -> None:
        positive_int("window_size", window_size)
        if not is_real(weight_perturbation) or not 0.0 < weight_perturbation < 1.0:
            raise ValidationError(f"weight_perturbation must lie in (0, 1), got {weight_perturbation!r}")
        if metric is not None and not callable(metric):
            raise ValidationError(f"metric must be callable, got {type(metric).__name__}")
        self.inner: Any = inner
        self.window_size: int = window_size
        self.metric: Metric = metric or default_metric
        self.weight_perturbation: float = float(weight_perturbation)
        self.history: list[AdaptationStep] = []
        self._window: list[float] = []
        self._trial: _Trial | None = None
        self._pairs: list[tuple[str, str]] = list(permutations(inner.score_weights, 2))
        self._next_pair: int = 0

    @property
    def phase(self) -> str:
        """``"baseline"`` or ``"candidate"``: which window the next call falls in."""
        return "baseline" if self._trial is None else "candidate"

    @property
    def score_weights(self) -> dict[str, float]:
        """The weights the inner assembler runs with now (trial weights during a candidate window)."""
        return dict(self.inner.score_weights)

    def assemble(self, query_cues: Any = None, **options: Any) -> Any:
        """``inner.assemble(query_cues, assess_quality=True, **options)``; records its metric."""
        options["assess_quality"] = True
        result = self.inner.assemble(query_cues, **options)
        self.record(float(self.metric(result.metadata["quality"])))
        return result

    def record(self, value: float) -> None:
        """Count one observed metric value (``assemble()`` calls this); NaN is ignored."""
        if math.isnan(value):
            return
        self._window.append(value)
        if len(self._window) < self.window_size:
            return
        window, self._window = self._window, []
        if self._trial is None:
            self._start_trial(window)
        else:
            self._decide(self._trial, window)

    def _start_trial(self, baseline: list[float]) -> None:
        weights = dict(self.inner.score_weights)
        for _ in range(len(self._pairs)):
            donor, receiver = self._pairs[self._next_pair]
            self._next_pair = (self._next_pair + 1) % len(self._pairs)
            trial = perturbed(weights, donor, receiver, self.weight_perturbation)
            if trial is not None:
                self._trial = _Trial(donor, receiver, weights, trial, baseline)
                self.inner.score_weights = dict(trial)
                return
        logger.debug("no score_weights pair can move; weights stay %s", weights)

    def _decide(self, trial: _Trial, window: list[float]) -> None:
        baseline_mean, candidate_mean = statistics.fmean(trial.baseline), statistics.fmean(window)
        kept = candidate_mean >= baseline_mean
        self.inner.score_weights = dict(trial.trial if kept else trial.before)
        self.history.append(AdaptationStep(
            trial.donor, trial.receiver, trial.before, trial.trial, baseline_mean, candidate_mean, kept,
        ))
        self._trial = None
        logger.info("%s %s -> %s (%.4f vs baseline %.4f)", "kept" if kept else "reverted",
                    trial.donor, trial.receiver, candidate_mean, baseline_mean)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aassemble = async_variant(assemble)
