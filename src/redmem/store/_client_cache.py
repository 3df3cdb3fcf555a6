"""ClientCache: in-process state per (client, key), the least recently used dropped past a capacity.

Each client has its own entries, so two clients in one process behave like two processes (the
asyncio API's per-loop facade of a client shares that client's: same server, same state); a
client that is garbage-collected takes its entries with it. Used for the state a process keeps
per partition and brings up to date from the partition's change log (vector matrices, BM25
postings).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar
from weakref import WeakKeyDictionary

from ._aio import cache_owner

__all__ = ["ClientCache"]

T = TypeVar("T")


class ClientCache(Generic[T]):
    """Entries by (client, key), made by ``factory`` when first asked for; at most ``capacity`` per client."""

    def __init__(self, factory: Callable[[], T], capacity: int = 128) -> None:
        self.factory, self.capacity = factory, capacity
        self._by_client: WeakKeyDictionary[Any, OrderedDict[str, T]] = WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, client: Any, key: str) -> T:
        """The entry of ``key`` as seen through ``client`` (a new one from ``factory`` when unknown);
        the asyncio API's facade sees its configured client's (:func:`~redmem.store._aio.cache_owner`)."""
        with self._lock:
            entries = self._by_client.setdefault(cache_owner(client), OrderedDict())
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = self.factory()
                while len(entries) > self.capacity:
                    entries.popitem(last=False)
            entries.move_to_end(key)
            return entry

    def clear(self) -> None:
        with self._lock:
            self._by_client.clear()
