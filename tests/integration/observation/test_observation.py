"""ObservationProtocol and RecallProposal: every cell of the outcome matrix, checked on stored state."""

from __future__ import annotations

import time

import pytest

import redmem
from conftest import all_keys
from redmem import AutoKeyField, FloatField, KeyField, Model, OutcomeError, StringField, ValidationError
from redmem.fields import ConfidenceField, CyclicDecayField, DecayingSortedField
from redmem.observation import (
    OUTCOME_EFFECTS,
    AccessTrackerMixin,
    EventStreamMixin,
    ObservationProtocol,
    PredictionLedgerMixin,
    RecallProposal,
)


class ObservationMemory(AccessTrackerMixin, PredictionLedgerMixin, EventStreamMixin, Model):
    memory_id = KeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    rhythm = CyclicDecayField(cycles=[(86400, 0.5)], pressure_rate=0.1, partition_by="agent_id")
    confidence = ConfidenceField(partition_by="agent_id")


class SharedStream(PredictionLedgerMixin, EventStreamMixin, Model):
    agent_id = KeyField()
    item_id = KeyField()
    event_stream_per_model = True


class ObservationPlain(Model):
    item_id = KeyField()


#: Written out independently of OUTCOME_EFFECTS: what each outcome must leave in Redis.
EXPECTED = {
    #               touched, accesses, amplitude, pressure, confidence, error, proposal, events
    "acted": (True, 1, 0.6, True, 0.7, 0.1, "acted",
              ["cycle_strengthen", "pressure_resolved", "confidence_update", "prediction_resolved"]),
    "dismissed": (False, 0, 0.4, False, 0.5, 0.5, "dismissed", ["cycle_weaken", "prediction_resolved"]),
    "deferred": (False, 0, 0.5, False, 0.5, None, "pending", []),
    "contradicted": (False, 0, 0.25, False, 0.3, 0.9, "contradicted",
                     ["cycle_weaken", "confidence_update", "prediction_resolved"]),
    "used": (False, 1, 0.5, False, 0.5, 0.3, "used", ["prediction_resolved"]),
}


def prepared(agent: str = "a", memory_id: str = "m") -> ObservationMemory:
    """A record read once (staged), with an open prediction and a pending proposal."""
    memory = ObservationMemory.create(memory_id=memory_id, agent_id=agent, content="standup at 9")
    ObservationProtocol.on_read([memory], now=500.0)
    memory.record_prediction({"attended": True})
    ObservationProtocol.on_surfaced([memory], reason="cyclic")
    return memory


def snapshot(client) -> dict:
    """Every key of the test and its DUMP: equal snapshots mean nothing was written."""
    return {key: client.dump(key) for key in all_keys(client)}


def stored_state(memory: ObservationMemory, client) -> dict:
    space = memory.db_key.keyspace
    cycle = ObservationMemory.rhythm.cycles[0].key
    state = memory.prediction_state
    return {
        "relevance_t": client.zscore(ObservationMemory.relevance.keys_in(space).updated, memory.memory_id),
        "rhythm_t": client.zscore(ObservationMemory.rhythm.keys_in(space).updated, memory.memory_id),
        "resolved": client.zscore(ObservationMemory.rhythm.keys_in(space).resolved, memory.memory_id),
        "accesses": memory.access_count,
        "staged": len(memory.staged_accesses),
        "amplitude": ObservationMemory.rhythm.amplitudes_of(memory)[cycle],
        "confidence": ConfidenceField.get_confidence(memory, "confidence"),
        "error": state.get("error"),
        "prediction": state["state"],
        "proposal": RecallProposal.for_record(memory).status,
    }


@pytest.mark.parametrize("outcome", sorted(EXPECTED))
def test_each_outcome_has_exactly_its_effects(any_db, outcome):
    touched, accesses, amplitude, pressure, confidence, error, proposal, events = EXPECTED[outcome]
    memory = prepared()
    before = stored_state(memory, any_db)
    already = len(ObservationMemory.read_events(agent_id="a"))
    now = time.time() + 1000
    applied = ObservationProtocol.on_context_used([memory], {memory.db_key.redis_key: outcome}, now=now)
    assert applied == {memory.db_key.redis_key: outcome}
    after = stored_state(memory, any_db)
    for stamp in ("relevance_t", "rhythm_t"):
        assert after[stamp] == (now if touched else before[stamp])
    assert after["resolved"] == (now if pressure else before["resolved"])
    assert (after["accesses"], after["staged"]) == (accesses, 0)
    assert (memory.access_log, memory.last_accessed) == (([500.0], now) if accesses else ([], None))
    assert after["amplitude"] == pytest.approx(amplitude)
    assert after["confidence"] == pytest.approx(confidence)
    assert after["error"] == error
    assert after["prediction"] == ("open" if error is None else "resolved")
    assert after["proposal"] == proposal
    assert [e.op for e in ObservationMemory.read_events(agent_id="a")[already:]] == events


