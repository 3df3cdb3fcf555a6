"""Semantic search after the server rolled back: restarted on the same port from an older snapshot."""

from __future__ import annotations

import shutil

import redmem
from redmem import AutoKeyField, KeyField, Model, StringField
from redmem.embeddings import HashingEmbeddings
from redmem.fields import EmbeddingField
from redmem.store._embedded import EmbeddedServer


class VectorRollbackNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(64), partition_by="agent_id")


def notes(agent: str, topic: str, count: int) -> list[VectorRollbackNote]:
    records = [VectorRollbackNote(agent_id=agent, content=f"{topic} note number {i}") for i in range(count)]
    for record in records:
        record.save()
    return records


def search(agent: str, text: str, limit: int) -> set[str]:
    return {n.note_id for n in VectorRollbackNote.query.filter(agent_id=agent).semantic_search(text, limit=limit)}


def test_search_sees_the_server_state_after_a_restart_from_an_older_snapshot(restartable):
    server, data = restartable
    client = redmem.get_client()
    kept = {agent: {n.note_id for n in notes(agent, "garden", 20)} for agent in ("a", "b")}
    client.save()
    shutil.copy(data / "dump.rdb", data / "older.rdb")
    lost = {agent: {n.note_id for n in notes(agent, "kitchen", 30)} for agent in ("a", "b")}
    for agent in ("a", "b"):  # the process caches both partitions at version 50
        assert search(agent, "kitchen note", 5) <= lost[agent]

    port = server.port
    server.stop()
    shutil.copy(data / "older.rdb", data / "dump.rdb")
    server = EmbeddedServer(unix_socket=False, port=port,
                            extra_args=["--dir", str(data), "--dbfilename", "dump.rdb"]).start()
    try:
        # a: searched before any new write (version 20 < 50): the 30 lost notes are gone
        found = search("a", "kitchen note", 5)
        assert len(found) == 5 and found <= kept["a"]
        # b: 40 new notes first, so the version (60) passes the cached 50: every one is found
        fresh = {n.note_id for n in notes("b", "harbour", 40)}
        assert search("b", "harbour note", 100) == fresh | kept["b"]
        assert search("b", "harbour note", 40) == fresh
    finally:
        server.stop()
