"""A thread pool made on first use and made again in a forked child.

A child process inherits the parent's pool object but not its threads: submitting to it would
queue work that no thread ever runs. Each pool here forgets its executor after a fork, so the
child makes its own on its first submit.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["LazyPool"]

T = TypeVar("T")
_pools: weakref.WeakSet[LazyPool] = weakref.WeakSet()


class LazyPool:
    """``workers`` threads named ``prefix-N``, started on the first :meth:`submit`."""

    def __init__(self, workers: int, prefix: str) -> None:
        self.workers, self.prefix = workers, prefix
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        _pools.add(self)

    def submit(self, function: Callable[..., T], *args: Any) -> Future[T]:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=self.prefix)
            executor = self._executor
        return executor.submit(function, *args)

    def _forget(self) -> None:
        self._executor, self._lock = None, threading.Lock()


def _after_fork_in_child() -> None:
    for pool in list(_pools):
        pool._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
