"""``redmem mcp``, run as a subprocess and driven by the MCP SDK's own client: stdio and streamable HTTP."""

from __future__ import annotations

import argparse
import json
import os
import queue
import socket
import stat
import subprocess
import sys
import threading
import time
import typing
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conftest import configured_embeddings

mcp = pytest.importorskip("mcp")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from redmem.cli_commands import mcp_server  # noqa: E402
from redmem.cli_commands._mcp_agents import AgentBinding, AgentNotServed, agent_list, agent_tokens  # noqa: E402
from redmem.cli_commands._mcp_http import TOKEN_ENV, BearerGuard, bearer_token  # noqa: E402
from redmem.cli_commands._mcp_stdio import leading_id  # noqa: E402
from redmem.cli_commands._memory import ChatMemory  # noqa: E402
from redmem.context._rendering import FORMATS  # noqa: E402
from redmem.embeddings import HashingEmbeddings  # noqa: E402
from redmem.fields import ConfidenceField  # noqa: E402
from redmem.observation._protocol import OUTCOME_EFFECTS  # noqa: E402
from redmem.recipes._retention import archived  # noqa: E402
from redmem.recipes._tenant_data import import_tenant  # noqa: E402
from redmem.store import settings  # noqa: E402
from redmem.store._errors import ConfigurationError  # noqa: E402

TOOLS = {"remember", "recall", "feedback", "forget", "list_memories", "retention", "export", "erase"}


def command(redis_url: str, *options: str) -> list[str]:
    """``redmem mcp`` on the test server, under the current test's key prefix, default agent ana."""
    return ["-m", "redmem.cli", "--url", redis_url, "--prefix", settings().key_prefix, "--embeddings", "hashing",
            "mcp", "--agent", "ana", *options]


def on_stdio(redis_url: str, scenario: Callable[[Client], Awaitable[None]], *options: str) -> None:
    """Start the server over stdio, run ``scenario`` with a connected client, close it."""
    params = StdioServerParameters(command=sys.executable, args=command(redis_url, *options), env=dict(os.environ))

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
            assert tool.input_schema["additionalProperties"] is False, tool.name
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
        # said at a fixed time: the hashing vectors embed the dated passage, so the bike ride's match
        # moves with the date's words (0.16 to 0.32 over a year of dates, against the floor's 0.3)
        when = "2026-02-10T18:45:00Z"
        tea = await call(client, "remember", {"content": "Ana drinks smoked lapsang souchong every afternoon.",
                                              "speaker": "Ana", "session": "s1", "said_at": when})
        bike = await call(client, "remember", {"content": "Ana cycles to work along the canal.", "importance": 2,
                                               "said_at": when})
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
        assert "offset" in await refused(client, "list_memories", {"offset": 10**18})  # was an untyped Redis error
        assert "agent_id" in await refused(client, "list_memories", {"agent_id": ""})
        assert "nope" in await refused(client, "nope", {})
        unknown = await refused(client, "recall", {"query": "code", "max_token": 5})
        assert "max_token" in unknown and "unknown argument; this tool takes query, max_tokens" in unknown
        assert "unknown argument" in await refused(client, "erase", {"confirm": "ana", "everything": True})
        for arguments in ({"query": "code", "max_tokens": "lots"}, {"query": "code", "max_token": 5}):
            assert "pydantic.dev" not in await refused(client, "recall", arguments)
        listed = await call(client, "list_memories", {})  # still serving, nothing changed
        assert [m["content"] for m in listed["memories"]] == ["Ana's locker code is 4711."]

    on_stdio(redis_url, scenario)


def test_retention_is_a_dry_run_until_confirmed_and_archives(redis_url, db):
    async def scenario(client: Client) -> None:
        for n in range(4):
            await call(client, "remember", {"content": f"Ana's note number {n}."})
        dry = await call(client, "retention", {"keep": 1})
        assert dry["applied"] is False and len(dry["past_keep"]) == 3 and dry["older"] == []
        assert (await call(client, "list_memories", {}))["total"] == 4
        assert "not confirmed: to evict from agent 'ana', pass confirm='ana'" in await refused(
            client, "retention", {"keep": 1, "confirm": "bo"})
        assert "say what to keep: keep N" in await refused(client, "retention", {})
        done = await call(client, "retention", {"keep": 1, "confirm": "ana"})
        assert done["applied"] is True and sorted(done["past_keep"]) == sorted(dry["past_keep"])
        assert (await call(client, "list_memories", {}))["total"] == 1

    on_stdio(redis_url, scenario)
    assert len(archived(ChatMemory, agent_id="ana")) == 3


