"""The inspector and the fact lifecycle: supersede and restore as confirmed POSTs, a memory's versions."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from conftest import configured_embeddings
from redmem import AutoKeyField, KeyField, Model, StringField
from redmem.cli_commands._memory import ChatMemory, memory_assembler, said_epoch
from redmem.embeddings import HashingEmbeddings
from redmem.lifecycle import LifecycleMixin
from redmem.ui import build_app
from redmem.ui._actions import ACTIONS
from redmem.ui._inventory import versions_of
from redmem.ui._lifecycle import lifecycle_actions

TOKEN = "t0k3n"
HEADERS = {"X-Redmem-Token": TOKEN}
MAY_1, JUNE_1 = 1714521600.0, 1717200000.0


class UiLifecycleNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()

    class Meta:
        partition_by = "agent_id"


@pytest.fixture
def client(db, monkeypatch):
    """The inspector with the lifecycle actions of UiLifecycleNote (in place of the CLI's ChatMemory's)."""
    app = TestClient(build_app(TOKEN, {"testserver"}, "ana"))
    for name, action in lifecycle_actions(UiLifecycleNote).items():
        monkeypatch.setitem(ACTIONS, name, action)
    return app


def notes() -> tuple[UiLifecycleNote, UiLifecycleNote]:
    berlin = UiLifecycleNote(agent_id="ana", content="Ana lives in Berlin.", valid_from=MAY_1)
    lisbon = UiLifecycleNote(agent_id="ana", content="Ana's favourite tram is the 28.", valid_from=JUNE_1)
    berlin.save()
    lisbon.save()
    return berlin, lisbon


def load(note: UiLifecycleNote) -> UiLifecycleNote:
    return UiLifecycleNote.query.no_track().get(agent_id="ana", note_id=note.note_id)


def test_supersede_and_restore_are_confirmed_posts_listed_by_the_page(client):
    berlin, lisbon = notes()
    assert {"supersede", "restore"} <= set(client.get("/api/settings", headers=HEADERS).json()["actions"])
    payload = {"memory_ids": [berlin.note_id], "by": lisbon.note_id}
    unconfirmed = client.post("/api/agents/ana/actions/supersede", json=payload, headers=HEADERS)
    assert unconfirmed.status_code == 400 and load(berlin).valid_to is None
    done = client.post("/api/agents/ana/actions/supersede", json={**payload, "confirm": True}, headers=HEADERS)
    assert done.json() == {"superseded": [berlin.note_id], "by": lisbon.note_id}
    assert load(berlin).valid_to == JUNE_1 and load(berlin).superseded_by == lisbon.note_id
    assert [v["content"] for v in versions_of(load(lisbon))] == ["Ana lives in Berlin.", "Ana's favourite tram is the 28."]
    assert [v["current"] for v in versions_of(load(berlin))] == [False, True]
    restored = client.post("/api/agents/ana/actions/restore", headers=HEADERS,
                           json={"memory_ids": [berlin.note_id], "confirm": True})
    assert restored.json() == {"restored": [berlin.note_id]}
    assert load(berlin).valid_to is None and [v["memory_id"] for v in versions_of(load(berlin))] == [berlin.note_id]


def test_bad_lifecycle_actions_give_typed_errors_and_change_nothing(client):
    berlin, lisbon = notes()
    for payload, message in (({"memory_ids": [berlin.note_id]}, "by must be a memory id"),
                             ({"memory_ids": [], "by": lisbon.note_id}, "memory_ids"),
                             ({"memory_ids": [berlin.note_id], "by": lisbon.note_id, "at": "soon"}, "is not a time"),
                             ({"memory_ids": [berlin.note_id], "by": berlin.note_id}, "cannot supersede itself"),
                             ({"memory_ids": [berlin.note_id], "by": "f" * 32}, "no record")):
        bad = client.post("/api/agents/ana/actions/supersede", json={**payload, "confirm": True}, headers=HEADERS)
        assert bad.status_code in (400, 404) and message in bad.json()["error"]["message"], bad.json()
        assert bad.json()["error"]["type"]
    assert load(berlin).valid_to is None and load(lisbon).supersedes is None


def test_the_chat_memory_is_superseded_and_restored_from_the_inspector(db):
    app = TestClient(build_app(TOKEN, {"testserver"}, "ana"))
    assert {"supersede", "restore"} <= set(app.get("/api/settings", headers=HEADERS).json()["actions"])
    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        berlin, lisbon = (ChatMemory(agent_id="ana", content=text, context=text, passage=text, said_at=said_at)
                          for text, said_at in (("I live in Berlin.", "2024-05-01T10:00:00"),
                                                ("I moved to Lisbon.", "2024-06-01T10:00:00")))
        ChatMemory.save_many([berlin, lisbon])
        payload = {"memory_ids": [berlin.memory_id], "by": lisbon.memory_id, "confirm": True}
        assert app.post("/api/agents/ana/actions/supersede", json=payload, headers=HEADERS).status_code == 200
        assistant = memory_assembler(max_items=5)
        assert [r.content for r in assistant.assemble("live Berlin Lisbon", agent_id="ana").records] == ["I moved to Lisbon."]
        then = assistant.assemble("live Berlin Lisbon", agent_id="ana", where={"as_of": said_epoch("2024-05-02T00:00:00")})
        assert [r.content for r in then.records] == ["I live in Berlin."]
        stored = ChatMemory.query.no_track().get(agent_id="ana", memory_id=lisbon.memory_id)
        assert [v["content"] for v in versions_of(stored)] == ["I live in Berlin.", "I moved to Lisbon."]
        restored = app.post("/api/agents/ana/actions/restore", headers=HEADERS,
                            json={"memory_ids": [berlin.memory_id], "confirm": True})
        assert restored.json() == {"restored": [berlin.memory_id]}
        now = assistant.assemble("live Berlin Lisbon", agent_id="ana").records
        assert sorted(r.content for r in now) == ["I live in Berlin.", "I moved to Lisbon."]
