"""Model.migrate / redmem migrate: renamed entries moved and new indexes built, exactly once and
resumably: a run stopped after any page (an exception, or SIGKILL of its process) and run again
leaves every key as one uninterrupted run does."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import all_keys
from redmem import BM25Field, KeyField, Model, StringField, TagField
from redmem.cli import main
from redmem.model import ModelMeta
from redmem.store._aio import is_cluster
from redmem.store._errors import ValidationError

_prefixes = itertools.count(1)


def version_1():
    return ModelMeta("MigNote", (Model,), {
        "__module__": __name__, "agent": KeyField(partition_by="agent"), "note_id": KeyField(),
        "content": StringField(), "topics": TagField()})


def version_2():
    """``content`` renamed ``text``, with a BM25 index over it and a new field with a default."""
    return ModelMeta("MigNote", (Model,), {
        "__module__": __name__, "agent": KeyField(partition_by="agent"), "note_id": KeyField(),
        "text": StringField(), "text_bm25": BM25Field(source="text"), "topics": TagField(),
        "mood": StringField(default="calm")})


WORDS = ["heron", "reed", "kingfisher", "river", "dawn", "nest", "stone", "wind"]


def seed(count, agents, prefix):
    """``count`` version-1 notes spread over ``agents`` partitions, under key prefix ``prefix``."""
    redmem.configure(key_prefix=prefix)
    Note = version_1()
    notes = [Note(agent=f"agent{i % agents}", note_id=f"n{i:04d}", content=" ".join(WORDS[j % 8] for j in range(i, i + 3)),
                  topics=[WORDS[i % 8]]) for i in range(count)]
    Note.save_many(notes)


def dump(client, prefix):
    """Every key under ``prefix`` (written ``P``) with its type and value; operation keys, the
    bookkeeping of a resent write, left out, and a BM25 index's ``epoch`` (the server's clock)
    replaced by ``E``."""
    state = {}
    for raw in client.scan_iter(match=f"{prefix}:*"):
        key = raw.decode()
        if ":op:" in key:
            continue
        kind = client.type(raw).decode()
        value = {"string": client.get, "hash": lambda k: {f: b"E" if f == b"epoch" else v for f, v in client.hgetall(k).items()}, "set": lambda k: sorted(client.smembers(k)),
                 "zset": lambda k: client.zrange(k, 0, -1, withscores=True), "list": lambda k: client.lrange(k, 0, -1),
                 "stream": lambda k: [fields for _, fields in client.xrange(k)]}[kind](raw)
        state["P" + key[len(prefix):]] = (kind, value)
    return state


def migrated(client, prefix, batch_size, stop_after=None):
    """Run version 2's migration under ``prefix``; with ``stop_after``, interrupt it (an exception
    from its progress report) once that many records are done, then run it again."""
    redmem.configure(key_prefix=prefix)
    Note = version_2()

    class Stop(Exception):
        pass

    def stopping(done, total):
        if stop_after is not None and done >= stop_after:
            raise Stop

    if stop_after is not None:
        with pytest.warns(redmem.model._schema.SchemaWarning), pytest.raises(Stop):
            Note.migrate(rename={"content": "text"}, batch_size=batch_size, progress=stopping)
    else:
        with pytest.warns(redmem.model._schema.SchemaWarning):
            Note._meta.client  # noqa: B018 - the first use warns
    Note.migrate(rename={"content": "text"}, batch_size=batch_size)
    return dump(client, prefix)


def test_migrate_moves_renamed_entries_and_builds_their_indexes(any_db):
    db = any_db
    prefix = redmem.store.settings().key_prefix
    seed(12, 2, prefix)
    Note = version_2()
    with pytest.warns(redmem.model._schema.SchemaChangedWarning, match="rename=\\{'content': 'text'\\}"):
        assert Note.query.filter(agent="agent0").keyword_search("heron") == []
    seen = []
    report = Note.migrate(rename={"content": "text"}, batch_size=5, progress=lambda done, total: seen.append((done, total)))
    assert (report.records, report.renamed, report.kept_both) == (12, 12, 0)
    assert report.indexes == ("text_bm25",)
    assert seen[0] == (0, 12) and seen[-1] == (12, 12) and len(seen) == 5  # 2 partitions of 6: pages 5+1, 5+1
    notes = Note.query.filter(agent="agent0").all()
    assert all(n.text and n.mood == "calm" for n in notes) and len(notes) == 6
    assert all(db.hget(n.db_key.redis_key, "content") is None for n in notes)
    hits = Note.query.filter(agent="agent0").keyword_search("kingfisher")
    assert hits and all("kingfisher" in n.text for n in hits)
    assert not [k for k in all_keys(db, prefix) if ":mg:" in k]  # cursors dropped at the end
    before = dump(db, prefix) if not is_cluster(db) else None
    again = Note.migrate(rename={"content": "text"})
    assert (again.records, again.renamed) == (12, 0)
    assert before is None or dump(db, prefix) == before  # a finished migration run again changes nothing


def test_a_record_holding_both_entries_keeps_both(db):
    prefix = redmem.store.settings().key_prefix
    seed(3, 1, prefix)
    Note = version_2()
    key = f"{prefix}:MigNote:{{agent0}}:r:n0001"
    db.hset(key, "text", "written by the new code")
    with pytest.warns(redmem.model._schema.SchemaWarning):
        report = Note.migrate(rename={"content": "text"})
    assert (report.renamed, report.kept_both) == (2, 1)
    assert db.hget(key, "text") == b"written by the new code" and db.hget(key, "content") is not None


@pytest.mark.parametrize(("rename", "match"), [
    ({"content": "nothing"}, "must be a stored, non-key field"),
    ({"text": "topics"}, "is still declared"),
    ({"content": "note_id"}, "must be a stored, non-key field"),
    ({"content": "text", "body": "text"}, "the same new name"),
    ({"content": "text_bm25"}, "must be a stored, non-key field"),
])
def test_a_bad_rename_raises_with_nothing_written(db, rename, match):
    prefix = redmem.store.settings().key_prefix
    seed(2, 1, prefix)
    Note = version_2()
    before = dump(db, prefix)
    with pytest.raises(ValidationError, match=match):
        Note.migrate(rename=rename)
    assert dump(db, prefix) == before


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 40), agents=st.integers(1, 3), batch_size=st.integers(1, 12), data=st.data())
def test_an_interrupted_migration_rerun_equals_an_uninterrupted_one(db, count, agents, batch_size, data):
    stop_after = data.draw(st.integers(0, count - 1), label="stop_after")
    run = next(_prefixes)
    whole, resumed = f"mgw{run}", f"mgr{run}"
    seed(count, agents, whole)
    seed(count, agents, resumed)
    assert migrated(db, resumed, batch_size, stop_after) == migrated(db, whole, batch_size)


CHILD = textwrap.dedent("""
    import sys, time
    import redmem
    from test_migration import version_2
    redmem.connect(sys.argv[1])
    redmem.configure(key_prefix=sys.argv[2])
    slow = sys.argv[3] == "slow"
    def report(done, total):
        print(done, total, flush=True)
        if slow:
            time.sleep(0.05)
    version_2().migrate(rename={"content": "text"}, batch_size=5, progress=report)
    print("finished", flush=True)
