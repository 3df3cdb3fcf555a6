"""The commands a user lives with: list, stats, forget (a memory, or a whole agent once confirmed),
export and import; the default agent; input files that are not UTF-8, empty, or name no agent."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from redmem.cli import main
from redmem.cli_commands._agents import DEFAULT_AGENT
from redmem.cli_commands._memory import ChatMemory
from redmem.store import settings


@pytest.fixture
def cli(redis_url, db, capsys, monkeypatch):
    """Run ``redmem`` in this process on the test server and key prefix: (exit status, output),
    on a console wide enough that a long temporary path is not wrapped mid-word."""
    monkeypatch.setenv("COLUMNS", "400")

    def run(*args: str) -> tuple[int, str]:
        status = main(["--url", redis_url, "--prefix", settings().key_prefix, "--embeddings", "hashing", *args])
        captured = capsys.readouterr()
        return status, " ".join((captured.out + captured.err).split())
    return run


@pytest.fixture
def notes(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Gus grows tomatoes on the balcony.\nGus walks his dog at seven.\n")
    return path


def test_redmem_alone_prints_the_help():
    done = subprocess.run([sys.executable, "-m", "redmem.cli"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: redmem") and "export" in done.stdout and "forget" in done.stdout


def test_the_default_agent_is_not_the_demo_and_is_named_in_every_output(cli, notes):
    assert DEFAULT_AGENT != "demo"
    status, out = cli("ingest", str(notes))
    assert status == 0 and f"ingested 2 memories for agent {DEFAULT_AGENT!r}" in out
    assert ChatMemory.query.filter(agent_id=DEFAULT_AGENT).count() == 2
    for command in (["list"], ["stats"], ["ask", "What does Gus grow?"]):
        status, out = cli(*command)
        assert status == 0 and repr(DEFAULT_AGENT) in out, out
    assert "Gus grows tomatoes" in cli("list")[1] and "of 2" in cli("list")[1]


def test_a_file_that_is_not_utf8_gives_the_error_line_or_is_read_with_its_encoding(cli, tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Zoë bakes crème brûlée.\n".encode("latin-1"))
    status, out = cli("ingest", str(latin))
    assert status == 1
    assert f"error: {latin} is not utf-8 text (byte 0xeb at offset 2): convert it to UTF-8, or name its " \
           "encoding with --encoding" in out
    assert ChatMemory.query.filter(agent_id=DEFAULT_AGENT).count() == 0
    status, out = cli("ingest", str(latin), "--encoding", "latin-1")
    assert status == 0
    assert [m.content for m in ChatMemory.query.filter(agent_id=DEFAULT_AGENT).no_track()] == ["Zoë bakes crème brûlée."]


def test_an_empty_file_and_an_unknown_agent_say_so(cli, tmp_path, notes):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert cli("ingest", str(empty)) == (1, f"error: {empty} is empty: nothing to read")
    cli("ingest", str(notes), "--agent", "gus")
    for command in (["list", "--agent", "gsu"], ["ask", "tomatoes?", "--agent", "gsu"], ["export", "--agent", "gsu"],
                    ["forget", "--all", "--agent", "gsu", "--yes"], ["stats", "--agent", "gsu"]):
        status, out = cli(*command)
        assert status == 1 and "error: agent 'gsu' has no memories" in out and "agents with memories here: 'gus'" in out


def test_forget_one_memory_then_the_whole_agent_once_confirmed(cli, notes, monkeypatch):
    cli("ingest", str(notes), "--agent", "gus")
    first = ChatMemory.query.filter(agent_id="gus").no_track().first()
    status, out = cli("forget", first.memory_id, "--agent", "gus")
    assert status == 0 and "forgot 1 memories of agent 'gus'" in out
    assert ChatMemory.query.filter(agent_id="gus").count() == 1
    assert cli("forget", "nope", "--agent", "gus")[1].endswith("error: agent 'gus' has no memory nope")

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    status, out = cli("forget", "--all", "--agent", "gus")
    assert status == 1 and "needs confirmation: add --yes (nothing was erased)" in out
    assert ChatMemory.query.filter(agent_id="gus").count() == 1
    status, out = cli("forget", "--all", "--agent", "gus", "--yes")
    assert status == 0 and "erased agent 'gus'" in out and "0 left" in out
    assert cli("stats")[1].startswith("0 agents with memories")


def test_export_then_import_gives_back_the_same_agent(cli, notes, tmp_path):
    cli("ingest", str(notes), "--agent", "gus")
    before = cli("list", "--agent", "gus")[1]
    exported = tmp_path / "gus.jsonl"
    status, out = cli("export", "--agent", "gus", "--output", str(exported))
    assert status == 0 and "exported agent 'gus' (2 memories," in out
    header = json.loads(exported.read_text().splitlines()[0])
    assert header["partition"] == {"agent_id": "gus"}

    assert "already holds" in cli("import", str(exported))[1]
    cli("forget", "--all", "--agent", "gus", "--yes")
    status, out = cli("import", str(exported))
    assert status == 0 and "imported agent 'gus' (2 memories," in out
    assert cli("list", "--agent", "gus")[1] == before


def test_export_to_standard_output_keeps_the_messages_off_it(redis_url, db, notes):
    prefix = ["--url", redis_url, "--prefix", settings().key_prefix, "--embeddings", "hashing"]
    main([*prefix, "ingest", str(notes)])
    done = subprocess.run([sys.executable, "-m", "redmem.cli", *prefix, "export"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and f"exported agent {DEFAULT_AGENT!r}" in done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows[0]["format"] == "redmem-tenant/1" and len(rows) > 10


def test_help_loads_neither_the_library_nor_its_heavy_dependencies():
    """``redmem --help`` starts fast because it imports no subcommand, numpy, redis-py or rich
    (benchmarked in docs/cli.md, not timed here); the public names still load on first use."""
    script = ("import sys\nfrom redmem.cli import main\n"
              "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
              "heavy = sorted(m for m in ('numpy', 'redis', 'rich', 'redmem.store', 'redmem.cli_commands._ask')"
              " if m in sys.modules)\n"
              "import redmem\nassert redmem.store.settings() is not None and redmem.Model.__name__ == 'Model'\n"
              "print('heavy:', heavy)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("heavy: []")
