"""redmem.testing, the pytest plugin for users' own tests: a private real server per test, and
redmem's settings as they were afterwards. Run here as a user runs it: pytest in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: A user's test module: two tests that each see only their own note, then the settings restored.
USER_TESTS = '''
import redmem
from redmem import AutoKeyField, Model, StringField
from redmem.store import settings

class Note(Model):
    note_id = AutoKeyField()
    text = StringField()

servers = []

def test_one(redmem_client, redmem_server):
    Note.create(text="one")
    assert [note.text for note in Note.query.all()] == ["one"]
    servers.append(redmem_server.url)

def test_two(redmem_client, redmem_server):
    assert redmem.get_client() is redmem_client and Note.query.count() == 0  # not test_one's server
    Note.create(text="two")
    assert [note.text for note in Note.query.all()] == ["two"]
    assert redmem_server.url not in servers
    redmem.configure(key_prefix="changed")

def test_settings_are_back():
    assert settings().client is None and settings().key_prefix == "rm"
'''


def run_user_tests(directory: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (directory / "test_notes.py").write_text(USER_TESTS)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(directory)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=directory)


def test_each_test_gets_a_private_server_and_the_settings_come_back(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["redmem.testing"]\n')
    result = run_user_tests(tmp_path)
    assert "3 passed" in result.stdout, result.stdout + result.stderr


def test_the_plugin_loads_by_name_too(tmp_path: Path) -> None:
    result = run_user_tests(tmp_path, "-p", "redmem.testing")
    assert "3 passed" in result.stdout, result.stdout + result.stderr


def test_the_plugin_is_opt_in(tmp_path: Path) -> None:
    """Not auto-loaded (no pytest11 entry point): without the conftest line its fixtures are unknown."""
    assert "pytest11" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("entry-points", {})
    result = run_user_tests(tmp_path)
    assert "fixture 'redmem_client' not found" in result.stdout, result.stdout + result.stderr
