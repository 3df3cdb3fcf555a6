"""StreamConsumer: hand the entries of an event stream to a handler, each at least once.

A consumer belongs to a consumer group (created on first use with ``MKSTREAM``, starting at
``start_id``: ``"0"`` = every entry still in the stream, ``"$"`` = only new ones). Each pass
(:meth:`StreamConsumer.process_once`):

1. claims (``XAUTOCLAIM``) entries that some consumer of the group read but has not
   acknowledged for ``claim_idle_ms``: entries of a consumer that crashed, or whose handler
   raised, are delivered again, to whichever consumer claims them first;
2. reads new entries (``XREADGROUP ... >``), blocking up to ``block_ms``;

and acknowledges (``XACK``) each entry once its handler returned. A handler that raises leaves
its entry pending (logged), to be claimed again after ``claim_idle_ms``. Delivery is therefore
at least once: handlers should be idempotent (``StreamEvent.id`` identifies an entry).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import ResponseError

from ..store._aio import async_variant
from ..store._connection import get_client, reply_timeout, resolved_client, server_errors
from ._events import StreamEvent

__all__ = ["StreamConsumer"]

logger = logging.getLogger(__name__)

Handler = Callable[[StreamEvent], Any]


class StreamConsumer:
    """One named consumer of a consumer group on one stream.

    Args:
        stream: the stream's key (e.g. ``Memory.event_stream_key(agent_id="a")``).
        group: the consumer group's name.
        consumer: this consumer's name, unique within the group (a restarted process may reuse it).
        client: the Redis client (default: redmem's default client).
        batch_size: most entries read or claimed per call.
        block_ms: how long a read waits for new entries (0: do not wait).
        claim_idle_ms: how long an entry stays unacknowledged before another consumer takes it.
        start_id: where a newly created group starts reading.
    """

    def __init__(
        self,
        stream: str,
        group: str,
        consumer: str,
        *,
        client: Any = None,
        batch_size: int = 10,
        block_ms: int = 1000,
        claim_idle_ms: int = 60_000,
        start_id: str = "0",
    ) -> None:
        self.stream, self.group, self.consumer = stream, group, consumer
        self._client = client
        self.batch_size, self.block_ms = batch_size, block_ms
        self.claim_idle_ms, self.start_id = claim_idle_ms, start_id
        self._group_ready = False

    @property
    def client(self) -> Any:
        """The client given, else the default one (inside the asyncio API: its facade)."""
        return get_client() if self._client is None else resolved_client(self._client)

    def ensure_group(self) -> None:
        """Create the consumer group (and the stream) if missing; an existing group is kept."""
        if self._group_ready:
            return
        with server_errors(self.client):
            try:
                self.client.xgroup_create(self.stream, self.group, id=self.start_id, mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        self._group_ready = True

    def read(self, count: int | None = None, block_ms: int | None = None) -> list[StreamEvent]:
        """New entries for this consumer (now pending until acknowledged), oldest first.

        A wait longer than half the client's reply timeout is made of several shorter blocking
        reads, so an idle stream is not mistaken for a dead server.
        """
        self.ensure_group()
        block = self.block_ms if block_ms is None else block_ms
        timeout = reply_timeout(self.client)
        longest = block if timeout is None else max(1, min(block, int(timeout * 500)))
        deadline = time.monotonic() + block / 1000
        while True:
            with server_errors(self.client):
                reply = self.client.xreadgroup(
                    self.group, self.consumer, {self.stream: ">"},
                    count=count or self.batch_size, block=min(block, longest) or None,
                )
            block = int((deadline - time.monotonic()) * 1000)
            if reply or block <= 0:
                return [StreamEvent.from_entry(i, raw) for _, entries in reply or [] for i, raw in entries]

    def claim_stale(self, count: int | None = None) -> list[StreamEvent]:
        """Take over entries left unacknowledged for ``claim_idle_ms`` by any consumer of the group.

        Entries trimmed from the stream while pending are skipped (Redis 7 also drops them from
        the pending list).
        """
        self.ensure_group()
        with server_errors(self.client):
            reply = self.client.xautoclaim(
                self.stream, self.group, self.consumer, self.claim_idle_ms,
                start_id="0-0", count=count or self.batch_size,
            )
        return [StreamEvent.from_entry(i, raw) for i, raw in reply[1] if raw is not None]

    def ack(self, *ids: str | bytes) -> int:
        """Acknowledge entries: they leave the group's pending list. Returns how many did."""
        if not ids:
            return 0
        with server_errors(self.client):
            acked: int = self.client.xack(self.stream, self.group, *ids)
            return acked

    def pending_count(self) -> int:
        """Entries of the group read by some consumer and not yet acknowledged."""
        self.ensure_group()
        with server_errors(self.client):
            return int(self.client.xpending(self.stream, self.group)["pending"])

    def handle(self, events: list[StreamEvent], handler: Handler) -> int:
        """Run ``handler`` on each event, acknowledging those it returned from; returns that count."""
        done = 0
        for event in events:
            try:
                handler(event)
            except Exception:
                logger.exception("handler failed on %s entry %s; it stays pending", self.stream, event.id)
                continue
            self.ack(event.id)
            done += 1
        return done

    def process_once(self, handler: Handler, block_ms: int | None = None) -> int:
        """One pass: stale entries claimed, then new entries read; returns how many were handled."""
        done = self.handle(self.claim_stale(), handler)
        return done + self.handle(self.read(block_ms=block_ms), handler)

    def run(self, handler: Handler, stop: threading.Event | None = None) -> int:
        """Process until ``stop`` is set (forever without one); returns how many were handled."""
        done = 0
        while stop is None or not stop.is_set():
            done += self.process_once(handler)
        return done

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aensure_group = async_variant(ensure_group)
    aread = async_variant(read)
    aclaim_stale = async_variant(claim_stale)
    aack = async_variant(ack)
    apending_count = async_variant(pending_count)
    ahandle = async_variant(handle)
    aprocess_once = async_variant(process_once)
