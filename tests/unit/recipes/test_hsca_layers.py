"""HSCA layers 1-3: deterministic, in [0, 1], monotone where the design says so, never crashing."""

from __future__ import annotations

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.openai_server import OpenAICompatibleServer

from redmem.recipes.hsca import HSCAEngine, NuanceFlag, NuanceModel
from redmem.recipes.hsca._coherence import coherence_score
from redmem.recipes.hsca._domains import classify_domains
from redmem.recipes.hsca._nuance import deterministic_flags
from redmem.recipes.hsca._relational import (
    SHORT_CHUNK_SCORE,
    TIE_SATURATION,
    TIED_WORDS,
    conversation_tie,
    conversation_weight,
    relational_weight,
)
from redmem.recipes.hsca._scoring import score_turn
from redmem.recipes.hsca._text import MAX_TURN_CHARS, parse_turn
from redmem.store._errors import ArgumentTypeError, ValidationError

MESH = ("Redis stores data in memory. Memory access makes Redis fast. "
        "Fast data access is why teams pick Redis.")
STUFFED = ("Kubernetes deployment pipelines. Quantum blockchain synergy platforms. "
           "AI cloud latency optimisation tools. Serverless microservice observability dashboards.")


def layer1(text: str, window: int = 5, context: tuple[str, ...] = ()) -> float:
    return relational_weight(parse_turn(text), window, [parse_turn(c) for c in context]).score


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400), st.integers(1, 9))
def test_every_layer_is_deterministic_and_bounded(text, window):
    first, second = score_turn(text, window).chunk, score_turn(text, window).chunk
    for chunk in (first, second):
        assert 0.0 <= chunk.layer1_score <= 1.0 and 0.0 <= chunk.coherence_score <= 1.0
        assert chunk.domain_tags and chunk.parent_id is None
    assert (first.layer1_score, first.coherence_score, first.domain_tags, first.nuance_flags) == (
        second.layer1_score, second.coherence_score, second.domain_tags, second.nuance_flags)


def test_a_tight_mesh_scores_high_and_stuffed_keywords_score_zero():
    assert layer1(MESH) > 0.4
    assert layer1(STUFFED) == 0.0


def test_layer1_grows_as_the_vocabulary_meshes():
    loose = "Redis stores data. Teams pick tools carefully. Latency matters for users."
    tighter = loose + " Redis data tools matter. Teams pick Redis data."
    tightest = tighter + " Redis tools store data for teams."
    assert layer1(loose) < layer1(tighter) < layer1(tightest)


def test_sentences_aggregate_to_paragraphs_by_their_mean():
    relational = relational_weight(parse_turn(MESH + "\n\n" + STUFFED))
    assert len(relational.paragraph_scores) == 2
    assert relational.paragraph_scores[1] == 0.0
    assert relational.score == pytest.approx(sum(relational.paragraph_scores) / 2)
    assert relational.paragraph_scores[0] == pytest.approx(sum(relational.sentence_scores[:3]) / 3)


def test_short_chunks_are_flat_without_context_and_scored_against_it_with_context():
    alone = relational_weight(parse_turn("Redis keeps data in memory."))
    assert alone.short_chunk and alone.score == SHORT_CHUNK_SCORE
    assert layer1("Redis keeps data in memory.", context=(MESH,)) > SHORT_CHUNK_SCORE
    assert layer1("Bananas are yellow.", context=(MESH,)) == 0.0
    assert not relational_weight(parse_turn(MESH)).short_chunk
    chunk = score_turn("Redis keeps data in memory.", 5).chunk
    assert NuanceFlag.SHORT_CHUNK in chunk.nuance_flags


LONG = ("Redis stores data in memory, and memory access makes Redis fast for every team. "
        "Fast data access is why teams pick Redis over a disk store for their caches. "
        "Teams that pick Redis keep hot data in memory and cold data on disk.")
