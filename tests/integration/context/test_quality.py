"""Retrieval quality (the probe, the scores after assemble, every metric) and the adaptive loop."""

from __future__ import annotations

import math
import statistics
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import all_keys
from models import SEED_RANKING
from redmem import AutoKeyField, FloatField, KeyField, Model, QueryException, StringField, ValidationError
from redmem.context._candidates import Candidate
from redmem.context._retrieval import Capabilities
from redmem.fields import BM25Field, ConfidenceField, DecayingSortedField, ExistenceFilter
from redmem.fields._decay import confidence_modulation
from redmem.recipes import AssemblerConfig
from redmem.recipes.adaptive import AdaptationStep, AdaptiveAssembler, default_metric, perturbed
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.quality import (
    RetrievalQuality,
    assess_retrieval,
    familiarity,
    feeling_of_knowing,
    mean_confidence,
    named_cues,
    score_distribution,
    score_spread,
    staleness_ratio,
    weak_fraction,
)


class Recollection(Model):
    """``models.Memory`` without vectors, graph or access tracking: the probe's numbers come from
    BM25, decay, confidence and the topic filter alone (local for that reason)."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    topics_seen = ExistenceFilter(fingerprint_fn=lambda m: m.topic)
    content_bm25 = BM25Field(source="content")


class Unfiltered(Model):
    """No ExistenceFilter: every cue has familiarity 0.5."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    content_bm25 = BM25Field(source="content")


class Keywords(Model):
    """BM25 only: no confidence (avg 1.0), no decay (proxy = combined score, no staleness)."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


class Traces(Model):
    """No BM25Field: the probe's retrieval is the decay top-k, shared by every cue."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    relevance = DecayingSortedField(partition_by="agent_id")
    confidence = ConfidenceField()


CONTENTS = ("deployment runs nightly", "deployment needs approval", "deployment rollback plan")
SIGNALS = (0.9, 0.5, 0.3)  # one update each from 0.5: 0.7 / 0.5 / 0.4
CUES = {"topic": "deployment", "task": "deployment rollback"}
FRESH = 0.01**-0.1  # power decay at rate 0.1 of a record touched < 0.01 days ago: 10 ** 0.2


def remember(model=Recollection, agent="agent-1", importances=(1.0, 1.0, 1.0), **extra):
    records = [
        model.create(agent_id=agent, content=text, importance=weight, **extra)
        for text, weight in zip(CONTENTS, importances)
    ]
    for record, signal in zip(records, SIGNALS):
        ConfidenceField.update_confidence(record, "confidence", signal)
    return records


# -- formulas ----------------------------------------------------------------------------------
def test_familiarity_of_the_filter_answers():
    assert (familiarity(True), familiarity(False), familiarity(None)) == (1.0, 0.0, 0.5)


def test_the_two_ways_to_reach_the_reference_fok():
    # 0.4 * familiar + 0.4 * min(n, max_items) / max_items + 0.2 * weak
    assert feeling_of_knowing(1.0, 3, 0.0, 5) == pytest.approx(0.64, abs=1e-12)  # filter says yes
    assert feeling_of_knowing(0.5, 3, 1.0, 5) == pytest.approx(0.64, abs=1e-12)  # no filter, all weak
    assert feeling_of_knowing(1.0, 12, 1.0, 5) == pytest.approx(1.0)  # coverage saturates at max_items
    assert feeling_of_knowing(0.0, 0, 0.0, 5) == 0.0


def test_weak_means_strictly_between_zero_and_the_threshold():
    assert weak_fraction([0.0, 0.2, 0.5, 0.7], 0.5) == 0.25
    assert weak_fraction([], 0.5) == 0.0


def test_score_spread_is_the_coefficient_of_variation():
    assert score_spread([1.0, 3.0]) == pytest.approx(0.5)  # pstdev 1, mean 2
    assert score_spread([2.0, 2.0, 2.0]) == 0.0
    assert score_spread([-1.0, 1.0]) == 0.0  # |mean| < 1e-9
    assert score_spread([]) == 0.0


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=40))
def test_distribution_agrees_with_inclusive_quantiles(values):
    found = score_distribution(values)
    p25, median, p75 = statistics.quantiles(values, n=4, method="inclusive")
    expected = {"min": min(values), "p25": p25, "median": median, "p75": p75, "max": max(values)}
    assert found == pytest.approx(expected, rel=1e-9, abs=1e-6)
    assert list(found.values()) == sorted(found.values())


