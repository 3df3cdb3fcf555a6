"""Isolation and exactly-once under several clients (issue 28): a hypothesis state machine against a
brute-force model, on one server and on the cluster.

Three client connections (each its own process as far as caches go: vector matrices and BM25
postings are kept per client) create, load, edit stale instances, delete, feed back outcomes,
race an edit against a delete, assemble and search with chained filters, and back up and restore
one tenant. After every step: each tenant's records are exactly the model's (count, ids, content),
no search or assembly of one tenant returns another's record, and a deleted record stays deleted
(no stale save, feedback or race brings it back), until a restore legitimately does.
"""

from __future__ import annotations

import itertools
import threading

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, rule

import redmem
from conftest import configured_embeddings
from models import SeedMemory as Memory
from redmem import ContextAssembler, QueryException, RecordNotFound
from redmem.embeddings import HashingEmbeddings
from redmem.fields._restore import restore_partition
from redmem.observation._protocol import ObservationProtocol
from redmem.store._embedded import EmbeddedServer

TENANTS = ("alice", "bob")
WORDS = ("deploy", "invoice", "garden", "harbour", "kitchen", "release", "budget", "pin")
OUTCOMES = ("acted", "used", "dismissed", "contradicted", "deferred")
RUNS = itertools.count(1)  # each example writes under a key prefix of its own


def text_of(words: list[str]) -> str:
    return "note about " + " ".join(words)


