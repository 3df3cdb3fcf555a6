"""The frames and HCE seeds' names and shapes (issue 29.6, 29.5): their import lines, async
frames, the SELF cache at session end, a frame's outcome report, a text query to the tree
search, and the labelled HCE context block; on a real server."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import Any

import pytest

import frames_support
import redmem.store._aio as aio
from redmem.recipes.frames import SELF_FRAME, FrameMemory
from redmem.store._errors import ValidationError

provider, clock = frames_support.provider, frames_support.clock  # the frames tests' fixtures, defined once

#: The seeds' import lines (frames-recall-plan, hce-pipeline-phase4), their public names only:
#: ``elfmem.<module>`` becomes the recipe package.
SEED_IMPORTS = {
    "redmem.recipes.frames": [
        "from elfmem.scoring import ATTENTION_WEIGHTS, SELF_WEIGHTS, TASK_WEIGHTS, ScoringWeights",
        "from elfmem.context.frames import FrameCache, FrameDefinition, get_frame_definition",
        "from elfmem.context.frames import CachePolicy, FrameFilters, BUILTIN_FRAMES, SELF_FRAME, ATTENTION_FRAME, TASK_FRAME",
        "from elfmem.context.rendering import render_blocks",
        "from elfmem.types import FrameResult, ScoredBlock",
    ],
    "redmem.recipes.hce": [
        "from hce_core import EntityGraph, NodeType, EdgeType, spreading_activation",
        "from semantic_tree import SemanticTree, hierarchical_relevance_search",
        "from entity_extractor import EntityExtractor",
        "from budgeting import ContextCandidate, context_budgeting",
        "from pipeline import HCEPipeline",
    ],
}


@pytest.mark.parametrize("package", sorted(SEED_IMPORTS))
def test_every_name_the_seeds_import_imports(package):
    for line in SEED_IMPORTS[package]:
        names = line.split(" import ", 1)[1]
        exec(f"from {package} import {names}", {})  # the seed's own line, module renamed


def test_the_seeds_frame_definitions_build_as_written():
    from redmem.recipes.frames import (
        ATTENTION_WEIGHTS,
        BUILTIN_FRAMES,
        SELF_WEIGHTS,
        CachePolicy,
        FrameDefinition,
        FrameFilters,
        get_frame_definition,
    )

    seed_self = FrameDefinition(
        name="self", weights=SELF_WEIGHTS, filters=FrameFilters(tag_patterns=["self/%"]),
        guarantees=["self/constitutional"], template="self", token_budget=600,
        cache=CachePolicy(ttl_seconds=3600, invalidate_on=["self_block_change", "curate_complete"]), source="builtin",
    )
    assert seed_self == SELF_FRAME == get_frame_definition("self")
    assert get_frame_definition("attention").weights == ATTENTION_WEIGHTS
    assert set(BUILTIN_FRAMES) == {"self", "attention", "task"}
    assert CachePolicy().invalidate_on == ("self_block_change",)
    with pytest.raises(ValidationError, match="unknown cache events"):
        CachePolicy(invalidate_on=["on_tuesdays"])
    with pytest.raises(ValidationError, match="unknown built-in frame"):
        get_frame_definition("mood")


@pytest.fixture
def mem(provider, clock):
    memory = FrameMemory(agent_id="agent-seed", clock=clock)
    memory.begin_session()
    return memory


def test_render_blocks_is_the_text_frame_shows(mem):
    from redmem.recipes.frames import render_blocks

    for text in ("Celery runs background jobs with Redis", "Redis pub/sub carries events"):
        mem.learn(text)
    result = mem.frame("attention", "redis", token_budget=2000)
    assert render_blocks(result.blocks, "attention", 2000, count_tokens=mem.count_tokens) == result.text
    assert render_blocks(result.blocks, "attention", 5) == "" and render_blocks([], "self", 100) == ""
    with pytest.raises(ValidationError, match="unknown template"):
        render_blocks(result.blocks, "poem", 100)


def run(coroutine: Any) -> Any:
    async def main() -> Any:
        try:
            return await coroutine
        finally:
            await aio.aclose_clients()

    return asyncio.run(main())


def test_frames_and_recall_can_be_awaited(mem):
    for text in ("Celery runs background jobs with Redis", "Use pytest for async code"):
        mem.learn(text)
    mem.learn("I explain my reasoning", tags=["self/value"])
    recalled = run(mem.arecall("attention", "redis jobs"))
    assert recalled == mem.recall("attention", "redis jobs")
    framed = run(mem.aframe("self"))
    assert "I explain my reasoning" in framed.text and not framed.cached
    assert mem.frame("self").cached  # the awaited frame cached its result like the sync one


def test_end_session_clears_the_self_frame_cache(mem):
    mem.learn("I explain my reasoning", tags=["self/value"])
    assert not mem.frame("self").cached and mem.frame("self").cached
    mem.end_session()
    mem.begin_session()
    assert not mem.frame("self").cached
    assert mem.frame("self").cached


def test_frame_cache_clear_drops_cached_frames_for_every_process(mem, clock):
    from redmem.recipes.frames import FrameCache

    mem.learn("I explain my reasoning", tags=["self/value"])
    mem.frame("self")
    FrameCache("agent-seed").invalidate("self")
    assert not FrameMemory(agent_id="agent-seed", clock=clock).frame("self").cached
    FrameCache("agent-seed").clear()
    assert not mem.frame("self").cached


def test_a_frame_report_feeds_the_observation_protocol(mem):
    celery = mem.learn("Celery runs background jobs with Redis")
    pubsub = mem.learn("Redis pub/sub carries events")
    before = {i: mem.get(i).confidence for i in (celery, pubsub)}
    result = mem.frame("attention", "redis")
    assert {b.id for b in result.blocks} == {celery, pubsub} and result.agent_id == "agent-seed"
    reported = result.report({celery: "acted", pubsub: "contradicted"})
    assert sorted(reported.values()) == ["acted", "contradicted"]
    assert mem.get(celery).confidence > before[celery] and mem.get(pubsub).confidence < before[pubsub]
    assert set(run(result.areport("used")).values()) == {"used"}


def test_a_report_on_a_self_frame_drops_the_cached_self_frame(mem):
    mem.learn("I explain my reasoning", tags=["self/value"])
    result = mem.frame("self")
    assert mem.frame("self").cached
    result.report("contradicted")
    fresh = mem.frame("self")
    assert not fresh.cached and fresh.blocks[0].confidence < result.blocks[0].confidence


def test_a_cached_frame_reports_too(mem):
    block = mem.learn("I explain my reasoning", tags=["self/value"])
    mem.frame("self")
    cached = mem.frame("self")
    assert cached.cached and cached.agent_id == "agent-seed"
    assert list(cached.report("acted").values()) == ["acted"] and mem.get(block).confidence > 0.5


# -- HCE -----------------------------------------------------------------------------------------
def test_the_tree_search_takes_a_text_or_a_vector(db):
    from redmem.recipes.hce import HCEPipeline, hierarchical_relevance_search

    pipe = HCEPipeline(session_id="seed-tree")
    pipe.update("I moved to Lisbon last spring", "Lisbon is lovely in spring.")
    pipe.update("My manager at Acme is Carla", "Noted: Carla manages you at Acme.")
    by_text = hierarchical_relevance_search(pipe.tree, "who is my manager at Acme?")
    by_vector = hierarchical_relevance_search(pipe.tree, pipe.embed_query("who is my manager at Acme?").tolist())
    assert [(r.interaction_id, s) for r, s in by_text] == [(r.interaction_id, s) for r, s in by_vector]
    assert by_text and "Carla" in by_text[0][0].user
    with pytest.raises(ValidationError):
        hierarchical_relevance_search(pipe.tree, "   ")
    with pytest.raises(ValidationError):
        hierarchical_relevance_search(pipe.tree, [[1.0, 2.0]])


def test_the_context_block_labels_each_item_with_its_date_and_sources(db):
    from redmem.recipes.hce import HCEPipeline
    from redmem.recipes.hce._models import HCEInteraction

    pipe = HCEPipeline(session_id="seed-labels", max_focus=2)
    pipe.update("My manager at Acme is Carla", "Noted: Carla manages you at Acme.")
    pipe.update("I moved to Lisbon", "Lisbon it is.")
    pipe.update("I like green tea", "Green tea, noted.")  # the first pair has left the focus buffer
    stored = {r.user: r for r in HCEInteraction.query.filter(session_id="seed-labels").all()}
    found = pipe.retrieve_candidates("who manages me at Acme? Carla")
    acme = next(c for c in found.selected if "Carla" in c.content and c.metadata.get("interaction_id"))
    day = datetime.fromtimestamp(stored["My manager at Acme is Carla"].timestamp, UTC).strftime("%Y-%m-%d")
    label = re.match(r"\[([^\]]+)\] ", acme.content)
    assert label is not None and label.group(1).startswith(f"{day}, ")
    assert set(label.group(1).split(", ")[1].split("+")) <= {"graph", "tree", "keyword"}
    assert all(re.match(r"\[\d{4}-\d\d-\d\d, [a-z+]+\] ", c.content) for c in found.selected)
    assert found.block.startswith("[") and found.block == "\n".join(c.content for c in found.selected)
    assert found.token_count == pipe.count_tokens(found.block)
