"""The timeline logic against a brute-force reference: random writes, supersedes and restores by
hand, then reads at random times (and at every record's start, so nothing is ever lost), on one
server and on the cluster."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, BM25Field, KeyField, Model, StringField
from redmem.lifecycle import ALL_TIMES, LifecycleMixin, restore, supersede, visible_at


class LifecycleTimelineNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content")

    class Meta:
        partition_by = "agent_id"


@dataclass
class Version:
    """The reference's record: its window and slot."""

    slot: str
    valid_from: float
    valid_to: float | None = None


SLOTS = ("home", "job", "editor")
operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(SLOTS), st.integers(1, 50)),
        st.tuples(st.just("supersede"), st.integers(0, 30), st.integers(0, 30)),
        st.tuples(st.just("restore"), st.integers(0, 30)),
    ),
    min_size=1, max_size=14,
)


def _visible(agent: str, as_of: object) -> set[str]:
    hits = LifecycleTimelineNote.query.filter(agent_id=agent).keyword_search(
        "fact", limit=1000, where=None if as_of is None else {"as_of": as_of})
    return {record.note_id for record in hits}


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=operations, probes=st.lists(st.integers(0, 800), max_size=4))
def test_reads_match_the_reference_timeline(any_db, steps, probes):
    agent = uuid.uuid4().hex
    reference: dict[str, Version] = {}
    holder: dict[str, str] = {}  # slot -> the record the last write or supersede made its holder
    records: list[LifecycleTimelineNote] = []
    clock = 0.0
    for step in steps:
        if step[0] == "write":
            _, slot, gap = step
            clock += gap
            record = LifecycleTimelineNote(agent_id=agent, content=f"fact {len(records)} about {slot}",
                                           subject="user", slot=slot, valid_from=clock)
            record.save()
            previous = holder.get(slot)
            if previous is not None and reference[previous].valid_to is None:
                reference[previous].valid_to = clock
            reference[record.note_id] = Version(slot, clock)
            holder[slot] = record.note_id
            records.append(record)
        elif step[0] == "supersede" and records:
            older, newer = records[step[1] % len(records)], records[step[2] % len(records)]
            if older.note_id == newer.note_id or older.valid_from > newer.valid_from:
                continue
            older = LifecycleTimelineNote.query.get(agent_id=agent, note_id=older.note_id)
            newer = LifecycleTimelineNote.query.get(agent_id=agent, note_id=newer.note_id)
            supersede(older, newer)
            reference[older.note_id].valid_to = newer.valid_from
            if reference[newer.note_id].valid_to is None:
                holder[newer.slot] = newer.note_id
        elif step[0] == "restore" and records:
            record = LifecycleTimelineNote.query.get(agent_id=agent, note_id=records[step[1] % len(records)].note_id)
            restore(record)
            reference[record.note_id].valid_to = None
    assert _visible(agent, None) == {i for i, v in reference.items() if v.valid_to is None}
    assert _visible(agent, ALL_TIMES) == set(reference)
    starts = [v.valid_from for v in reference.values()]
    for at in [*probes, *starts]:
        expected = {i for i, v in reference.items() if visible_at(v.valid_from, v.valid_to, float(at))}
        assert _visible(agent, float(at)) == expected, at
    for record_id, version in reference.items():  # nothing lost: a record with a window is seen in it
        if version.valid_to is None or version.valid_to > version.valid_from:
            assert record_id in _visible(agent, version.valid_from)
