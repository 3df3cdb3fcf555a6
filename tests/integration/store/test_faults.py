"""Writes under timeouts: each is applied exactly once, or reported WriteOutcomeUnknown -- never twice.

A second client sends ``DEBUG SLEEP`` so the server stalls while a write is on its way: the
client (``socket_timeout=0.2``) times out, redis-py resends, and the server, once awake, runs
the first copy and the resent one. Every write script (a ``lua/`` folder beside its owner) is driven this way
through the public call that uses it; saves and deletes stall right before their EXEC. Each
script is run once before its stalled call: a first call finds the script missing from the
server's cache (NOSCRIPT) and would hide a double application.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
import redis

import redmem
from conftest import configured_embeddings
from redmem import (
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    CyclicDecayField,
    DecayingSortedField,
    ExistenceFilter,
    FloatField,
    KeyField,
    Model,
    StringField,
    TemporalPeriod,
    WriteOutcomeUnknown,
)
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.fields import Entity
from redmem.fields._decay_snapshot import exact_decay_page
from redmem.observation import (
    AccessTrackerMixin,
    EventStreamMixin,
    ObservationProtocol,
    PredictionLedgerMixin,
    RecallProposal,
)
from redmem.store._connection import settings
from redmem.store._embedded import EmbeddedServer
from redmem.store._keys import KeyKind
from redmem.store._scripts import lua_files, writes

STALL_SECONDS = 0.5
TIMEOUT = 0.2
#: A stall outlasting a call's retries (about 1.8 s) and the settle that follows them (about 0.7 s):
#: the outcome cannot be decided before the call returns, so it raises WriteOutcomeUnknown.
UNDECIDABLE = 4.0


class Staller:
    """Makes the server sleep (DEBUG SLEEP from its own connection) when fired, once per arming."""

    def __init__(self) -> None:
        self.url, self.seconds, self.threads = None, 0.0, []

    def arm(self, seconds: float = STALL_SECONDS) -> None:
        self.seconds = seconds

    def fire(self) -> None:
        if not self.seconds:
            return
        sleeper = redis.Redis.from_url(self.url)
        thread = threading.Thread(target=sleeper.execute_command, args=("DEBUG", "SLEEP", self.seconds))
        self.seconds = 0.0
        thread.start()
        self.threads.append(thread)
        probe = redis.Redis.from_url(self.url, socket_timeout=0.05)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:  # the server is asleep before the write leaves
            try:
                probe.ping()
                time.sleep(0.005)
            except redis.TimeoutError:
                break
        probe.close()

    def wait(self) -> None:
        for thread in self.threads:
            thread.join(10)
        self.threads.clear()


staller = Staller()


class StallBeforeExec(StringField):
    """A field whose save and delete hooks stall the server: the EXEC that follows times out."""

    def on_save(self, batch, old) -> None:
        staller.fire()

    def on_save_many(self, batches) -> None:
        staller.fire()

    def on_delete(self, batch, old) -> None:
        staller.fire()


class FaultsDoc(EventStreamMixin, Model):
    agent_id = KeyField()
    doc_id = KeyField()
    body = StringField()
    words = BM25Field(source="body", partition_by="agent_id")
    seen = ExistenceFilter(capacity=1000, partition_by="agent_id")
    stall = StallBeforeExec()


class Draft(EventStreamMixin, Model):
    """Auto-keyed: a new record is written without WATCH (its key was just generated)."""

    draft_id = AutoKeyField()
    agent_id = KeyField()
    body = StringField()
    stall = StallBeforeExec()


class FaultsBelief(Model):
    belief_id = AutoKeyField()
    agent_id = KeyField()
    confidence = ConfidenceField(partition_by="agent_id")


class Linked(Model):
    item_id = AutoKeyField()
    agent_id = KeyField()
    associations = CoOccurrenceField(partition_by="agent_id")
    stall = StallBeforeExec()


class FaultsNote(AccessTrackerMixin, Model):
    note_id = KeyField()
    agent_id = KeyField()


class FaultsHabit(Model):
    habit_id = AutoKeyField()
    agent_id = KeyField()
    weight = FloatField(default=1.0)
    rhythm = CyclicDecayField(base_score_field="weight", cycles=[(TemporalPeriod.DAILY, 0.5)],
                              partition_by="agent_id")
    relevance = DecayingSortedField(half_life=3600.0, partition_by="agent_id")


class Forecast(PredictionLedgerMixin, Model):
    agent_id = KeyField()
    forecast_id = KeyField()


@pytest.fixture(scope="module")
def server():
    with EmbeddedServer(unix_socket=False, extra_args=["--enable-debug-command", "local"]) as server:
        staller.url = server.url
        yield server


@pytest.fixture
def client(server):
    saved = settings()
    client = redmem.connect(server.url, socket_timeout=TIMEOUT)
    client.flushdb()
    yield client
    staller.wait()
    redmem.configure(client=saved.client, key_prefix=saved.key_prefix)


def stalled(call, at_exec: bool = False):
    """``call()`` sent while the server sleeps; its reply, or the WriteOutcomeUnknown it raised.

    ``at_exec``: the sleep starts when the save's hooks run, right before its EXEC is sent.
    """
    staller.arm()
    if not at_exec:
        staller.fire()
    try:
        return call()
    except WriteOutcomeUnknown as exc:
        return exc
    finally:
        staller.wait()


def events(model, **partition) -> list[str]:
    return [e.op for e in model.read_events(**partition)]


# -- one public call per write script ------------------------------------------------------------
def test_update_confidence_once(client):  # confidence_update
    belief = FaultsBelief.create(agent_id="a")
    ConfidenceField.update_confidence(belief, "confidence", 0.9)
    reply = stalled(lambda: ConfidenceField.update_confidence(belief, "confidence", 0.9))
    assert not isinstance(reply, WriteOutcomeUnknown)
    assert ConfidenceField.get_confidence_data(belief, "confidence")["evidence_count"] == 2


def test_strengthen_and_weaken_all_once(client):  # graph_add, graph_weaken, graph_unlink
    graph = Linked.associations.graph(agent_id="a")
    graph.link(Entity("x"), Entity("y"), initial_weight=0.1)
    graph.weaken_all(Entity("z"))
    graph.unlink(Entity("x"), Entity("z"))
    assert stalled(lambda: graph.strengthen(Entity("x"), Entity("y"), delta=0.05)) == pytest.approx(0.15)
    assert graph.get_linked(Entity("x")) == [(Entity("y"), pytest.approx(0.15))]
    assert stalled(lambda: graph.weaken_all(Entity("x"), factor=0.5)) == 0  # none dropped
    assert graph.get_linked(Entity("x")) == [(Entity("y"), pytest.approx(0.075))]
    assert stalled(lambda: graph.unlink(Entity("x"), Entity("y"))) is True


def test_confirm_access_and_staged_reads_once(client):  # access_stage, access_confirm
    def reads_then_confirm(note_id, stall):
        note = FaultsNote.create(agent_id="a", note_id=note_id)
        note.confirm_access(now=5.0)
        FaultsNote.query.get(agent_id="a", note_id=note_id)
        stall(lambda: FaultsNote.query.get(agent_id="a", note_id=note_id))
        staged = len(note.staged_accesses)
        return staged, stall(lambda: note.confirm_access(now=10.0)), note.access_count, len(note.access_log)

    unstalled = reads_then_confirm("calm", lambda call: call())
    assert unstalled[:3] == (2, 2, 2)  # confirmed: the 2 staged reads (the first confirm had none)
    assert reads_then_confirm("stalled", stalled) == unstalled


def test_cyclic_and_decay_touches_once(client):  # cyclic_adjust, decay_stamp, decay_order_key
    habit = FaultsHabit.create(agent_id="a")
    FaultsHabit.rhythm.weaken_cycle(habit, 1.0)
    FaultsHabit.rhythm.touch(habit, now=50.0)
    FaultsHabit.relevance.touch(habit, now=50.0)
    assert list(stalled(lambda: FaultsHabit.rhythm.strengthen_cycle(habit, 1.5)).values()) == [pytest.approx(0.75)]
    assert list(FaultsHabit.rhythm.amplitudes_of(habit).values()) == [pytest.approx(0.75)]  # 0.5 * 1.5 once
    assert stalled(lambda: FaultsHabit.rhythm.touch(habit, now=100.0)) is True
    assert stalled(lambda: FaultsHabit.relevance.touch(habit, now=100.0)) is True


def test_exact_decay_order_once(client):  # decay_snapshot
    with configured_embeddings(HashingEmbeddings(16)):
        ChatMemory.save_many([ChatMemory(agent_id="snap", content=f"m{i}", importance=1.0 + i) for i in range(4)])
    field, space = ChatMemory._meta.fields["relevance"], ChatMemory.query.filter(agent_id="snap").partition()
    calm = exact_decay_page(field, space, 0, 4, 1e9)
    assert stalled(lambda: exact_decay_page(field, space, 0, 4, 2e9))[:2] == calm[:2]
    assert client.zcard(space.key(KeyKind.DECAY_SNAPSHOT, "relevance")) == 4


def test_prediction_record_and_resolve_once(client):  # prediction_record, prediction_resolve
    forecast = Forecast.create(agent_id="a", forecast_id="f")
    assert forecast.record_prediction({"rain": 1.0}, now=1.0) == 1
    forecast.resolve_prediction({"rain": 1.0}, now=1.5)
    assert stalled(lambda: forecast.record_prediction({"rain": 1.0}, now=2.0)) == 2
    assert forecast.record_prediction({"rain": 1.0}, now=2.5) == 3  # the counter moved by one each
    assert stalled(lambda: forecast.resolve_prediction({"rain": 0.0}, now=3.0)) == pytest.approx(1.0)
    assert forecast.resolve_prediction({"rain": 0.0}, now=4.0) is None  # resolved once, not twice


def test_bloom_add_once(client):  # bloom_add: the resent call answers as the first did
    FaultsDoc.seen.add("eta", agent_id="a")
    assert stalled(lambda: FaultsDoc.seen.add("zeta", agent_id="a")) == 1
    assert FaultsDoc.seen.might_exist("zeta", agent_id="a")


def test_custom_event_once(client):  # stream_add
    doc = FaultsDoc.create(agent_id="a", doc_id="d", body="hello")
    doc.emit_event("seen")
    stalled(lambda: doc.emit_event("opened"))
    assert events(FaultsDoc, agent_id="a") == ["create", "seen", "opened"]


# -- saves and deletes: the EXEC itself times out ------------------------------------------------
def test_save_once_with_its_index_and_event(client):  # bm25_write in a WATCH + MULTI/EXEC save
    doc = FaultsDoc(agent_id="a", doc_id="d", body="alpha beta")
    reply = stalled(doc.save, at_exec=True)
    assert not isinstance(reply, WriteOutcomeUnknown)
    assert events(FaultsDoc, agent_id="a") == ["create"]
    space = FaultsDoc.query.filter(agent_id="a").partition()
    keys = FaultsDoc.words.keys_in(space)
    assert (client.hlen(keys.lengths), client.hget(keys.totals, "total")) == (1, b"2")
    assert FaultsDoc.seen.might_exist("beta", agent_id="a")
    doc.body = "gamma"
    assert stalled(doc.save, at_exec=True) is True
    assert events(FaultsDoc, agent_id="a") == ["create", "update"]
    assert (client.hlen(keys.lengths), client.hget(keys.totals, "total")) == (1, b"1")


def test_delete_once(client):
    doc = FaultsDoc.create(agent_id="a", doc_id="d", body="alpha")
    assert stalled(doc.delete, at_exec=True) is True
    assert events(FaultsDoc, agent_id="a") == ["create", "delete"]


def test_delete_of_a_linked_record_once(client):  # graph_remove_node inside the delete
    one, two = Linked.create(agent_id="a"), Linked.create(agent_id="a")
    graph = Linked.associations.graph(agent_id="a")
    graph.link(one, two)
    graph.link(one, Entity("topic"))
    assert stalled(one.delete, at_exec=True) is True
    assert (graph.get_linked(two), graph.get_linked(Entity("topic"))) == ([], [])
    assert [r.item_id for r in Linked.query.filter(agent_id="a").all()] == [two.item_id]


def test_new_auto_keyed_record_once(client):  # no WATCH: redis-py resends the whole MULTI/EXEC
    stalled(lambda: Draft.create(agent_id="a", body="x"), at_exec=True)
    assert events(Draft, agent_id="a") == ["create"]
    assert len(Draft.query.filter(agent_id="a").all()) == 1


def test_bulk_save_once_or_unknown(client):  # a chunk's reply lost: never resent
    staller.arm()
    try:
        Draft.save_many([Draft(agent_id="a", body=str(i)) for i in range(5)])
        outcome = "applied"
    except WriteOutcomeUnknown:
        outcome = "unknown"
    staller.wait()
    assert outcome in ("applied", "unknown")
    assert len(Draft.query.filter(agent_id="a").all()) in ((0, 5) if outcome == "unknown" else (5,))
    assert events(Draft, agent_id="a") == ["create"] * len(Draft.query.filter(agent_id="a").all())


def test_bulk_chunk_waits_past_socket_timeout(client):  # a slow chunk is not taken for a lost reply
    Draft.save_many([Draft(agent_id="warm", body=str(i)) for i in range(1000)])  # two pooled connections
    staller.arm(0.5)  # longer than the 0.2 s socket_timeout, shorter than the first chunk's 62 * 0.01 s
    Draft.save_many([Draft(agent_id="a", body=str(i)) for i in range(1000)])
    staller.wait()
    assert len(Draft.query.filter(agent_id="a").all()) == 1000
    assert events(Draft) == ["create"] * 2000  # Draft's one stream: the warm-up's records and these, once each


# -- no reply after every retry: WriteOutcomeUnknown, and still once -----------------------------
def test_lost_reply_raises_write_outcome_unknown_and_applies_once(client):
    belief = FaultsBelief.create(agent_id="a")
    staller.arm(UNDECIDABLE)
    staller.fire()  # longer than the retries and the settle after them
    with pytest.raises(WriteOutcomeUnknown, match="applied once or not at all") as caught:
        ConfidenceField.update_confidence(belief, "confidence", 0.9)
    staller.wait()
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, redmem.ServerUnavailable)
    (operation,) = caught.value.operations
    applied = settled(caught.value)[operation]  # decided for good ..
    assert ConfidenceField.get_confidence_data(belief, "confidence")["evidence_count"] == applied  # .. once


def test_lost_exec_reply_of_a_save_raises_write_outcome_unknown(client):
    doc = FaultsDoc(agent_id="a", doc_id="d", body="alpha")
    staller.arm(UNDECIDABLE)  # the EXEC, the reconnects after it (about 1.8 s) and the settle lose their replies
    with pytest.raises(WriteOutcomeUnknown) as caught:
        doc.save()
    staller.wait()
    applied = sum(settled(caught.value).values())
    assert events(FaultsDoc, agent_id="a") == ["create"] * applied
    assert len(FaultsDoc.query.filter(agent_id="a").all()) == applied


# -- the guard covers every script that writes ---------------------------------------------------
def test_every_script_that_writes_is_guarded(client):
    scripts, table = lua_files()[0], client.command()
    writing = set()
    for name, path in scripts.items():
        commands = set(re.findall(r"redis\.p?call\(\s*[\"'](\w+)[\"']", path.read_text()))
        if any("write" in table[c.lower()]["flags"] for c in commands):
            writing.add(name)
    assert writing == {name for name in scripts if writes(name)}


# -- the outcome of a lost reply is decided, once, before the caller acts on it ------------------
def settled(unknown: WriteOutcomeUnknown) -> dict[str, bool]:
    """``unknown.settle()``, asked again until the stalled server answers."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return unknown.settle()
        except redmem.ServerUnavailable:
            assert time.monotonic() < deadline, "the server never answered the settle"
            time.sleep(0.05)