GARDEN = ("Tomatoes need full sun and rich soil in the garden. "
          "Water tomatoes deeply at the root so the soil stays moist. "
          "Pinch the side shoots so the tomatoes put their strength into fruit.")


def test_a_long_turn_in_a_conversation_weighs_by_how_much_the_conversation_takes_it_up():
    """Layer 1 of a long turn in a conversation: its own relational weight times its tie to the
    turns before it, min(1, share of its terms they say / TIE_SATURATION); alone, unchanged."""
    alone = layer1(LONG)
    assert alone > 0.2
    assert layer1(LONG, context=("Bananas are yellow and grow in bunches.",)) == 0.0
    assert layer1(LONG, context=(MESH,)) == pytest.approx(alone * conversation_tie(parse_turn(LONG), [parse_turn(MESH)]))
    assert layer1(LONG, context=(MESH, "Why do teams keep hot data in memory, and cold data on disk?")) == pytest.approx(alone)
    aside = layer1(GARDEN, context=("Redis keeps data in memory.", "Redis is fast."))
    assert aside < layer1("Memory access makes Redis fast.", context=("Redis keeps data in memory.", GARDEN))
    assert 0 < TIE_SATURATION <= 1


RUN_ON = ("Tomatoes need full sun, rich soil, deep water at the root and a warm wall in the garden, so keep "
          "the soil moist, feed it with compost every spring and pinch the side shoots, as Redis keeps data in memory. "
          "Gardeners who grow tomatoes every summer mulch the beds with straw, stake the tall stems, "
          "and pick the fruit when it turns deep red and soft to the touch.")


def test_a_turn_short_only_by_its_sentences_is_weighed_by_its_tie_from_tied_words_on():
    """Two run-on sentences of TIED_WORDS words or more pasted into a thread keep their score
    against the context, weighed by their tie as a long turn is: taking up two of the thread's
    words no longer makes them weigh as a reply does. Under TIED_WORDS words, a reply as before."""
    turn, context = parse_turn(RUN_ON), [parse_turn(MESH)]
    assert len(turn.sentences) == 2 and len(turn.words) >= TIED_WORDS
    found = relational_weight(turn, 5, context)
    assert found.short_chunk and found.uptake is not None and 0 < found.uptake < TIE_SATURATION
    assert found.structure > 0
    assert found.score == pytest.approx(found.structure * conversation_tie(turn, context))
    assert found.score < found.structure
    reply = relational_weight(parse_turn("Redis keeps data in memory, and memory access makes it fast."), 5, context)
    assert reply.short_chunk and reply.uptake is None and reply.score == reply.structure > 0


def test_the_short_prior_keeps_a_reply_that_takes_up_no_words_above_zero():
    """A short turn in context keeps ``short_prior`` of the flat short-chunk score whatever its
    conversation says; at 0 (the default) a reply bringing only new words scores 0, as before."""
    reply, context = parse_turn("Bananas are yellow."), [parse_turn(MESH)]
    assert relational_weight(reply, 5, context).score == 0.0
    assert relational_weight(reply, 5, context, short_prior=0.5).score == pytest.approx(0.5 * SHORT_CHUNK_SCORE)
    taken_up = parse_turn("Redis keeps data in memory.")
    plain = relational_weight(taken_up, 5, context).score
    assert relational_weight(taken_up, 5, context, short_prior=0.5).score == pytest.approx(
        0.5 * plain + 0.5 * SHORT_CHUNK_SCORE)
    assert relational_weight(taken_up, 5, short_prior=0.5).score == SHORT_CHUNK_SCORE  # alone: flat either way
    assert relational_weight(parse_turn(LONG), 5, context, short_prior=0.5).score == relational_weight(
        parse_turn(LONG), 5, context).score  # a long turn has no prior


