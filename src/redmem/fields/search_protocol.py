"""The search protocol: every primitive's search says what to send, then reads its own replies.

A search object (``bm25.searcher(space, text, limit)``, ``cyclic.searcher(...)``, ...) does no
I/O when it is built. :meth:`Search.calls` lists the script calls to queue; :meth:`Search.finish`
turns the replies to exactly those calls, in order, into the answer. So any set of searches can
share one round trip (:func:`run_searches`) without their caller knowing where each reply lies.

A search that also works in-process (the vector search embeds its query text and scores its
cached matrix) is a
:class:`LocalSearch`: its :meth:`~LocalSearch.work` runs on a worker thread from the moment the
calls are queued, while the server executes the shared pipeline and while the other searches
finish (the BM25 search ranks its in-process postings then), and :meth:`~LocalSearch.abandon`
gives back what :meth:`~Search.calls` took when the replies never come. The vector scan spends
its time in numkong and numpy with the GIL released, so on two cores it and the BM25 ranking
cost the longer of the two instead of their sum (``benchmarks/results/latency_questions*.md``).
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from ..store._connection import server_errors
from ..store._scripts import ScriptCall, run_calls
from ..store._thread_pool import LazyPool

__all__ = ["Search", "LocalSearch", "Mapped", "Hits", "run_searches", "run_search"]

T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: What a ranking search answers: (record id, score) pairs, best first.
Hits = list[tuple[str, float]]


class Search(Protocol[R_co]):
    """A search that can share a round trip: the calls to send, then its answer from their replies."""

    def calls(self) -> list[ScriptCall]:
        """The script calls to queue ([] when there is nothing to ask the server)."""
        ...

    def finish(self, replies: list[Any]) -> R_co:
        """The answer, from the replies to :meth:`calls` in the order they were listed."""
        ...


@runtime_checkable
class LocalSearch(Search[R_co], Protocol):
    """A search with in-process work to overlap with the round trip (the vector scan)."""

    def work(self) -> object:
        """Work done while the server executes the pipeline (after :meth:`calls`, before :meth:`finish`)."""
        ...

    def abandon(self) -> None:
        """Give back what :meth:`calls` took when :meth:`finish` will not run (the pipeline failed)."""
        ...


@dataclass(frozen=True)
class Mapped(Generic[T, R]):
    """``search`` with its answer passed through ``then`` (e.g. a BM25 result as its ranking).

    Only a search with no local work can be mapped: its work would be lost.
    """

    search: Search[T]
    then: Callable[[T], R]

    def __post_init__(self) -> None:
        if _works_locally(type(self.search)):
            raise TypeError(f"{type(self.search).__name__} works in-process and cannot be mapped")

    def calls(self) -> list[ScriptCall]:
        return self.search.calls()

    def finish(self, replies: list[Any]) -> R:
        return self.then(self.search.finish(replies))


def run_searches(client: Any, searches: Sequence[Search[Any]]) -> list[Any]:
    """Each search's answer, in order, all asked in ONE round trip.

    The calls go as :func:`~redmem.store._scripts.run_calls` sends them (one pipeline; a call
    alone by EVALSHA; none: no round trip). The local searches' work starts on a worker thread
    first; the searches without local work finish as soon as the replies are in, the local ones
    once their work is done. A search's :meth:`~Search.finish` may take more round trips of its
    own (the vector search catching up with changes made elsewhere).
    """
    is_local = [_works_locally(type(search)) for search in searches]
    local = [cast(LocalSearch[Any], search) for search, works in zip(searches, is_local) if works]
    working: Future[None] | None = None
    try:
        planned = [search.calls() for search in searches]
        working = _start(local)
        with server_errors(client):
            replies = run_calls(client, [call for calls in planned for call in calls])
        answers: list[Any] = [None] * len(searches)
        starts = list(itertools.accumulate((len(calls) for calls in planned), initial=0))
        for i in sorted(range(len(searches)), key=is_local.__getitem__):  # the local searches last
            if working is not None and is_local[i]:
                working.result()
            answers[i] = searches[i].finish(replies[starts[i] : starts[i + 1]])
    except BaseException:
        if working is not None:
            wait([working])  # the work reads what abandon() gives back
        for search in local:
            search.abandon()
        raise
    return answers


def run_search(client: Any, search: Search[R]) -> R:
    """One search alone: :func:`run_searches` of ``[search]``."""
    answer: R = run_searches(client, [search])[0]
    return answer


@functools.cache
def _works_locally(kind: type) -> bool:
    """Whether searches of ``kind`` are :class:`LocalSearch` es, by type once (an ``isinstance``
    check against the protocol costs ~12 µs, run for every search of every retrieval)."""
    return issubclass(kind, LocalSearch)


#: Threads that run local searches' work (one per concurrent caller, up to the cores).
LOCAL_WORKERS = max(2, os.cpu_count() or 1)
_workers = LazyPool(LOCAL_WORKERS, "redmem-local")


def _start(local: list[LocalSearch[Any]]) -> Future[None] | None:
    """The local searches' work, running on a worker thread (None when there is none)."""
    if not local:
        return None
    return _workers.submit(_work, local)


def _work(local: list[LocalSearch[Any]]) -> None:
    for search in local:
        search.work()