def test_a_settled_save_stays_as_decided_after_its_queued_copies_ran(client):
    """Copies of the EXEC still queued behind the stall run after the decision: the decision holds."""
    for doc_id, seconds in (("long", 2.5), ("longer", 2.8), ("longest", 3.1)):
        doc = FaultsDoc(agent_id=doc_id, doc_id="d", body="alpha")
        staller.arm(seconds)
        try:
            doc.save()
            decided = True
        except WriteOutcomeUnknown as unknown:
            (decided,) = settled(unknown).values()
        except redmem.ServerUnavailable:
            decided = False  # decided at once: not applied, and never will be
        staller.wait()
        time.sleep(0.3)  # every copy the server still held has run by now
        assert len(FaultsDoc.query.filter(agent_id=doc_id).all()) == int(decided)
        assert events(FaultsDoc, agent_id=doc_id) == ["create"] * int(decided)


def test_a_settled_new_record_stays_as_decided(client):  # no read before its write: only its op key is WATCHed
    staller.arm(2.5)
    try:
        Draft.create(agent_id="new", body="x")
        decided = True
    except WriteOutcomeUnknown as unknown:
        (decided,) = settled(unknown).values()
    except redmem.ServerUnavailable:
        decided = False
    staller.wait()
    time.sleep(0.3)
    assert len(Draft.query.filter(agent_id="new").all()) == int(decided)