def test_distribution_of_one_and_of_none():
    assert set(score_distribution([2.5]).values()) == {2.5}
    assert score_distribution([]) == {"min": 0.0, "p25": 0.0, "median": 0.0, "p75": 0.0, "max": 0.0}


def test_staleness_and_mean_confidence():
    assert staleness_ratio([0.9, 0.49, 0.5, 0.1]) == 0.5
    assert staleness_ratio([]) == 0.0
    assert mean_confidence(None) == 1.0
    assert mean_confidence([]) == 0.0
    assert mean_confidence([0.7, 0.5, 0.4]) == pytest.approx(1.6 / 3)


def test_named_cues():
    assert named_cues({"topic": "deploy", "empty": " ", "none": None, "n": 3}) == {"topic": "deploy", "n": "3"}
    assert named_cues("what ships tonight") == {"query": "what ships tonight"}
    assert named_cues(None) == named_cues("  ") == {}
    with pytest.raises(QueryException):
        named_cues(["deploy"])


# -- the reference fixture ---------------------------------------------------------------------
def assert_reference_numbers(quality: RetrievalQuality) -> None:
    """Three records with confidence 0.7 / 0.5 / 0.4, cues "topic" and "task", max_items 5.

    avg_confidence = (0.7 + 0.5 + 0.4) / 3 = 1.6 / 3. For each cue the ExistenceFilter says the
    text may exist (familiarity 1), the cue finds all three records (coverage 3 / 5) and no record
    is weak: all were touched less than 0.01 days ago, so their decay score is 0.01 ** -0.1 =
    1.585 >= surfacing_threshold 0.5. fok = 0.4 * 1 + 0.4 * 3/5 + 0.2 * 0 = 0.64 for each cue.
    """
    assert quality.avg_confidence == pytest.approx(1.6 / 3, abs=1e-12)
    assert quality.fok_score == pytest.approx(0.64, abs=1e-12)
    assert quality.per_cue_fok == pytest.approx({"topic": 0.64, "task": 0.64}, abs=1e-12)
    assert quality.candidate_count == 3
    assert quality.staleness_ratio == 0.0
    assert quality.score_spread == pytest.approx(0.0, abs=1e-12)
    assert quality.score_distribution == pytest.approx(dict.fromkeys(("min", "p25", "median", "p75", "max"), FRESH))


def test_reference_fixture_by_the_probe(any_db):
    remember(topic="deployment")
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    assert_reference_numbers(assembler.assess(CUES, agent_id="agent-1"))


def test_reference_fixture_after_assemble(any_db):
    remember(topic="deployment")
    result = ContextAssembler(Recollection, **SEED_RANKING, max_items=5).assemble(CUES, assess_quality=True, agent_id="agent-1")
    assert len(result.records) == 3
    assert_reference_numbers(result.metadata["quality"])


def test_reference_fok_without_a_filter_when_every_record_is_weak(any_db):
    # No ExistenceFilter: familiarity 0.5. Importance 0.2 puts every decay score at
    # 0.2 * 1.585 = 0.317, inside (0, 0.5): all weak. fok = 0.4 * 0.5 + 0.4 * 3/5 + 0.2 * 1 = 0.64.
    remember(Unfiltered, importances=(0.2, 0.2, 0.2))
    quality = ContextAssembler(Unfiltered, **SEED_RANKING, max_items=5).assess(CUES, agent_id="agent-1")
    assert quality.fok_score == pytest.approx(0.64, abs=1e-12)
    assert quality.avg_confidence == pytest.approx(1.6 / 3, abs=1e-12)
    assert quality.score_distribution["max"] == pytest.approx(0.2 * FRESH)


def test_quality_after_assemble_sees_confidence_as_retrieved(db):
    remember(topic="deployment")  # max_items 2: the third candidate is suppressed (signal 0.3)
    result = ContextAssembler(Recollection, **SEED_RANKING, max_items=2).assemble(CUES, assess_quality=True, agent_id="agent-1")
    assert result.metadata["quality"].avg_confidence == pytest.approx(1.6 / 3)


def test_quality_after_assemble_uses_the_assembly_clock(db):
    remember(topic="deployment")
    later = time.time() + 2000 * 86400
    result = ContextAssembler(Recollection, **SEED_RANKING, max_items=5).assemble(
        CUES, assess_quality=True, now=later, agent_id="agent-1")
    assert result.metadata["quality"].staleness_ratio == pytest.approx(2 / 3)


