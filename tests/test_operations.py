"""The replication advice of docs/operations.md, checked on a real primary and replica.

``WAIT`` after a redmem write on a ``single_connection_client`` counts the replicas that have
that write: 1 while the replica follows, 0 (after the timeout) while it is stopped.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import redis

import redmem
from redmem import AutoKeyField, KeyField, Model, StringField
from redmem.store.embedded import EmbeddedServer


class Note(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()


@pytest.fixture
def primary_and_replica():
    with EmbeddedServer(unix_socket=False) as primary, EmbeddedServer(unix_socket=False) as replica:
        follower = redis.Redis.from_url(replica.url)
        follower.replicaof("127.0.0.1", primary.port)
        deadline = time.monotonic() + 10
        while follower.info("replication")["master_link_status"] != "up":
            assert time.monotonic() < deadline, "the replica never synced"
            time.sleep(0.05)
        previous = redmem.store.settings()
        yield primary, replica
        redmem.configure(client=previous.client, key_prefix=previous.key_prefix)
        follower.close()


def test_wait_counts_the_replicas_that_have_a_save(primary_and_replica):
    primary, replica = primary_and_replica
    client = redmem.connect(primary.url, single_connection_client=True)
    redmem.configure(key_prefix="ops")
    Note.create(agent_id="agent-1", content="The invoice is due on Friday")
    assert client.wait(1, 2000) == 1
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        Note.create(agent_id="agent-1", content="written while the replica is stopped")
        started = time.monotonic()
        assert client.wait(1, 300) == 0
        assert time.monotonic() - started >= 0.25
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    assert client.wait(1, 5000) == 1
    client.close()
