"""Round trips per assemble(), counted at the socket: one request sent to the server = one round trip.

A pipeline is one round trip however many commands it holds (the `sent` fixture, tests/conftest.py). The counts are those of the table
in docs/recipes/context-assembler.md ("Cost"); they do not grow with the number of records.
Each count is taken on a warm assembler (scripts cached, vector matrix loaded), as in a running
agent; the vector matrix catches up with another process's writes inside the first request
(one more round trip per further ~5,000 changed vectors), and the very first assemble of a
process also loads the matrix and the scripts.
"""

from __future__ import annotations

import itertools
from contextlib import nullcontext

import pytest

import redmem
from conftest import configured_embeddings
from models import SEED_RANKING, Card
from models import RhythmicMemory as Memory
from models import SeedNote as Note
from redmem import (
    AccessTrackerMixin,
    AutoKeyField,
    CoOccurrenceField,
    CyclicDecayField,
    EmbeddingField,
    FloatField,
    KeyField,
    Model,
    StringField,
)
from redmem.embeddings import HashingEmbeddings
from redmem.recipes.context_assembler import ContextAssembler


class Vectors(AccessTrackerMixin, Model):
    """Semantic (EmbeddingField, no BM25Field), graph and push; access tracking, so the selected
    records always have a post-effect to send (with 600 records the vector hits fill every slot
    and no push record, whose RecallProposal would be one, is selected).

    Local: semantic only (no BM25Field) with access tracking and a push path, a shape no shared model has.
    """

    vector_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    salience = FloatField(default=0.0)
    links = CoOccurrenceField()
    embedding = EmbeddingField(source="content", partition_by="agent_id")
    rhythm = CyclicDecayField(base_score_field="salience", partition_by="agent_id")


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


def round_trips(sent: list, assembler: ContextAssembler, cues, agent: str) -> int:
    assembler.assemble(cues, agent_id=agent)  # warm: scripts cached, vectors loaded
    sent.clear()
    result = assembler.assemble(cues, agent_id=agent)
    assert result.records, "measure an assembly that selects something"
    return len(sent)


def corpus(model: type, agent: str, size: int, hot: bool = True, **extra) -> None:
    """``size`` records; with ``hot`` every tenth one is above the surfacing threshold."""
    words = ["deploy", "helm", "canary", "rollback", "freeze", "alert", "runbook"]
    model.save_many([
        model(agent_id=agent, content=f"{words[i % 7]} note {i} about {words[(i * 3) % 7]}",
              salience=1.0 if hot and i % 10 == 0 else 0.0, **extra)
        for i in range(size)
    ])


# (model, cues, expected round trips, what they are)
CASES = {
    "hybrid": (Memory, {"topic": "deployment", "q": "helm canary"}, 3,
               "bloom check + BM25 + vector + graph size + push scan (one pipeline), "
               "hydrate, post-effects"),
    "query definitely missing": (Memory, {"topic": "kubernetes"}, 3,
                                 "bloom check + push scan (one pipeline), hydrate, post-effects"),
    "no query text, no score_weights": (Memory, None, 3, "push scan, hydrate, post-effects"),
    "lexical": (Note, "helm canary", 3, "BM25 + graph size + push scan (one pipeline), hydrate, post-effects"),
    "semantic": (Vectors, "helm canary", 3, "vector + graph size + push scan (one pipeline), "
                 "hydrate, post-effects"),
    "push only": (Card, None, 3, "push scan, hydrate, post-effects"),
}


@pytest.mark.parametrize("size", [30, 600])
@pytest.mark.parametrize("case", list(CASES))
def test_round_trips_per_assembly(db, sent, case, size):
    model, cues, expected, _ = CASES[case]
    extra = {"topic": "deployment"} if model is Memory else {}
    corpus(model, "a", size, **extra)
    assert round_trips(sent, ContextAssembler(model, max_items=10), cues, "a") == expected


@pytest.mark.parametrize("case", ["hybrid", "lexical", "semantic"])
def test_convex_fusion_and_fixed_weights_cost_no_round_trip(db, sent, case):
    """Convex fusion reads the scores the searches already returned: the same count as RRF."""
    model, cues, expected, _ = CASES[case]
    extra = {"topic": "deployment"} if model is Memory else {}
    corpus(model, "a", 600, **extra)
    assembler = ContextAssembler(model, max_items=10, fusion="convex", fusion_weights={"keyword": 1.0, "vector": 1.0})
    assert round_trips(sent, assembler, cues, "a") == expected


