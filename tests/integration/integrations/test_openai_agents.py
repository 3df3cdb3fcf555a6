"""redmem.integrations.openai_agents: the Session protocol on SessionItem records, and an Agent run
through the real SDK's Runner against the local OpenAI-compatible server, two turns."""

from __future__ import annotations

import asyncio

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from openai_server import OpenAICompatibleServer  # noqa: E402
from redmem.embeddings import HashingEmbeddings  # noqa: E402
from redmem.integrations.openai_agents import (  # noqa: E402
    RedmemSession,
    SessionItem,
    item_turn,
    latest_user_text,
    memory_instructions,
)
from redmem.recipes.conversation import conversation_assembler  # noqa: E402

set_tracing_disabled(True)


class Item(SessionItem):
    class Meta:
        embedding_provider = HashingEmbeddings(dimensions=64)


def run(coroutine):
    return asyncio.run(coroutine)


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"type": "message", "role": "assistant", "status": "completed", "id": "msg_1",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def test_it_is_a_session_and_keeps_items_in_order(db):
    session = RedmemSession("s1", "agent-1", model=Item)
    assert isinstance(session, Session) and session.session_settings == SessionSettings()
    assert run(session.get_items()) == [] and run(session.pop_item()) is None
    items = [user("I moved to Lisbon"), assistant("Nice city!"), user("I have a cat called Miso")]
    run(session.add_items(items[:2]))
    run(session.add_items(items[2:]))
    run(session.add_items([]))
    assert run(session.get_items()) == items
    assert run(session.get_items(limit=2)) == items[1:]
    assert run(session.get_items(limit=0)) == []
    assert [r.position for r in Item.query.filter(agent_id="agent-1").order_by("position")] == [0, 1, 2]
    assert run(session.pop_item()) == items[2]
    assert run(session.get_items()) == items[:2]
    run(session.add_items([items[2]]))
    assert run(session.get_items()) == items


def test_sessions_of_an_agent_and_agents_are_apart(db):
    first, second, other = RedmemSession("s1", "a", model=Item), RedmemSession("s2", "a", model=Item), \
        RedmemSession("s1", "b", model=Item)
    run(first.add_items([user("one")]))
    run(second.add_items([user("two")]))
    run(other.add_items([user("three")]))
    assert run(first.get_items()) == [user("one")] and run(other.get_items()) == [user("three")]
    run(first.clear_session())
    assert run(first.get_items()) == []
    assert run(second.get_items()) == [user("two")] and run(other.get_items()) == [user("three")]


def test_an_item_is_a_searchable_turn_with_its_neighbours(db):
    session = RedmemSession("s1", "agent-1", model=Item, window=1)
    run(session.add_items([user("Where should we go camping?")]))
    run(session.add_items([assistant("The Rockies, with the whole family!")]))
    answer = Item.query.filter(agent_id="agent-1").order_by("-position").first()
    assert answer.speaker == "assistant" and answer.content == "The Rockies, with the whole family!"
    assert answer.context == "> Where should we go camping?\nassistant: The Rockies, with the whole family!"
    found = conversation_assembler(Item, max_items=1).assemble("camping", agent_id="agent-1")
    (record,) = found.records
    assert record.content in found.formatted and record.session in found.formatted
    assert '"item"' not in found.formatted and '"thread"' not in found.formatted


def test_concurrent_writes_of_one_session_keep_every_item(db):
    session = RedmemSession("s1", "agent-1", model=Item)

    async def many():
        await asyncio.gather(*(session.add_items([user(f"note {i}")]) for i in range(6)))
        return await session.get_items()

    assert sorted(i["content"] for i in run(many())) == [f"note {i}" for i in range(6)]
    assert sorted(r.position for r in Item.query.filter(agent_id="agent-1").order_by("position")) == list(range(6))


def test_items_read_as_turns():
    assert item_turn({"type": "function_call", "name": "weather", "arguments": '{"city": "Oslo"}',
                      "call_id": "c1"}, "s") .text == 'weather({"city": "Oslo"})'
    assert item_turn({"type": "function_call_output", "call_id": "c1", "output": "sunny"}, "s").speaker == "tool result"
    assert item_turn({"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}, "s").text == "no"
    assert item_turn({"type": "reasoning", "summary": []}, "s") == item_turn({"type": "reasoning"}, "s")
    assert latest_user_text([user("a"), assistant("b"), user([{"type": "input_text", "text": "c"}])]) == "c"
    assert latest_user_text([assistant("b")]) == ""


def test_an_agent_runs_two_turns_on_the_session_with_memory_in_its_instructions(db):
    old = RedmemSession("yesterday", "agent-1", model=Item)
    run(old.add_items([user("My dog is called Biscuit"), assistant("Biscuit is a lovely name.")]))
    session = RedmemSession("today", "agent-1", model=Item)
    instructions = memory_instructions("You are a helpful assistant.", conversation_assembler(Item, max_items=3),
                                       agent_id="agent-1")
    with OpenAICompatibleServer() as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test-key")
        agent = Agent(name="helper", instructions=instructions,
                      model=OpenAIChatCompletionsModel(model="local-model", openai_client=client))
        first = Runner.run_sync(agent, "Hello there", session=session)
        second = Runner.run_sync(agent, "What is my dog called?", session=session)
        requests = server.chat_requests()
    assert first.final_output == "echo: Hello there" and second.final_output == "echo: What is my dog called?"
    assert [(i["role"], i["content"] if isinstance(i["content"], str) else i["content"][0]["text"])
            for i in run(session.get_items())] == [
        ("user", "Hello there"), ("assistant", "echo: Hello there"),
        ("user", "What is my dog called?"), ("assistant", "echo: What is my dog called?")]
    assert len(requests) == 2
    system, *history = requests[1]["messages"]
    assert system["role"] == "system"
    assert system["content"].startswith("You are a helpful assistant.\n\nRelevant memory:\n")
    assert "My dog is called Biscuit" in system["content"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[0]["content"] == "Hello there" and history[-1]["content"] == "What is my dog called?"
