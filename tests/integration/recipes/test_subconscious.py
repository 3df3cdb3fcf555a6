"""SubconsciousMemory, DefaultMemory and the extractors: injection, extraction, entity links,
outcomes, the LLM extractor through the openai SDK, tenant isolation."""

from __future__ import annotations

import copy
import json

import openai
import pytest

import redmem
from openai_server import OpenAICompatibleServer
from redmem import AutoKeyField, Entity, HashingEmbeddings, Model, ModelException, StringField, ValidationError
from redmem.recipes.default_memory import DefaultMemory, HybridMemory
from redmem.recipes.extractors import (
    EXTRACTION_PROMPT,
    ExtractedMemory,
    ExtractionError,
    HeuristicExtractor,
    LLMExtractor,
    find_entities,
    is_fact,
    parse_extraction,
    split_sentences,
)
from redmem.recipes.subconscious import SubconsciousMemory, last_user_text, with_context

REPLY = """Hi there! Thanks for asking.
Alice moved to Paris in 2021. Our team deploys with GitHub Actions every Friday.
Would you like more detail? I can help with that.
- The staging cluster runs in eu-west-1.
```python
deploy(force=True)  # Code is not a fact.
```
Use the blue button. Sure, let me know!"""
FACTS = [
    "Alice moved to Paris in 2021.",
    "Our team deploys with GitHub Actions every Friday.",
    "The staging cluster runs in eu-west-1.",
]
SYSTEM = {"role": "system", "content": "You are helpful."}


# -- the heuristic extractor (no Redis) ------------------------------------------------------------
def test_sentences_skip_code_and_strip_list_markers():
    assert split_sentences("- **One** thing. Two things!\n```\ncode. More\n```\n3) Last one") == [
        "One thing.", "Two things!", "Last one",
    ]


@pytest.mark.parametrize("sentence, fact", [
    ("Alice moved to Paris in 2021.", True),
    ("We use Kubernetes on AWS.", True),
    ("The report is due on the 5th.", True),
    ("My sister has two cats.", True),
    ("Is the report due on the 5th?", False),  # a question
    ("Thanks, the report is due.", False),  # opens with thanks
    ("I can help with that.", False),  # an offer
    ("Use the blue button.", False),  # no subject: an instruction
    ("Paris is.", False),  # under 3 words
    ("blue green red yellow", False),  # no subject, no verb
])
def test_facts_have_a_subject_and_a_verb(sentence, fact):
    assert is_fact(sentence) is fact


def test_entities_are_capitalised_runs():
    assert find_entities("Our team deploys with GitHub Actions every Friday.") == ("GitHub Actions", "Friday")
    assert find_entities("Alice met alice and ALICE in Paris.") == ("Alice", "Paris")
    assert find_entities("I told Bob.") == ("Bob",)
    assert find_entities("the cat sat.") == ()


def test_heuristic_extractor_keeps_the_facts_of_a_reply():
    memories = HeuristicExtractor()(REPLY)
    assert [m.content for m in memories] == FACTS
    assert memories[0].entities == ("Alice", "Paris")


def test_parse_extraction_accepts_objects_and_strings_and_rejects_the_rest():
    answer = json.dumps({"memories": [{"content": " Bob  likes tea. ", "entities": ["Bob", " "]}, "Carol lives in Oslo.", {"content": ""}]})
    assert parse_extraction(answer) == [
        ExtractedMemory("Bob likes tea.", ("Bob",)), ExtractedMemory("Carol lives in Oslo.", ("Carol", "Oslo")),
    ]
    for bad in ["not json", "{}", '{"memories": "x"}', '{"memories": [{"content": 3}]}', None]:
        with pytest.raises(ExtractionError):
            parse_extraction(bad)


