"""The statistics of the policy cache: Wilson's lower bound, the TD (Q-learning) step, and the
chi-square goodness-of-fit test of event times against uniform, its survival function computed
from the regularized gamma function. Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "wilson_lower_bound", "td_update", "chi_square_statistic", "chi_square_sf", "regularized_gamma_q", "timing_peak",
]


def wilson_lower_bound(successes: int, n: int, z: float = 1.96) -> float:
    """Lower bound of the Wilson score interval of a success rate (Wilson 1927), 0 when n = 0:

    ``(p + z^2/2n - z * sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``p = successes / n``.
    """
    if n <= 0:
        return 0.0
    p = successes / n
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (p + z * z / (2 * n) - spread) / (1 + z * z / n)


def td_update(q: float, reward: float, next_max: float, alpha: float = 0.1, gamma: float = 0.95) -> float:
    """One temporal-difference (Q-learning) step: ``q + alpha * (reward + gamma * next_max - q)``."""
    return q + alpha * (reward + gamma * next_max - q)


def chi_square_statistic(counts: Sequence[float]) -> float:
    """Pearson's goodness-of-fit statistic against uniform: ``sum((O - E)^2 / E)``, E = total / bins."""
    total = sum(counts)
    if total <= 0:
        return 0.0
    expected = total / len(counts)
    return sum((observed - expected) ** 2 for observed in counts) / expected


def regularized_gamma_q(a: float, x: float) -> float:
    """``Q(a, x) = Gamma(a, x) / Gamma(a)``, the regularized upper incomplete gamma function.

    Series ``P(a, x) = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n))`` for x < a + 1, else
    the continued fraction of ``Gamma(a, x)`` evaluated by the modified Lentz method (DLMF 8.7.1,
    8.9.2; Numerical Recipes 6.2).
    """
    if x <= 0:
        return 1.0
    scale = math.exp(a * math.log(x) - x - math.lgamma(a))
    if x < a + 1:
        term = total = 1.0 / a
        denominator = a
        while abs(term) > abs(total) * 1e-16:
            denominator += 1
            term *= x / denominator
            total += term
        return max(0.0, 1.0 - scale * total)
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    fraction = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        fraction *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return scale * fraction


def chi_square_sf(statistic: float, df: int) -> float:
    """P(X >= statistic) for a chi-square variable with ``df`` degrees of freedom: ``Q(df/2, x/2)``."""
    return regularized_gamma_q(df / 2, statistic / 2)


def timing_peak(counts: Sequence[int], p_value: float = 0.05, min_events: int = 10) -> int | None:
    """The busiest bin when the counts reject uniform at ``p_value`` (chi-square), else None.

    Needs at least ``min_events`` events; ties go to the lowest bin.
    """
    if sum(counts) < min_events:
        return None
    if chi_square_sf(chi_square_statistic(counts), len(counts) - 1) >= p_value:
        return None
    return max(range(len(counts)), key=lambda i: (counts[i], -i))