class Isolation(RuleBasedStateMachine):
    """One run: the clients, a spare server for backups, and the model of what each tenant holds."""

    url: str = ""
    backup_client: redis.Redis

    records = Bundle("records")  # (record id, tenant)

    def __init__(self) -> None:
        super().__init__()
        self.clients = [self._client() for _ in range(3)]
        self.prefix = f"sm{next(RUNS)}"
        self.live: dict[str, tuple[str, str]] = {}  # id -> (tenant, content)
        self.deleted: set[str] = set()
        self.loaded: list[tuple[int, object]] = []  # (client index, instance as loaded)
        self.backups: dict[str, dict[str, tuple[str, str]]] = {}
        self.turn = 0

    def _client(self) -> object:
        return redmem.connect(self.url)  # a client of its own (each use() makes one the default)

    def use(self, index: int) -> None:
        redmem.configure(client=self.clients[index], key_prefix=self.prefix)

    def teardown(self) -> None:
        for client in self.clients:
            client.close()

    @initialize()
    def start(self) -> None:
        self.use(0)

    # -- writes ------------------------------------------------------------------------------
    @rule(target=records, client=st.integers(0, 2), tenant=st.sampled_from(TENANTS),
          words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    def create(self, client: int, tenant: str, words: list[str]) -> tuple[str, str]:
        self.use(client)
        record = Memory.create(agent_id=tenant, topic=words[0], content=text_of(words))
        self.live[record.memory_id] = (tenant, record.content)
        return record.memory_id, tenant

    @rule(target=records, client=st.integers(0, 2), tenant=st.sampled_from(TENANTS), size=st.integers(2, 12))
    def create_many(self, client: int, tenant: str, size: int) -> object:
        """A bulk save: the partition's vector version jumps past what another client cached."""
        self.use(client)
        batch = [Memory(agent_id=tenant, topic="bulk", content=text_of(["bulk", WORDS[i % len(WORDS)]]))
                 for i in range(size)]
        assert Memory.save_many(batch) == size
        for record in batch:
            self.live[record.memory_id] = (tenant, record.content)
        return multiple(*[(record.memory_id, tenant) for record in batch])

    @rule(client=st.integers(0, 2), record=records)
    def load(self, client: int, record: tuple[str, str]) -> None:
        self.use(client)
        found = Memory.query.filter(agent_id=record[1]).get(agent_id=record[1], memory_id=record[0])
        assert (found is not None) == (record[0] in self.live)
        if found is not None:
            self.loaded.append((client, found))

    @rule(data=st.data(), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    def edit_loaded(self, data: st.DataObject, words: list[str]) -> None:
        """Save an instance loaded some steps ago: it may be stale, its record deleted since."""
        if not self.loaded:
            return
        client, instance = self.loaded[data.draw(st.integers(0, len(self.loaded) - 1))]
        self.use(client)
        instance.content = text_of(words)
        if instance.memory_id in self.live:
            instance.save()
            self.live[instance.memory_id] = (instance.agent_id, instance.content)
        else:
            with pytest.raises(RecordNotFound):
                instance.save()

    @rule(client=st.integers(0, 2), record=records)
    def delete(self, client: int, record: tuple[str, str]) -> None:
        self.use(client)
        found = Memory.query.get(agent_id=record[1], memory_id=record[0])
        assert (found is not None) == (record[0] in self.live)
        if found is not None:
            assert found.delete() is True
            del self.live[record[0]]
            self.deleted.add(record[0])

    @rule(record=records, words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))
    def race_edit_and_delete(self, record: tuple[str, str], words: list[str]) -> None:
        """Two clients at once: one saves an edit of its loaded copy, one deletes. In either order
        the record ends deleted: saved then deleted, or deleted then the save refused."""
        self.use(0)
        first = Memory.query.get(agent_id=record[1], memory_id=record[0])
        second = Memory.query.get(agent_id=record[1], memory_id=record[0])
        if first is None:
            return
        first.content = text_of(words)
        errors: list[BaseException] = []

        def save() -> None:
            try:
                first.save()
            except RecordNotFound:
                pass
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=save)
        thread.start()
        second.delete()
        thread.join()
        assert not errors
        del self.live[record[0]]
        self.deleted.add(record[0])

    @rule(client=st.integers(0, 2), record=records, outcome=st.sampled_from(OUTCOMES))
    def feedback(self, client: int, record: tuple[str, str], outcome: str) -> None:
        """Feed back an outcome through a possibly stale instance: never brings a deleted record back."""
        self.use(client)
        stale = Memory(agent_id=record[1], memory_id=record[0], content="stale copy")
        ObservationProtocol.on_context_used([stale], outcome)

    # -- backup and restore of one tenant ---------------------------------------------------------
    @rule(tenant=st.sampled_from(TENANTS))
    def back_up(self, tenant: str) -> None:
        self.use(0)
        restore_partition_to(self.backup_client, Memory, self.clients[0], tenant)
        self.backups[tenant] = {i: v for i, v in self.live.items() if v[0] == tenant}

    @rule(client=st.integers(0, 2), tenant=st.sampled_from(TENANTS))
    def restore(self, client: int, tenant: str) -> None:
        if tenant not in self.backups:
            return
        self.use(client)
        restore_partition(Memory, self.backup_client, agent_id=tenant)
        for record_id in [i for i, v in self.live.items() if v[0] == tenant]:
            del self.live[record_id]
            self.deleted.add(record_id)
        for record_id, value in self.backups[tenant].items():
            self.live[record_id] = value
            self.deleted.discard(record_id)

    # -- reads -----------------------------------------------------------------------------------
    @rule(client=st.integers(0, 2), tenant=st.sampled_from(TENANTS), words=st.lists(st.sampled_from(WORDS), max_size=3))
    def assemble_and_search(self, client: int, tenant: str, words: list[str]) -> None:
        self.use(client)
        mine = {i for i, v in self.live.items() if v[0] == tenant}
        other = next(t for t in TENANTS if t != tenant)
        scoped = Memory.query.filter(agent_id=tenant)
        with pytest.raises(QueryException):
            scoped.filter(agent_id=other).count()
        text = " ".join(words) or "note"
        result = ContextAssembler(Memory, max_items=5).assemble(text, agent_id=tenant)
        assert {r.memory_id for r in result.records} <= mine
        assert {m.memory_id for m in scoped.filter(agent_id=tenant).keyword_search(text, limit=50)} <= mine
        assert {m.memory_id for m in scoped.semantic_search(text, limit=50)} <= mine

    @invariant()
    def each_tenant_holds_exactly_its_records(self) -> None:
        self.turn += 1
        self.use(self.turn % 3)
        for tenant in TENANTS:
            mine = {i: v[1] for i, v in self.live.items() if v[0] == tenant}
            scoped = Memory.query.filter(agent_id=tenant)
            assert scoped.count() == len(mine)
            assert {m.memory_id: m.content for m in scoped.no_track().all()} == mine
            found = {m.memory_id for m in scoped.semantic_search("note about", limit=100)}
            assert found == set(mine)  # every live vector, no deleted or foreign one (caches exact)
        for tenant in TENANTS:  # no hash of a deleted record, in either tenant (one EXISTS each: one slot)
            space = Memory._meta.keyspace((tenant,))
            keys = [space.record(Memory._meta.record_id({"memory_id": i})) for i in self.deleted]
            assert not keys or redmem.get_client().exists(*keys) == 0


def restore_partition_to(target: object, model: type, source: object, tenant: str) -> None:
    """Back up ``tenant`` of ``model`` from ``source`` into ``target`` (the spare server)."""
    before = redmem.store.settings()
    redmem.configure(client=target)
    try:
        restore_partition(model, source, agent_id=tenant)
    finally:
        redmem.configure(client=before.client, key_prefix=before.key_prefix)


def run(url: str) -> None:
    with EmbeddedServer(unix_socket=False) as spare, spare.client() as backup, \
            configured_embeddings(HashingEmbeddings(32)):
        Isolation.url, Isolation.backup_client = url, backup
        test = Isolation.TestCase()
        test.settings = settings(max_examples=12, stateful_step_count=20, deadline=None,
                                 suppress_health_check=list(HealthCheck))
        test.runTest()


def test_isolation_state_machine_on_one_server(redis_url, db):
    run(redis_url)


@pytest.mark.cluster
def test_isolation_state_machine_on_the_cluster(cluster_url, cluster_client):
    run(cluster_url)
