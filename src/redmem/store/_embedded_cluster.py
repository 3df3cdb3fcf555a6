"""A Redis Cluster of private servers (:class:`~redmem.store._embedded.EmbeddedServer` nodes) on 127.0.0.1.

Each node is a master owning a contiguous range of the 16384 hash slots; no replicas. Used by
the test fixtures and the cluster benchmarks.
"""

from __future__ import annotations

import atexit
import logging
import time

import redis

from ._embedded import NO_RETRY, EmbeddedServer, find_server_binary
from ._errors import ConfigurationError

__all__ = ["CLUSTER_SLOTS", "EmbeddedCluster"]

logger = logging.getLogger("redmem.embedded")

CLUSTER_SLOTS = 16384

_CLUSTER_TIMEOUT = 20.0
_ADDSLOTS_CHUNK = 1000


def _slot_ranges(masters: int) -> list[tuple[int, int]]:
    """Split the 16384 slots into `masters` contiguous inclusive ranges of near-equal size."""
    bounds = [i * CLUSTER_SLOTS // masters for i in range(masters + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(masters)]


def _add_slots(client: redis.Redis, first: int, last: int) -> None:
    """Assign slots first..last to the node: ADDSLOTSRANGE (7.0+), else ADDSLOTS in chunks."""
    try:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)  # type: ignore[no-untyped-call]  # redis-py: unannotated
        return
    except redis.exceptions.ResponseError as exc:
        if "unknown" not in str(exc).lower():
            raise
        logger.debug("no CLUSTER ADDSLOTSRANGE (%s); using ADDSLOTS", exc)
    _add_slots_chunked(client, first, last)


def _add_slots_chunked(client: redis.Redis, first: int, last: int) -> None:
    """Assign slots first..last with CLUSTER ADDSLOTS, 1000 slots per call (Redis < 7.0)."""
    for start in range(first, last + 1, _ADDSLOTS_CHUNK):
        chunk = range(start, min(start + _ADDSLOTS_CHUNK, last + 1))
        client.execute_command("CLUSTER", "ADDSLOTS", *chunk)  # type: ignore[no-untyped-call]  # redis-py: unannotated


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    """Return CLUSTER INFO as a dict of strings."""
    raw = client.execute_command("CLUSTER", "INFO")  # type: ignore[no-untyped-call]  # redis-py: unannotated
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    if isinstance(raw, bytes):
        raw = raw.decode()
    pairs = (line.split(":", 1) for line in raw.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs}


class EmbeddedCluster:
    """A Redis Cluster of `masters` EmbeddedServer nodes on 127.0.0.1, no replicas."""

    def __init__(self, masters: int = 3, binary: str | None = None) -> None:
        """Describe the cluster; nothing runs until start()."""
        if masters < 1:
            raise ConfigurationError("an embedded cluster needs at least one master")
        self._masters = masters
        self._binary = binary
        self._servers: list[EmbeddedServer] = []

    def start(self) -> EmbeddedCluster:
        """Start the nodes, assign slots, MEET them and wait for cluster_state:ok; return self."""
        if self._servers:
            return self
        binary = self._binary or find_server_binary()
        try:
            for _ in range(self._masters):
                node = EmbeddedServer(binary, unix_socket=False, cluster=True)
                self._servers.append(node.start())
            self._form()
            self._wait_ok(_CLUSTER_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        logger.info("cluster of %d masters ready at %s", self._masters, self.url)
        return self

    def stop(self) -> None:
        """Stop every node and remove their directories. Idempotent."""
        atexit.unregister(self.stop)
        servers, self._servers = self._servers, []
        for server in servers:
            server.stop()

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._servers else "stopped"
        return f"<EmbeddedCluster masters={self._masters} {where}>"

    @property
    def url(self) -> str:
        """redmem URL of the cluster: redis+cluster://127.0.0.1:<first node's port>."""
        self._require_started()
        return f"redis+cluster://{self._servers[0].host}:{self._servers[0].port}"

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        """(host, port) of every node."""
        self._require_started()
        return [(s.host, s.port) for s in self._servers]  # type: ignore[misc]

    @property
    def servers(self) -> list[EmbeddedServer]:
        """The node servers, in slot order."""
        return list(self._servers)

    @property
    def version(self) -> dict[str, str]:
        """Version of the first node (see EmbeddedServer.version)."""
        self._require_started()
        return self._servers[0].version

    def _require_started(self) -> None:
        """Raise ConfigurationError unless start() has run."""
        if not self._servers:
            raise ConfigurationError("EmbeddedCluster is not running: call start() first")

    def _form(self) -> None:
        """Give each node its epoch and slot range, then MEET every node from the first."""
        ranges = _slot_ranges(self._masters)
        for epoch, (server, (first, last)) in enumerate(zip(self._servers, ranges), start=1):
            with server.client() as client:
                client.execute_command("CLUSTER", "SET-CONFIG-EPOCH", epoch)
                _add_slots(client, first, last)
        with self._servers[0].client() as first_node:
            for server in self._servers[1:]:
                first_node.execute_command("CLUSTER", "MEET", server.host, server.port)

    def _wait_ok(self, timeout: float) -> None:
        """Wait until every node reports cluster_state:ok and knows all nodes; else ConfigurationError."""
        deadline = time.monotonic() + timeout
        infos: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            infos = [self._node_info(s) for s in self._servers]
            if all(self._node_ready(i) for i in infos):
                return
            time.sleep(0.05)
        states = [
            (s.port, i.get("cluster_state"), i.get("cluster_known_nodes"))
            for s, i in zip(self._servers, infos)
        ]
        raise ConfigurationError(
            f"embedded cluster not ready after {timeout:.0f} s: (port, state, known nodes) = {states}"
        )

    def _node_ready(self, info: dict[str, str]) -> bool:
        """True when a node's CLUSTER INFO shows state ok, all slots and all nodes."""
        return (
            info.get("cluster_state") == "ok"
            and info.get("cluster_known_nodes") == str(self._masters)
            and info.get("cluster_slots_ok") == str(CLUSTER_SLOTS)
        )

    @staticmethod
    def _node_info(server: EmbeddedServer) -> dict[str, str]:
        """CLUSTER INFO of one node, or {} if the node cannot be asked right now."""
        try:
            with server.client(socket_timeout=2, retry=NO_RETRY) as client:
                return _cluster_info(client)
        except (redis.exceptions.RedisError, OSError):
            return {}
