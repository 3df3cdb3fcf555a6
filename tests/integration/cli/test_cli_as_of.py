"""``redmem ask --as-of`` and MCP ``recall``'s ``as_of``: a past read of a lifecycle model, refused for any other."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import anyio
import pytest

from conftest import configured_embeddings
from redmem import AutoKeyField, BM25Field, KeyField, Model, StringField
from redmem.cli_commands._as_of import as_of_where, parse_as_of
from redmem.cli_commands._memory import ChatMemory, memory_assembler, said_epoch
from redmem.cli_commands._windows import SUPERSEDED_SEEN, open_windows, read_memories
from redmem.cli_commands.mcp_server import recall_context, store_memory
from redmem.embeddings import HashingEmbeddings
from redmem.lifecycle import LifecycleMixin, history, remember, restore, supersede
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._errors import ValidationError
from redmem.store._keys import KeyKind
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


class AsOfPlainNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()

    class Meta:
        partition_by = "agent_id"


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
    assert as_of_where(AsOfPlainNote, None, "--as-of") is None
    assert as_of_where(ChatMemory, "2024-05-15", "--as-of") == {"as_of": parse_as_of("2024-05-15", "--as-of")}
    with pytest.raises(ValidationError, match="--as-of: AsOfPlainNote has no fact lifecycle"):
        as_of_where(AsOfPlainNote, "2024-05-15", "--as-of")


HOMES = {"sessions": [
    {"session": "may", "date": "2024-05-01", "turns": [{"speaker": "Ana", "text": "I live in Berlin near the river."}]},
    {"session": "june", "date": "2024-06-01", "turns": [{"speaker": "Ana", "text": "I moved to Lisbon near the sea."}]},
]}


def ask_homes(redis_url: str, *options: str) -> str:
    return on_test_server(redis_url, "--embeddings", "hashing", "ask", "Where do I live, near the river or the sea?",
                          "--agent", "ana", "--format", "content", *options)


def test_ask_as_of_reads_the_chat_memory_as_it_was_and_a_turn_superseded_by_hand_stays_reachable(redis_url, db, tmp_path):
    conversation = tmp_path / "homes.json"
    conversation.write_text(json.dumps(HOMES))
    on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(conversation), "--agent", "ana")
    now = ask_homes(redis_url)
    assert "Berlin" in now and "Lisbon" in now  # nothing is superseded unless asked
    may = ask_homes(redis_url, "--as-of", "2024-05-15")
    assert "Berlin" in may and "Lisbon" not in may  # a turn holds from when it was said
    [berlin] = [m for m in ChatMemory.query.filter(agent_id="ana").all() if "Berlin" in m.content]
    [lisbon] = [m for m in ChatMemory.query.filter(agent_id="ana").all() if "Lisbon" in m.content]
    supersede(berlin, lisbon)
    after = ask_homes(redis_url)
    assert "Lisbon" in after and "Berlin" not in after
    assert "Berlin" in ask_homes(redis_url, "--as-of", "2024-05-15")
    every = ask_homes(redis_url, "--as-of", "all")
    assert "Berlin" in every and "Lisbon" in every
    assert [m.content for m in history(lisbon)] == [berlin.content, lisbon.content]


def test_ask_as_of_gives_an_error_line_for_a_bad_time(redis_url, db):
    bad = run_cli("--url", redis_url, "ask", "Where does Alice live?", "--as-of", "last Tuesday")
    assert bad.returncode == 1
    assert "error: --as-of: 'last Tuesday' is not a time: use ISO 8601" in bad.stdout + bad.stderr
    assert "--as-of WHEN" in on_test_server(redis_url, "ask", "--help")


def test_recall_as_of_reads_the_chat_memory_as_it_was_and_checks_the_time(db):
    mcp = pytest.importorskip("mcp")
    from redmem.cli_commands import mcp_server

    async def main() -> None:
        async with mcp.Client(mcp_server.build_server("ana")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "as_of" in tools["recall"].input_schema["properties"]
            for content, said_at in (("I live in Berlin near the river.", "2024-05-01"),
                                     ("I moved to Lisbon near the sea.", "2024-06-01")):
                await client.call_tool("remember", {"content": content, "speaker": "Ana", "said_at": said_at})

            async def recall(**options: str) -> str:
                result = await client.call_tool("recall", {"query": "live river sea", "format": "content", **options})
                assert not result.is_error, result.content
                return str(result.structured_content["context"])

            assert "Berlin" in await recall() and "Lisbon" in await recall()
            may = await recall(as_of="2024-05-15")
            assert "Berlin" in may and "Lisbon" not in may
            bad = await client.call_tool("recall", {"query": "Alice", "as_of": "last Tuesday"})
            assert bad.is_error and "as_of: 'last Tuesday' is not a time" in bad.content[0].text
            assert (await client.call_tool("recall", {"query": "Alice", "as_of": ""})).is_error

    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        anyio.run(main)


def test_memories_stored_before_the_lifecycle_are_read_as_current(db):
    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        memory = ChatMemory(agent_id="ana", memory_id="m1", content="My tea is lapsang souchong.",
                            said_at="2024-05-01T10:00:00")
        memory.save()
        space = memory.db_key.keyspace
        db.hdel(memory.db_key.redis_key, "valid_from")  # as an older version stored it: no window
        for name in ("valid_from", "valid_to"):
            db.zrem(space.key(KeyKind.SORTED, name), "m1")
        assert recall_context("ana", "lapsang souchong tea", 2000, 5, "content").memories  # read: given its window
        assert open_windows("ana") == 0  # no memory superseded
        assert ChatMemory.query.filter(agent_id="ana").count() == 1
        stored = ChatMemory.query.no_track().get(agent_id="ana", memory_id="m1")
        assert stored.valid_from == said_epoch("2024-05-01T10:00:00") and stored.valid_to is None


def test_a_read_checks_windows_only_when_a_memory_is_superseded(db):
    SUPERSEDED_SEEN.clear()
    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        berlin, lisbon = (ChatMemory(agent_id="ana", content=text, said_at=said_at)
                          for text, said_at in (("I live in Berlin.", "2024-05-01T10:00:00"),
                                                ("I moved to Lisbon.", "2024-06-01T10:00:00")))
        ChatMemory.save_many([berlin, lisbon])
        assembler = memory_assembler(10, 2000)

        def read(where):
            return read_memories(assembler, "Berlin", "ana", where)

        assert read(None).trail.where == {"as_of": "all"}  # nothing superseded: the same records, unchecked
        assert read({"as_of": MAY_1}).trail.where == {"as_of": MAY_1}
        supersede(berlin, lisbon)
        current = read(None)
        assert current.trail.where is None and open_windows("ana") == 1
        assert [r.content for r in current.records] == ["I moved to Lisbon."]
        assert read(None).trail.where is None  # seen superseded: the current read is sent at once
        restore(berlin)
        assert sorted(r.content for r in read(None).records) == ["I live in Berlin.", "I moved to Lisbon."]  # both again
        assert read(None).trail.where == {"as_of": "all"}


def recall_trips(sent: list) -> int:
    recall_context("ana", "Berlin", 2000, 10, "structured")  # warm: scripts cached, vectors loaded
    sent.clear()
    assert recall_context("ana", "Berlin", 2000, 10, "structured").memories
    return len(sent)


def recall_once(sent: list) -> int:
    sent.clear()
    assert recall_context("ana", "Berlin", 2000, 10, "structured").memories
    return len(sent)


def test_a_recall_costs_the_assemblers_three_round_trips(db, sent):
    """The windows are counted in the search's round trip, and a recall with something superseded
    costs the same three once the agent was read so (before, every such recall cost four: the
    first read went ``as_of="all"``, stopped, and was asked again with the windows checked). The
    recall right after a supersede or a restore costs four, once."""
    SUPERSEDED_SEEN.clear()
    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        berlin, lisbon = (store_memory("ana", text, said_at=said_at).memory_id
                          for text, said_at in (("I live in Berlin.", "2024-05-01T10:00:00"),
                                                ("I moved from Berlin to Lisbon.", "2024-06-01T10:00:00")))
        assert recall_trips(sent) == 3  # search + window counts, hydrate, post-effects
        older = ChatMemory.query.get(agent_id="ana", memory_id=berlin)
        supersede(older, ChatMemory.query.get(agent_id="ana", memory_id=lisbon))
        assert [recall_once(sent) for _ in range(3)] == [4, 3, 3]  # the first finds it superseded
        restore(ChatMemory.query.get(agent_id="ana", memory_id=berlin))
        assert [recall_once(sent) for _ in range(3)] == [4, 3, 3]  # the first finds nothing superseded
