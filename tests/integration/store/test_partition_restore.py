"""A per-tenant restore on the live server (issue 28.6): every process's vector and BM25 caches of
the partition reload, even when other processes wrote past a cache's version after the restore."""

from __future__ import annotations

import pytest
import redis

import redmem
from redmem import AutoKeyField, BM25Field, KeyField, Model, StringField
from redmem.embeddings import HashingEmbeddings
from redmem.fields import EmbeddingField
from redmem.fields._restore import new_cache_epoch, restore_partition
from redmem.store._embedded import EmbeddedServer


class RestoreNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(64), partition_by="agent_id")
    content_bm25 = BM25Field(source="content", partition_by="agent_id", cache_postings=True)


def notes(agent: str, topic: str, count: int) -> set[str]:
    records = [RestoreNote(agent_id=agent, content=f"{topic} note number {i}") for i in range(count)]
    for record in records:
        record.save()
    return {r.note_id for r in records}


def found(client, agent: str, text: str) -> tuple[set[str], set[str]]:
    """What a process using ``client`` finds: (vector hits, keyword hits), each with its own cache."""
    redmem.configure(client=client)
    query = RestoreNote.query.filter(agent_id=agent)
    return ({n.note_id for n in query.semantic_search(text, limit=200)},
            {n.note_id for n in query.keyword_search(text, limit=200)})


@pytest.fixture
def backup():
    with EmbeddedServer(unix_socket=False) as server, server.client() as client:
        yield client


def partition_keys(client, agent: str) -> list[bytes]:
    base = RestoreNote._meta.keyspace((agent,)).base
    return [key for key in client.scan_iter(match=base.replace("{", "\\{").replace("}", "\\}") + ":*")]


def copy_keys(source, target, keys) -> None:
    """DUMP on ``source``, RESTORE ... REPLACE on ``target``."""
    for key in keys:
        target.restore(key, 0, source.dump(key), replace=True)


@pytest.mark.parametrize("helper", ["restore_partition", "new_cache_epoch"])
def test_caches_reload_after_a_per_tenant_restore(db, redis_url, backup, helper):
    other = redis.Redis.from_url(redis_url)  # another process: caches of its own
    kept = notes("a", "garden", 10)
    notes("b", "garden", 5)
    copy_keys(db, backup, partition_keys(db, "a"))  # the backup of tenant a, at version 10
    lost = notes("a", "kitchen", 20)
    assert found(other, "a", "garden kitchen note") == (kept | lost, kept | lost)  # cached at version 30
    redmem.configure(client=db)
    if helper == "restore_partition":
        assert restore_partition(RestoreNote, backup, agent_id="a") == len(partition_keys(backup, "a"))
    else:  # the documented manual steps, then the epoch
        db.delete(*partition_keys(db, "a"))
        copy_keys(backup, db, partition_keys(backup, "a"))
        new_cache_epoch(RestoreNote, agent_id="a")
    assert RestoreNote.query.filter(agent_id="a").count() == 10
    fresh = notes("a", "harbour", 40)  # another process writes past the cached version (n = 50)
    assert found(other, "a", "garden kitchen harbour note") == (kept | fresh, kept | fresh)
    redmem.configure(client=db)
    assert RestoreNote.query.filter(agent_id="b").count() == 5