# -- each metric on stored state ---------------------------------------------------------------
def test_a_cue_the_filter_has_never_seen_scores_zero(any_db):
    remember(topic="deployment")
    cues = {"topic": "deployment", "other": "kubernetes"}  # the filter fingerprints topics only
    quality = ContextAssembler(Recollection, **SEED_RANKING, max_items=5).assess(cues, agent_id="agent-1")
    assert quality.per_cue_fok == pytest.approx({"topic": 0.64, "other": 0.0})
    assert quality.fok_score == pytest.approx(0.32)
    assert quality.candidate_count == 3


def test_staleness_and_weak_traces_years_later(any_db):
    records = remember(topic="deployment")
    now = time.time() + 2000 * 86400
    quality = ContextAssembler(Recollection, **SEED_RANKING, max_items=5).assess(CUES, agent_id="agent-1", now=now)
    # freshness = 2000 ** -0.1 = 0.468 times the confidence modulation (0.5 is the centre):
    # confidence 0.7 decays slower (0.516, fresh), 0.5 and 0.4 fall below 0.5 (stale).
    strength = [Recollection.relevance.score_of(r, as_of=now) for r in records]
    for value, confidence in zip(strength, (0.7, 0.5, 0.4)):
        assert value == pytest.approx(2000**-0.1 * confidence_modulation(2000, 0.1, confidence, 0.5), rel=1e-6)
    assert strength[0] > 0.5 > strength[1] > strength[2]
    assert quality.staleness_ratio == pytest.approx(2 / 3)
    assert quality.fok_score == pytest.approx(0.4 + 0.24 + 0.2 * 2 / 3)  # two weak traces of three
    assert quality.score_distribution["min"] == pytest.approx(strength[2])
    assert quality.score_distribution["median"] == pytest.approx(strength[1])
    assert quality.score_distribution["max"] == pytest.approx(strength[0])
    assert quality.score_spread == pytest.approx(statistics.pstdev(strength) / statistics.fmean(strength))


def test_spread_follows_the_importance(any_db):
    remember(topic="deployment", importances=(1.0, 2.0, 3.0))
    quality = ContextAssembler(Recollection, **SEED_RANKING, max_items=5).assess(CUES, agent_id="agent-1")
    assert quality.score_spread == pytest.approx(statistics.pstdev([1, 2, 3]) / 2)
    assert quality.score_distribution == pytest.approx(
        {"min": FRESH, "p25": 1.5 * FRESH, "median": 2 * FRESH, "p75": 2.5 * FRESH, "max": 3 * FRESH}
    )


def test_without_confidence_or_decay_the_proxy_is_the_keyword_score(any_db):
    for text in ("deployment runs nightly", "deployment deployment rollback", "lunch menu"):
        Keywords.create(agent_id="agent-1", content=text)
    quality = ContextAssembler(Keywords, **SEED_RANKING, max_items=4).assess("deployment rollback", agent_id="agent-1")
    assert quality.avg_confidence == 1.0
    assert quality.staleness_ratio == 0.0
    assert quality.candidate_count == 2
    assert quality.score_distribution["max"] == 1.0  # the best hit of the cue
    assert 0.0 < quality.score_distribution["min"] < 0.5  # "runs nightly" matches one term of two
    # familiarity 0.5 (no filter), coverage 2/4, one of two hits weak
    assert quality.per_cue_fok == pytest.approx({"query": 0.2 + 0.2 + 0.1})


def test_without_keyword_search_the_probe_reads_the_decay_top(any_db):
    for text in CONTENTS + ("lunch menu",):
        Traces.create(agent_id="agent-1", content=text)
    quality = ContextAssembler(Traces, **SEED_RANKING, max_items=2).assess({"a": "x", "b": "y"}, agent_id="agent-1")
    assert quality.candidate_count == 2  # the same top 2 for both cues
    assert quality.per_cue_fok == pytest.approx({"a": 0.2 + 0.4, "b": 0.2 + 0.4})
    assert quality.avg_confidence == 0.5  # no evidence yet: initial confidence


def test_given_candidates_every_cue_scores_that_list(any_db):
    records = remember(topic="deployment")
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    candidates = [Candidate(key=r.db_key, record=r, pull=1.0, combined=1.0) for r in records[:2]]
    quality = assembler.assess({"topic": "deployment"}, candidates=candidates, agent_id="agent-1")
    assert quality.candidate_count == 2
    assert quality.avg_confidence == pytest.approx(0.6)
    assert quality.per_cue_fok == pytest.approx({"topic": 0.4 + 0.4 * 2 / 5})
    unscored = assembler.assess(None, candidates=candidates, agent_id="agent-1")
    assert (unscored.fok_score, unscored.per_cue_fok, unscored.avg_confidence) == (0.0, {}, pytest.approx(0.6))