def test_a_higher_tie_saturation_asks_more_of_the_conversation():
    context = [parse_turn(MESH)]
    share = conversation_tie(parse_turn(GARDEN + " Redis data."), context, 1.0)
    assert 0 < share < TIE_SATURATION
    loose = relational_weight(parse_turn(GARDEN + " Redis data."), 5, context, tie_saturation=0.1).score
    default = relational_weight(parse_turn(GARDEN + " Redis data."), 5, context).score
    strict = relational_weight(parse_turn(GARDEN + " Redis data."), 5, context, tie_saturation=1.0).score
    assert 0 < strict < default < loose
    with pytest.raises(ValidationError):
        HSCAEngine(tie_saturation=0.0)
    with pytest.raises(ValidationError):
        HSCAEngine(short_prior=1.5)
    engine = HSCAEngine(domain_model=None, tie_saturation=1.0, short_prior=0.5)
    engine.ingest_turn(MESH)
    assert engine.ingest_turn("Bananas are yellow.").layer1_score == pytest.approx(0.5 * SHORT_CHUNK_SCORE)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.lists(st.text(max_size=120), max_size=3),
       st.sampled_from([0.1, 0.25, 0.6, 1.0]), st.sampled_from([0.0, 0.2, 0.5]))
def test_conversation_weight_recombines_a_score_as_scoring_under_those_terms_gives_it(text, context, tie, prior):
    """The tuner's recombination (one relational weight, many conversation terms) is exact."""
    turn, past = parse_turn(text), [parse_turn(c) for c in context]
    once = relational_weight(turn, 5, past)
    again = relational_weight(turn, 5, past, tie_saturation=tie, short_prior=prior)
    assert conversation_weight(once, tie, prior) == pytest.approx(again.score)
    assert 0.0 <= again.score <= 1.0


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.lists(st.text(max_size=200), max_size=3))
def test_the_conversation_tie_is_bounded(text, context):
    tie = conversation_tie(parse_turn(text), [parse_turn(c) for c in context])
    assert 0.0 <= tie <= 1.0


def test_the_window_bounds_which_words_co_occur():
    text = "alpha kiwi mango lemon beta. alpha plum pear fig beta. gamma alpha beta."
    assert layer1(text, window=2) < layer1(text, window=6)


def test_coherence_orders_gibberish_fragments_and_sentences():
    gibberish = coherence_score(parse_turn("asdf qwer zxcv uiop hjkl bnm"))
    fragment = coherence_score(parse_turn("the cat"))
    sentence = coherence_score(parse_turn("The tenant shall pay the rent on the first day of each month."))
    rich = coherence_score(parse_turn(
        "If freedom is the capacity to choose, then a mind that cannot doubt is not free, because doubt is "
        "what opens the space in which a choice can be made."))
    assert gibberish < 0.1 < fragment < 0.5 < sentence
    assert rich > 0.8


@pytest.mark.parametrize(("text", "expected"), [
    ("The court ruled that the contract clause breached the tenant's statutory rights.", ["legal"]),
    ("The patient's fever and chest pain led the doctor to a diagnosis of infection.", ["medical"]),
    ("Energy equals mass times the speed of light squared, so a small mass holds great energy.", ["physics"]),
    ("Hey, thanks so much! I think we can meet tomorrow.", ["conversational"]),
    ("", ["unclassified"]),
    ("asdf qwer zxcv", ["unclassified"]),
])
def test_domains(text, expected):
    assert classify_domains(parse_turn(text)) == expected


def test_two_unrelated_domains_are_cross_domain_and_related_ones_are_not():
    unrelated = classify_domains(parse_turn(
        "The court ruled on the contract. The patient's fever needed a doctor and treatment in hospital."))
    assert {"legal", "medical", "cross_domain"} <= set(unrelated) and unrelated[-1] == "cross_domain"
    related = classify_domains(parse_turn(
        "The equation for the force on the particle uses the derivative of its momentum and the integral of energy."))
    assert {"physics", "mathematics"} <= set(related) and "cross_domain" not in related