# -- message plumbing (no Redis) ---------------------------------------------------------------------
def test_with_context_appends_to_the_system_message_or_creates_one():
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    before = copy.deepcopy(messages)
    assert with_context(messages, "- a fact")[0] == {"role": "system", "content": "You are helpful.\n\nRelevant context:\n- a fact"}
    assert messages == before
    assert with_context(messages[1:], "- a fact")[0] == {"role": "system", "content": "Relevant context:\n- a fact"}
    assert with_context(messages, "") == messages
    parts = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}]
    assert with_context(parts, "x")[0]["content"][-1] == {"type": "text", "text": "Relevant context:\nx"}
    assert parts[0]["content"] == [{"type": "text", "text": "Be brief."}]


def test_last_user_text_reads_text_parts():
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image_url"}]}]
    assert last_user_text(messages) == "second"
    assert last_user_text([SYSTEM]) == ""


# -- the recipe on Redis -----------------------------------------------------------------------------
def test_extract_memories_stores_each_fact_once_and_links_entities(any_db):
    memory = SubconsciousMemory("agent-1")
    stored = memory.extract_memories(REPLY)
    assert sorted(m.content for m in stored) == sorted(FACTS)
    assert memory.extract_memories("Alice moved to Paris in 2021. Bob plays chess.")[0].content == "Bob plays chess."
    assert DefaultMemory.query.filter(agent_id="agent-1").count() == 4
    graph = DefaultMemory.associations.graph(agent_id="agent-1")
    alice = next(m for m in stored if m.content.startswith("Alice"))
    assert graph.get_linked(Entity("alice")) == [(Entity("paris"), 0.1), (alice.db_key, 0.1)]
    assert graph.get_linked(alice) == [(Entity("alice"), 0.1), (Entity("paris"), 0.1)]
    assert memory.extract_memories("What now? Thanks!") == []


def test_inject_context_uses_the_last_user_message_and_copies(any_db):
    memory = SubconsciousMemory("agent-1")
    memory.extract_memories(REPLY + "\nThe coffee machine is on the third floor.")
    messages = [SYSTEM, {"role": "user", "content": "Where is the coffee machine?"},
                {"role": "assistant", "content": "Third floor."}, {"role": "user", "content": "When do we deploy?"}]
    before = copy.deepcopy(messages)
    injected, result = memory.inject_context(messages)
    assert messages == before
    assert injected[0]["content"] == (
        "You are helpful.\n\nRelevant context:\n- Our team deploys with GitHub Actions every Friday."
    )
    assert injected[1:] == messages[1:]
    assert [r.content for r in result.records] == ["Our team deploys with GitHub Actions every Friday."]
    assert result.metadata["retrieval_mode"] == "lexical"


def test_inject_context_creates_a_system_message_and_adds_nothing_without_memories(any_db):
    memory = SubconsciousMemory("agent-1", max_items=1, output_format="natural")
    memory.extract_memories(REPLY)
    injected, result = memory.inject_context([{"role": "user", "content": "Where does Alice live, Paris?"}])
    assert injected[0]["role"] == "system" and len(injected) == 2
    assert injected[0]["content"].startswith(
        "Relevant context:\n1. content: Alice moved to Paris in 2021., importance: 1.0, created_at: "
    )
    assert len(result.records) == 1
    nothing, empty = memory.inject_context([{"role": "user", "content": "quantum chromodynamics"}])
    assert nothing == [{"role": "user", "content": "quantum chromodynamics"}] and empty.records == []


def test_report_outcomes_moves_confidence_and_access(any_db):
    memory = SubconsciousMemory("agent-1")
    memory.extract_memories("Alice moved to Paris in 2021. Alice speaks French.")
    _, result = memory.inject_context([{"role": "user", "content": "Tell me about Alice"}])
    assert len(result.records) == 2
    with pytest.raises(ValueError):
        memory.report_outcomes(result, "adored")
    first, second = result.records
    applied = memory.report_outcomes(result, {first.db_key.redis_key: "acted", second.db_key.redis_key: "contradicted"})
    assert set(applied.values()) == {"acted", "contradicted"}
    assert DefaultMemory.confidence.get_confidence(first, "confidence") == pytest.approx(0.7)
    assert DefaultMemory.confidence.get_confidence(second, "confidence") == pytest.approx(0.3)
    assert (first.access_count, second.access_count) == (1, 0)
    _, again = memory.inject_context([{"role": "user", "content": "Tell me about Alice"}])
    assert memory.report_outcomes(again, "used") == {r.db_key.redis_key: "used" for r in again.records}


