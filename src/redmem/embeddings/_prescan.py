"""Int8 pre-scan: an exact shortlist for cosine top-k, reading a quarter of the float32 bytes.

Each unit row ``r`` is kept also as int8 codes ``c`` with a scale ``s = max|r| / 127`` and the
error it leaves, ``e = |r - s c|``; the query ``q`` (unit) likewise as ``(t, d, e_q)``. The
integer product ``c . d`` (SIMD kernel of ``numkong``, exact in integers) gives

    approx = s t (c . d),    |q . r - approx| <= e + e_q (1 + e) + slack <= bound

(``q.r - s t c.d = q.(r - s c) + (q - t d).(s c)``, and ``|s c| <= 1 + e``; ``bound`` takes the
largest ``e`` of the matrix), in row slices on a few threads. Every row whose ``approx`` reaches a lower bound of the k-th
largest ``approx`` minus ``2 bound`` is kept: the exact top-k is among them, and only they are
scored in float32. ``slack`` covers float32 rounding of the products.
Without ``numkong`` installed, :func:`available` is False and callers scan in float32.
"""

from __future__ import annotations

import numpy as np

from ._slices import in_slices

try:
    import numkong
except ImportError:  # pragma: no cover - numkong is a declared dependency; a partial install still works
    numkong = None  # type: ignore[assignment]  # None marks numkong as missing (see available())

__all__ = ["available", "quantize", "shortlist", "kth_largest_floor", "PRESCAN_MIN_ROWS", "BLOCK_ROWS"]

#: Below this many rows the float32 scan is already well under a millisecond.
PRESCAN_MIN_ROWS = 8192
#: Added to every bound: float32 rounding of a 4096-d dot product stays far below it.
SLACK = 1e-4
#: A shortlist longer than this share of the rows saves nothing: scan them all instead.
MOST_SHARE = 0.25
#: Rows per block of :func:`kth_largest_floor` (about a thousand blocks at 100,000 rows).
BLOCK_ROWS = 128


def available() -> bool:
    return numkong is not None


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(codes int8, scale float32, error float32)`` of each row (zero rows: scale 1, codes 0)."""
    rows = np.atleast_2d(rows)
    peak = np.abs(rows).max(axis=1) if rows.shape[1] else np.zeros(rows.shape[0], dtype=np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8)
    error = np.linalg.norm(rows - codes.astype(np.float32) * scale[:, None], axis=1).astype(np.float32)
    return codes, scale, error


def kth_largest_floor(values: np.ndarray, k: int) -> float:
    """A value at most the k-th largest of ``values`` (1 <= k <= len), cheaper than selecting it.

    The k-th largest of the maxima of :data:`BLOCK_ROWS`-long blocks: those k maxima are k
    distinct values all at least as large, so the k-th largest value is too. The top values of
    a matrix in insertion order rarely share a block, so the floor is close to the k-th largest.
    """
    maxima = np.maximum.reduceat(values, np.arange(0, values.size, BLOCK_ROWS))
    if maxima.size < k:
        return float(np.partition(values, values.size - k)[values.size - k])
    return float(np.partition(maxima, maxima.size - k)[maxima.size - k])


def shortlist(codes: np.ndarray, scale: np.ndarray, error: np.ndarray, unit: np.ndarray, limit: int) -> np.ndarray | None:
    """Row numbers that hold the exact top ``limit`` of ``rows @ unit``; None when a full scan is cheaper.

    One bound for every row (the largest row error's) keeps the work to a product, a block-wise
    maximum and a comparison: any floor of the k-th largest ``approx`` minus ``bound`` is at most
    the k-th largest ``approx - bound``, so keeping ``approx >= floor - bound`` keeps the exact top-k.
    """
    if numkong is None or limit <= 0 or limit >= codes.shape[0]:
        return None
    query_codes, query_scale, query_error = quantize(unit[None, :])
    approx = np.empty(codes.shape[0], dtype=np.float32)

    def fill(start: int, stop: int) -> None:
        part = approx[start:stop]
        part[:] = np.asarray(numkong.cdist(query_codes, codes[start:stop], metric="dot", out_dtype="float32"))[0]
        part *= scale[start:stop]
        part *= query_scale[0]

    in_slices(codes.shape[0], codes.shape[1], fill)
    worst = float(error.max())
    bound = worst + float(query_error[0]) * (1.0 + worst) + SLACK
    chosen = np.flatnonzero(approx >= kth_largest_floor(approx, limit) - 2 * bound)
    return None if chosen.size > MOST_SHARE * codes.shape[0] else chosen
