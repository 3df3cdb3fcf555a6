"""DefaultMemory / HybridMemory: memories of one session are searchable through their neighbours."""

from __future__ import annotations

from datetime import UTC, datetime

from conftest import configured_embeddings
from redmem import ContextAssembler, DefaultMemory, HashingEmbeddings, HybridMemory, Memory, SubconsciousMemory
from redmem.context._neighbours import SearchText, Turn, build_contexts
from redmem.recipes.conversation_append import append_turns


def _contents(result):
    return [r.content for r in result.records]


def test_an_answer_is_found_by_the_words_of_the_question_said_before_it(db):
    memory = Memory(agent_id="ana")
    memory.add("Did you ever go kayaking on the lake?", session="s1")
    memory.add("Yes, twice last summer!", session="s1")
    memory.add("The cat is called Biscuit")
    found = _contents(memory.search("how often did Ana go kayaking?", limit=5))
    assert "Yes, twice last summer!" in found
    assert "The cat is called Biscuit" not in found


def test_neighbours_stop_at_the_session(db):
    memory = Memory(agent_id="ana")
    memory.add("We talked about kayaking on the lake", session="s1")
    memory.add("Lunch is at noon", session="s2")
    assert "Lunch is at noon" not in _contents(memory.search("kayaking", limit=5))


def test_a_memory_without_a_session_is_searched_by_its_own_text_kept_in_step(db):
    stored = DefaultMemory.create(agent_id="ana", content="Bob likes   tea")
    assert stored.context == "Bob likes tea"
    stored.content = "Bob likes espresso"
    stored.save()
    assembler = ContextAssembler(DefaultMemory, max_items=5)
    assert _contents(assembler.assemble("espresso", agent_id="ana")) == ["Bob likes espresso"]
    assert _contents(assembler.assemble("tea", agent_id="ana")) == []


def test_the_search_texts_are_not_shown(db):
    memory = Memory(agent_id="ana")
    memory.add("Did you ever go kayaking on the lake?", session="s1")
    memory.add("Yes, twice last summer!", session="s1")
    shown = memory.context("kayaking").formatted
    assert "> " not in shown and shown.count("kayaking") == 1


def test_hybrid_memory_indexes_the_context_and_embeds_the_memory_text(db):
    with configured_embeddings(HashingEmbeddings(64)):
        turns = [HybridMemory(agent_id="ana", content=text, session="s1")
                 for text in ("Did you ever go kayaking?", "Yes, twice!", "Great.")]
        append_turns(turns)
        expected = build_contexts([Turn("", t.content, "s1") for t in turns])[1]
        stored = HybridMemory.query.get(agent_id="ana", memory_id=turns[1].memory_id)
        assert stored.context == expected and stored.position == 1
        assert HybridMemory.embedding.source == "content"
        assert isinstance(HybridMemory._meta.fields["context"], SearchText)
        result = ContextAssembler(HybridMemory).assemble("kayaking", agent_id="ana")
        assert "Yes, twice!" in _contents(result)


def test_subconscious_memory_writes_the_text_field_not_the_search_text(db):
    sub = SubconsciousMemory(agent_id="ana")
    assert sub.text_field == "content"


def test_a_memory_is_found_by_the_month_it_was_said_in(db):
    memory = Memory(agent_id="ana")
    memory.add("Caroline: I went to the support group.", session="s1", said_at=datetime(2023, 5, 8, tzinfo=UTC))
    memory.add("Caroline: I went to the beach.", session="s2", said_at=datetime(2023, 7, 2, tzinfo=UTC))
    memory.add("Melanie: I went swimming.", said_at=datetime(2023, 7, 9, tzinfo=UTC))
    assert _contents(memory.search("where did Caroline go in May 2023?", limit=1)) == ["Caroline: I went to the support group."]
    alone = DefaultMemory.query.get(agent_id="ana", memory_id=memory.add("Melanie: I went swimming.").memory_id)
    assert alone.context == "[9 July 2023] Melanie: I went swimming."


def test_neighbour_lines_leave_the_speaker_off_and_the_own_line_keeps_it(db):
    turns = [DefaultMemory(agent_id="ana", content=text, session="s1", said_at=datetime(2023, 5, 8, tzinfo=UTC))
             for text in ("Mel: How was the group?", "Caroline: It was great!", "Mel: Glad to hear.")]
    append_turns(turns)
    stored = DefaultMemory.query.get(agent_id="ana", memory_id=turns[1].memory_id)
    assert stored.context == "> How was the group?\n[8 May 2023] Caroline: It was great!\n> Glad to hear."


def test_the_newer_first_clock_is_when_the_memory_was_said_then_when_it_was_written(db):
    fields = DefaultMemory._meta.fields
    assert ContextAssembler(DefaultMemory).time_fields == (fields["said_at"], fields["created_at"])
