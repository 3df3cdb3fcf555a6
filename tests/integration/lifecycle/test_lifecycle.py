"""Fact lifecycle: merge on write, supersede (explicit, inferred, by hand), restore, history,
validity windows and the superseded filter on every read path, on one server and on the cluster."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from redmem import (
    AutoKeyField,
    BM25Field,
    ContextAssembler,
    DecayingSortedField,
    EmbeddingField,
    FloatField,
    HashingEmbeddings,
    KeyField,
    Model,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.lifecycle import ALL_TIMES, Lifecycle, LifecycleMixin, history, remember, restore, supersede


class LifecycleNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance")
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(256))

    class Meta:
        partition_by = "agent_id"


class LifecyclePlainNote(LifecycleMixin, Model):
    lifecycle = Lifecycle(merge=False, supersede=False)
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content")

    class Meta:
        partition_by = "agent_id"


def note(content: str, at: float, **values: object) -> LifecycleNote:
    return LifecycleNote(agent_id="a1", content=content, valid_from=at, **values)


def current_contents(**where: object) -> list[str]:
    hits = LifecycleNote.query.filter(agent_id="a1").keyword_search("Alice", limit=20, where=where or None)
    return sorted(record.content for record in hits)


def test_exact_restatement_reinforces_the_stored_record(any_db):
    first = note("Alice lives in Berlin.", 100.0)
    assert remember(first, source="chat-1").action == "created"
    again = note("alice lives in berlin", 200.0)
    outcome = remember(again, source="chat-2")
    assert outcome.action == "merged"
    assert again.note_id == first.note_id
    stored = LifecycleNote.query.get(agent_id="a1", note_id=first.note_id)
    assert (stored.seen_count, stored.sources) == (2, ["chat-1", "chat-2"])
    assert stored.last_seen >= 200.0 or stored.last_seen > 0
    assert len(LifecycleNote.query.filter(agent_id="a1").all()) == 1


def test_near_duplicate_merges_but_a_changed_value_does_not(any_db):
    note("Alice lives in Berlin now.", 100.0).save()
    note("Alice lives in Berlin.", 150.0).save()
    assert len(LifecycleNote.query.filter(agent_id="a1").all()) == 1
    note("Alice lives in Lisbon.", 200.0).save()  # a new value: never merged, supersedes
    assert len(LifecycleNote.query.filter(agent_id="a1").all()) == 2


def test_newer_fact_of_the_same_slot_supersedes_the_older(any_db):
    berlin = note("Alice lives in Berlin.", 100.0)
    berlin.save()
    lisbon = note("Alice moved to Lisbon in May.", 200.0)
    outcome = remember(lisbon)
    assert outcome.action == "superseded"
    old = LifecycleNote.query.get(agent_id="a1", note_id=berlin.note_id)
    assert old.valid_to == 200.0
    assert old.superseded_by == lisbon.note_id and lisbon.supersedes == berlin.note_id
    assert current_contents() == ["Alice moved to Lisbon in May."]
    assert current_contents(as_of=150.0) == ["Alice lives in Berlin."]
    assert current_contents(as_of=ALL_TIMES) == ["Alice lives in Berlin.", "Alice moved to Lisbon in May."]
    assert [r.content for r in history(old)] == ["Alice lives in Berlin.", "Alice moved to Lisbon in May."]


def test_explicit_subject_and_slot(any_db):
    first = note("The deploy window is Friday.", 100.0, subject="deploys", slot="window")
    first.save()
    second = note("Ship on Tuesdays from now on.", 200.0, subject="deploys", slot="window")
    assert remember(second).action == "superseded"
    assert LifecycleNote.query.get(agent_id="a1", note_id=first.note_id).valid_to == 200.0


def test_other_subjects_and_distractor_names_stay_current(any_db):
    note("Alice lives in Berlin.", 100.0).save()
    note("Alicia lives in Porto.", 110.0).save()
    note("Alice works at Acme.", 120.0).save()
    note("Alice moved to Lisbon.", 200.0).save()
    contents = current_contents()
    assert "Alicia lives in Porto." not in contents  # no "Alice" term
    assert contents == ["Alice moved to Lisbon.", "Alice works at Acme."]


def test_assemble_and_composite_skip_superseded_and_see_the_past(any_db):
    note("Alice lives in Berlin.", 100.0).save()
    note("Alice moved to Lisbon.", 200.0).save()
    assembler = ContextAssembler(LifecycleNote, max_items=5, max_tokens=500)
    now = [r.content for r in assembler.assemble("Where does Alice live?", agent_id="a1").records]
    assert now == ["Alice moved to Lisbon."]
    past = assembler.assemble("Where does Alice live?", agent_id="a1", where={"as_of": 150.0}).records
    assert [r.content for r in past] == ["Alice lives in Berlin."]
    scored = LifecycleNote.query.filter(agent_id="a1").composite_score({"relevance": 1.0}, limit=10)
    assert [r.content for r in scored] == ["Alice moved to Lisbon."]


def test_supersede_and_restore_by_hand(any_db):
    a = note("The office is on floor 3.", 100.0)
    b = note("Team lunch is at noon.", 200.0)
    a.save(), b.save()
    supersede(a, b)
    assert LifecycleNote.query.get(agent_id="a1", note_id=a.note_id).valid_to == 200.0
    restore(a)
    stored = LifecycleNote.query.get(agent_id="a1", note_id=a.note_id)
    assert stored.valid_to is None and stored.superseded_by is None
    assert LifecycleNote.query.get(agent_id="a1", note_id=b.note_id).supersedes is None


def test_backdated_fact_is_stored_already_superseded(any_db):
    new = note("Alice lives in Lisbon.", 200.0)
    new.save()
    old = note("Alice lived in Berlin.", 100.0)
    old.save()
    assert (old.valid_to, old.superseded_by) == (200.0, new.note_id)
    assert current_contents() == ["Alice lives in Lisbon."]
    assert current_contents(as_of=150.0) == ["Alice lived in Berlin."]


def test_a_model_without_merge_or_supersede_stores_every_write(any_db):
    for _ in range(2):
        LifecyclePlainNote(agent_id="a1", content="Alice lives in Berlin.").save()
    assert len(LifecyclePlainNote.query.filter(agent_id="a1").all()) == 2


def test_semantic_search_skips_superseded(any_db):
    note("Alice lives in Berlin.", 100.0).save()
    note("Alice moved to Lisbon.", 200.0).save()
    hits = LifecycleNote.query.filter(agent_id="a1").semantic_search("Alice lives in Berlin", limit=5)
    assert [r.content for r in hits] == ["Alice moved to Lisbon."]


def test_as_of_takes_a_datetime_and_rejects_nonsense(any_db):
    note("Alice lives in Berlin.", datetime(2024, 1, 1, tzinfo=UTC).timestamp()).save()
    note("Alice moved to Lisbon.", datetime(2024, 6, 1, tzinfo=UTC).timestamp()).save()
    assert current_contents(as_of=datetime(2024, 3, 1, tzinfo=UTC)) == ["Alice lives in Berlin."]
    with pytest.raises(QueryException):
        current_contents(as_of="yesterday")


def test_concurrent_writes_of_one_slot_leave_one_current_fact(any_db):
    cities = ["Berlin", "Lisbon", "Oslo", "Porto", "Madrid", "Vienna"]

    def write(i: int) -> None:
        note(f"Alice lives in {cities[i]}.", 100.0 + i).save()

    with ThreadPoolExecutor(len(cities)) as pool:
        list(pool.map(write, range(len(cities))))
    stored = LifecycleNote.query.filter(agent_id="a1").all()
    assert len(stored) == len(cities)
    assert len([r for r in stored if r.valid_to is None]) == 1
    by_id = {r.note_id: r for r in stored}
    for record in stored:  # every closed window is closed by the record it links to
        if record.valid_to is not None:
            assert record.valid_to == by_id[record.superseded_by].valid_from


class LifecycleKeyedNote(LifecycleMixin, Model):
    agent_id = KeyField()
    name = KeyField()
    content = StringField()

    class Meta:
        partition_by = "agent_id"


def test_a_new_record_under_a_stored_key_is_refused(any_db):
    LifecycleKeyedNote(agent_id="a1", name="home", content="Alice lives in Berlin.").save()
    with pytest.raises(ValidationError, match="exists"):
        LifecycleKeyedNote(agent_id="a1", name="home", content="Alice moved to Lisbon.").save()
    stored = LifecycleKeyedNote.query.get(agent_id="a1", name="home")
    stored.content = "Alice moved to Lisbon."
    stored.save()  # a stored record saved again: a plain update
    assert LifecycleKeyedNote.query.get(agent_id="a1", name="home").content == "Alice moved to Lisbon."


def test_a_lifecycle_write_takes_one_round_trip(any_db, sent):
    """Lookup, rules and writes in one script call: created, merged (exact, same value, near
    duplicate by the vectors) and superseded alike, on one server and on the cluster; a plain save
    keeps its WATCH and EXEC."""
    note("Alice lives in Berlin.", 100.0).save()  # warm: the composed script loaded, the matrix current
    note("The staging database listens on port 5432.", 100.0).save()
    LifecyclePlainNote(agent_id="a1", content="A plain note.").save()
    counts = {}
    for action, record in (
        ("created", note("Bob works at Initech.", 100.0)),
        ("merged", note("Alice lives in Berlin.", 200.0)),
        ("merged", note("Bob works at Initech now.", 250.0)),
        ("merged", note("Alice is based in Berlin.", 260.0)),
        ("merged", note("The staging database listens on port 5432 now.", 270.0)),
        ("superseded", note("Alice moved to Lisbon.", 300.0)),
        ("plain", LifecyclePlainNote(agent_id="a1", content="Another plain note.")),
    ):
        sent.clear()
        outcome = remember(record) if action != "plain" else record.save()
        assert action == "plain" or outcome.action == action
        counts.setdefault(action, []).append(len(sent))
    assert counts == {"created": [1], "merged": [1, 1, 1, 1], "superseded": [1], "plain": [2]}


def test_a_write_ranks_and_goes_again_when_the_index_surprises_it(any_db, sent):
    """The process last saw Alice's home held; another process deleted it since: the script finds
    the slot empty and nothing ranked, so the write is ranked and sent again (two round trips),
    and decides as ever (a new current fact)."""
    berlin = note("Alice lives in Berlin.", 100.0)
    berlin.save()
    LifecycleNote.query.get(agent_id="a1", note_id=berlin.note_id).delete()
    sent.clear()
    outcome = remember(note("Alice lives in Porto.", 200.0))
    assert (outcome.action, len(sent)) == ("created", 2)
    assert current_contents() == ["Alice lives in Porto."]
