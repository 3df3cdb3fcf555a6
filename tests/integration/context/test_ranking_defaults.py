"""The assembler's default ranking (issue 26): direct evidence before graph-expanded records, the
relevance floor (no padding), newer facts first. Pure stages tested as functions, then through
``ContextAssembler`` against a real server.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import (
    AutoKeyField,
    BM25Field,
    CoOccurrenceField,
    DatetimeField,
    EmbeddingField,
    KeyField,
    Model,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.context._candidates import Candidate
from redmem.context._duplicates import DUPLICATE_COSINE
from redmem.context._floor import DEFAULT_MIN_RELEVANCE, above_floor
from redmem.context._recency import (
    CHANGE_WORDS,
    CURRENT_UPDATE_COSINE,
    ENDING_WORDS,
    UPDATE_COSINE,
    is_update,
    newer_first,
)
from redmem.context._retrieval import match_scores
from redmem.model._dbkey import DbKey
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._keys import KeySpace

VECTORS: dict[str, list[float]] = {}


class LookupEmbeddings:
    """Vectors by lookup from VECTORS (unit vectors the test chooses); other texts get e2."""

    dimensions = 3
    max_batch_size = 64

    def embed(self, texts, input_type="document"):
        return np.array([VECTORS.get(t, [0.0, 0.0, 1.0]) for t in texts], dtype=np.float32)


class RankingDefaultsFact(Model):
    """A hybrid fact with the time it was stated and a co-occurrence graph."""

    fact_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    stated_at = DatetimeField(auto_now_add=True)
    links = CoOccurrenceField(partition_by="agent_id")
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", provider=LookupEmbeddings(), partition_by="agent_id")


@pytest.fixture(autouse=True)
def no_vectors():
    VECTORS.clear()
    yield
    VECTORS.clear()


def unit(*xs: float) -> list[float]:
    v = np.array(xs, dtype=np.float64)
    return list(v / np.linalg.norm(v))


# -- match and the floor, as functions ------------------------------------------------------------
def test_match_averages_each_direct_list_divided_by_its_best():
    lists = {"keyword": [("a", 4.0), ("b", 1.0)], "vector": [("b", 0.8), ("c", 0.2)], "graph": [("d", 1.0)]}
    assert match_scores(lists) == pytest.approx({"a": 0.5, "b": (0.25 + 1.0) / 2, "c": 0.125})
    assert match_scores({"graph": [("d", 1.0)]}) is None
    assert match_scores({"keyword": [], "vector": [("c", 0.5)]}) == {"c": 1.0}


def candidate(record_id: str, **signals: float) -> Candidate:
    return Candidate(key=DbKey(KeySpace("t", "RankingDefaultsFact", ("a",)), record_id), pull=1.0, signals=dict(signals))


@given(st.lists(st.floats(0, 1), max_size=12), st.one_of(st.none(), st.floats(0, 1)))
def test_the_floor_cuts_exactly_the_matches_below_it_and_keeps_order(matches, floor):
    candidates = [candidate(str(i), match=m) for i, m in enumerate(matches)]
    push_only = Candidate(key=DbKey(KeySpace("t", "RankingDefaultsFact", ("a",)), "push"), push=1.0)
    kept, cut = above_floor([*candidates, push_only], floor)
    assert [c.key.record_id for c in kept] == [c.key.record_id for c in candidates
                                              if floor is None or c.signals["match"] >= floor] + ["push"]
    assert all(floor is not None and c.signals["match"] < floor for c in cut)


def test_the_floor_is_checked_when_the_assembler_is_made():
    for bad in (-0.1, 1.5, float("nan"), "0.3"):
        with pytest.raises(ValidationError, match="min_relevance"):
            ContextAssembler(RankingDefaultsFact, min_relevance=bad)
    with pytest.raises(ValidationError, match="newer_first"):
        ContextAssembler(RankingDefaultsFact, newer_first=1)
    assert ContextAssembler(RankingDefaultsFact).config.min_relevance == DEFAULT_MIN_RELEVANCE


# -- newer first, as functions --------------------------------------------------------------------
@pytest.mark.parametrize(("older", "newer", "cosine", "expected"), [
    ("Bob uses MySQL for billing", "Bob switched billing to PostgreSQL last week", 0.69, True),
    ("Alice lives in Berlin.", "Alice moved to Lisbon in May.", 0.65, True),
    ("Alice lives in Berlin.", "Alice lives in Lisbon.", 0.8, True),           # restated with another value
    ("Alice lives in Berlin.", "Alice lives in Lisbon.", None, True),          # no vectors: the words decide
    ("Caroline: I went to a support group yesterday.",
     "Caroline: The support group was great, I made friends.", 0.87, False),  # one topic, no slot changed
    ("Ana is allergic to shellfish", "Ana now loves spicy food", 0.54, False),  # another subject
    ("Caroline: Thanks, Mel. Finding self-acceptance was a long process",
     "Caroline: but now I'm ready to offer support", 0.64, False),               # "now" said in passing
    ("Caroline: Hey Mel, what's up? Been a busy week since we talked.",
     "Caroline: Hey Melanie, great to hear from you. What's been up since we talked?", 0.83, False),  # a paraphrase
    ("We deploy on Tuesdays", "We deploy on Thursdays instead", 0.78, True),
    ("The weekly sync is on Mondays at 10.", "The weekly sync happens on Wednesdays at 11.", 0.88, True),  # other values
    ("The office Wi-Fi password is tulip42.", "The office password is maple77 since today.", 0.64, True),
    ("Caroline: I went to a LGBTQ support group", "Caroline: Thanks Mel, the LGBTQ+ art show is great", 0.7, False),
    ("Our production region is us-east-1.", "We migrated prod to eu-west-1 on November 2.", 0.5, False),  # below 0.6
])
def test_is_update(older, newer, cosine, expected):
    assert is_update(older, newer, cosine) is expected


@given(st.lists(st.tuples(st.sampled_from(["Alice lives in Berlin", "Alice lives in Lisbon", "Bob cooks",
                                           "Alice moved to Oslo"]), st.one_of(st.none(), st.integers(0, 5))),
                max_size=8))
def test_newer_first_is_a_permutation_that_moves_only_updates_above_older_ones(items):
    ranked = list(enumerate(items))
    out, moves = newer_first(ranked, lambda it: it[1][1], lambda it: it[1][0], lambda a, b: None)
    assert all(out.index(newer) < out.index(older) for newer, older in moves)
    assert sorted(out) == sorted(ranked)
    untimed = [it for it in ranked if it[1][1] is None]
    assert [it for it in out if it[1][1] is None] == untimed  # what has no time keeps its relative order
    for i, a in enumerate(out):  # no older statement stays above a newer one that updates it
        for b in out[i + 1:]:
            if a[1][1] is not None and b[1][1] is not None and a[1][1] < b[1][1]:
                assert not is_update(a[1][0], b[1][0], None)


# -- through the assembler ------------------------------------------------------------------------
def test_graph_expanded_records_follow_every_direct_hit(any_db):
    """A neighbour of the best hit used to outrank weaker direct hits (the demo's "Good luck with
    the talk" above the memories that answer)."""
    VECTORS.update({"biscuit walk": unit(1, 0, 0), "Biscuit needs a walk every day": unit(1, 0.2, 0),
                    "Biscuit eats twice a day": unit(1, 0.6, 0)})
    best = RankingDefaultsFact.create(agent_id="a", content="Biscuit needs a walk every day")
    second = RankingDefaultsFact.create(agent_id="a", content="Biscuit eats twice a day")
    cheer = RankingDefaultsFact.create(agent_id="a", content="Good luck with the talk")
    RankingDefaultsFact.links.link(best, cheer, initial_weight=1.0)
    result = ContextAssembler(RankingDefaultsFact, min_relevance=None).assemble("biscuit walk", agent_id="a", emit_trace=True)
    assert result.records[:2] == [best, second] and result.records[2] == cheer
    assert ContextAssembler(RankingDefaultsFact).assemble("biscuit walk", agent_id="a").records == [best, second]


def test_no_padding_a_memory_sharing_nothing_with_the_question_is_left_out(any_db):
    VECTORS.update({"When do we deploy?": unit(1, 0, 0), "Deploys go out on Tuesdays": unit(1, 0.3, 0),
                    "Gus grows tomatoes": unit(0.04, 1, 0)})
    deploy = RankingDefaultsFact.create(agent_id="a", content="Deploys go out on Tuesdays")
    RankingDefaultsFact.create(agent_id="a", content="Gus grows tomatoes")
    result = ContextAssembler(RankingDefaultsFact).assemble("When do we deploy?", agent_id="a")
    assert result.records == [deploy] and result.metadata["below_floor"] == 1
    padded = ContextAssembler(RankingDefaultsFact, min_relevance=None).assemble("When do we deploy?", agent_id="a")
    assert len(padded.records) == 2 and padded.metadata["below_floor"] == 0


def test_the_newer_of_two_conflicting_facts_ranks_first(any_db):
    VECTORS.update({"what database does billing use?": unit(1, 0, 0),
                    "Bob uses MySQL for billing": unit(1, 0.1, 0),
                    "Bob switched billing to PostgreSQL last week": unit(1, 0.8, 0)})
    then = datetime.now(UTC) - timedelta(days=30)
    old = RankingDefaultsFact.create(agent_id="a", content="Bob uses MySQL for billing", stated_at=then)
    new = RankingDefaultsFact.create(agent_id="a", content="Bob switched billing to PostgreSQL last week")
    asked = "what database does billing use?"
    assert ContextAssembler(RankingDefaultsFact).assemble(asked, agent_id="a").records[:2] == [new, old]
    assert ContextAssembler(RankingDefaultsFact, newer_first=False).assemble(asked, agent_id="a").records[:2] == [old, new]


class RankingDefaultsStated(Model):
    """A fact written at one time (``created_at``, the first DatetimeField) and said at another."""

    fact_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    created_at = DatetimeField(auto_now_add=True)
    said_at = DatetimeField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", provider=LookupEmbeddings(), partition_by="agent_id")


def test_the_newer_said_fact_ranks_first_when_stored_in_the_other_order(any_db):
    VECTORS.update({"what database does billing use?": unit(1, 0, 0),
                    "Bob uses MySQL for billing": unit(1, 0.1, 0),
                    "Bob switched billing to PostgreSQL last week": unit(1, 0.8, 0)})
    said = datetime(2026, 3, 1, tzinfo=UTC)
    new = RankingDefaultsStated.create(agent_id="a", content="Bob switched billing to PostgreSQL last week",
                                       said_at=said + timedelta(days=30))
    old = RankingDefaultsStated.create(agent_id="a", content="Bob uses MySQL for billing", said_at=said)
    asked = "what database does billing use?"
    assert ContextAssembler(RankingDefaultsStated).assemble(asked, agent_id="a").records[:2] == [new, old]
    undated = RankingDefaultsStated.create(agent_id="b", content="Bob uses MySQL for billing")
    later = RankingDefaultsStated.create(agent_id="b", content="Bob switched billing to PostgreSQL last week")
    assert ContextAssembler(RankingDefaultsStated).assemble(asked, agent_id="b").records[:2] == [later, undated]


class RankingDefaultsSaid(Model):
    """A fact whose time is an ISO 8601 text (as ChatMemory's ``said_at``), named by ``time_field``."""

    said_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    said_at = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


def test_time_field_names_a_text_field_of_iso_times(any_db):
    old = RankingDefaultsSaid.create(agent_id="a", content="The weekly sync is on Mondays at 10.", said_at="2026-03-02T09:00:00+00:00")
    new = RankingDefaultsSaid.create(agent_id="a", content="The weekly sync happens on Wednesdays at 11.", said_at="2026-04-01T09:00:00")
    asked = "when is the weekly sync on mondays?"
    assert ContextAssembler(RankingDefaultsSaid).assemble(asked, agent_id="a").records[:2] == [new, old]  # said_at: read
    assert ContextAssembler(RankingDefaultsSaid, newer_first=False).assemble(asked, agent_id="a").records[0] == old
    assert ContextAssembler(RankingDefaultsSaid, time_field="said_at").assemble(asked, agent_id="a").records[:2] == [new, old]
    with pytest.raises(QueryException, match="time_field 'when'"):
        ContextAssembler(RankingDefaultsSaid, time_field="when")
    with pytest.raises(ValidationError, match="time_field"):
        ContextAssembler(RankingDefaultsSaid, time_field="")


def test_asked_how_things_stand_the_said_change_leads_at_a_lower_similarity(any_db):
    """"We migrated prod" shares no word with "Our production region" and its vector is 0.55 from
    it (the scenario suite's pair measures 0.50 under MiniLM): below the bound of a change in
    general (0.6), above the bound when the question asks how things stand now."""
    older, newer = "Our production region is us-east-1.", "We migrated prod to eu-west-1 on November 2."
    now, then = "which region is production in?", "which region was production in first?"
    VECTORS.update({now: unit(1, 0, 0), then: unit(1, 0, 0), older: unit(1, 0.2, 0), newer: unit(0.45, 0.45, 0.77)})
    assert CURRENT_UPDATE_COSINE <= float(np.dot(VECTORS[older], VECTORS[newer])) < 0.6
    said = datetime(2026, 4, 1, tzinfo=UTC)
    old = RankingDefaultsStated.create(agent_id="a", content=older, said_at=said)
    new = RankingDefaultsStated.create(agent_id="a", content=newer, said_at=said + timedelta(days=200))
    assert ContextAssembler(RankingDefaultsStated).assemble(now, agent_id="a").records[:2] == [new, old]
    assert ContextAssembler(RankingDefaultsStated, newer_first=False).assemble(now, agent_id="a").records[0] == old
    assert ContextAssembler(RankingDefaultsStated).assemble(then, agent_id="a").records[0] == old


TENANTS = itertools.count()
SUBJECTS = ["billing database", "production region", "standup time", "office password", "sync day"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subject=st.sampled_from(SUBJECTS), old_value=st.integers(0, 999), new_value=st.integers(1000, 1999),
       change=st.sampled_from(sorted(w for w in CHANGE_WORDS if " " not in w)),
       cosine=st.floats(CURRENT_UPDATE_COSINE + 0.01, DUPLICATE_COSINE - 0.03), older_closer=st.booleans(), days=st.integers(1, 400))
def test_the_newer_of_two_dated_conflicting_facts_is_first(db, subject, old_value, new_value, change, cosine,
                                                          older_closer, days):
    """Two facts about one subject, the newer one saying that it changed, at any similarity from
    CURRENT_UPDATE_COSINE up (below the near-duplicate bound, where only one of the two is kept): asked how things stand, the newer is first, whichever of the two
    matches the question better."""
    tenant = f"p{next(TENANTS)}"
    question = f"what is the {subject}?"
    older, newer = f"The {subject} is v{old_value}.", f"We {change} it: now v{new_value} for the {subject}."
    angle = float(np.arccos(cosine))
    close, far = unit(1, 0.1, 0), unit(float(np.cos(angle)), 0.1 * float(np.cos(angle)), float(np.sin(angle)))
    VECTORS.update({question: unit(1, 0, 0), older: close if older_closer else far, newer: far if older_closer else close})
    said = datetime(2026, 1, 1, tzinfo=UTC)
    old = RankingDefaultsStated.create(agent_id=tenant, content=older, said_at=said)
    new = RankingDefaultsStated.create(agent_id=tenant, content=newer, said_at=said + timedelta(days=days))
    records = ContextAssembler(RankingDefaultsStated).assemble(question, agent_id=tenant).records
    assert records[0] == new and old in records


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subject=st.sampled_from(SUBJECTS), old_value=st.integers(0, 999), new_value=st.integers(1000, 1999),
       ending=st.sampled_from(sorted(ENDING_WORDS)), cosine=st.floats(CURRENT_UPDATE_COSINE + 0.01, UPDATE_COSINE - 0.01),
       older_closer=st.booleans(), days=st.integers(1, 400))