def test_export_then_erase_with_confirmation(redis_url, db):
    exported: list[str] = []

    async def scenario(client: Client) -> None:
        await call(client, "remember", {"content": "Ana's locker code is 4711."})
        await call(client, "remember", {"content": "Ana cycles to work."})
        done = await call(client, "export", {})
        assert done["agent_id"] == "ana" and done["keys"] > 5
        exported.extend(done["jsonl"].splitlines())
        assert "not confirmed: to erase agent 'ana' for good, pass confirm='ana'" in await refused(
            client, "erase", {"confirm": "bo"})
        assert (await call(client, "list_memories", {}))["total"] == 2
        erased = await call(client, "erase", {"confirm": "ana"})
        assert erased["keys_erased"] == done["keys"] and erased["keys_left"] == 0
        assert (await call(client, "list_memories", {}))["total"] == 0

    on_stdio(redis_url, scenario)
    assert json.loads(exported[0])["partition"] == {"agent_id": "ana"}
    import_tenant(ChatMemory, exported)
    assert sorted(m.content for m in ChatMemory.query.filter(agent_id="ana").no_track()) == [
        "Ana cycles to work.", "Ana's locker code is 4711."]


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

    on_stdio(redis_url, scenario, "--agents", "bo,cy")


def test_a_server_acts_for_its_agent_only(redis_url, db):
    """Started with --agent ana, no call can read, recall, report on, delete or write bo's memories."""
    async def as_bo(client: Client) -> None:
        kept.append((await call(client, "remember", {"content": "Bo's bank PIN is 4321."}))["memory_id"])

    async def as_ana(client: Client) -> None:
        pin = kept[0]
        for tool, arguments in (("list_memories", {}), ("recall", {"query": "bank PIN"}),
                                ("feedback", {"outcomes": {pin: "contradicted"}}), ("forget", {"memory_ids": [pin]}),
                                ("remember", {"content": "Bo's PIN is 0000."})):
            message = await refused(client, tool, {**arguments, "agent_id": "bo"})
            assert "agent_id 'bo' refused: this MCP server (its --agent and --agents) acts for 'ana' only" in message, (tool, message)
            assert "4321" not in message
        assert "agent_id 'ana2' refused" in await refused(client, "list_memories", {"agent_id": "ana2"})
        assert (await call(client, "list_memories", {"agent_id": "ana"}))["total"] == 0  # its own agent, named

    kept: list[str] = []
    on_stdio(redis_url, as_bo, "--agent", "bo")
    on_stdio(redis_url, as_ana)
    bo = ChatMemory.query.filter(agent_id="bo").no_track().all()
    assert [(m.memory_id, m.content) for m in bo] == [(kept[0], "Bo's bank PIN is 4321.")]
    assert ChatMemory.query.filter(agent_id="ana").no_track().count() == 0


def test_the_agent_binding_resolves_and_refuses():
    binding = AgentBinding("ana", frozenset({"bo", "ana"}))
    assert (binding.resolve(None), binding.resolve("ana"), binding.resolve("bo")) == ("ana", "ana", "bo")
    assert binding.describe() == "agents 'ana', 'bo' (default 'ana')"
    with pytest.raises(AgentNotServed, match=r"agent_id 'cy' refused: this MCP server \(its --agent and --agents\) acts for 'ana', 'bo' only"):
        binding.resolve("cy")
    assert AgentBinding("ana").describe() == "agent 'ana'"
    assert agent_list(" bo, cy") == {"bo", "cy"}
    with pytest.raises(argparse.ArgumentTypeError, match="none empty"):
        agent_list("bo,,cy")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def started(server: subprocess.Popen[str], ready: Callable[[], bool]) -> None:
    """Wait until ``ready()`` (the server listens), failing if the process ends first."""
    deadline = time.monotonic() + 60
    while not ready():
        assert server.poll() is None, server.communicate()
        assert time.monotonic() < deadline, "the HTTP server did not start"
        time.sleep(0.2)