def test_a_settled_script_write_stays_as_decided(client):
    belief = FaultsBelief.create(agent_id="a")
    staller.arm(2.5)
    staller.fire()
    try:
        ConfidenceField.update_confidence(belief, "confidence", 0.9)
        decided = True
    except WriteOutcomeUnknown as unknown:
        (decided,) = settled(unknown).values()
        assert unknown.settle() == {unknown.operations[0]: decided}  # asked again: the same answer
    except redmem.ServerUnavailable:
        decided = False
    staller.wait()
    time.sleep(0.3)
    assert ConfidenceField.get_confidence_data(belief, "confidence")["evidence_count"] == int(decided)


@pytest.mark.parametrize("call", ["on_read", "on_context_used"])
def test_a_lost_reply_of_an_observation_pipeline_names_its_operations(client, call):
    """Never a bare ServerUnavailable once the writes left: the caller learns what to settle."""
    notes = [FaultsNote.create(agent_id="a", note_id=str(i)) for i in range(3)]
    assert RecallProposal._meta.client is not None  # its first use (the schema check) before the stall
    write = {
        "on_read": lambda: ObservationProtocol.on_read(notes),
        "on_context_used": lambda: ObservationProtocol.on_context_used(notes, "used"),
    }[call]
    staller.arm(UNDECIDABLE)
    staller.fire()
    with pytest.raises(WriteOutcomeUnknown) as caught:
        write()
    assert caught.value.operations  # one guarded script per model and kind of write
    applied = settled(caught.value)
    staller.wait()
    time.sleep(0.3)
    assert set(applied) == set(caught.value.operations)
    assert len(set(applied.values())) == 1  # one pipeline: all of it ran, or none
    if call == "on_read":
        assert [n.staged_access_count for n in notes] == [int(all(applied.values()))] * len(notes)
