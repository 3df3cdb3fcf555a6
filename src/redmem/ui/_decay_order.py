"""The inspector's decay order above :data:`~.inventory.EXACT_DECAY_LIMIT` memories: a page never waits for a build.

The exact order at one time (:mod:`~redmem.fields._decay_snapshot`) takes seconds to build at
100k memories. A page is served from the saved order whatever its age, stating the time it is
exact at; when it is stale (older than five minutes, or the agent's count changed) a rebuild
starts in a background thread. With no saved order yet (the agent's first decay page, or a day
without one) the page is the approximate order, newest touch first (the decay clock: exact when
memories share their importance and confidence), and says so. One build at a time per agent:
one thread per partition in this process, and the order's lock in Redis across processes. The
order is a derived cache (no user data changes on the GET that starts it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..fields._decay import DecayingSortedField
from ..fields._decay_snapshot import build_order, saved_order_page
from ..store._connection import server_errors
from ..store._keys import KeyKind, KeySpace

__all__ = ["decay_page", "wait_for_builds", "APPROXIMATE"]

#: The order named on a page served before any exact order exists.
APPROXIMATE = "decay (approximate: newest touch first, the exact order is being built)"

_log = logging.getLogger(__name__)
_builds: dict[str, threading.Thread] = {}
_guard = threading.Lock()


def decay_page(field: DecayingSortedField, space: KeySpace, offset: int, limit: int,
               now: float, when: Callable[[float], str]) -> tuple[list[str], int, str]:
    """A page of ids by decay, the partition's size and the order used (``when`` formats a time)."""
    page = saved_order_page(field, space, offset, limit)
    if page.fresh(now) and page.built is not None:
        return page.ids, page.total, f"decay (exact at {when(page.built)})"
    _start_build(field, space, now)
    if page.built is not None:
        return page.ids, page.total, f"decay (exact at {when(page.built)}; a newer order is being built)"
    client = field.model._meta.client
    with server_errors(client):
        ids = client.zrevrange(field.keys_in(space).updated, offset, offset + limit - 1)
    return [raw.decode() for raw in ids], page.total, APPROXIMATE


def _start_build(field: DecayingSortedField, space: KeySpace, now: float) -> None:
    """Build the partition's order in a daemon thread unless this process already builds it."""
    name = space.key(KeyKind.DECAY_SNAPSHOT, field.name)
    with _guard:
        running = _builds.get(name)
        if running is not None and running.is_alive():
            return
        thread = threading.Thread(target=_build, args=(field, space, now), name=f"redmem-decay-order {name}",
                                  daemon=True)
        _builds[name] = thread
        thread.start()


def _build(field: DecayingSortedField, space: KeySpace, now: float) -> None:
    try:
        build_order(field, space, now)  # None: another process holds the partition's lock
    except Exception:  # a failed build leaves the saved order; the next stale page starts another
        _log.exception("building the decay order of %s failed", space)


def wait_for_builds(timeout: float = 60.0) -> None:
    """Wait for the builds this process started (tests, benchmarks)."""
    deadline = time.monotonic() + timeout
    with _guard:
        running = list(_builds.values())
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
