"""The shipped memory (ChatMemory, behind ``redmem ask/chat/ingest`` and ``redmem mcp``): when a turn
was said, which session it belongs to, and turns linked as the conversation recipe links them."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import all_keys, configured_embeddings
from redmem import ContextAssembler
from redmem.cli_commands._conversation import ChatTurn, parse_when
from redmem.cli_commands._ingest import search_turn, store_turns, upgrade_memories
from redmem.cli_commands._memory import MORNING_PHASE, ChatMemory
from redmem.cli_commands.mcp_server import recall_context, store_memory
from redmem.embeddings import HashingEmbeddings
from redmem.fields import (
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    CyclicDecayField,
    DecayingSortedField,
    EmbeddingField,
    ExistenceFilter,
    TemporalPeriod,
)
from redmem.model import AutoKeyField, FloatField, KeyField, Model, StringField
from redmem.observation import AccessTrackerMixin
from redmem.recipes.conversation import build_contexts, build_passages
from redmem.recipes.conversation_append import session_turns_key
from redmem.store._errors import ValidationError


@pytest.fixture
def chat(db):
    """The test's client, with hashing embeddings (no model download)."""
    with configured_embeddings(HashingEmbeddings(384)):
        yield db


def stored(agent: str, memory_id: str) -> ChatMemory:
    record = ChatMemory.query.no_track().get(agent_id=agent, memory_id=memory_id)
    assert record is not None
    return record


def decay_stamp(record: ChatMemory) -> float:
    """When the record's ``relevance`` decay clock started (its last-updated time)."""
    keys = ChatMemory.relevance.keys_in(record.db_key.keyspace)
    return float(ChatMemory._meta.client.zscore(keys.updated, record.db_key.record_id))


# -- said_at ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("said_at", "expected", "header"), [
    ("2023-05-08T13:56:00+00:00", datetime(2023, 5, 8, 13, 56, tzinfo=UTC), "1:56 pm on 8 May, 2023"),
    ("2023-05-08T15:56:00+02:00", datetime(2023, 5, 8, 13, 56, tzinfo=UTC), "3:56 pm on 8 May, 2023"),
    ("2023-05-08", datetime(2023, 5, 8, 12, 0, tzinfo=UTC), "12:00 pm on 8 May, 2023"),
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC), "1:56 pm on 8 May, 2023"),
])
def test_remember_with_said_at_stores_that_date_and_decay_time(chat, said_at, expected, header):
    memory_id = store_memory("ana", "I went to a support group yesterday.", "Caroline", "s1",
                             said_at=said_at).memory_id
    record = stored("ana", memory_id)
    assert record.date == "2023-05-08" and record.session == "s1"
    assert datetime.fromisoformat(record.said_at) == expected
    assert decay_stamp(record) == pytest.approx(expected.timestamp())
    assert ChatMemory.relevance.score_of(record) < ChatMemory.relevance.score_of(
        stored("ana", store_memory("ana", "Said just now.").memory_id))  # older: decayed further
    assert record.context == f"[{header}] Caroline: I went to a support group yesterday."  # said when, in words


def test_remember_without_said_at_is_dated_now(chat):
    before = datetime.now(UTC).timestamp()
    record = stored("ana", store_memory("ana", "Now.", session="s").memory_id)
    assert before - 1 <= decay_stamp(record) <= datetime.now(UTC).timestamp() + 1
    assert record.date == datetime.now(UTC).date().isoformat()


@pytest.mark.parametrize("said_at", ["yesterday", "2023-13-40", "8 May 2023", "", "1:56 pm on 31 February, 2023"])
def test_an_unreadable_said_at_is_a_validation_error_and_writes_nothing(chat, said_at):
    with pytest.raises(ValidationError, match="is not a time: use ISO 8601"):
        store_memory("ana", "Something worth keeping.", "ana", "s1", said_at=said_at)
    assert all_keys(chat) == set()


# -- linked turns -------------------------------------------------------------------------------
def remember_all(agent: str, session: str, texts: list[str], said_at: str = "2023-05-08") -> list[str]:
    return [store_memory(agent, text, ("Ana", "Bo")[i % 2], session, said_at=said_at).memory_id
            for i, text in enumerate(texts)]


def test_a_turn_is_found_by_the_words_of_its_neighbour_in_its_own_session(chat):
    [_, answer] = remember_all("ana", "s1", ["Did you ever go scuba diving near Belize?", "Yes, twice last year!"])
    [_, other] = remember_all("ana", "s2", ["How was the concert on Friday?", "Yes, twice last year!"])
    found = ChatMemory.query.filter(agent_id="ana").no_track().keyword_search("scuba diving Belize", limit=10)
    ids = [hit.memory_id for hit in found]
    assert answer in ids and other not in ids  # the neighbour's words, of its own session only
    lexical = ContextAssembler(ChatMemory, retrieval_mode="lexical", propagation_depth=0, max_items=5)
    recalled = [r.memory_id for r in lexical.assemble("scuba diving Belize", agent_id="ana").records]
    assert answer in recalled and other not in recalled
    assert answer in [m.memory_id for m in recall_context("ana", "scuba diving Belize", 2000, 2, "structured").memories]


def test_the_turn_before_gets_the_new_turn_as_the_turn_after_it(chat):
    first, second, third = remember_all("ana", "s1", ["Where do you live?", "In Lisbon.", "By the river."])
    assert stored("ana", first).context.splitlines()[1:] == ["> In Lisbon.", ">> By the river."]
    assert stored("ana", first).passage.splitlines()[1:] == ["In Lisbon."]
    assert stored("ana", second).passage.splitlines() == [
        "Where do you live?", "[12:00 pm on 8 May, 2023] Bo: In Lisbon.", "By the river."]
    assert [stored("ana", i).position for i in (first, second, third)] == [0, 1, 2]
    assert ChatMemory.associations.get_linked(stored("ana", second)) == []  # the context links them, not the graph


