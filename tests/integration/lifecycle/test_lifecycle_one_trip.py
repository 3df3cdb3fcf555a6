"""The one-call write decides as the watched write: random statements (restated, paraphrased, changed,
backdated, about near namesakes, with and without a slot) replayed through both, on one server
and on the cluster, give the same outcome at every step and the same records at the end."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, BM25Field, EmbeddingField, HashingEmbeddings, KeyField, Model, StringField
from redmem.lifecycle import LifecycleMixin, remember
from redmem.lifecycle._write import remember_watched


class OneTripNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(256))

    class Meta:
        partition_by = "agent_id"


SUBJECTS = ("Alice", "Alina", "Bob")
TEMPLATES = (
    "{s} lives in {v}.",
    "{s} lives in {v} now.",
    "{s} moved to {v}.",
    "{s} works at {v}.",
    "{s} joined {v} last month.",
    "{s} drinks {v} every morning.",
    "{s} likes {v} best.",
    "The {v} database listens on port 5432.",
    "The {v} database listens on port 5432 now.",
    "the {v} checklist is in the wiki",
)
VALUES = ("Berlin", "Lisbon", "Initech", "tea", "cocoa", "staging")
steps = st.lists(
    st.tuples(
        st.sampled_from(TEMPLATES),
        st.sampled_from(SUBJECTS),
        st.sampled_from(VALUES),
        st.integers(-20, 60),
        st.sampled_from([None, "s1", "s2"]),
    ),
    min_size=1,
    max_size=16,
)


def replay(agent: str, write, script: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """Each step's outcome (action, the step that made the record merged into or superseded), and
    every stored record at the end (its step, window, successor's step, count, sources)."""
    made: dict[str, int] = {}
    outcomes = []
    clock = 1000.0
    for i, (template, subject, value, delta, source) in enumerate(script):
        clock += delta
        record = OneTripNote(agent_id=agent, content=template.format(s=subject, v=value), valid_from=clock)
        outcome = write(record, source=source)
        if outcome.action == "merged":
            outcomes.append(("merged", made[outcome.record.note_id]))
            continue
        made[record.note_id] = i
        older = None if outcome.older is None else made[outcome.older.note_id]
        outcomes.append((outcome.action, older))
    stored = sorted(
        (made[r.note_id], r.valid_from, r.valid_to, made.get(r.superseded_by or ""), r.seen_count, tuple(r.sources))
        for r in OneTripNote.query.filter(agent_id=agent).all()
    )
    return outcomes, stored


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(script=steps)
def test_one_call_decides_as_the_watched_write(any_db, script):
    run = uuid.uuid4().hex
    assert replay("one" + run, remember, script) == replay("ref" + run, remember_watched, script)
