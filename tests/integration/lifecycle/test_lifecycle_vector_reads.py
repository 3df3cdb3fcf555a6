"""The vector search of a lifecycle model's current records leaves out the few superseded ones
rather than listing every current one; its hits match a brute-force reference of the windows, on
one server and on the cluster."""

from __future__ import annotations

import uuid
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, EmbeddingField, HashingEmbeddings, KeyField, Model, StringField
from redmem.fields.search_protocol import run_search
from redmem.lifecycle import ALL_TIMES, Lifecycle, LifecycleMixin, supersede, visible_at
from redmem.model._filters import compile_where
from redmem.store._keys import KeyKind

WORDS = ("alice", "berlin", "lisbon", "tea", "coffee", "bike", "editor", "vim", "rust", "paris")


class LifecycleVectorNote(LifecycleMixin, Model):
    lifecycle = Lifecycle(merge=False, supersede=False)
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(64))

    class Meta:
        partition_by = "agent_id"


def _stored(agent: str, count: int, superseded: int) -> list[LifecycleVectorNote]:
    records = [LifecycleVectorNote(agent_id=agent, content=f"{WORDS[i % 10]} {WORDS[i * 7 % 10]} note {i}",
                                   valid_from=float(i)) for i in range(count)]
    LifecycleVectorNote.save_many(records)
    for older, newer in pairwise(records[: superseded + 1]):
        supersede(older, newer)
    return records


def _filter_reply(agent: str, where: dict[str, object] | None) -> list[object]:
    compiled = compile_where(LifecycleVectorNote, where)
    assert compiled is not None
    return list(compiled.ids_call(LifecycleVectorNote._meta.keyspace((agent,))).run(LifecycleVectorNote._meta.client))


def _vector_hits(agent: str, text: str, limit: int, where: dict[str, object] | None) -> list[str]:
    """The ids the vector search ranks for ``text`` under ``where``, best first."""
    field = LifecycleVectorNote._meta.fields["embedding"]
    search = field.searcher(LifecycleVectorNote._meta.keyspace((agent,)), text, limit,
                            compile_where(LifecycleVectorNote, where))
    return [record_id for record_id, _ in run_search(search.client, search)]


def _current_hits(agent: str, text: str, current: list[LifecycleVectorNote]) -> tuple[list[str], list[str]]:
    """The ids a current read ranks, and those of every record ranked with the others left out."""
    kept = {r.note_id for r in current}
    everything = _vector_hits(agent, text, 100, {"as_of": ALL_TIMES})
    return _vector_hits(agent, text, 100, None), [i for i in everything if i in kept]


def test_a_current_read_lists_the_superseded_ids_only(any_db):
    agent = uuid.uuid4().hex
    records = _stored(agent, 40, 3)
    mode, ids = _filter_reply(agent, None)
    assert mode == b"except"
    assert sorted(i.decode() for i in ids) == sorted(r.note_id for r in records[:3])
    hits, expected = _current_hits(agent, records[0].content, records[3:])
    assert hits == expected and hits


def test_a_filter_most_records_fail_still_lists_those_that_pass(any_db):
    agent = uuid.uuid4().hex
    records = _stored(agent, 10, 8)
    mode, ids = _filter_reply(agent, None)
    assert mode == b"only"
    assert sorted(i.decode() for i in ids) == sorted(r.note_id for r in records[8:])


def test_a_record_with_no_window_stays_out_of_current_reads(any_db):
    """A record with no window entry (an older store) fails the filter; leaving out the failing
    ids would let it in, so the read lists those that pass instead."""
    agent = uuid.uuid4().hex
    records = _stored(agent, 12, 1)
    space = LifecycleVectorNote._meta.keyspace((agent,))
    LifecycleVectorNote._meta.client.zrem(space.key(KeyKind.SORTED, "valid_to"), records[5].note_id)
    assert _filter_reply(agent, None)[0] == b"only"
    hits, expected = _current_hits(agent, records[5].content, [r for r in records[1:] if r is not records[5]])
    assert hits == expected and hits


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(count=st.integers(1, 30), pairs=st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=12),
       probe=st.integers(0, 30), at=st.one_of(st.none(), st.integers(0, 35)), limit=st.integers(1, 12))
def test_vector_reads_match_the_reference_windows(any_db, count, pairs, probe, at, limit):
    agent = uuid.uuid4().hex
    records = [LifecycleVectorNote(agent_id=agent, content=f"{WORDS[i % 10]} {WORDS[i * 3 % 10]} {i}",
                                   valid_from=float(i)) for i in range(count)]
    LifecycleVectorNote.save_many(records)
    for a, b in pairs:
        older, newer = records[a % count], records[b % count]
        if older is not newer and older.valid_from < newer.valid_from and older.valid_to is None:
            supersede(older, newer)
    text = records[probe % count].content
    ranked = _vector_hits(agent, text, 1000, {"as_of": ALL_TIMES})
    windows = {r.note_id: (r.valid_from, r.valid_to) for r in LifecycleVectorNote.query.filter(agent_id=agent).all()}

    def visible(note_id: str) -> bool:
        start, end = windows[note_id]
        return end is None if at is None else visible_at(start, end, float(at))

    expected = [note_id for note_id in ranked if visible(note_id)][:limit]
    assert _vector_hits(agent, text, limit, None if at is None else {"as_of": float(at)}) == expected
