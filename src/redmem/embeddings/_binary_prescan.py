"""Binary pre-scan (opt-in, approximate): candidates for cosine top-k from one sign bit per dimension.

Each unit row ``r`` is kept also as its sign bits ``b_j = [r_j > 0]`` (48 bytes at 384
dimensions, an eighth of the int8 codes), stored word-major — ``words[w, i]`` is the ``w``-th
64-bit word of row ``i`` — so the Hamming distance to the query's bits,

    h(q, r) = sum_w popcount(q_w XOR r_w),

is a few numpy passes over contiguous arrays (no per-row call), in row slices on a few
threads. For dense embeddings the angle between two vectors grows with ``h`` (``E[h] / dims =
angle / pi`` for random hyperplanes), so
the :data:`CANDIDATES_PER_HIT` ``* k`` rows of smallest ``h`` (ties by row order) hold most of
the exact top-k; the caller scores those alone in float32, so every returned cosine is exact
but a true neighbour can be missed. Sparse vectors (most coordinates 0, e.g. feature hashing)
lose the difference between 0 and negative and are ranked poorly: keep the exact int8
pre-scan (:mod:`~redmem.embeddings._prescan`) for them.
"""

from __future__ import annotations

import numpy as np

from ._slices import in_slices

__all__ = ["CANDIDATES_PER_HIT", "sign_words", "nearest"]

#: Rows rescored in float32 per hit asked for: 20 x k (e.g. 200 rows for max_items 10).
CANDIDATES_PER_HIT = 20


def sign_words(rows: np.ndarray) -> np.ndarray:
    """The sign bits of ``rows`` (n x d) as a (ceil(d / 64) x n) uint64 array, word-major."""
    bits = np.packbits(np.atleast_2d(rows) > 0, axis=1)
    bits = np.pad(bits, ((0, 0), (0, (-bits.shape[1]) % 8)))
    return np.ascontiguousarray(bits.view(np.uint64).T)


def nearest(words: np.ndarray, query: np.ndarray, count: int) -> np.ndarray:
    """Row numbers of the ``count`` columns of ``words`` nearest ``query`` (one column of
    :func:`sign_words`) in Hamming distance, ties broken by row number; every row when
    ``count`` reaches their number.

    The threshold comes from a histogram of the distances (``bincount``, no sort): rows below
    it are all kept, rows at it in row order until ``count`` are.
    """
    rows = words.shape[1]
    if count >= rows:
        return np.arange(rows)
    distance = np.zeros(rows, dtype=np.uint16)
    wanted = [np.uint64(word) for word in query.tolist()]

    def fill(start: int, stop: int) -> None:
        part = distance[start:stop]
        scratch, bits = np.empty(stop - start, dtype=np.uint64), np.empty(stop - start, dtype=np.uint8)
        for word, bit_word in zip(words, wanted):
            np.bitwise_xor(word[start:stop], bit_word, out=scratch)
            np.bitwise_count(scratch, out=bits)
            np.add(part, bits, out=part)

    in_slices(rows, words.shape[0], fill)
    reached = np.cumsum(np.bincount(distance))
    threshold = int(np.searchsorted(reached, count))
    below = np.flatnonzero(distance < threshold)
    at = np.flatnonzero(distance == threshold)[: count - below.size]
    return np.sort(np.concatenate([below, at]))