def test_asked_how_things_stand_an_ended_value_puts_the_newer_first(db, subject, old_value, new_value, ending, cosine,
                                                                     older_closer, days):
    """A newer fact saying an end, correction or replacement of the older one's value (ENDING_WORDS,
    SPEC.md forms 1, 2, 5) leads when asked how things stand, at any similarity from
    CURRENT_UPDATE_COSINE up to where the two values alone would say it (UPDATE_COSINE); asked
    about the past, relevance keeps its order."""
    tenant = f"e{next(TENANTS)}"
    older, newer = f"The {subject} is v{old_value}.", f"Ours {ending} it: v{new_value} for the {subject}."
    now, then = f"what is the {subject}?", f"what was the {subject} first?"
    angle = float(np.arccos(cosine))
    close, far = unit(1, 0.1, 0), unit(float(np.cos(angle)), 0.1 * float(np.cos(angle)), float(np.sin(angle)))
    VECTORS.update({now: unit(1, 0, 0), then: unit(1, 0, 0), older: close if older_closer else far,
                    newer: far if older_closer else close})
    said = datetime(2026, 1, 1, tzinfo=UTC)
    old = RankingDefaultsStated.create(agent_id=tenant, content=older, said_at=said)
    new = RankingDefaultsStated.create(agent_id=tenant, content=newer, said_at=said + timedelta(days=days))
    records = ContextAssembler(RankingDefaultsStated).assemble(now, agent_id=tenant).records
    assert records[0] == new and old in records
    if older_closer:
        assert ContextAssembler(RankingDefaultsStated).assemble(then, agent_id=tenant).records[0] == old