def test_turns_without_a_session_stand_alone(chat):
    a, b = (store_memory("ana", text).memory_id for text in ("Tea at four.", "Coffee at nine."))
    assert stored("ana", a).context.endswith("Tea at four.") and "Coffee" not in stored("ana", a).context
    assert stored("ana", b).position is None


turn_text = st.text(st.sampled_from("ab >\n.?"), min_size=1, max_size=12).map(str.strip).filter(bool)
conversation = st.lists(st.lists(st.tuples(st.sampled_from(["Ana", "Bo", ""]), turn_text), min_size=1, max_size=7),
                        min_size=1, max_size=3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation)
def test_remembering_turns_one_at_a_time_links_them_as_ingesting_the_conversation_at_once(chat, sessions):
    one, whole = f"one-{uuid.uuid4().hex}", f"whole-{uuid.uuid4().hex}"
    said = "2023-05-08T13:56:00+00:00"
    turns = [ChatTurn(text, parse_when(said, "t"), f"s{s}", speaker or None)
             for s, session in enumerate(sessions) for speaker, text in session]
    remembered = [store_memory(one, t.text, t.speaker, t.session, said_at=said).memory_id for t in turns]
    singly = [stored(one, memory_id) for memory_id in remembered]
    at_once = [stored(whole, m.memory_id) for m in store_turns(turns, whole)]
    recipe = [search_turn(m) for m in at_once]  # the conversation recipe's texts of the whole conversation
    assert [m.context for m in singly] == [m.context for m in at_once] == build_contexts(recipe)
    assert [m.passage for m in singly] == [m.passage for m in at_once] == build_passages(recipe)
    assert [m.position for m in singly] == [m.position for m in at_once]


def test_concurrent_remembers_in_one_session_each_get_one_turn_before_and_after(chat):
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(8):
                store_memory("ana", f"{name} says {i}", name, "busy")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("Ana", "Bo", "Cy")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    client = ChatMemory._meta.client
    space = ChatMemory._meta.keyspace(("ana",))
    order = [m.decode() for m in client.zrange(session_turns_key(space, "busy"), 0, -1)]
    records = [stored("ana", memory_id) for memory_id in order]
    assert [r.position for r in records] == list(range(24))
    expected = build_contexts([search_turn(r) for r in records])
    assert [r.context for r in records] == expected


# -- ingest ---------------------------------------------------------------------------------------
def test_store_turns_of_one_session_after_its_remembered_turns_continue_it(chat):
    [first] = remember_all("ana", "s1", ["Do you like hiking?"])
    [second] = store_turns([ChatTurn("Love it, mostly in the Alps.", parse_when("2023-05-08", "t"), "s1", "Bo")], "ana")
    assert stored("ana", first).context.splitlines()[1] == "> Love it, mostly in the Alps."
    assert stored("ana", second.memory_id).position == 1


# -- records of older versions ------------------------------------------------------------------
def old_chat_memory() -> type[Model]:
    """ChatMemory as versions before said_at/context/passage declared it (same name: same keys)."""

    class ChatMemory(AccessTrackerMixin, Model):
        class Meta:
            name = "ChatMemory"  # the library's key space, on purpose

        memory_id = AutoKeyField()
        agent_id = KeyField()
        session = StringField()
        date = StringField()
        speaker = StringField()
        content = StringField()
        importance = FloatField(default=1.0)
        routine = FloatField(default=0.0)
        relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
        rhythm = CyclicDecayField(
            base_score_field="routine", cycles=[(TemporalPeriod.DAILY, 0.2, MORNING_PHASE)], partition_by="agent_id"
        )
        confidence = ConfidenceField(partition_by="agent_id")
        associations = CoOccurrenceField(partition_by="agent_id")
        terms_seen = ExistenceFilter(fingerprint_fn=lambda memory: memory.content, partition_by="agent_id")
        content_bm25 = BM25Field(source="content", partition_by="agent_id")
        embedding = EmbeddingField(source="content", partition_by="agent_id")

    return ChatMemory


def test_records_of_older_versions_load_and_are_found_by_their_content(chat):
    old = old_chat_memory()
    record = old(agent_id="ana", session="s0", date="2026-01-10", speaker="Ana",
                 content="My favourite tea is smoked lapsang souchong.")
    record.save()
    loaded = stored("ana", record.memory_id)
    assert loaded.content == record.content and loaded.context is None and loaded.said_at is None
    recalled = recall_context("ana", "favourite tea smoked lapsang souchong", 2000, 5, "structured")
    assert [m.memory_id for m in recalled.memories] == [record.memory_id]
    [new] = remember_all("ana", "s0", ["And I take it without milk."])  # the old turn is not in the session list
    assert stored("ana", new).context.startswith("[12:00 pm on 8 May, 2023] Ana: And I take it")
    keyword = ChatMemory.query.filter(agent_id="ana").no_track()
    assert record.memory_id not in [hit.memory_id for hit in keyword.keyword_search("lapsang souchong")]
    assert upgrade_memories("ana") == 1 and upgrade_memories("ana") == 0
    assert [hit.memory_id for hit in keyword.keyword_search("lapsang souchong")] == [record.memory_id]
    assert stored("ana", record.memory_id).context == "Ana: My favourite tea is smoked lapsang souchong."
