"""Lifecycle writes exactly once when the server stalls before their call (the reply is lost and
redis-py resends the same one-call write, or the EXEC of a watched one): a merge counts the
restatement once, a supersede stores the newer fact once, and any sequence with one lost reply
ends as it does without."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, KeyField, Model, StringField, WriteOutcomeUnknown
from redmem.lifecycle import LifecycleMixin, remember
from test_faults import StallBeforeExec, client, server, stalled  # noqa: F401  (fixtures)


class LifecycleFaultsNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    stall = StallBeforeExec()

    class Meta:
        partition_by = "agent_id"


def notes() -> list[LifecycleFaultsNote]:
    return LifecycleFaultsNote.query.filter(agent_id="a").all()


def test_a_merge_counts_once(client):  # noqa: F811
    remember(LifecycleFaultsNote(agent_id="a", content="Alice lives in Berlin.", valid_from=1.0))
    reply = stalled(
        lambda: remember(
            LifecycleFaultsNote(agent_id="a", content="Alice lives in Berlin.", valid_from=2.0), source="s2"
        ),
        at_exec=True,
    )
    assert not isinstance(reply, WriteOutcomeUnknown)
    [kept] = notes()
    assert (kept.seen_count, kept.sources) == (2, ["s2"])


def test_a_supersede_stores_the_newer_fact_once(client):  # noqa: F811
    remember(LifecycleFaultsNote(agent_id="a", content="Alice lives in Berlin.", valid_from=1.0))
    reply = stalled(
        lambda: remember(LifecycleFaultsNote(agent_id="a", content="Alice moved to Lisbon.", valid_from=2.0)),
        at_exec=True,
    )
    assert not isinstance(reply, WriteOutcomeUnknown)
    stored = sorted(notes(), key=lambda n: n.valid_from)
    assert [(n.content, n.valid_to) for n in stored] == [
        ("Alice lives in Berlin.", 2.0),
        ("Alice moved to Lisbon.", None),
    ]


STATEMENTS = (
    "Alice lives in Berlin.",
    "Alice lives in Berlin now.",
    "Alice moved to Lisbon.",
    "Bob works at Initech.",
    "Bob joined Initech last month.",
    "Bob works at Globex.",
)


def state(agent: str) -> list[tuple]:
    return sorted(
        (n.content, n.valid_from, n.valid_to, n.seen_count, tuple(n.sources))
        for n in LifecycleFaultsNote.query.filter(agent_id=agent).all()
    )


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(script=st.lists(st.sampled_from(STATEMENTS), min_size=2, max_size=5), data=st.data())
def test_a_resent_write_is_applied_once(client, script, data):  # noqa: F811
    """One write of a random sequence has its reply lost (the server stalls as it is sent, redis-py
    resends the same call): the tenant ends as the same sequence written without a fault leaves it."""
    stalled_at = data.draw(st.integers(0, len(script) - 1))
    calm, faulty = uuid.uuid4().hex, uuid.uuid4().hex
    for agent in (calm, faulty):
        for i, text in enumerate(script):

            def write(text=text, i=i, agent=agent):
                return remember(LifecycleFaultsNote(agent_id=agent, content=text, valid_from=float(i)), source=f"s{i}")

            reply = stalled(write, at_exec=True) if agent == faulty and i == stalled_at else write()
            assert not isinstance(reply, WriteOutcomeUnknown)
    assert state(faulty) == state(calm)
