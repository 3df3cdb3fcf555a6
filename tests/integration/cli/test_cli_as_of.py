"""``redmem ask --as-of`` and MCP ``recall``'s ``as_of``: a past read of a lifecycle model, refused for any other."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import pytest

from conftest import configured_embeddings
from redmem import AutoKeyField, BM25Field, KeyField, Model, StringField
from redmem.cli_commands.as_of import as_of_where, parse_as_of
from redmem.cli_commands.memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.lifecycle import LifecycleMixin, remember
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store.errors import ValidationError
from test_cli import on_test_server, run_cli

MAY_1, JUNE_1 = 1714521600.0, 1717200000.0


class AsOfNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content")

    class Meta:
        partition_by = "agent_id"


def test_a_time_is_iso_8601_epoch_seconds_or_all():
    assert parse_as_of("2024-05-01T00:00:00+00:00", "--as-of") == MAY_1
    assert parse_as_of("2024-05-01", "--as-of") == datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp()
    assert parse_as_of(" 1714521600 ", "--as-of") == MAY_1
    assert parse_as_of("all", "--as-of") == "all"
    for bad in ("last Tuesday", "nan", "inf", ""):
        with pytest.raises(ValidationError, match="is not a time: use ISO 8601"):
            parse_as_of(bad, "--as-of")


def test_as_of_reads_a_lifecycle_model_as_it_was_and_refuses_any_other(db):
    remember(AsOfNote(agent_id="a", content="Alice lives in Berlin.", subject="alice", slot="home", valid_from=MAY_1))
    remember(AsOfNote(agent_id="a", content="Alice lives in Lisbon.", subject="alice", slot="home", valid_from=JUNE_1))
    assembler = ContextAssembler(AsOfNote, max_items=3)

    def read(as_of: str | None) -> list[str]:
        where = as_of_where(AsOfNote, as_of, "as_of")
        return sorted(r.content for r in assembler.assemble("Alice lives", agent_id="a", where=where).records)

    assert read(None) == ["Alice lives in Lisbon."]
    assert read("2024-05-15") == ["Alice lives in Berlin."]
    assert read(str(JUNE_1)) == ["Alice lives in Lisbon."]
    assert read("all") == ["Alice lives in Berlin.", "Alice lives in Lisbon."]
    assert as_of_where(ChatMemory, None, "--as-of") is None
    with pytest.raises(ValidationError, match="--as-of: ChatMemory has no fact lifecycle"):
        as_of_where(ChatMemory, "2024-05-15", "--as-of")


def test_ask_as_of_gives_an_error_line_for_a_bad_time_or_a_model_without_the_lifecycle(redis_url, db):
    bad = run_cli("--url", redis_url, "ask", "Where does Alice live?", "--as-of", "last Tuesday")
    assert bad.returncode == 1
    assert "error: --as-of: 'last Tuesday' is not a time: use ISO 8601" in bad.stdout + bad.stderr
    plain = run_cli("--url", redis_url, "ask", "Where does Alice live?", "--as-of", "2024-05-15")
    assert plain.returncode == 1
    assert "error: --as-of: ChatMemory has no fact lifecycle" in plain.stdout + plain.stderr
    assert "--as-of WHEN" in on_test_server(redis_url, "ask", "--help")


def test_recall_as_of_is_refused_for_the_chat_memory_and_checked_as_a_time(db):
    mcp = pytest.importorskip("mcp")
    from redmem.cli_commands import mcp_server

    async def main() -> None:
        async with mcp.Client(mcp_server.build_server("ana")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "as_of" in tools["recall"].input_schema["properties"]
            for as_of, message in (("last Tuesday", "as_of: 'last Tuesday' is not a time"),
                                   ("2024-05-15", "as_of: ChatMemory has no fact lifecycle")):
                result = await client.call_tool("recall", {"query": "Alice", "as_of": as_of})
                assert result.is_error and message in result.content[0].text
            assert (await client.call_tool("recall", {"query": "Alice", "as_of": ""})).is_error
            assert not (await client.call_tool("recall", {"query": "Alice"})).is_error

    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        anyio.run(main)