@pytest.mark.parametrize("case", ["hybrid", "lexical", "semantic"])
def test_the_graph_costs_a_round_trip_only_when_the_partition_has_an_edge(db, sent, case):
    """With one edge, the propagation runs (and finds the linked record): one round trip more."""
    model, cues, expected, _ = CASES[case]
    extra = {"topic": "deployment"} if model is Memory else {}
    corpus(model, "a", 5, **extra)  # few matches: the linked record makes the top 10
    graph = next(f for f in model._meta.fields.values() if isinstance(f, CoOccurrenceField))
    seed = model(agent_id="a", content="helm canary helm canary", **extra)
    linked = model(agent_id="a", content="an unrelated line", **extra)
    seed.save()
    linked.save()
    graph.link(seed, linked, initial_weight=0.9)
    assembler = ContextAssembler(model, **SEED_RANKING, max_items=10)
    assert round_trips(sent, assembler, cues, "a") == expected + 1
    found = assembler.assemble(cues, agent_id="a")
    assert linked._saved_key.record_id in {r._saved_key.record_id for r in found.records}


WEIGHTS = {"relevance": 0.6, "confidence": 0.3}
# (model, cues, assembler options, expected round trips, what they are)
COMPOSITE_CASES = {
    "composite": (Memory, {"topic": "deployment", "q": "helm canary"}, {"retrieval_mode": "composite"}, 3,
                  "bloom check + BM25 + composite + push scan (one pipeline), hydrate, post-effects"),
    "no query text, score_weights": (Memory, None, {}, 3,
                                     "composite + push scan (one pipeline), hydrate, post-effects"),
    "lexical, nothing found: composite fallback": (Note, "zebra", {"score_weights": {"confidence": 1.0}}, 4,
                                                   "BM25 + push scan (one pipeline), composite, hydrate, "
                                                   "post-effects"),
}


@pytest.mark.parametrize("size", [30, 600])
@pytest.mark.parametrize("case", list(COMPOSITE_CASES))
def test_composite_round_trips(db, sent, case, size):
    """Every record ties on the composite here (same age, importance, confidence): no extra cost."""
    model, cues, options, expected, _ = COMPOSITE_CASES[case]
    extra = {"topic": "deployment"} if model is Memory else {}
    corpus(model, "a", size, **extra)
    # RRF, the seed's fusion: under convex fusion the composite scores keep their margins, so which
    # records are selected, and so suppressed, varies with the random ids, and the next selection
    # then sometimes reads one batch more (a fourth round trip; see "Composite mode" in benchmarks.md)
    assembler = ContextAssembler(model, **{"score_weights": WEIGHTS, "fusion": "rrf", **options}, max_items=10)
    with pytest.warns(RuntimeWarning, match="falling back") if "fallback" in case else nullcontext():
        assert round_trips(sent, assembler, cues, "a") == expected


def on_cluster(cluster_client, name: str) -> None:
    redmem.configure(client=cluster_client, key_prefix=f"rt-{name}-{next(PREFIXES)}")


PREFIXES = itertools.count()


@pytest.mark.cluster
def test_round_trips_on_a_cluster(cluster_client, sent):
    on_cluster(cluster_client, "lexical")
    corpus(Note, "a", 50, hot=False)  # nothing surfaced: see the next test
    assert round_trips(sent, ContextAssembler(Note, max_items=10), "helm canary", "a") == 3


@pytest.mark.cluster
def test_composite_round_trips_on_a_cluster(cluster_client, sent):
    on_cluster(cluster_client, "composite")
    corpus(Note, "a", 50, hot=False)
    assembler = ContextAssembler(Note, score_weights={"confidence": 1.0}, retrieval_mode="composite", max_items=10)
    assert round_trips(sent, assembler, "helm canary", "a") == 3


@pytest.mark.cluster
def test_cluster_round_trips_do_not_grow_with_surfaced_records(cluster_client, sent):
    counts = []
    for hot in (1, 6):
        on_cluster(cluster_client, f"hot{hot}")
        Card.save_many([Card(agent_id="a", content=f"note {i}", salience=1.0 if i < hot else 0.1) for i in range(20)])
        counts.append(round_trips(sent, ContextAssembler(Card, max_items=10), None, "a"))
    # push scan, hydration, post-effects; the effects pipeline also reaches the node holding the
    # partition registry ({%g} slot), which the socket counter sees as one more send
    assert counts[0] == counts[1] <= 4