def test_the_expected_table_covers_the_matrix():
    assert set(EXPECTED) == set(OUTCOME_EFFECTS)
    for outcome, effects in OUTCOME_EFFECTS.items():
        assert effects.prediction_error == EXPECTED[outcome][5]


def test_a_record_missing_from_the_map_is_deferred(any_db):
    memory = prepared()
    assert ObservationProtocol.on_context_used([memory], {}) == {memory.db_key.redis_key: "deferred"}
    assert (len(memory.staged_accesses), RecallProposal.for_record(memory).status) == (0, "pending")


@pytest.mark.parametrize("discarding", ["dismissed", "deferred", "contradicted"])
def test_reads_of_a_record_reported_unused_never_count(any_db, discarding):
    memory = prepared()
    ObservationProtocol.on_read([memory], now=501.0)
    ObservationProtocol.on_context_used([memory], {memory: discarding})
    for later in ("used", "acted"):  # no read staged since: nothing to count
        ObservationProtocol.on_context_used([memory], later)
    assert (memory.access_count, memory.access_log, memory.last_accessed) == (0, [], None)
    ObservationProtocol.on_read([memory], now=600.0)
    ObservationProtocol.on_context_used([memory], "used", now=700.0)
    assert (memory.access_count, memory.access_log, memory.last_accessed) == (1, [600.0], 700.0)


def test_an_unknown_outcome_writes_nothing(any_db):
    good, bad = prepared(memory_id="good"), prepared(memory_id="bad")
    before = snapshot(any_db)
    outcome_map = {good.db_key.redis_key: "acted", bad.db_key.redis_key: "loved"}
    with pytest.raises(ValueError, match="loved"):
        ObservationProtocol.on_context_used([good, bad], outcome_map)
    assert snapshot(any_db) == before


