"""The explanation where users read it: ``redmem ask --why`` and the MCP ``recall`` tool's ``explain`` flag."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

from conftest import configured_embeddings
from redmem.cli_commands.conversation import Turn
from redmem.cli_commands.ingest import store_turns
from redmem.cli_commands.mcp_server import recall_context
from redmem.embeddings import HashingEmbeddings
from redmem.store import settings

LINES = ["Ana drinks lapsang souchong every morning.", "Ana drinks lapsang souchong every morning.",
         "Ana's bicycle is a red fixie.", "The deploy freeze starts on Friday."]


def remember(agent: str) -> None:
    store_turns([Turn(line, datetime(2026, 1, 10, 9, i, tzinfo=UTC), "s1", "Ana") for i, line in enumerate(LINES)], agent)


def test_recall_explains_on_request_only(db):
    with configured_embeddings(HashingEmbeddings(384)):
        remember("ana")
        plain = recall_context("ana", "Which tea does Ana drink?", 2000, 10, "structured")
        explained = recall_context("ana", "Which tea does Ana drink?", 2000, 10, "structured", explain=True)
    assert plain.explanation is None
    why = explained.explanation
    assert why is not None and why["tenant"] == {"agent_id": "ana"}
    assert [i["record_id"] for i in why["items"]] == [m.memory_id for m in explained.memories]
    assert why["items"][0]["arms"] and {o["reason"] for o in why["left_out"]} >= {"duplicate"}


def test_ask_why_prints_the_explanation(redis_url, db):
    with configured_embeddings(HashingEmbeddings(384)):
        remember("ana")
    out = subprocess.run(
        [sys.executable, "-m", "redmem.cli", "--url", redis_url, "--prefix", settings().key_prefix,
         "--embeddings", "hashing", "ask", "Which tea does Ana drink?", "--agent", "ana", "--why"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "why:" in out.stdout and "fusion" in out.stdout and "left out" in out.stdout
    assert "duplicate" in out.stdout