def test_assess_retrieval_takes_what_it_reads_not_an_assembler(any_db):
    """Model, capabilities, options, key space and named cues: what ``assess()`` gives it."""
    remember(topic="deployment")
    config, now = AssemblerConfig(max_items=5), time.time()
    space = Recollection.query.filter(agent_id="agent-1").partition()
    quality = assess_retrieval(Recollection, Capabilities.of(Recollection), config, space, named_cues(CUES), now=now)
    assert_reference_numbers(quality)
    assert quality == ContextAssembler(Recollection, config=config).assess(CUES, agent_id="agent-1", now=now)


def test_nothing_found_and_no_cues(any_db):
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    quality = assembler.assess(CUES, agent_id="nobody")
    assert (quality.avg_confidence, quality.fok_score, quality.candidate_count) == (0.0, 0.0, 0)
    assert assembler.assess(None, agent_id="nobody").per_cue_fok == {}


def test_tenants_never_count_each_other(any_db):
    remember(topic="deployment")
    for _ in range(2):
        remember(agent="agent-2", topic="deployment")
    Recollection.create(agent_id="agent-2", topic="billing", content="invoices go out monthly")
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    assert_reference_numbers(assembler.assess(CUES, agent_id="agent-1"))
    assert assembler.assess({"topic": "billing"}, agent_id="agent-1").fok_score == 0.0
    crowded = assembler.assess({"topic": "deployment"}, agent_id="agent-2")  # six records, max_items 5
    assert (crowded.candidate_count, crowded.fok_score) == (5, pytest.approx(0.4 + 0.4))


def test_the_partition_must_be_named(any_db):
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    with pytest.raises(QueryException):
        assembler.assess(CUES)
    with pytest.raises(QueryException):
        assembler.assess(CUES, agent_id="a", topic="x")
    with pytest.raises(QueryException):
        assembler.assess(42, agent_id="a")


def test_a_missing_tenant_is_refused_with_the_call_to_write(any_db):
    """No default tenant (one assembler serves many agents): the error names the keyword to add."""
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    for call in ("assess", "assemble"):
        with pytest.raises(QueryException) as refused:
            getattr(assembler, call)(CUES)
        assert str(refused.value).startswith(
            f'{call}() on Recollection needs its tenant: pass the partition field(s) [\'agent_id\'] as '
            f'keyword arguments, e.g. assembler.{call}(query_cues, agent_id="<tenant>"); got none.')
        with pytest.raises(QueryException, match=r"got \['agent'\]"):
            getattr(assembler, call)(CUES, agent="a")


# -- cost --------------------------------------------------------------------------------------
def test_round_trips_of_the_probe_and_of_scoring(db, sent):
    records = remember(topic="deployment")
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    assembler.assess(CUES, agent_id="agent-1")  # scripts loaded

    def count(cues, **options):
        sent.clear()
        assembler.assess(cues, agent_id="agent-1", **options)
        return len(sent)

    assert count(CUES) == 4  # filter for both cues, one keyword search per cue, one read of scores
    assert count({"topic": "deployment", "other": "kubernetes"}) == 3  # a missing cue is not searched
    candidates = [Candidate(key=r.db_key, combined=1.0) for r in records]
    assert count(CUES, candidates=candidates) == 2


def test_the_probe_writes_nothing(db):
    remember(topic="deployment")
    assembler = ContextAssembler(Recollection, **SEED_RANKING, max_items=5)
    before = {key: db.dump(key) for key in all_keys(db)}
    assembler.assess(CUES, agent_id="agent-1")
    assert {key: db.dump(key) for key in all_keys(db)} == before


# -- the adaptive loop -------------------------------------------------------------------------
def test_perturbation_moves_weight_within_the_bounds():
    assert perturbed({"a": 0.6, "b": 0.3}, "a", "b", 0.05) == pytest.approx({"a": 0.55, "b": 0.35})
    assert perturbed({"a": 0.07, "b": 0.88}, "a", "b", 0.05) == pytest.approx({"a": 0.05, "b": 0.9})
    assert perturbed({"a": 0.05, "b": 0.5}, "a", "b", 0.05) is None
    assert perturbed({"a": 0.5, "b": 0.9}, "a", "b", 0.05) is None


def lexical_assembler(weights):
    return ContextAssembler(Recollection, **SEED_RANKING, score_weights=weights, max_items=5)


