"""The replication advice of docs/operations.md, checked on a real primary and replica.

``min-replicas-to-write`` makes a primary whose replica went silent refuse redmem's saves
(nothing half-written), and accept them again once the replica reports. (``WAIT`` is not
offered: it counts only the writes of its own connection, and redmem's transactions run on
pooled connections, so a ``WAIT`` on ``single_connection_client`` did not cover them.)
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import redis

import redmem
from redmem import AutoKeyField, KeyField, Model, StringField
from redmem.store._embedded import EmbeddedServer


class OperationsNote(Model):
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


def _wait_for_a_good_replica(operator: redis.Redis) -> None:
    """The primary counts a replica as good once its last ack is within the lag: until then it refuses."""
    deadline = time.monotonic() + 10
    while int(operator.info("replication").get("min_slaves_good_slaves", 0)) < 1:
        assert time.monotonic() < deadline, "the primary never counted its replica as good"
        time.sleep(0.05)


def test_min_replicas_to_write_refuses_saves_a_cut_off_primary_would_lose(primary_and_replica):
    primary, replica = primary_and_replica
    redmem.connect(primary.url)
    redmem.configure(key_prefix="ops")
    operator = redis.Redis.from_url(primary.url)
    operator.config_set("min-replicas-to-write", 1)
    operator.config_set("min-replicas-max-lag", 1)
    _wait_for_a_good_replica(operator)
    OperationsNote.create(agent_id="agent-1", content="The invoice is due on Friday")
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        deadline, refused, accepted = time.monotonic() + 10, None, 1
        while refused is None:  # the primary notices the silent replica after max-lag seconds
            assert time.monotonic() < deadline, "the primary kept accepting writes"
            try:
                OperationsNote.create(agent_id="agent-1", content="written while the replica is stopped")
                accepted += 1
                time.sleep(0.2)
            except redmem.WriteRefused as exc:
                refused = exc
        assert refused.code == "NOREPLICAS" and isinstance(refused.__cause__, redis.exceptions.ResponseError)
        assert len(OperationsNote.query.filter(agent_id="agent-1").all()) == accepted  # the refused save left nothing
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while True:  # accepted again once the replica reports
        try:
            OperationsNote.create(agent_id="agent-1", content="written after the replica came back")
            break
        except redmem.WriteRefused:
            assert time.monotonic() < deadline, "writes stayed refused"
            time.sleep(0.2)
    assert len(OperationsNote.query.filter(agent_id="agent-1").all()) == accepted + 1
    operator.close()
