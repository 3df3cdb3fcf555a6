"""The HCE recipe's parts: token estimate and knapsack, extractor, focus buffer, graph propagation
with its bounds, spreading activation's numbers, hierarchical tree scores."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redmem import CoOccurrenceField, KeyField, Model
from redmem.fields._cooccurrence import Entity as E
from redmem.fields._cooccurrence import propagation_weights
from redmem.recipes.hce import (
    ContextCandidate,
    EdgeType,
    EntityExtractor,
    EntityGraph,
    FocusBuffer,
    NodeType,
    context_budgeting,
    estimate_tokens,
    spreading_activation,
)
from redmem.recipes.hce._budgeting import normalised
from redmem.recipes.hce._extractor import ExtractedEntity
from redmem.recipes.hce._models import HCEInteraction, entity_term, interaction_id
from redmem.recipes.hce._tree import MAX_SCORE, TreeHit, tree_scores
from redmem.store._errors import ValidationError


def test_the_package_imports_its_names():
    import redmem.recipes.hce as hce

    assert set(hce.__all__) <= set(dir(hce))
    assert {"HCEPipeline", "FocusBuffer", "ContextCandidate", "estimate_tokens", "context_budgeting",
            "EntityGraph", "NodeType", "EdgeType", "spreading_activation", "EntityExtractor",
            "SemanticTree", "hierarchical_relevance_search"} <= set(hce.__all__)


# -- tokens and the knapsack ---------------------------------------------------------------------
def test_estimate_tokens_is_the_librarys_one_and_the_seed_formula_is_one_option_away():
    import redmem
    from redmem.context._tokens import resolve_counter, word_estimate

    assert estimate_tokens is redmem.estimate_tokens
    counter = resolve_counter("words")
    assert counter is word_estimate
    assert counter("") == 0
    assert counter("one two three") == 4  # 3 * 4 // 3
    assert counter("a  b\nc d e") == 6  # 5 words -> 20 // 3


def candidate(utility: float, cost: int, source: str = "tree", text: str = "x") -> ContextCandidate:
    return ContextCandidate(text, source, utility, cost)


def test_the_knapsack_takes_the_best_ratio_first_and_skips_what_does_not_fit():
    items = [candidate(0.9, 90, text="big"), candidate(0.5, 10, text="cheap"), candidate(0.3, 30, text="mid")]
    assert [c.content for c in context_budgeting(items, 45)] == ["cheap", "mid"]  # ratios .05 .01 .01
    assert [c.content for c in context_budgeting(items, 100)] == ["cheap", "big"]
    assert context_budgeting(items, 5) == []  # below the smallest cost: nothing, no error


@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 50)), max_size=20), st.integers(0, 200))
def test_the_knapsack_never_exceeds_its_budget(items, budget):
    chosen = context_budgeting([candidate(u, c) for u, c in items], budget)
    assert sum(c.token_cost for c in chosen) <= budget


@pytest.mark.parametrize("bad", [
    {"source": "web"}, {"utility": -0.1}, {"utility": float("nan")}, {"token_cost": 1.5}, {"token_cost": -1},
])
def test_a_candidate_is_checked(bad):
    values = {"content": "x", "source": "graph", "utility": 0.5, "token_cost": 3, **bad}
    with pytest.raises(ValidationError):
        ContextCandidate(**values)


def test_normalising_puts_every_source_on_zero_to_one():
    raw = [candidate(0.5, 1, "graph"), candidate(0.91, 1, "tree"), candidate(0.25, 1, "buffer")]
    out = normalised(raw, {"graph": 0.5, "tree": 0.91, "buffer": 1.0})
    assert [c.utility for c in out] == [1.0, 1.0, 0.25]
    assert out[0].metadata["raw_utility"] == 0.5
    sharp = normalised(raw, {"graph": 0.5, "tree": 0.91, "buffer": 1.0}, sharpness=2)
    assert [c.utility for c in sharp] == [1.0, 1.0, 0.0625]  # the order kept, the gaps wider


# -- the extractor -------------------------------------------------------------------------------
def keys(text: str) -> list[tuple[str, str]]:
    return [(e.key, e.type.value) for e in EntityExtractor().extract(text)]


def test_names_quotes_numbers_and_dates():
    assert keys("I moved to Lisbon in March and started at Acme.") == [
        ("lisbon", "name"), ("march", "date"), ("acme", "name")]
    assert keys('The Bank of England moved 0.25% on 7 May 2023; "blue notebook" costs 1,200.') == [
        ("bank of england", "name"), ("0.25%", "number"), ("7 may 2023", "date"), ("blue notebook", "phrase"),
        ("1,200", "number")]
    assert keys("We met on 2024-05-01, a Friday.") == [("2024-05-01", "date"), ("friday", "date")]


def test_a_sentence_start_is_a_name_only_when_also_capitalised_mid_sentence():
    assert keys("Sure, that works. Nice!") == []
    assert keys("Caroline went home. I saw Caroline there.") == [("caroline", "name")]
    assert keys("I may go.") == []  # "may" in lower case is not the month


def test_mentions_offer_lowercase_ngrams_without_stop_words_at_the_ends():
    found = EntityExtractor(max_ngram=2).mentions("where do I work now at acme corp")
    assert "acme" in found and "acme corp" in found and "now at" not in found and "do" not in found


def test_extraction_is_deterministic():
    text = 'Ana met "Project X" lead Bo at Acme on Monday, 12 June 2023, for 3 hours.'
    assert EntityExtractor().extract(text) == EntityExtractor().extract(text)


# -- the focus buffer ----------------------------------------------------------------------------
def test_focus_buffer_keeps_the_last_entries(any_db):
    buffer = FocusBuffer(max_size=3, session_id="s1")
    assert buffer.size == 0 and buffer.get_recent() == [] and buffer.to_text() == ""
    for i in range(5):
        buffer.add("user" if i % 2 == 0 else "assistant", f"m{i}")
    assert buffer.size == 3
    assert [e.content for e in buffer.get_recent()] == ["m2", "m3", "m4"]
    assert [e.content for e in buffer.get_recent(2)] == ["m3", "m4"]
    assert buffer.get_recent(0) == []
    assert buffer.to_text() == "user: m2\nassistant: m3\nuser: m4"
    buffer.clear()
    assert buffer.size == 0


def test_focus_buffer_add_is_one_round_trip(db, sent):
    buffer = FocusBuffer(max_size=2, session_id="s1")
    assert buffer.size == 0  # the model's first use here: its schema check (model/_schema.py) is not counted
    sent.clear()
    buffer.add("user", "hello")
    assert len(sent) == 1


@pytest.mark.parametrize("role, content", [("bot", "x"), ("user", 3)])
def test_focus_buffer_rejects_bad_entries(db, role, content):
    with pytest.raises(ValidationError):
        FocusBuffer(session_id="s1").add(role, content)


# -- graph propagation bounds (the primitive) --------------------------------------------------------
class Web(Model):
    """An unpartitioned model whose graph holds entities only, for the propagation bounds."""

    web_id = KeyField()
    links = CoOccurrenceField()


HUB = {("S", f"n{i:02d}"): 1.0 - i / 100 for i in range(12)} | {("n00", "far"): 0.9, ("n05", "far"): 1.0}


def test_propagation_limit_fanout_and_records_only_match_the_formula(any_db):
    graph = Web.links.graph()
    neighbours: dict[str, dict[str, float]] = {}
    for (a, b), w in HUB.items():
        graph.link(E(a), E(b), initial_weight=w)
        for x, y in ((a, b), (b, a)):
            neighbours.setdefault(f"e:{x}", {})[f"e:{y}"] = w
    for fanout, hub in ((0, 0), (3, 0), (0, 6), (3, 20)):
        expected = propagation_weights(neighbours, ["e:S"], 2, 0.5, 0.01, fanout, hub)
        got = {f"e:{n.name}": w for n, w in graph.propagate([E("S")], depth=2, fanout=fanout, hub_degree=hub)}
        assert got == pytest.approx(expected)
    assert dict(graph.propagate([E("S")], depth=1, hub_degree=6))[E("n00")] == 6 / 12 * 0.5  # S has 12 edges
    top = graph.propagate([E("S")], depth=2, limit=3)
    assert [(n.name, w) for n, w in top] == [("n00", 0.5), ("n01", 0.495), ("n02", 0.49)]
    assert graph.propagate([E("S")], depth=2, records_only=True) == []  # entities only in this graph
    with pytest.raises(ValidationError):
        graph.propagate([E("S")], limit=-1)


# -- the entity graph and spreading activation ----------------------------------------------------
def test_spreading_activation_follows_the_reference_numbers(any_db):
    graph = EntityGraph("s1")
    client = HCEInteraction._meta.client
    first, second = interaction_id(), interaction_id()
    for rid in (first, second):
        HCEInteraction(session_id="s1", interaction_id=rid, user="u", assistant="a", topic_id="t",
                       timestamp=0.0).save()
    acme, lisbon, ana = (ExtractedEntity(k, k.title(), NodeType.NAME) for k in ("acme", "lisbon", "ana"))
    with client.pipeline(transaction=True) as pipe:
        graph.queue_interaction(pipe, first, [acme, lisbon])
        graph.queue_interaction(pipe, second, [lisbon, ana])
        pipe.execute()
    # acme -> first: 1.0 * 0.5 * 1.0; acme -> lisbon (0.1) -> second: 0.05 * 0.5 * 1.0;
    # acme -> first -> lisbon -> second: 0.125, the max
    assert spreading_activation(graph, ["acme"]) == [(first, 0.5), (second, 0.125)]
    assert spreading_activation(graph, ["acme"], rounds=2) == [(first, 0.5), (second, 0.025)]
    assert spreading_activation(graph, ["acme"], top_k=1) == [(first, 0.5)]
    assert spreading_activation(graph, ["nobody"]) == []
    assert graph.node_type("acme") is NodeType.NAME and graph.node_type("nobody") is None
    assert graph.entities()["lisbon"] == (NodeType.NAME, "Lisbon")
    assert ("lisbon", 0.1, EdgeType.CO_OCCURS) in graph.linked("acme")
    assert (first, 1.0, EdgeType.MENTIONS) in graph.linked("acme")


def test_interaction_ids_sort_newest_first():
    assert interaction_id(2000.0) < interaction_id(1000.0)


# -- the tree's scores ---------------------------------------------------------------------------
def test_tree_scores_weigh_own_and_parent_and_skip_below_threshold():
    topics = [("t1", 0.8), ("t2", 0.1)]  # scores 0.56, 0.07 (< 0.1: skipped with its leaves)
    leaves = [("a", 0.9, "t1"), ("b", 0.05, "t1"), ("c", 0.99, "t2"), ("d", 0.5, "t3")]
    hits = tree_scores(topics, leaves, threshold=0.1)
    assert hits == [TreeHit("a", pytest.approx(0.7 * 0.9 + 0.3 * 0.56), "t1", pytest.approx(0.56)),
                    TreeHit("b", pytest.approx(0.7 * 0.05 + 0.3 * 0.56), "t1", pytest.approx(0.56))]
    assert tree_scores(topics, leaves, threshold=0.25) == hits[:1]  # b: 0.203
    assert pytest.approx(0.91) == MAX_SCORE


@given(st.text(min_size=1, max_size=40))
def test_entity_terms_survive_analysis(key):
    """The pipeline checks entity terms unanalysed (term_searcher); the filter stores them
    analysed: both agree because the analyser keeps an entity term whole."""
    term = entity_term(key)
    assert HCEInteraction.entities_seen.analyzer.tokens(term) == [term]
