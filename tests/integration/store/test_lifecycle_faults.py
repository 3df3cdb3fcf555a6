"""Lifecycle writes exactly once when the server stalls before their EXEC (the reply is lost and
redis-py resends): a merge counts the restatement once, a supersede stores the newer fact once."""

from __future__ import annotations

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
    reply = stalled(lambda: remember(LifecycleFaultsNote(agent_id="a", content="Alice lives in Berlin.",
                                                         valid_from=2.0), source="s2"), at_exec=True)
    assert not isinstance(reply, WriteOutcomeUnknown)
    [kept] = notes()
    assert (kept.seen_count, kept.sources) == (2, ["s2"])


def test_a_supersede_stores_the_newer_fact_once(client):  # noqa: F811
    remember(LifecycleFaultsNote(agent_id="a", content="Alice lives in Berlin.", valid_from=1.0))
    reply = stalled(lambda: remember(LifecycleFaultsNote(agent_id="a", content="Alice moved to Lisbon.",
                                                         valid_from=2.0)), at_exec=True)
    assert not isinstance(reply, WriteOutcomeUnknown)
    stored = sorted(notes(), key=lambda n: n.valid_from)
    assert [(n.content, n.valid_to) for n in stored] == [("Alice lives in Berlin.", 2.0), ("Alice moved to Lisbon.", None)]