def test_a_worse_trial_is_reverted_and_a_better_one_kept(db):
    remember(topic="deployment")
    inner = lexical_assembler({"relevance": 0.6, "confidence": 0.3})
    adaptive = AdaptiveAssembler(inner, window_size=2, metric=lambda quality: inner.score_weights["relevance"])
    phases = []
    for _ in range(8):
        phases.append(adaptive.phase)
        result = adaptive.assemble(CUES, agent_id="agent-1")
        assert isinstance(result.metadata["quality"], RetrievalQuality)
    assert phases == ["baseline"] * 2 + ["candidate"] * 2 + ["baseline"] * 2 + ["candidate"] * 2
    reverted, kept = adaptive.history
    assert (reverted.donor, reverted.receiver, reverted.kept) == ("relevance", "confidence", False)
    assert reverted.trial == pytest.approx({"relevance": 0.55, "confidence": 0.35})
    assert (reverted.baseline_mean, reverted.candidate_mean) == pytest.approx((0.6, 0.55))
    assert (kept.donor, kept.receiver, kept.kept) == ("confidence", "relevance", True)
    assert (kept.baseline_mean, kept.candidate_mean) == pytest.approx((0.6, 0.65))
    assert inner.score_weights == pytest.approx({"relevance": 0.65, "confidence": 0.25})
    assert adaptive.score_weights == inner.score_weights


def test_the_trial_runs_with_the_trial_weights(db):
    inner = lexical_assembler({"relevance": 0.6, "confidence": 0.3})
    adaptive = AdaptiveAssembler(inner, window_size=3)
    for value in (0.5, 0.5, 0.5):
        adaptive.record(value)
    assert adaptive.phase == "candidate"
    assert inner.score_weights == pytest.approx({"relevance": 0.55, "confidence": 0.35})
    for value in (0.5, float("nan"), 0.5, 0.5):  # NaN is not counted; a tie keeps the trial
        adaptive.record(value)
    assert [step.kept for step in adaptive.history] == [True]
    assert inner.score_weights == pytest.approx({"relevance": 0.55, "confidence": 0.35})


def test_default_metric_is_fok_times_confidence(db):
    remember(topic="deployment")
    adaptive = AdaptiveAssembler(lexical_assembler({"relevance": 0.6, "confidence": 0.3}), window_size=2)
    for _ in range(4):
        adaptive.assemble(CUES, agent_id="agent-1", assess_quality=False)  # quality is needed: forced on
    (step,) = adaptive.history
    assert isinstance(step, AdaptationStep)
    assert step.baseline_mean == pytest.approx(0.64 * 1.6 / 3)
    assert step.candidate_mean == pytest.approx(step.baseline_mean)
    assert default_metric(RetrievalQuality(0.5, 0.0, 0.8, 0.0)) == pytest.approx(0.4)


def test_pairs_that_cannot_move_are_passed_over(db):
    inner = lexical_assembler({"relevance": 0.05, "confidence": 0.95})
    adaptive = AdaptiveAssembler(inner, window_size=1)
    adaptive.record(1.0)  # relevance->confidence cannot move (relevance at the floor); the reverse can
    assert inner.score_weights == pytest.approx({"relevance": 0.1, "confidence": 0.9})


def test_one_weight_is_never_tuned(db):
    inner = lexical_assembler({"relevance": 1.0})
    adaptive = AdaptiveAssembler(inner, window_size=1)
    for value in (1.0, 0.0, 1.0):
        adaptive.record(value)
    assert (adaptive.phase, adaptive.history, inner.score_weights) == ("baseline", [], {"relevance": 1.0})


@pytest.mark.parametrize("options", [
    {"window_size": 0}, {"window_size": 2.5}, {"window_size": True},
    {"weight_perturbation": 0.0}, {"weight_perturbation": 1.0}, {"weight_perturbation": "0.1"},
    {"metric": "fok"},
])
def test_bad_settings(db, options):
    with pytest.raises(ValidationError):
        AdaptiveAssembler(lexical_assembler({"relevance": 0.6, "confidence": 0.3}), **options)


def test_metric_sees_the_quality_of_each_call(db):
    remember(topic="deployment")
    seen = []
    adaptive = AdaptiveAssembler(lexical_assembler({"relevance": 0.6, "confidence": 0.3}), window_size=5,
                                 metric=lambda quality: seen.append(quality) or 0.0)
    adaptive.assemble(CUES, agent_id="agent-1")
    adaptive.assemble({"topic": "billing"}, agent_id="agent-1")
    assert [q.candidate_count for q in seen] == [3, 0]
    assert math.isclose(seen[0].fok_score, 0.64)
