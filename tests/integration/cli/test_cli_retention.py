"""``redmem retention``: a dry run by default, eviction (archived first) once confirmed."""

from __future__ import annotations

from redmem.cli_commands._memory import ChatMemory
from redmem.recipes._retention import archived
from redmem.store import settings
from test_cli import on_test_server, run_cli

LINES = "".join(f"Note number {n} about the garden.\n\n" for n in range(5))


def ingest_notes(redis_url: str, tmp_path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(LINES)
    on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(notes), "--agent", "ana")


def stored() -> int:
    return ChatMemory.query.filter(agent_id="ana").count()


def test_retention_is_a_dry_run_until_confirmed_and_archives_what_it_evicts(redis_url, db, tmp_path):
    ingest_notes(redis_url, tmp_path)
    dry = on_test_server(redis_url, "retention", "--agent", "ana", "--keep", "2")
    assert "3 of 5 memories of agent 'ana' would be evicted (3 past --keep, 0 older" in dry
    assert "dry run: nothing was evicted" in dry and "would evict (first 3 of 3)" in dry
    assert stored() == 5 and archived(ChatMemory, agent_id="ana") == []
    done = on_test_server(redis_url, "retention", "--agent", "ana", "--keep", "2", "--yes")
    assert "evicted 3 memories of agent 'ana' (archived)" in done
    assert stored() == 2
    gone = archived(ChatMemory, agent_id="ana")
    assert len(gone) == 3 and {entry["reason"] for entry in gone} == {"over_cap"}
    assert all(entry["content"].startswith("Note number") for entry in gone)
    again = on_test_server(redis_url, "retention", "--agent", "ana", "--keep", "2")
    assert "nothing to evict: agent 'ana' keeps all 2 memories" in again


def test_retention_by_age_and_its_errors(redis_url, db, tmp_path):
    ingest_notes(redis_url, tmp_path)
    fresh = on_test_server(redis_url, "retention", "--agent", "ana", "--older-than", "1")
    assert "nothing to evict" in fresh  # just said: none older than a day
    for options, message in (((), "say what to keep: --keep N"), (("--keep", "0"), "--keep must be at least 1"),
                             (("--older-than", "-2"), "--older-than must be above 0 days")):
        bad = run_cli("--url", redis_url, "--prefix", settings().key_prefix, "retention", "--agent", "ana", *options)
        assert bad.returncode == 1 and message in bad.stdout + bad.stderr
    assert stored() == 5