@pytest.mark.parametrize(("text", "flag"), [
    ("This may work in some cases.", "hedged"),
    ("Redis always keeps every key in memory.", "absolute"),
    ("Isn't it obvious that the deploy failed?", "rhetorical_question"),
    ("Who cares about the old release?", "rhetorical_question"),
    ("Run the migration first. Then restart the server.", "instructional"),
    ("You should back up the database.", "instructional"),
    ("I love this wonderful release!", "emotional_tone_positive"),
    ("This is a terrible, awful failure.", "emotional_tone_negative"),
    ("The server is in the rack.", "emotional_tone_neutral"),
    ("We need the fix immediately, it is urgent.", "emotional_tone_urgent"),
])
def test_deterministic_flags(text, flag):
    assert flag in deterministic_flags(parse_turn(text))


def test_genuine_questions_are_not_rhetorical_and_questions_are_not_instructions():
    flags = deterministic_flags(parse_turn("What time does the deploy run? Can you check the logs?"))
    assert "rhetorical_question" not in flags and "instructional" not in flags


def test_model_flags_are_omitted_without_a_model():
    flags = score_turn("Time is a thief, like a river carrying us away.", 5).chunk.nuance_flags
    assert not {"metaphor", "metaphor_model", "analogy", "analogy_model", "sarcasm", "sarcasm_model"} & set(flags)


def test_model_flags_come_back_with_the_model_suffix_and_failures_omit_them():
    answer = '{"flags": ["metaphor", "analogy", "poetry"]}'
    with OpenAICompatibleServer(chat_reply=lambda messages: answer) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        model = NuanceModel(client, model="labeller")
        flags = HSCAEngine(nuance_model=model).score_layers("Time is a thief, like a river.").nuance_flags
        assert flags[-2:] == ["metaphor_model", "analogy_model"]
        assert server.chat_requests()[0]["response_format"] == {"type": "json_object"}
        failing = NuanceModel(client, model=server.failing_model)
        flags = HSCAEngine(nuance_model=failing).score_layers("Time is a thief, like a river.").nuance_flags
        assert not [f for f in flags if f.endswith("_model")] and failing.failures == 1
    with OpenAICompatibleServer(chat_reply=lambda messages: "not json") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        flags = HSCAEngine(nuance_model=NuanceModel(client, "m")).score_layers("A plain sentence here.").nuance_flags
        assert not [f for f in flags if f.endswith("_model")]


@pytest.mark.parametrize("bad", [b"bytes are not text", None, 42, ["a list"]])
def test_a_turn_that_is_not_a_str_is_a_typed_error(bad):
    with pytest.raises(ArgumentTypeError):
        HSCAEngine().score_layers(bad)


def test_invalid_utf8_and_oversized_turns_are_validation_errors():
    with pytest.raises(ValidationError, match="surrogate"):
        HSCAEngine().score_layers(b"caf\xe9 au lait".decode("utf-8", "surrogateescape"))
    with pytest.raises(ValidationError, match="at most"):
        HSCAEngine().score_layers("a" * (MAX_TURN_CHARS + 1))


def test_empty_and_blank_turns_have_a_defined_score():
    for text in ("", "   \n\n  ", "!!! ???"):
        chunk = HSCAEngine().score_layers(text)
        assert (chunk.layer1_score, chunk.coherence_score, chunk.domain_tags) == (0.0, 0.0, ["unclassified"])
        assert chunk.nuance_flags == ["short_chunk"]


