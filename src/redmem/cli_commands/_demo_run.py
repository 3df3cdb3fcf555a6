"""The memories a demo run created, listed so that the next run deletes those and nothing else.

The list is a set of memory ids at ``<prefix>:ChatMemory:{<agent>}:demo-run`` (the agent's hash
tag, so it sits on the agent's cluster slot). Ids are added before their memories are saved:
a run that dies half-way still leaves every memory it saved listed.

The ids are fixed (:meth:`DemoRun.memory_ids`, a name-based UUID of the agent and the turn's
position), not random: searches break ties by record id (equal graph weights, equal BM25
scores), so random ids made which record filled the last context slot change from run to run.
"""

from __future__ import annotations

import uuid
from enum import StrEnum, unique

from ..model._dbkey import DbKey
from ..model._loading import load_records
from ..store._connection import server_errors
from ..store._errors import ConfigurationError
from ._memory import ChatMemory

__all__ = ["DemoKeyKind", "DemoRun", "DEMO_NAMESPACE"]


@unique
class DemoKeyKind(StrEnum):
    """The ``redmem demo`` command's kinds of key (the core kinds are :class:`~redmem.store._keys.KeyKind`; every owner's
    values are distinct, ``tests/unit/store/test_keys.py``)."""

    #: set: ids of the memories the ``redmem demo`` command created
    DEMO_RUN = "demo-run"

#: Namespace of the demo's name-based memory ids (``uuid5``).
DEMO_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "redmem:demo")


class DemoRun:
    """The demo's memories of one agent under the current key prefix."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.keyspace = ChatMemory._meta.keyspace((agent,))
        self.key = self.keyspace.key(DemoKeyKind.DEMO_RUN)

    def created(self) -> set[str]:
        """Ids of the memories earlier demo runs created (and did not delete yet)."""
        client = ChatMemory._meta.client
        with server_errors(client):
            return {member.decode() for member in client.smembers(self.key)}

    def check_alone(self) -> None:
        """ConfigurationError when the agent holds memories no demo run created (the demo would mix with them)."""
        others = {key.record_id for key in ChatMemory.query.filter(agent_id=self.agent).keys()} - self.created()
        if others:
            raise ConfigurationError(
                f"agent {self.agent!r} under key prefix {self.keyspace.prefix!r} holds {len(others)} memories "
                "the demo did not create; the demo leaves them alone: run it with another --agent or --prefix "
                "(default prefix: redmem-demo)"
            )

    def memory_ids(self, count: int) -> list[str]:
        """The ids of the memories of the first ``count`` turns: the same every run (module docstring)."""
        return [uuid.uuid5(DEMO_NAMESPACE, f"{self.agent}/{position}").hex for position in range(count)]

    def record(self, memories: list[ChatMemory]) -> None:
        """List ``memories`` (ids set, not saved yet) as created by this run."""
        client = ChatMemory._meta.client
        with server_errors(client):
            client.sadd(self.key, *(memory.memory_id for memory in memories))

    def clear(self) -> int:
        """Delete the memories earlier runs created (records and index entries) and their list; how many."""
        keys = [DbKey(self.keyspace, memory_id) for memory_id in sorted(self.created())]
        removed: int = sum(memory.delete() for memory in load_records(ChatMemory, keys, track=False))
        client = ChatMemory._meta.client
        with server_errors(client):
            client.delete(self.key)
        return removed
