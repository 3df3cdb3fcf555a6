"""The explanation where users read it: ``redmem ask --why`` and the MCP ``recall`` tool's ``explain`` flag."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

from conftest import configured_embeddings
from redmem.cli_commands._conversation import ChatTurn
from redmem.cli_commands._ingest import store_turns
from redmem.cli_commands.mcp_server import recall_context
from redmem.embeddings import HashingEmbeddings
from redmem.store import settings

LINES = ["Ana drinks lapsang souchong every morning.", "Ana drinks lapsang souchong every morning.",
         "Ana's bicycle is a red fixie.", "The deploy freeze starts on Friday."]


def remember(agent: str) -> None:
    store_turns([ChatTurn(line, datetime(2026, 1, 10, 9, i, tzinfo=UTC), "s1", "Ana") for i, line in enumerate(LINES)], agent)


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


def rendered(explanation) -> str:
    from rich.console import Console

    from redmem.cli_commands._why import why_tables

    console = Console(width=240, record=True)
    console.print(why_tables(explanation))
    return console.export_text()


def test_every_recipe_renders_in_the_shared_form(db):
    """``--why``'s tables take any recipe's explanation: the frames' composite terms, HCE's costs and
    utilities per token, HSCA's query terms and layer scores."""
    import redmem
    from frames_support import Clock, WordEmbeddings
    from redmem.recipes.frames import FrameMemory
    from redmem.recipes.hce import HCEPipeline
    from redmem.recipes.hsca import HSCAEngine

    before = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=WordEmbeddings())
    try:
        mem = FrameMemory(agent_id="why-frames", clock=Clock(), wiring=None)
        for i in range(4):
            mem.learn(f"helm canary note {i}", tags=["ops"])
        frames = rendered(mem.frame("attention", "helm canary", top_k=2).explain())
    finally:
        redmem.configure(embedding_provider=before)
    assert "why: frames, frame:attention mode" in frames and "reinforcement" in frames and "max_items" in frames
    pipe = HCEPipeline(session_id="why-hce", context_budget=40)
    pipe.update_many([(f"Ana drinks lapsang souchong {i}", "noted") for i in range(6)])
    hce = rendered(pipe.retrieve_candidates("which tea does Ana drink?").explain())
    assert "why: hce" in hce and "per token" in hce and "budget" in hce
    engine = HSCAEngine(agent_id="why-hsca", session_id="chat")
    for turn in ["Redis stores data in memory. Memory access makes Redis fast.",
                 "So how does Redis persist data to disk? Does the memory data survive a restart?"]:
        engine.ingest_turn(turn)
    if engine.buffer:
        engine.take_snapshot()
    hsca = rendered(engine.assemble("redis memory").explain())
    assert "why: hsca" in hsca and "term:" in hsca and "layer1" in hsca


def test_recall_names_the_recipe(db):
    with configured_embeddings(HashingEmbeddings(384)):
        remember("ana-recipe")
        explained = recall_context("ana-recipe", "Which tea does Ana drink?", 2000, 10, "structured", explain=True)
    assert explained.explanation is not None and explained.explanation["recipe"] == "assembler"


def test_recall_and_ask_why_name_a_superseded_memory_and_its_successor(redis_url, db):
    """A turn superseded by hand (the inspector's action) and matching the question: MCP ``recall``
    sends it in ``left_out`` with reason ``superseded`` and ``superseded_by``; ``ask --why`` prints both."""
    from redmem.lifecycle import supersede

    lines = ["Ana drinks lapsang souchong every morning.", "Ana switched to sencha, she drinks it every morning.",
             "The deploy freeze starts on Friday."]
    with configured_embeddings(HashingEmbeddings(384)):
        old, new, _ = store_turns([ChatTurn(line, datetime(2026, 1, 10, 9, i, tzinfo=UTC), "s1", "Ana")
                                   for i, line in enumerate(lines)], "ana-moved")
        supersede(old, new)
        explained = recall_context("ana-moved", "What does Ana drink every morning?", 2000, 10, "structured",
                                   explain=True)
    assert explained.explanation is not None
    cut = [o for o in explained.explanation["left_out"] if o["reason"] == "superseded"]
    assert [(o["record_id"], o["superseded_by"]) for o in cut] == [(old.memory_id, new.memory_id)]
    out = subprocess.run(
        [sys.executable, "-m", "redmem.cli", "--url", redis_url, "--prefix", settings().key_prefix,
         "--embeddings", "hashing", "ask", "What does Ana drink every morning?", "--agent", "ana-moved", "--why"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "240"},
    )
    assert out.returncode == 0, out.stderr
    assert "superseded" in out.stdout and f"superseded by {new.memory_id}" in out.stdout
