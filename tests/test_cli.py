"""The redmem command: doctor reports the server, demo runs the main job end to end."""

from __future__ import annotations

import os
import subprocess
import sys

import redmem


def redmem_cli(*args: str, env: dict | None = None) -> str:
    result = subprocess.run([sys.executable, "-m", "redmem.cli", *args], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "COLUMNS": "200", **(env or {})})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_doctor_reports_server_mode_and_latency(redis_url, db):
    out = redmem_cli("--url", redis_url, "doctor")
    version = db.info("server")["redis_version"]
    assert version in out
    assert "standalone" in out and "lua scripts" in out and " ok " in out
    assert "p50" in out and "over 200" in out
    assert "hiredis" in out


def test_doctor_on_a_cluster(cluster_url):
    out = redmem_cli("--url", cluster_url, "doctor")
    assert "cluster (3 primaries)" in out


def test_doctor_names_an_unreachable_server():
    result = subprocess.run([sys.executable, "-m", "redmem.cli", "--url", "redis://127.0.0.1:1", "doctor"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "cannot reach Redis at 127.0.0.1:1" in result.stdout


def test_demo_on_the_embedded_server_saves_queries_and_cleans_up():
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    result = subprocess.run([sys.executable, "-m", "redmem.cli", "demo"], capture_output=True, text=True,
                            timeout=120, env={**env, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "saved 8 memories" in out
    assert "importance >= 0.7" in out
    # ops-bot's memories of importance >= 0.7, most important first, and nothing from another agent
    section = out.split("importance >= 0.7")[1].split("study-buddy: learned")[0]
    assert section.index("0.9") < section.index("0.8") < section.index("0.7")
    assert "study-buddy" not in section and "0.4" not in section
    assert "deleted the 8 demo memories" in out


def test_public_names_are_pinned():
    assert sorted(redmem.__all__) == sorted([
        "AutoKeyField", "BooleanField", "BytesField", "DatetimeField", "DbKey", "DictField", "Field",
        "FloatField", "IntField", "KeyField", "ListField", "Model", "SortedField", "StringField",
        "TagField", "ConfigurationError", "ModelException", "QueryException", "RedmemError",
        "ServerUnavailable", "ValidationError", "WriteConflict", "configure", "connect", "get_client",
    ])
    assert all(hasattr(redmem, name) for name in redmem.__all__)