def test_a_one_megabyte_turn_is_scored():
    paragraph = MESH + " " + STUFFED + "\n\n"
    text = paragraph * (1_000_000 // len(paragraph))
    chunk = HSCAEngine().score_layers(text)
    # one paragraph repeated a thousand times is stuffing: originality discounts layer 1 to 0
    assert chunk.layer1_score == 0.0 and 0.0 < chunk.coherence_score <= 1.0
    assert "technical_prose" in chunk.domain_tags


def test_a_long_turn_of_one_recurring_vocabulary_is_scored():
    """A 1 MB turn of one recurring vocabulary (14,000 sentences, no two of the 20 before one nearly
    the same); its CPU time against length is measured by ``benchmarks/hsca_layer1_scaling.py``
    (a set copy per term and sentence once made layer 1 quadratic)."""
    vocabulary = ["deploy", "database", "migration", "orders", "table", "users", "cache", "queue", "worker",
                  "replica", "index", "schema", "backup", "latency", "cluster", "shard"]
    words = len(vocabulary)
    text = " ".join(
        f"while the {vocabulary[i % words]} and the {vocabulary[(3 * i + 1) % words]} failed, the "
        f"{vocabulary[(5 * i + 2) % words]} locked the {vocabulary[(7 * i + 3) % words]} {i}."
        for i in range(14_000))
    assert len(text) > 1_000_000
    chunk = HSCAEngine().ingest_turn(text)
    assert 0.0 < chunk.layer1_score <= 1.0


def test_a_repeated_sentence_is_no_support_and_the_window_stops_at_a_sentence_end():
    """Near-duplicate sentences count as one for layer 1 (their terms add no frequency and they do
    not support each other), and words co-occur only within a sentence: the scattered stuffing
    of eval 4 (one-off clauses ending in a query word, cycled) scores 0; before, 0.2."""
    shallow = parse_turn(
        "The farmer named his tractor augmented. The tram was late because of object. A fortune cookie "
        "promised assignment. A red kite drifted over the meadow near expression. The old man mended the "
        "fence while humming augmented. The weather turned chilly after object. A postcard in the attic said "
        "assignment. A stranger brought up expression at the bus stop. The farmer named his tractor augmented.")
    assert relational_weight(shallow).score == 0.0
    repeated = parse_turn("Redis stores data in memory. " * 4)
    assert relational_weight(repeated).score == 0.0
    ends = parse_turn("Alpha kiwi mango. Beta plum pear. Alpha fig. Beta lime.")
    assert relational_weight(ends, window=9).score == 0.0  # alpha and beta meet only across a sentence end
    assert layer1(MESH) > 0.4


def test_the_turn_size_limit_is_configurable():
    engine = HSCAEngine(max_turn_chars=100)
    with pytest.raises(ValidationError, match="at most 100 characters, got 101"):
        engine.ingest_turn("a" * 101)
    assert engine.buffer == []
    assert engine.ingest_turn("a" * 100).text == "a" * 100
    with pytest.raises(ValidationError, match="max_turn_chars"):
        HSCAEngine(max_turn_chars=0)


@pytest.mark.parametrize("bad", [None, 42, b"bytes"])
def test_a_query_that_is_not_a_str_is_a_typed_error(bad):
    engine = HSCAEngine()
    engine.ingest_turn(MESH)
    engine.take_snapshot()
    with pytest.raises(ArgumentTypeError, match="query must be a str"):
        engine.relevant(bad)
    with pytest.raises(ArgumentTypeError, match="concept must be a str"):
        engine.first_mention(bad)
    with pytest.raises(ArgumentTypeError, match="concept must be a str"):
        engine.state_before(bad)


def test_a_reply_close_to_the_turn_before_it_is_not_a_duplicate():
    """The near-duplicate rule holds within a chunk: a short reply taking up most of its context's
    words is supported by it (the conversation's recurrence), not collapsed into it."""
    said = "The court ruled that the lease contract bound the tenant."
    reply = relational_weight(parse_turn("The tenant appealed the court ruling on the lease contract."), 5,
                              [parse_turn(said)])
    assert reply.term_weights["court"] == 0.5 and reply.score > 0.4  # one context sentence of support
    assert relational_weight(parse_turn(said), 5, [parse_turn(said)]).score == 0.5  # even said again