""")


def _child(redis_url, prefix, speed):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), *sys.path])}
    return subprocess.Popen([sys.executable, "-W", "ignore", "-c", CHILD, redis_url, prefix, speed],
                            stdout=subprocess.PIPE, text=True, env=env)


def test_a_killed_migration_process_resumes_and_loses_nothing(db, redis_url):
    run = next(_prefixes)
    whole, resumed = f"mgkw{run}", f"mgkr{run}"
    seed(200, 2, whole)
    seed(200, 2, resumed)
    child = _child(redis_url, resumed, "slow")
    for line in child.stdout:
        if int(line.split()[0]) >= 60:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    contents = [db.hget(k, "content") for k in db.scan_iter(match=f"{resumed}:MigNote:*:r:*")]
    assert 0 < sum(c is None for c in contents) < 200  # stopped midway: some records moved, some not
    finished = _child(redis_url, resumed, "fast")
    out, _ = finished.communicate(timeout=120)
    assert finished.returncode == 0 and out.splitlines()[0].split()[0] != "0"  # resumed after the cursor
    uninterrupted = _child(redis_url, whole, "fast")
    uninterrupted.communicate(timeout=120)
    assert dump(db, resumed) == dump(db, whole)


def test_the_migrate_command(db, redis_url, tmp_path, monkeypatch, capsys):
    (tmp_path / "notes_mg.py").write_text(textwrap.dedent("""
        from test_migration import version_2
        Note = version_2()
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    monkeypatch.setenv("COLUMNS", "200")  # one line per message
    prefix = f"mgc{next(_prefixes)}"
    seed(7, 1, prefix)
    argv = ["--url", redis_url, "--prefix", prefix, "--embeddings", "hashing", "migrate", "notes_mg:Note",
            "--rename", "content=text", "--batch-size", "3"]
    with pytest.warns(redmem.model._schema.SchemaWarning):
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert "migrated 7 MigNote records" in out and "7 renamed" in out and "indexes built: text_bm25" in out
    assert main([*argv[:7], "notes_mg:Note", "--rename", "content"]) == 1
    assert "--rename takes OLD=NEW" in capsys.readouterr().out
