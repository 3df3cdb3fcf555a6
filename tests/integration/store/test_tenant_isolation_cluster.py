"""A killed cluster master fails only the tenants whose slot it served, even when it held the
partition registry: the registry is outside every tenant's write."""

from __future__ import annotations

import logging
import time

import pytest

import redmem
from redmem import AutoKeyField, FloatField, KeyField, Model, RedmemError, SortedField, StringField
from redmem.store._connection import settings
from redmem.store._embedded_cluster import EmbeddedCluster
from redmem.store._errors import ServerUnavailable

pytestmark = pytest.mark.cluster


class TenantIsolationClusterTicket(Model):
    ticket_id = AutoKeyField()
    tenant = KeyField(partition_by="tenant")
    content = StringField()
    priority = SortedField(float, default=1.0)
    weight = FloatField(default=0.0)


def node_of(ports: list[int], key: str) -> int:
    """Index in ``ports`` (the masters' ports) of the master serving ``key``."""
    return ports.index(redmem.get_client().get_node_from_key(key).port)


@pytest.fixture
def cluster():
    before = settings()
    with EmbeddedCluster(masters=3) as nodes:
        for server in nodes.servers:  # the other masters keep serving their slots (see docs)
            with server.client() as client:
                client.config_set("cluster-require-full-coverage", "no")
        redmem.connect(nodes.url)
        redmem.configure(key_prefix="iso")
        try:
            yield nodes
        finally:
            redmem.configure(client=before.client, key_prefix=before.key_prefix)


def test_killing_the_registry_master_fails_only_its_own_tenants(cluster, caplog):
    registry = TenantIsolationClusterTicket._meta.global_keyspace().key("partitions")
    ports = [server.port for server in cluster.servers]
    dead = node_of(ports, registry)
    tenants = [f"tenant-{i}" for i in range(30)]
    where = {t: node_of(ports, TenantIsolationClusterTicket._meta.keyspace((t,)).key("all")) for t in tenants}
    healthy = [t for t in tenants if where[t] != dead]
    doomed = [t for t in tenants if where[t] == dead]
    assert len(healthy) >= 10 and len(doomed) >= 2
    for tenant in tenants:
        TenantIsolationClusterTicket.create(tenant=tenant, content=f"first ticket of {tenant}")

    cluster.servers[dead].stop()
    newcomers = [f"new-{i}" for i in range(40)]
    new_healthy = [t for t in newcomers if node_of(ports, TenantIsolationClusterTicket._meta.keyspace((t,)).key("all")) != dead]
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="redmem.model._registry"):
        for tenant in healthy + new_healthy[:5]:  # new partitions too: their registry update fails
            TenantIsolationClusterTicket.create(tenant=tenant, content=f"second ticket of {tenant}", priority=2.0)
            assert TenantIsolationClusterTicket.save_many([TenantIsolationClusterTicket(tenant=tenant, content=f"bulk {i}") for i in range(5)]) == 5
    healthy_seconds = time.monotonic() - started
    assert "partition registry" in caplog.text
    for tenant in healthy:
        mine = TenantIsolationClusterTicket.query.filter(tenant=tenant)
        assert mine.count() == 7
        assert mine.order_by("-priority").first().content == f"second ticket of {tenant}"
    for tenant in doomed[:2]:
        started = time.monotonic()
        with pytest.raises(ServerUnavailable) as caught:
            TenantIsolationClusterTicket.create(tenant=tenant, content="lost")
        assert isinstance(caught.value, RedmemError) and isinstance(caught.value, ConnectionError)
        assert time.monotonic() - started < 15
    # one slow registry update at most (then updates pause); every other save is quick
    assert healthy_seconds < 15, healthy_seconds
