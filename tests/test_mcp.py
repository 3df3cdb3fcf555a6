"""``redmem mcp``, run as a subprocess and driven by the MCP SDK's own client: stdio and streamable HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import typing
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from redmem.cli_commands import mcp_server  # noqa: E402
from redmem.cli_commands.memory import ChatMemory  # noqa: E402
from redmem.context.rendering import FORMATS  # noqa: E402
from redmem.fields import ConfidenceField  # noqa: E402
from redmem.observation.protocol import OUTCOME_EFFECTS  # noqa: E402
from redmem.store import settings  # noqa: E402
from redmem.store.errors import ConfigurationError  # noqa: E402

TOOLS = {"remember", "recall", "feedback", "forget", "list_memories"}


def command(redis_url: str, *options: str) -> list[str]:
    """``redmem mcp`` on the test server, under the current test's key prefix, default agent ana."""
    return ["-m", "redmem.cli", "--url", redis_url, "--prefix", settings().key_prefix, "--embeddings", "hashing",
            "mcp", "--agent", "ana", *options]


def on_stdio(redis_url: str, scenario: Callable[[Client], Awaitable[None]]) -> None:
    """Start the server over stdio, run ``scenario`` with a connected client, close it."""
    params = StdioServerParameters(command=sys.executable, args=command(redis_url), env=dict(os.environ))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await scenario(client)

    anyio.run(main)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; the call must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The message of a call that must end in an MCP error result."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    return " ".join(block.text for block in result.content if block.type == "text")


