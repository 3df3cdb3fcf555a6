"""redmem.Memory, the newcomer's add / search / context helper over DefaultMemory."""

from __future__ import annotations

import redmem
from redmem import ConfidenceField, DefaultMemory, Memory


def test_add_stores_a_text_once_per_agent(db):
    memory = Memory(agent_id="alice")
    first = memory.add("Alice is vegetarian")
    again = memory.add("Alice is vegetarian")
    Memory(agent_id="bob").add("Alice is vegetarian")
    assert again.memory_id == first.memory_id
    assert [m.content for m in DefaultMemory.query.filter(agent_id="alice")] == ["Alice is vegetarian"]
    assert len(list(DefaultMemory.query.filter(agent_id="bob"))) == 1


def test_search_ranks_the_agents_memories_and_keeps_to_the_limit(db):
    memory = Memory(agent_id="alice")
    for text in ("Deploys go out on Tuesdays after stand-up", "Alice is vegetarian", "The cat is called Biscuit",
                 "Lunch is at noon"):
        memory.add(text)
    Memory(agent_id="bob").add("Bob deploys on Fridays")
    result = memory.search("when do we deploy?", limit=2)
    assert result.records[0].content == "Deploys go out on Tuesdays after stand-up"
    assert len(result.records) <= 2 and all(r.agent_id == "alice" for r in result.records)


def test_context_fits_the_budget_and_feedback_raises_confidence(db):
    memory = Memory(agent_id="alice", max_tokens=30)
    for n in range(20):
        memory.add(f"Deploy note {n}: deploys need a green build and a second reviewer before noon")
    result = memory.context("what do deploys need?")
    assert result.records and result.metadata["token_count"] <= 30
    assert result.formatted.count("Deploy note") == len(result.records)
    before = [ConfidenceField.get_confidence(r, "confidence") for r in result.records]
    keys = result.report("acted")
    assert set(keys.values()) == {"acted"} and len(keys) == len(result.records)
    after = [ConfidenceField.get_confidence(r, "confidence") for r in result.records]
    assert all(a > b for a, b in zip(after, before))


def test_memory_is_the_package_face():
    assert redmem.Memory is Memory