def test_agents_never_see_each_other(any_db):
    SubconsciousMemory("alice").extract_memories(REPLY)
    bob = SubconsciousMemory("bob")
    injected, result = bob.inject_context([{"role": "user", "content": "When do we deploy with GitHub Actions?"}])
    assert result.records == [] and injected == [{"role": "user", "content": "When do we deploy with GitHub Actions?"}]
    assert DefaultMemory.associations.graph(agent_id="bob").get_linked(Entity("alice")) == []


def test_custom_extractor_may_return_strings(any_db):
    memory = SubconsciousMemory("agent-1", extractor=lambda text: [text.upper(), text.upper()])
    stored = memory.extract_memories("carol lives in oslo")
    assert [m.content for m in stored] == ["CAROL LIVES IN OSLO"]
    with pytest.raises(ValidationError):
        SubconsciousMemory("agent-1", extractor=lambda text: [42]).extract_memories("x")


def test_the_agent_and_a_partitioned_model_are_required(any_db):
    class Unpartitioned(Model):
        note_id = AutoKeyField()
        content = StringField()

    with pytest.raises(ValidationError):
        SubconsciousMemory("")
    with pytest.raises(ModelException):
        SubconsciousMemory("agent-1", model=Unpartitioned)


def test_hybrid_memory_retrieves_with_embeddings(any_db):
    previous = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=HashingEmbeddings(64))
    try:
        memory = SubconsciousMemory("agent-1", model=HybridMemory)
        assert memory.assembler.mode == "hybrid"
        memory.extract_memories(REPLY)
        _, result = memory.inject_context([{"role": "user", "content": "when do we deploy"}])
        assert result.metadata["retrieval_mode"] == "hybrid"
        assert result.records[0].content == "Our team deploys with GitHub Actions every Friday."
        assert DefaultMemory.query.filter(agent_id="agent-1").count() == 0  # its own records
    finally:
        redmem.configure(embedding_provider=previous)


# -- the LLM extractor through the openai SDK ----------------------------------------------------------
def extraction_reply(messages):
    return json.dumps({"memories": [
        {"content": "Dana manages the Berlin office.", "entities": ["Dana", "Berlin"]},
        {"content": "The Berlin office opens at 8.", "entities": ["Berlin"]},
    ]})


def test_llm_extractor_asks_for_json_and_its_memories_are_linked(any_db):
    with OpenAICompatibleServer(chat_reply=extraction_reply) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        memory = SubconsciousMemory("agent-1", extractor=LLMExtractor(client, model="extractor"))
        stored = memory.extract_memories("Dana runs Berlin; it opens at 8.")
        (request,) = server.chat_requests()
    assert request["model"] == "extractor" and request["response_format"] == {"type": "json_object"}
    assert request["messages"] == [{"role": "system", "content": EXTRACTION_PROMPT},
                                   {"role": "user", "content": "Dana runs Berlin; it opens at 8."}]
    assert [m.content for m in stored] == ["Dana manages the Berlin office.", "The Berlin office opens at 8."]
    graph = DefaultMemory.associations.graph(agent_id="agent-1")
    linked = graph.get_linked(Entity("berlin"))
    assert (Entity("dana"), 0.1) in linked and {stored[0].db_key, stored[1].db_key} <= {n for n, _ in linked}


def test_llm_extractor_errors(any_db, monkeypatch):
    with OpenAICompatibleServer(chat_reply=lambda messages: "not json") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(ExtractionError, match="not json"):
            LLMExtractor(client)("text")
        with pytest.raises(ExtractionError, match="extraction model failed"):
            LLMExtractor(client, model=server.failing_model)("text")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "from-env")
        with pytest.raises(ExtractionError):
            LLMExtractor()("text")
        assert server.requests[-1][2]["authorization"] == "Bearer from-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(redmem.ConfigurationError):
        LLMExtractor()
    assert DefaultMemory.query.filter(agent_id="agent-1").count() == 0