class ObservationNote(AccessTrackerMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    body = StringField()
    confidence = ConfidenceField(partition_by="agent_id")


class Numbered(AccessTrackerMixin, Model):
    number = KeyField(int)


def test_an_outcome_map_names_records_by_record_id_or_redis_key_mixed(any_db):
    by_record, by_id, by_key, unnamed = [prepared(memory_id=f"m{i}") for i in range(4)]
    outcome_map = {by_record: "acted", by_id.memory_id: "used", by_key.db_key.redis_key: "contradicted"}
    applied = ObservationProtocol.on_context_used([by_record, by_id, by_key, unnamed], outcome_map)
    assert list(applied.values()) == ["acted", "used", "contradicted", "deferred"]
    assert [r.access_count for r in (by_record, by_id, by_key, unnamed)] == [1, 1, 0, 0]
    statuses = [RecallProposal.for_record(r).status for r in (by_record, by_id, by_key, unnamed)]
    assert statuses == ["acted", "used", "contradicted", "pending"]


def test_an_auto_key_an_int_key_and_the_db_key_name_their_record(any_db):
    note = ObservationNote.create(agent_id="a", body="x")
    numbered = Numbered.create(number=7)
    ObservationProtocol.on_read([note, numbered], now=10.0)
    applied = ObservationProtocol.on_context_used([note, numbered], {note.note_id: "used", 7: "used"})
    assert set(applied.values()) == {"used"} and (note.access_count, numbered.access_count) == (1, 1)
    ObservationProtocol.on_read([note], now=11.0)
    ObservationProtocol.on_context_used([note], {note.db_key: "acted"})
    assert ConfidenceField.get_confidence(note, "confidence") == pytest.approx(0.7)


def test_one_outcome_string_applies_to_every_record(any_db):
    records = [prepared(memory_id=f"m{i}") for i in range(3)]
    applied = ObservationProtocol.on_context_used(records, "used")
    assert applied == {r.db_key.redis_key: "used" for r in records}
    assert [r.access_count for r in records] == [1, 1, 1]


def test_records_are_hashable_by_class_and_key(any_db):
    memory = prepared()
    again = ObservationMemory.query.no_track().get(agent_id="a", memory_id="m")
    assert {memory: "acted"}[again] == "acted" and len({memory, again}) == 1
    assert hash(ObservationMemory(memory_id="m", agent_id="a")) == hash(memory)
    with pytest.raises(ValidationError, match="note_id"):
        hash(ObservationNote(agent_id="a", body="unsaved"))


OUTSIDER = object()


@pytest.mark.parametrize("name", ["key of another record", "no-such-id", "record not in the call", 3.5, None,
                                  ("m", "a"), True])
def test_a_key_naming_no_record_of_the_call_raises_before_anything_is_written(any_db, name):
    memory, other = prepared(memory_id="m"), prepared(memory_id="other")
    key = {"key of another record": other.db_key.redis_key, "record not in the call": other}.get(name, name)
    before = snapshot(any_db)
    with pytest.raises(OutcomeError, match="db_key.redis_key") as raised:
        ObservationProtocol.on_context_used([memory], {memory: "acted", key: "acted"})
    assert repr(key) in str(raised.value)
    assert isinstance(raised.value, ValueError)
    assert snapshot(any_db) == before


@pytest.mark.parametrize("outcome_map, message", [
    (["acted"], "list"), (1, "int"), (None, "NoneType"), ("loved", "loved"), ({"m": 1}, "1"),
    ({"m": None}, "None"),
])
def test_a_report_of_the_wrong_shape_raises_before_anything_is_written(any_db, outcome_map, message):
    memory = prepared(memory_id="m")
    before = snapshot(any_db)
    with pytest.raises(OutcomeError, match=message):
        ObservationProtocol.on_context_used([memory], outcome_map)
    assert snapshot(any_db) == before


@pytest.mark.parametrize("records", ["m", ObservationMemory(memory_id="m", agent_id="a"), [1, 2]])
def test_records_of_the_wrong_shape_raise_a_typed_error(any_db, records):
    with pytest.raises(OutcomeError, match="records must"):
        ObservationProtocol.on_context_used(records, "acted")


def test_an_id_shared_by_two_records_of_the_call_must_be_a_key(any_db):
    first, second = prepared("a", "m"), prepared("b", "m")
    before = snapshot(any_db)
    with pytest.raises(OutcomeError, match="several records"):
        ObservationProtocol.on_context_used([first, second], {"m": "acted"})
    assert snapshot(any_db) == before
    applied = ObservationProtocol.on_context_used([first, second], {first.db_key.redis_key: "acted"})
    assert list(applied.values()) == ["acted", "deferred"]


def test_two_outcomes_for_one_record_raise(any_db):
    memory = prepared()
    with pytest.raises(OutcomeError, match="two outcomes"):
        ObservationProtocol.on_context_used([memory], {memory: "acted", memory.db_key.redis_key: "dismissed"})
    assert ObservationProtocol.on_context_used([memory], {memory: "acted", "m": "acted"}) == {
        memory.db_key.redis_key: "acted"}


def test_all_effects_of_a_call_go_out_in_one_pipeline(any_db, monkeypatch):
    records = [prepared(agent, memory_id) for agent in ("a", "b") for memory_id in ("m1", "m2")]
    executed = []
    original = any_db.pipeline

    def counting_pipeline(*args, **kwargs):
        pipe = original(*args, **kwargs)
        run = pipe.execute
        pipe.execute = lambda *a, **k: executed.append(len(pipe)) or run(*a, **k)
        return pipe

    monkeypatch.setattr(any_db, "pipeline", counting_pipeline)
    outcome_map = {r.db_key.redis_key: o for r, o in zip(records, ["acted", "used", "contradicted", "dismissed"])}
    ObservationProtocol.on_context_used(records, outcome_map)
    monkeypatch.undo()
    assert len(executed) == 1 and executed[0] > 20
    assert [r.access_count for r in records] == [1, 1, 0, 0]


def test_a_record_listed_twice_is_applied_once(any_db):
    memory = prepared()
    ObservationProtocol.on_context_used([memory, memory], {memory.db_key.redis_key: "acted"})
    assert ConfidenceField.get_confidence_data(memory, "confidence")["evidence_count"] == 1


def test_resolution_events_reach_a_per_model_stream(any_db):
    record = SharedStream.create(agent_id="a", item_id="i")
    record.record_prediction({"x": 1})
    ObservationProtocol.on_context_used([record], {record.db_key.redis_key: "acted"})
    resolved = [e for e in SharedStream.read_events() if e.op == "prediction_resolved"]
    assert [(e.key, e.data) for e in resolved] == [(record.db_key.redis_key, {"error": 0.1, "outcome": "acted"})]


# -- recall proposals ------------------------------------------------------------------------------
def test_proposals_live_and_are_resolved_in_the_records_partition(any_db):
    first, second = prepared("agent-1", "m"), prepared("agent-2", "m")
    assert [p.record_key for p in RecallProposal.list_pending("agent-1")] == [first.db_key.redis_key]
    outcome_map = {first.db_key.redis_key: "acted", second.db_key.redis_key: "dismissed"}
    ObservationProtocol.on_context_used([first, second], outcome_map)
    assert RecallProposal.for_record(first).status == "acted"
    assert RecallProposal.for_record(second).status == "dismissed"
    assert RecallProposal.list_pending("agent-1") == RecallProposal.list_pending("default") == []
    assert RecallProposal.for_record(first).db_key.keyspace.tag == first.db_key.keyspace.tag  # same slot


def test_an_explicit_partition_is_used_both_ways(any_db):
    plain = ObservationPlain.create(item_id="p")
    [proposal] = ObservationProtocol.on_surfaced([plain], "schedule", partition="agent-9")
    assert (proposal.partition, proposal.reason, proposal.status) == ("agent-9", "schedule", "pending")
    assert RecallProposal.for_record(plain) is None  # not in the record's own partition
    ObservationProtocol.on_context_used([plain], {plain.db_key.redis_key: "used"}, partition="agent-9")
    assert RecallProposal.for_record(plain, "agent-9").status == "used"


def test_proposals_expire_and_resurface(any_db):
    plain, other = ObservationPlain.create(item_id="p"), ObservationPlain.create(item_id="q")
    ObservationProtocol.on_surfaced([plain, other], "cyclic", now=1000.0)
    assert RecallProposal.list_pending("default", now=1000.0 + 3599) != []
    assert RecallProposal.list_pending("default", now=1000.0 + 3600) == []
    assert RecallProposal.expire_stale("default", now=1000.0 + 3599) == 0
    ObservationProtocol.on_context_used([other], {other.db_key.redis_key: "acted"})
    assert RecallProposal.expire_stale("default", now=1000.0 + 3600) == 1
    assert [RecallProposal.for_record(r).status for r in (plain, other)] == ["expired", "acted"]
    ObservationProtocol.on_context_used([plain], {plain.db_key.redis_key: "acted"})
    assert RecallProposal.for_record(plain).status == "expired"  # closed once
    [again] = ObservationProtocol.on_surfaced([plain], "cyclic", ttl=60, now=5000.0)
    stored = RecallProposal.for_record(plain)
    assert (stored.status, stored.expires_at, stored.resolved_at) == ("pending", 5060.0, None)
    assert RecallProposal.list_pending("default", now=5000.0) == [again]


def test_surfacing_writes_one_pipeline_of_proposals(any_db):
    records = [ObservationPlain.create(item_id=str(i)) for i in range(5)]
    proposals = ObservationProtocol.on_surfaced(records + records[:2], "cyclic", now=10.0)
    assert len(proposals) == 5 and all(p.expires_at == 3610.0 for p in proposals)
    assert RecallProposal.query.filter(partition="default").count() == 5


def test_reads_and_proposals_queued_on_one_pipeline_are_what_on_read_and_on_surfaced_write(any_db):
    memory, plain = ObservationMemory.create(memory_id="m", agent_id="a", content="standup at 9"), ObservationPlain.create(item_id="p")
    client = redmem.get_client()
    with client.pipeline(transaction=False) as pipe:
        ObservationProtocol.queue_read(pipe, [memory, plain, memory], now=10.0)
        assert len(pipe) == 1  # one script for the one tracked record
        proposals = ObservationProtocol.queue_surfaced(pipe, [plain, plain], "cyclic", now=10.0)
        assert [p.expires_at for p in proposals] == [3610.0]
        replies = pipe.execute()
    assert replies[0] == 1  # the reply on_read sums
    ObservationProtocol.on_context_used([memory], "used")
    assert memory.access_count == 1
    assert RecallProposal.for_record(plain).status == "pending"


def test_outcomes_for_a_deleted_record_recreate_nothing(any_db):
    memory = prepared()
    memory.delete()
    RecallProposal.for_record(memory).delete()
    leftovers = all_keys(any_db)
    ObservationProtocol.on_context_used([memory], {memory.db_key.redis_key: "acted"})
    assert not any_db.exists(memory.db_key.redis_key)
    assert all_keys(any_db) - leftovers == set()
