"""Row slices of one large matrix, scored on a few threads at once.

numpy's ``einsum`` and numkong's ``cdist`` release the GIL, so the slices of one scan run on as
many cores: at 100,000 x 384 the int8 pre-scan takes 1.8 ms on one core and 1.05 ms on two
(``numkong.cdist`` spends most of its time per row, converting each result, so a slice costs
in proportion to its rows). The caller's thread scores the first slice itself.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

from ..store._thread_pool import LazyPool

__all__ = ["in_slices", "SCAN_THREADS", "SLICE_MIN"]

#: Threads that score one large matrix (BLAS threads are not used: waking them from idle costs
#: more than they save on a busy 2-core machine).
SCAN_THREADS = max(1, min(4, os.cpu_count() or 1))
#: Numbers (rows x dimensions) one scoring thread takes at least: below, one thread is faster.
SLICE_MIN = 1 << 20
#: The threads that score the slices past the first (the caller scores that one).
_pool = LazyPool(max(1, SCAN_THREADS - 1), "redmem-scan")


def in_slices(rows: int, width: int, fill: Callable[[int, int], object]) -> None:
    """``fill(start, stop)`` for up to :data:`SCAN_THREADS` consecutive row slices covering
    ``rows`` rows of ``width`` numbers, each of at least :data:`SLICE_MIN` numbers; returns
    once every slice is done (an error of one is raised after all have finished)."""
    slices = min(SCAN_THREADS, max(1, rows * width // SLICE_MIN))
    bounds = [rows * k // slices for k in range(slices + 1)]
    futures = [_pool.submit(fill, a, b) for a, b in itertools.pairwise(bounds[1:])]
    try:
        fill(0, bounds[1])
    finally:
        for future in futures:
            future.exception()
    for future in futures:
        future.result()
