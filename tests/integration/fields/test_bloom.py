"""ExistenceFilter: sizing, hashing, measured false positives, no false negatives, saves, tenants."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import all_keys
from redmem import AutoKeyField, KeyField, Model, ModelException, QueryException, StringField, ValidationError
from redmem.fields import ExistenceFilter
from redmem.fields._bloom import bit_positions, bloom_size, false_positive_rate, term_hashes
from redmem.fields.search_protocol import run_search
from redmem.text import Analyzer, default_analyzer


class BloomMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    topics_seen = ExistenceFilter(fingerprint_fn=lambda m: m.topic, partition_by="agent_id")
    anything_seen = ExistenceFilter(error_rate=0.001, capacity=1000)


class BloomNote(Model):
    """Unpartitioned, default fingerprint: every non-key string field."""

    note_id = KeyField()
    title = StringField()
    body = StringField()
    seen = ExistenceFilter()


_partitions = itertools.count()


# -- formulas --------------------------------------------------------------------------------
def test_default_sizing():
    assert bloom_size(100_000, 0.01) == (958_505, 6)
    assert (BloomMemory.topics_seen.m, BloomMemory.topics_seen.k) == (958_505, 6)


def test_sizing_by_hand():
    # m = int(1000 * ln(1000) / ln(2)^2) = int(14377.588) ; k = int(14.377 * 0.6931) = int(9.965)
    assert bloom_size(1000, 0.001) == (14_377, 9)
    assert (BloomMemory.anything_seen.m, BloomMemory.anything_seen.k) == (14_377, 9)
    assert bloom_size(1, 0.5) == (1, 1)


def test_expected_rate_at_capacity_is_the_target():
    assert false_positive_rate(958_505, 6, 100_000) == pytest.approx(0.01, rel=0.02)
    assert false_positive_rate(958_505, 6, 0) == 0.0


def test_positions_follow_double_hashing():
    h1, h2 = term_hashes("deploy")
    assert 0 <= h1 < 2**32 and 0 <= h2 < 2**32
    m, k = 958_505, 6
    assert bit_positions("deploy", m, k) == [(h1 + i * h2) % m for i in range(k)]
    assert bit_positions("deploy", m, k) == bit_positions("deploy", m, k)
    assert bit_positions("deploy", m, k) != bit_positions("deploys", m, k)


@pytest.mark.parametrize(
    "options", [{"error_rate": 0}, {"error_rate": 1.0}, {"capacity": 0}, {"capacity": 1.5}, {"capacity": True}]
)
def test_bad_parameters_raise(options):
    with pytest.raises(ModelException):
        ExistenceFilter(**options)


# -- Lua against Python ------------------------------------------------------------------------
def test_lua_sets_exactly_the_computed_bits(any_db):
    BloomMemory.topics_seen.add(["deploy kubernetes"], agent_id="a")
    key = BloomMemory.topics_seen.key(BloomMemory._meta.keyspace(("a",)))
    expected = {p for term in ("deploy", "kubernet") for p in bit_positions(term, 958_505, 6)}
    assert all(any_db.getbit(key, p) == 1 for p in expected)
    assert any_db.bitcount(key) == len(expected)
    assert BloomMemory.topics_seen.fill_ratio(agent_id="a") == len(expected) / 958_505


def test_add_reports_surely_new_terms(any_db):
    assert BloomMemory.topics_seen.add("alpha beta", agent_id="a") == 2
    assert BloomMemory.topics_seen.add(["beta", "alpha gamma"], agent_id="a") == 1
    assert BloomMemory.topics_seen.add("", agent_id="a") == 0


# -- false positives and negatives -----------------------------------------------------------
def test_measured_false_positive_rate_at_capacity(any_db):
    """100k terms in, 100k others checked: the rate is the 1% target within 1.5x either way."""
    bloom = BloomMemory.topics_seen
    present = [f"present-{i}" for i in range(100_000)]
    absent = [f"absent-{i}" for i in range(100_000)]
    bloom.add(present, agent_id="fp")
    assert all(bloom.might_exist_many(present, agent_id="fp"))  # no false negative
    rate = sum(bloom.might_exist_many(absent, agent_id="fp")) / len(absent)
    assert 0.01 / 1.5 <= rate <= 0.01 * 1.5
    # fraction of set bits: 1 - e^(-kn/m)
    assert bloom.fill_ratio(agent_id="fp") == pytest.approx(1 - math.exp(-6 * 100_000 / 958_505), rel=0.01)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=20))
def test_no_false_negatives(any_db, texts):
    partition = f"p{next(_partitions)}"
    BloomMemory.topics_seen.add(texts, agent_id=partition)
    expected = [bool(default_analyzer().tokens(text)) for text in texts]
    assert BloomMemory.topics_seen.might_exist_many(texts, agent_id=partition) == expected


def test_unseen_words_are_definitely_missing(any_db):
    BloomMemory.topics_seen.add("deployment pipeline", agent_id="a")
    assert BloomMemory.topics_seen.definitely_missing("kubernetes", agent_id="a")
    assert not BloomMemory.topics_seen.definitely_missing("deploying", agent_id="a")  # same stem
    assert BloomMemory.topics_seen.definitely_missing("the of and", agent_id="a")  # no terms at all


# -- batches ------------------------------------------------------------------------------------
def test_batch_check_answers_each_text_in_order(any_db):
    BloomMemory.topics_seen.add(["deploy", "budget Q3", "東京"], agent_id="a")
    texts = ["deploying now", "cats", "q3", "", "what about 東京都", "unknown words only", "#12"]
    assert BloomMemory.topics_seen.might_exist_many(texts, agent_id="a") == [
        True, False, True, False, True, False, False
    ]


def test_batch_check_is_one_round_trip(db):
    BloomMemory.topics_seen.add([f"t{i}" for i in range(50)], agent_id="a")
    texts = [f"t{i}" for i in range(0, 100, 2)]
    before = _script_calls(db)
    assert BloomMemory.topics_seen.might_exist_many(texts, agent_id="a") == [True] * 25 + [False] * 25
    assert _script_calls(db) - before == 1


def test_big_batches_are_split_into_calls_of_one_pipeline(any_db):
    texts = [f"id-{i}" for i in range(25_000)]  # 150k positions: three script calls
    assert BloomMemory.topics_seen.add(texts, agent_id="big") == 25_000
    assert all(BloomMemory.topics_seen.might_exist_many(texts, agent_id="big"))


def _script_calls(client) -> int:
    stats = client.info("commandstats")
    return sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("eval", "evalsha"))


# -- saves --------------------------------------------------------------------------------------
def test_saves_add_the_fingerprint(any_db):
    BloomMemory.create(agent_id="a", topic="Deployment rollback", content="kubernetes")
    assert BloomMemory.topics_seen.might_exist("deploy", agent_id="a")
    assert BloomMemory.topics_seen.might_exist("rollbacks", agent_id="a")
    assert BloomMemory.topics_seen.definitely_missing("kubernetes", agent_id="a")  # content is not the fingerprint


def test_updates_and_deletes_never_remove_terms(any_db):
    memory = BloomMemory.create(agent_id="a", topic="deployment")
    memory.topic = "budget"
    memory.save()
    assert BloomMemory.topics_seen.might_exist_many(["deploy", "budget"], agent_id="a") == [True, True]
    memory.delete()
    assert BloomMemory.topics_seen.might_exist("deploy", agent_id="a")


def test_default_fingerprint_is_the_non_key_string_fields(any_db):
    BloomNote.create(note_id="n-77", title="Release plan", body="ship v2")
    assert BloomNote.seen.might_exist_many(["release", "plan", "v2", "ship"]) == [True] * 4
    assert BloomNote.seen.definitely_missing("n-77")
    assert BloomNote.query.might_exist("plans")


def test_every_filter_follows_the_model_partition(any_db):
    BloomMemory.create(agent_id="a", topic="x", content="alpha")
    BloomMemory.create(agent_id="b", topic="y", content="beta")
    assert BloomMemory.anything_seen.might_exist_many(["alpha", "beta", "x"], agent_id="a") == [True, False, True]


@pytest.mark.parametrize("fingerprint, expected", [
    (["deploy", None, "budget"], [True, True]),
    (None, [False, False]),
    ("", [False, False]),
])
def test_fingerprint_may_be_a_list_or_none(any_db, fingerprint, expected):
    class Event(Model):
        event_id = AutoKeyField()
        seen = ExistenceFilter(fingerprint_fn=lambda e: fingerprint)

    Event.create()
    assert Event.seen.might_exist_many(["deploy", "budget"]) == expected


def test_bad_fingerprint_aborts_the_whole_save(any_db):
    class Event(Model):
        event_id = KeyField()
        name = StringField()
        seen = ExistenceFilter(fingerprint_fn=lambda e: 42)

    with pytest.raises(ValidationError):
        Event.create(event_id="e1", name="x")
    assert Event.query.get(event_id="e1") is None
    assert all_keys(any_db) == set()


def test_model_without_string_fields_needs_a_fingerprint_fn(any_db):
    class Counter(Model):
        counter_id = KeyField()
        seen = ExistenceFilter()

    with pytest.raises(ModelException):
        Counter.create(counter_id="c")


def test_custom_analyzer(any_db):
    class Log(Model):
        log_id = AutoKeyField()
        line = StringField()
        seen = ExistenceFilter(analyzer=Analyzer(stem=False, stopwords=()))

    Log.create(line="The running jobs")
    assert Log.seen.might_exist_many(["the", "running", "run"]) == [True, True, False]


# -- tenants and queries --------------------------------------------------------------------------
def test_tenants_are_isolated(any_db):
    BloomMemory.create(agent_id="a", topic="deploy")
    BloomMemory.create(agent_id="b", topic="budget")
    bloom = BloomMemory.topics_seen
    assert bloom.might_exist_many(["deploy", "budget"], agent_id="a") == [True, False]
    assert bloom.might_exist_many(["deploy", "budget"], agent_id="b") == [False, True]
    assert bloom.fill_ratio(agent_id="c") == 0.0
    keys = {key for key in all_keys(any_db) if ":bf:" in key}
    assert {key.split(":bf:")[0].rsplit(":", 1)[-1] for key in keys} >= {"{a}", "{b}"}


def test_query_methods_use_the_filter_partition(any_db):
    BloomMemory.create(agent_id="a", topic="deploy")
    query = BloomMemory.query.filter(agent_id="a")
    assert query.might_exist("deploying", field="topics_seen")
    assert query.definitely_missing("budget", field="topics_seen")
    assert query.might_exist_many(["deploy", "budget"], field="topics_seen") == [True, False]
    assert BloomMemory.query.filter(agent_id="b").definitely_missing("deploy", field="topics_seen")


def test_query_methods_name_the_filter_when_there_are_several(any_db):
    with pytest.raises(QueryException, match="field="):
        BloomMemory.query.filter(agent_id="a").might_exist("deploy")


def test_partition_must_be_named(any_db):
    with pytest.raises(QueryException):
        BloomMemory.topics_seen.might_exist("deploy")
    with pytest.raises(QueryException):
        BloomMemory.topics_seen.might_exist("deploy", agent_id="a", topic="x")
    with pytest.raises(QueryException):
        BloomMemory.query.might_exist("deploy", field="topics_seen")


def test_texts_must_be_strings(any_db):
    with pytest.raises(ValidationError):
        BloomMemory.topics_seen.might_exist(42, agent_id="a")
    with pytest.raises(ValidationError):
        BloomMemory.topics_seen.might_exist_many("one string", agent_id="a")


def test_term_searcher_checks_terms_unanalysed(any_db):
    """term_searcher looks a term up as given (no stemming): the stored stem is found, the
    unstemmed word it came from is not; searcher analyses the same word and finds it."""
    BloomMemory.topics_seen.add("deploying", agent_id="t")
    space = BloomMemory._meta.keyspace(("t",))
    field = BloomMemory.topics_seen
    assert run_search(any_db, field.term_searcher(space, ["deploy", "deploying"])) == [True, False]
    assert run_search(any_db, field.searcher(space, ["deploying"])) == [True]
    with pytest.raises(ValidationError):
        field.term_searcher(space, "deploy")