def http_client(url: str, token: str | None, uds: str | None = None) -> Client:
    """The SDK's client on ``url``, sending ``token`` as a bearer token (none if None), over ``uds`` if given."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    transport = None if uds is None else httpx2.AsyncHTTPTransport(uds=uds)
    http = httpx2.AsyncClient(headers=headers, transport=transport, timeout=60)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)


def unauthorized(error: BaseException) -> bool:
    """Whether the SDK client's failure to connect is the server's 401 (it comes wrapped in task groups)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return isinstance(error, MCPError) and error.error.code == -32001 and "Unauthorized" in error.error.message


async def refused_without_token(url: str, token: str | None, uds: str | None = None) -> None:
    with pytest.raises(BaseException) as failure:
        async with http_client(url, token, uds) as client:
            await client.list_tools()
    assert unauthorized(failure.value), failure.value


def test_streamable_http_needs_the_bearer_token(redis_url, db):
    port = free_port()
    env = {**os.environ, TOKEN_ENV: "s3cret-token"}
    server = subprocess.Popen([sys.executable, *command(redis_url, "--http", "--port", str(port),
                                                        "--max-request-bytes", "20000")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        started(server, lambda: listening(port))

        async def main() -> None:
            async with http_client(url, "s3cret-token") as client:
                assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
                stored = await call(client, "remember", {"content": "Ana waters the basil on Sundays."})
                found = await call(client, "recall", {"query": "basil"})
                assert [m["memory_id"] for m in found["memories"]] == [stored["memory_id"]]
                assert "agent_id" in await refused(client, "recall", {"query": "basil", "agent_id": ""})
                assert "agent_id 'bo' refused" in await refused(client, "list_memories", {"agent_id": "bo"})
                with pytest.raises(MCPError, match="over the server's limit of 20000"):
                    await client.call_tool("remember", {"content": "basil " * 5000})
                assert (await call(client, "list_memories", {}))["total"] == 1  # nothing of the refused one
            for token in (None, "wrong", "s3cret-token-and-more"):
                await refused_without_token(url, token)
            async with httpx2.AsyncClient() as http:
                raw = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                      headers={"Accept": "application/json, text/event-stream"})
                assert raw.status_code == 401 and raw.headers["www-authenticate"].startswith("Bearer")
                assert raw.json()["error"]["code"] == -32001

        anyio.run(main)
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    said = " ".join(err.split())
    assert f"streamable HTTP on http://127.0.0.1:{port}/mcp, agent 'ana'" in said
    assert f"bearer token (from {TOKEN_ENV}): (not shown)" in said and "s3cret" not in said


def test_streamable_http_on_an_owner_only_unix_socket_with_per_agent_tokens(redis_url, db, tmp_path):
    path = tmp_path / "mcp.sock"
    tokens = tmp_path / "agent-tokens"
    tokens.write_text("# agent_id token\ncy tok-cy-123\n\nbo tok-bo-456\n")
    server = subprocess.Popen([sys.executable, *command(redis_url, "--http-socket", str(path), "--agents", "bo",
                                                        "--agent-tokens", str(tokens))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started(server, path.exists)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # group and others cannot connect
        said = ""
        while "bearer token" not in said:
            said = server.stderr.readline() if server.stderr else ""
            assert said or server.poll() is None
        token = said.split(": ")[-1].strip()
        assert len(token) >= 40

        async def main() -> None:
            async with http_client("http://localhost/mcp", token, str(path)) as client:
                stored = await call(client, "remember", {"content": "Bo keeps the spare key.", "agent_id": "bo"})
                assert stored["agent_id"] == "bo"
                assert (await call(client, "list_memories", {"agent_id": "bo"}))["total"] == 1
            async with http_client("http://localhost/mcp", "tok-cy-123", str(path)) as client:
                mine = await call(client, "remember", {"content": "Cy parks on level 3."})
                assert mine["agent_id"] == "cy"  # the token's agent is the default
                for agent in ("ana", "bo"):  # the server's agents are not the token's
                    message = await refused(client, "list_memories", {"agent_id": agent})
                    assert f"agent_id {agent!r} refused: the request's per-agent token acts for 'cy' only" in message
            async with http_client("http://localhost/mcp", "tok-bo-456", str(path)) as client:
                assert (await call(client, "list_memories", {}))["total"] == 1  # bo's own memory
                assert "refused" in await refused(client, "recall", {"query": "parks", "agent_id": "cy"})
            await refused_without_token("http://localhost/mcp", None, str(path))

        anyio.run(main)
        second = subprocess.run([sys.executable, *command(redis_url, "--http-socket", str(path))],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 1 and "another server is listening on" in " ".join(second.stdout.split())
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert not path.exists()  # removed on shutdown


def test_the_agent_tokens_file_is_checked(tmp_path):
    file = tmp_path / "tokens"
    file.write_text("ana t1\n# a comment\nbo t2\n")
    bindings = agent_tokens(file)
    assert {token: bound.default for token, bound in bindings.items()} == {"t1": "ana", "t2": "bo"}
    for text, problem in (("ana t1\nbo t1\n", "line 2: a token given twice"), ("ana\n", "line 1: not 'agent_id token'"),
                          ("# nothing\n", "holds no 'agent_id token' line")):
        file.write_text(text)
        with pytest.raises(ConfigurationError, match=problem):
            agent_tokens(file)


def test_tokens_without_http_are_refused(redis_url, tmp_path):
    done = subprocess.run([sys.executable, *command(redis_url, "--agent-tokens", str(tmp_path / "t"))],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "are for HTTP: add --http or --http-socket" in " ".join(done.stdout.split())


def test_the_server_token_cannot_be_a_per_agent_token():
    with pytest.raises(ConfigurationError, match="also a per-agent token"):
        BearerGuard(lambda *_: None, "shared", 1000, {"shared": AgentBinding("bo")})


def test_the_bearer_token_comes_from_the_environment_a_file_or_is_generated(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    token, origin = bearer_token(None)
    assert origin == "generated" and len(token) >= 40 and bearer_token(None)[0] != token
    file = tmp_path / "token"
    file.write_text("from-the-file\nignored\n")
    assert bearer_token(file) == ("from-the-file", f"from {file}")
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert bearer_token(None) == ("from-env", f"from {TOKEN_ENV}")
    assert bearer_token(file) == ("from-the-file", f"from {file}")  # the option wins
    monkeypatch.delenv(TOKEN_ENV)
    file.write_text("\n")
    with pytest.raises(ConfigurationError, match="is empty"):
        bearer_token(file)
    with pytest.raises(ConfigurationError, match="cannot be read"):
        bearer_token(tmp_path / "missing")


class RawStdio:
    """``redmem mcp`` over stdio driven line by line, bytes as given: what a broken client sends."""

    def __init__(self, redis_url: str, *options: str) -> None:
        self.process = subprocess.Popen([sys.executable, *command(redis_url, *options)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.replies: queue.Queue[bytes] = queue.Queue()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()
        self.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        """The next message of the server; fails after 30 s without one (a line dropped silently)."""
        try:
            return dict(json.loads(self.replies.get(timeout=30)))
        except queue.Empty:
            raise AssertionError("no reply: the server dropped the line") from None

    def ask(self, message: dict[str, Any] | bytes) -> dict[str, Any]:
        self.send(message if isinstance(message, bytes) else json.dumps(message).encode())
        return self.reply()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def tool_call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def test_malformed_stdio_lines_get_json_rpc_errors(redis_url, db):
    raw = RawStdio(redis_url)
    try:
        parse = raw.ask(b"{not json")
        assert (parse["id"], parse["error"]["code"]) == (None, -32700) and "not JSON" in parse["error"]["message"]
        assert raw.ask(b"\xff\xfe{}")["error"]["code"] == -32700  # not UTF-8
        invalid = raw.ask(b'{"jsonrpc": "2.0", "id": "q7", "method": 5}')
        assert (invalid["id"], invalid["error"]["code"]) == ("q7", -32600)
        assert raw.ask(b"[1, 2]")["error"]["code"] == -32600
        lone = raw.ask(json.dumps(tool_call(3, "remember", {"content": "PIN \ud800"})).encode())
        assert (lone["id"], lone["error"]["code"]) == (3, -32602)
        assert "params.arguments.content holds a lone surrogate" in lone["error"]["message"]
        big = raw.ask(json.dumps(tool_call(4, "remember", {"content": "x" * (2 << 20)})).encode())  # default 1 MiB
        assert (big["id"], big["error"]["code"]) == (4, -32600)
        assert f"more than {1 << 20} bytes" in big["error"]["message"]
        listed = raw.ask(tool_call(5, "list_memories", {}))  # still serving, nothing stored
        assert (listed["id"], listed["result"]["structuredContent"]["total"]) == (5, 0)
    finally:
        raw.close()
    assert ChatMemory.query.filter(agent_id="ana").no_track().count() == 0


def test_the_stdio_request_limit_is_configurable_and_the_sdk_client_gets_the_error(redis_url, db):
    async def scenario(client: Client) -> None:
        with pytest.raises(MCPError, match="more than 5000 bytes"):
            await client.call_tool("remember", {"content": "x" * 6000})
        assert (await call(client, "remember", {"content": "x" * 4000}))["agent_id"] == "ana"

    on_stdio(redis_url, scenario, "--max-request-bytes", "5000")


def test_the_id_of_a_request_cut_short_is_read_from_its_first_bytes():
    assert leading_id('{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "x", "argu') == 42
    assert leading_id(' { "id" : "a\\"b", "params": {') == 'a"b'
    assert leading_id('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"c":"xx') is None
    assert leading_id('{"id": true, "method": "x"}') is None
    assert leading_id('[{"id": 1}]') is None and leading_id("") is None


def test_literals_match_the_library():
    assert set(typing.get_args(mcp_server.Outcome)) == set(OUTCOME_EFFECTS)
    assert typing.get_args(mcp_server.Format) == FORMATS


def test_a_missing_sdk_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'redmem\[mcp\]'"):
        mcp_server.build_server("ana")


AGENTS = st.text(alphabet="abc", min_size=1, max_size=2)


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(default=AGENTS, allowed=st.frozensets(AGENTS, max_size=3), asked=AGENTS)
def test_a_call_acts_for_a_served_agent_or_changes_nothing(db, default, allowed, asked):
    """Over random bindings and agent_ids: a call for a served agent acts for that agent; any other
    is refused on every tool with that agent's memories unchanged."""
    served = {default} | allowed
    before = ChatMemory.query.filter(agent_id=asked).no_track().count()

    async def main() -> None:
        async with Client(mcp_server.build_server(default, allowed)) as client:
            stored = await client.call_tool("remember", {"content": "the spare key is under the mat", "agent_id": asked})
            listed = await client.call_tool("list_memories", {"agent_id": asked})
            found = await client.call_tool("recall", {"query": "spare key", "agent_id": asked})
            if asked in served:
                assert not stored.is_error and stored.structured_content["agent_id"] == asked
                assert listed.structured_content["total"] == before + 1
                assert not found.is_error
                return
            for result in (stored, listed, found):
                assert result.is_error and f"agent_id {asked!r} refused" in result.content[0].text
            for tool, arguments in (("feedback", {"outcomes": {"0" * 32: "acted"}}), ("forget", {"memory_ids": ["0" * 32]})):
                assert (await client.call_tool(tool, {**arguments, "agent_id": asked})).is_error

    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        anyio.run(main)
    assert ChatMemory.query.filter(agent_id=asked).no_track().count() == before + (asked in served)


@given(request_id=st.one_of(st.integers(), st.text()), params=st.dictionaries(st.text(), st.text()),
       cut=st.integers(min_value=0, max_value=2000))
def test_the_id_of_a_request_cut_anywhere_is_its_id_or_none(request_id, params, cut):
    """In the SDKs' member order (jsonrpc, id, method, params), a prefix that holds the whole id and
    what follows it gives the id; a shorter one gives None, never a wrong id (``12`` cut to ``1``)."""
    text = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    id_end = text.index(', "method"')
    prefix = text[:cut]
    assert leading_id(prefix) == (request_id if len(prefix) > id_end else None)