def test_tools_are_listed_with_descriptions_and_schemas(redis_url, db):
    async def scenario(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert len(tool.description or "") > 40, tool.name
            properties = tool.input_schema["properties"]
            assert "agent_id" in properties and "agent_id" not in tool.input_schema.get("required", [])
            assert "'ana'" in properties["agent_id"]["description"]  # the default agent is named
            assert all(spec.get("description") for spec in properties.values()), tool.name
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        recall = tools["recall"].input_schema
        assert recall["required"] == ["query"]
        assert recall["properties"]["max_tokens"]["minimum"] == 1
        assert recall["properties"]["format"]["enum"] == list(FORMATS)
        assert {"context", "memories", "token_count", "below_floor"} <= set(tools["recall"].output_schema["properties"])
        outcomes = tools["feedback"].input_schema["properties"]["outcomes"]
        assert outcomes["type"] == "object" and set(outcomes["additionalProperties"]["enum"]) == set(OUTCOME_EFFECTS)
        assert tools["remember"].input_schema["required"] == ["content"]
        assert tools["forget"].input_schema["properties"]["memory_ids"]["type"] == "array"
        assert client.instructions and "recall" in client.instructions

    on_stdio(redis_url, scenario)


def test_each_tool_on_the_default_agent(redis_url, db):
    async def scenario(client: Client) -> None:
        tea = await call(client, "remember", {"content": "Ana drinks smoked lapsang souchong every afternoon.",
                                              "speaker": "Ana", "session": "s1"})
        bike = await call(client, "remember", {"content": "Ana cycles to work along the canal.", "importance": 2})
        assert tea["agent_id"] == "ana"
        listed = await call(client, "list_memories", {})
        assert listed["total"] == 2
        assert {m["memory_id"] for m in listed["memories"]} == {tea["memory_id"], bike["memory_id"]}
        assert (await call(client, "list_memories", {"limit": 1, "offset": 1}))["memories"] == sorted(
            listed["memories"], key=lambda m: m["memory_id"])[1:]

        found = await call(client, "recall", {"query": "What tea does Ana drink?", "max_tokens": 500})
        assert "lapsang souchong" in found["context"] and 0 < found["token_count"] <= 500
        assert found["below_floor"] == 1 and len(found["memories"]) == 1  # the bike ride matches too weakly
        first = found["memories"][0]
        assert first["memory_id"] == tea["memory_id"] and first["speaker"] == "Ana" and first["session"] == "s1"
        assert first["source"] in ("pull", "both") and first["score"] > 0
        lines = await call(client, "recall", {"query": "lapsang", "format": "content", "max_items": 1})
        assert lines["context"] == "- Ana drinks smoked lapsang souchong every afternoon."

        stored = ChatMemory.query.no_track().get(agent_id="ana", memory_id=tea["memory_id"])
        before = ConfidenceField.get_confidence(stored, "confidence")
        reported = await call(client, "feedback", {"outcomes": {tea["memory_id"]: "acted"}})
        assert reported == {"outcomes": {tea["memory_id"]: "acted"}}
        assert ConfidenceField.get_confidence(stored, "confidence") > before

        gone = await call(client, "forget", {"memory_ids": [tea["memory_id"], "0" * 32]})
        assert gone == {"forgotten": [tea["memory_id"]], "not_found": ["0" * 32]}
        assert (await call(client, "list_memories", {}))["total"] == 1
        after = await call(client, "recall", {"query": "What tea does Ana drink?"})
        assert tea["memory_id"] not in {m["memory_id"] for m in after["memories"]}

    on_stdio(redis_url, scenario)
    assert [m.content for m in ChatMemory.query.filter(agent_id="ana").no_track()] == \
        ["Ana cycles to work along the canal."]  # what the tools stored is the CLI's memory


def test_remember_takes_when_it_was_said_and_links_the_turns_of_a_session(redis_url, db):
    async def scenario(client: Client) -> None:
        asked = await call(client, "remember", {"content": "Did you ever go scuba diving near Belize?",
                                                "speaker": "Ana", "session": "s1", "said_at": "1:56 pm on 8 May, 2023"})
        answer = await call(client, "remember", {"content": "Yes, twice last year!", "speaker": "Bo",
                                                 "session": "s1", "said_at": "2023-05-08T13:57:00Z"})
        found = await call(client, "recall", {"query": "scuba diving Belize", "max_items": 2})
        by_id = {m["memory_id"]: m for m in found["memories"]}
        assert set(by_id) == {asked["memory_id"], answer["memory_id"]}
        assert by_id[answer["memory_id"]]["said_at"] == "2023-05-08T13:57:00+00:00"
        assert by_id[answer["memory_id"]]["date"] == "2023-05-08"

    on_stdio(redis_url, scenario)
    stored = ChatMemory.query.filter(agent_id="ana").no_track().all()
    assert sorted(m.position for m in stored) == [0, 1]


def test_bad_arguments_give_error_results_and_the_server_keeps_serving(redis_url, db):
    async def scenario(client: Client) -> None:
        kept = await call(client, "remember", {"content": "Ana's locker code is 4711."})
        assert "query" in await refused(client, "recall", {})
        assert "max_tokens" in await refused(client, "recall", {"query": "code", "max_tokens": "lots"})
        assert "max_tokens" in await refused(client, "recall", {"query": "code", "max_tokens": 0})
        assert "format" in await refused(client, "recall", {"query": "code", "format": "yaml"})
        assert "content" in await refused(client, "remember", {"content": ""})
        assert "content must hold some text" in await refused(client, "remember", {"content": "   "})
        assert "importance" in await refused(client, "remember", {"content": "x", "importance": -1})
        assert "said_at: 'last Tuesday' is not a time: use ISO 8601" in await refused(
            client, "remember", {"content": "x", "said_at": "last Tuesday"})
        assert "contradicted" in await refused(client, "feedback", {"outcomes": {kept["memory_id"]: "loved"}})
        assert "outcomes" in await refused(client, "feedback", {"outcomes": {}})
        missing = await refused(client, "feedback", {"outcomes": {kept["memory_id"]: "acted", "f" * 32: "acted"}})
        assert f"agent 'ana' has no memory {'f' * 32}: nothing was reported" in missing
        assert "memory_ids" in await refused(client, "forget", {"memory_ids": "not a list"})
        assert "limit" in await refused(client, "list_memories", {"limit": -3})
        assert "agent_id" in await refused(client, "list_memories", {"agent_id": ""})
        assert "nope" in await refused(client, "nope", {})
        listed = await call(client, "list_memories", {})  # still serving, nothing changed
        assert [m["content"] for m in listed["memories"]] == ["Ana's locker code is 4711."]

    on_stdio(redis_url, scenario)


def test_agents_do_not_see_each_others_memories(redis_url, db):
    async def scenario(client: Client) -> None:
        mine = await call(client, "remember", {"content": "Bo's passport number is X123.", "agent_id": "bo"})
        ana = await call(client, "remember", {"content": "Ana's passport is in the drawer."})
        assert (mine["agent_id"], ana["agent_id"]) == ("bo", "ana")
        for agent, own in (("bo", mine), ("ana", ana)):
            listed = await call(client, "list_memories", {"agent_id": agent})
            assert [m["memory_id"] for m in listed["memories"]] == [own["memory_id"]]
            found = await call(client, "recall", {"query": "passport", "agent_id": agent})
            assert [m["memory_id"] for m in found["memories"]] == [own["memory_id"]]
        nobody = await call(client, "recall", {"query": "passport", "agent_id": "cy"})
        assert nobody["memories"] == [] and nobody["context"] in ("", "[]")
        assert "agent 'ana' has no memory" in await refused(client, "feedback", {"outcomes": {mine["memory_id"]: "acted"}})
        assert await call(client, "forget", {"memory_ids": [mine["memory_id"]]}) == \
            {"forgotten": [], "not_found": [mine["memory_id"]]}
        assert (await call(client, "list_memories", {"agent_id": "bo"}))["total"] == 1

    on_stdio(redis_url, scenario)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_streamable_http(redis_url, db):
    port = free_port()
    server = subprocess.Popen([sys.executable, *command(redis_url, "--http", "--port", str(port))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.2)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
                assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
                stored = await call(client, "remember", {"content": "Ana waters the basil on Sundays.", "agent_id": "h"})
                found = await call(client, "recall", {"query": "basil", "agent_id": "h"})
                assert [m["memory_id"] for m in found["memories"]] == [stored["memory_id"]]
                assert "agent_id" in await refused(client, "recall", {"query": "basil", "agent_id": ""})

        anyio.run(main)
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert f"streamable HTTP on http://127.0.0.1:{port}/mcp, default agent 'ana'" in " ".join(err.split())


def test_literals_match_the_library():
    assert set(typing.get_args(mcp_server.Outcome)) == set(OUTCOME_EFFECTS)
    assert typing.get_args(mcp_server.Format) == FORMATS


def test_a_missing_sdk_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'redmem\[mcp\]'"):
        mcp_server.build_server("ana")
