"""HNSW pre-scan (opt-in, approximate): candidates for cosine top-k from a navigable graph.

A hierarchical navigable small-world graph (Malkov and Yashunin, 2018, arXiv:1603.09320) over a
matrix's rows, kept by ``usearch`` with int8 vectors (each unit row times 127, rounded). A
search visits a few hundred rows instead of every one, so its cost grows with ``log n`` rather
than ``n``. The :func:`candidate_count` rows it returns are scored again in float32 by the
caller, so every returned cosine is exact but a true neighbour can be missed.

The graph is keyed by row number and follows the matrix. Rows set, moved or removed since the
graph last saw them are removed from it or inserted again by a catch-up on the builder thread,
a few rows per hold of the matrix's lock; until then a search scores those rows beside the
graph's candidates (:meth:`HnswGraph.candidates`), so a write is found at once and no search
waits for inserts. Once more rows have been removed than the graph holds, it is built afresh
(usearch reuses a removed node's slot, but many removals weaken the links).

A new graph is built on a background thread from the rows as they are then, read in chunks
under the matrix's lock; until it is done (or in a forked child, where the parent's builder
does not exist) the caller falls back to the exact pre-scan. The build inserts on one thread.
usearch's parallel insert is about 1.8x faster on two cores, but it leaves more rows that no
search reaches: 8 of 5,000 MiniLM rows were not found by their own vector, against 4 on one
thread (``benchmarks/hnsw_params.py``). One thread also leaves a core for serving.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from importlib.util import find_spec
from typing import TYPE_CHECKING, cast

import numpy as np

from ..store._aio import in_worker, poll_on_loop
from ..store._thread_pool import LazyPool

if TYPE_CHECKING:
    from usearch.index import Index

__all__ = [
    "usearch_available", "new_index", "candidate_count", "HnswGraph", "CANDIDATES_PER_HIT", "CONNECTIVITY",
    "EXPANSION_ADD", "EXPANSION_SEARCH", "BUILD_CHUNK", "FOLLOW_STEP", "PENDING_MOST", "MISSING",
]

logger = logging.getLogger(__name__)

#: Rows rescored in float32 per hit asked for, when more than :data:`EXPANSION_SEARCH`.
CANDIDATES_PER_HIT = 2
#: Edges per node (the ``M`` of the paper): more is better recall, more memory, slower inserts.
CONNECTIVITY = 16
#: Candidates an insert considers (``efConstruction``).
EXPANSION_ADD = 128
#: Candidates a search considers at least (``ef``); a search for more rows considers that many.
#: On 20,000 MiniLM embeddings of dialog sentences, 128 keeps 99.4% of the exact top 10 (64: 98.9%;
#: ``benchmarks/hnsw_params.py``).
#: A search returns all of them (:func:`candidate_count`): rescoring 128 rows costs far less than
#: finding them.
EXPANSION_SEARCH = 128
#: Rows a build reads under the matrix's lock at a time.
BUILD_CHUNK = 20_000
#: Rows inserted (or removed and inserted again) per hold of the matrix's lock while the graph
#: catches up with writes: each insert takes 0.2-0.5 ms, so a search waits at most ~15 ms.
FOLLOW_STEP = 32
#: Rows a search scores beside the graph's candidates while the graph catches up; past this
#: many (a bulk load) the exact pre-scan serves until it has.
PENDING_MOST = 4096
#: The error raised when ``prescan="hnsw"`` is asked for without usearch.
MISSING = "prescan='hnsw' needs the usearch package: pip install 'redmem[hnsw]'"

_builder = LazyPool(1, "redmem-hnsw")


def usearch_available() -> bool:
    return find_spec("usearch") is not None


def candidate_count(limit: int) -> int:
    """Rows a search for the top ``limit`` takes from the graph: its whole candidate list
    (:data:`EXPANSION_SEARCH`), or :data:`CANDIDATES_PER_HIT` ``* limit`` when that is longer. A
    multiple of ``limit`` alone (as the binary pre-scan takes) would make ``ef`` grow with it:
    for the 50 candidates ``assemble()`` asks of each list at max_items 10, 5 x 50 rows took
    1.91 ms at 100,000 hashed rows against 1.27 ms for 128, keeping 94.5% of the exact top 50
    against 89.3% (``benchmarks/hnsw_params.py``): the fused list uses the top of each list most."""
    return max(EXPANSION_SEARCH, CANDIDATES_PER_HIT * limit)


def new_index(dimensions: int) -> Index:
    """An empty graph for unit rows of ``dimensions``. usearch is imported only here, when a graph
    is first built: usearch 2.26.2-2.26.6 imported before onnxruntime 1.32 crash the process."""
    from usearch.index import Index

    return Index(ndim=dimensions, metric="cos", dtype="i8", connectivity=CONNECTIVITY,
                 expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)


class HnswGraph:
    """A graph over one matrix's rows (keys: row numbers), built in the background, then kept in step.

    ``rows_of`` returns the matrix's float32 row array and its row count; the build calls it
    under ``lock``. The matrix reports every row whose content changed (set, moved into, or
    removed) to :meth:`changed`, from the moment the graph is made.
    """

    def __init__(self, lock: AbstractContextManager[object], rows_of: Callable[[], tuple[np.ndarray, int]]) -> None:
        if not usearch_available():
            raise RuntimeError(MISSING)
        self._lock, self._rows_of = lock, rows_of
        self._index: Index | None = None
        self._held = 0  # rows 0.._held-1 were given to the graph (some since changed: _dirty)
        self._dirty: set[int] = set()
        self._removed = 0
        self._closed = False
        self._pid = os.getpid()
        self._idle = threading.Event()  # set while no build or catch-up is running
        self.build_seconds: float | None = None
        self._following = False  # a catch-up is queued or running (read and set under the lock)
        self._build: Future[None] = _builder.submit(self._fill)

    @property
    def ready(self) -> bool:
        """Whether the graph is built (searches use it) in this process."""
        return self._index is not None and self._pid == os.getpid()

    @property
    def stale(self) -> bool:
        """Whether the graph can no longer serve: its builder died with a fork, or its build
        failed, or more rows were removed than it holds (a rebuild is due)."""
        if self._pid != os.getpid():
            return True
        if self._build.done() and self._build.exception() is not None:
            return True
        return self._index is not None and self._removed > max(self._held, 1)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build and any catch-up are over (raising the build's error, if it
        failed); whether they are. Under the asyncio API the wait sleeps on the event loop
        (:func:`~redmem.store._aio.poll_on_loop`) instead of blocking it."""
        if self._pid != os.getpid():
            return False
        done = poll_on_loop(self._idle.is_set, timeout, most=0.01) if in_worker() else self._idle.wait(timeout)
        if done:
            self._build.result()
        return done

    def close(self) -> None:
        """The matrix no longer uses this graph: a build or catch-up still running stops at its next step."""
        self._closed = True

    def changed(self, row: int) -> None:
        """Row ``row`` now holds another vector, or none (call under the matrix's lock)."""
        self._dirty.add(row)

    def pending(self, count: int) -> np.ndarray:
        """The rows below ``count`` whose current vector the graph does not hold (call under the
        matrix's lock): changed since inserted, or never inserted."""
        changed = [row for row in self._dirty if row < min(count, self._held)]
        return np.concatenate([np.array(changed, dtype=np.intp), np.arange(self._held, count, dtype=np.intp)])

    def candidates(self, count: int, unit: np.ndarray, limit: int) -> np.ndarray | None:
        """Row numbers, in increasing order, of the graph's :func:`candidate_count` rows nearest
        ``unit`` among the matrix's first ``count``, and of every row the graph does not hold
        yet (call under the matrix's lock). None when the graph is not ready, when that would be
        every row, or when more than :data:`PENDING_MOST` rows are pending.

        Pending rows start a catch-up on the builder thread, so writes never make a search wait
        for inserts."""
        wanted = candidate_count(limit)
        if not self.ready or wanted >= count:
            return None
        waiting = self.pending(count)
        self.follow(count)
        if waiting.size > PENDING_MOST:
            return None
        index = self._index
        assert index is not None  # ready
        found = index.search(unit, wanted, threads=1).keys.astype(np.intp)
        return np.union1d(found[found < count], waiting)

    def follow(self, count: int) -> None:
        """Start a catch-up on the builder thread when the graph is built, differs from the
        matrix's first ``count`` rows, and none is under way (call under the matrix's lock)."""
        if self.ready and not self._following and (self._dirty or self._held != count):
            self._following = True
            self._idle.clear()
            _builder.submit(self._catch_up)

    def _catch_up(self) -> None:
        """Bring the graph up to the matrix, :data:`FOLLOW_STEP` rows per hold of the lock: the
        removed tail's nodes go, changed rows are removed and inserted again, new rows inserted."""
        while True:
            with self._lock:
                try:
                    more = not self._closed and self._step()
                except Exception:  # the rows it lacks are still scored beside its candidates
                    logger.exception("the HNSW graph could not catch up with the matrix")
                    more = False
                if not more:
                    self._following = False
                    self._idle.set()
                    return

    def _step(self) -> bool:
        """One step of :meth:`_catch_up` (under the lock); False when there was nothing to do."""
        index = self._index
        assert index is not None
        rows, count = self._rows_of()
        if self._held > count:
            self._remove(list(range(count, self._held)))
            self._dirty = {row for row in self._dirty if row < count}
            self._held = count
        changed = list(itertools.islice(self._dirty, FOLLOW_STEP))
        if changed:  # rows past _held are inserted below, from the range of new rows
            self._dirty.difference_update(changed)
            fresh = sorted(row for row in changed if row < self._held)
            self._remove(fresh)
        else:
            fresh = list(range(self._held, min(count, self._held + FOLLOW_STEP)))
            self._held += len(fresh)
        if fresh:
            index.add(np.array(fresh, dtype=np.uint64), rows[fresh], threads=1)
        return bool(changed or fresh)

    def _remove(self, rows: list[int]) -> None:
        if rows:
            cast("Index", self._index).remove(np.array(rows, dtype=np.uint64))
            self._removed += len(rows)

    def _fill(self) -> None:
        """The build: every row in chunks of :data:`BUILD_CHUNK`, until none is left (background)."""
        started = time.perf_counter()
        try:
            index = None
            while True:
                with self._lock:
                    if self._closed:
                        self._idle.set()
                        return
                    rows, count = self._rows_of()
                    if index is None:
                        index = new_index(rows.shape[1])
                    if self._held >= count:
                        self.build_seconds = time.perf_counter() - started
                        self._index = index
                        self._idle.set()
                        self.follow(count)  # the rows changed while the build read others
                        break
                    stop = min(count, self._held + BUILD_CHUNK)
                    start, block = self._held, rows[self._held:stop].copy()
                    self._held = stop
                index.add(np.arange(start, stop, dtype=np.uint64), block, threads=1)
            logger.info("HNSW graph of %d rows built in %.1f s", count, self.build_seconds)
        except BaseException:
            self._idle.set()
            raise
