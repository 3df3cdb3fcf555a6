"""FrequencySketch: count-min sizing, never under-counting, counts that follow saves and deletes."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, KeyField, Model, ModelException, StringField, ValidationError
from redmem.fields import FrequencySketch
from redmem.fields._sketch import counter_indexes, sketch_size
from redmem.text import default_analyzer


class SketchMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    words = FrequencySketch(partition_by="agent_id")
    small = FrequencySketch(epsilon=0.05, delta=0.1, fingerprint_fn=lambda m: m.topic)


_partitions = itertools.count()


def test_sizes():
    # w = ceil(e / 0.001) = ceil(2718.28), d = ceil(ln 100) = ceil(4.605)
    assert sketch_size(0.001, 0.01) == (2719, 5)
    assert (SketchMemory.words.width, SketchMemory.words.depth) == (2719, 5)
    assert sketch_size(0.05, 0.1) == (55, 3)


def test_one_counter_per_row():
    indexes = counter_indexes("deploy", 2719, 5)
    assert [i // 2719 for i in indexes] == [0, 1, 2, 3, 4]
    assert indexes == counter_indexes("deploy", 2719, 5)


@pytest.mark.parametrize("options", [{"epsilon": 0}, {"delta": 1.0}])
def test_bad_parameters_raise(options):
    with pytest.raises(ModelException):
        FrequencySketch(**options)


def test_direct_counts(any_db):
    SketchMemory.words.add("deploy deploy budget", agent_id="a")
    SketchMemory.words.add("deploying", count=3, agent_id="a")
    assert SketchMemory.words.estimate("deploys", agent_id="a") == 5
    assert SketchMemory.words.estimate_many(["budget", "cats", "the"], agent_id="a") == [1, 0, 0]
    assert SketchMemory.words.total(agent_id="a") == 6
    assert SketchMemory.words.estimate("deploy", agent_id="b") == 0


def test_counts_follow_saves_updates_and_deletes(any_db):
    first = SketchMemory.create(agent_id="a", topic="deploy", content="deploy the budget")
    SketchMemory.create(agent_id="a", topic="budget")
    assert SketchMemory.words.estimate_many(["deploy", "budget"], agent_id="a") == [2, 2]
    first.content = "cats"
    first.save()
    assert SketchMemory.words.estimate_many(["deploy", "budget", "cat"], agent_id="a") == [1, 1, 1]
    first.delete()
    assert SketchMemory.words.estimate_many(["deploy", "budget", "cat"], agent_id="a") == [0, 1, 0]
    assert SketchMemory.words.total(agent_id="a") == 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet="abcdefgh ", max_size=30), min_size=1, max_size=30))
def test_estimates_never_undercount_and_stay_within_the_bound(any_db, texts):
    partition = f"p{next(_partitions)}"
    for text in texts:
        SketchMemory.small.add(text, agent_id=partition)
    terms = default_analyzer().tokens
    truth = Counter(t for text in texts for t in terms(text))
    words = sorted({w for text in texts for w in text.split() if terms(w)}) + ["zzz"]
    expected = [truth[terms(word)[0]] for word in words]
    estimates = SketchMemory.small.estimate_many(words, agent_id=partition)
    total = SketchMemory.small.total(agent_id=partition)
    assert total == sum(truth.values())
    assert all(true <= estimate for true, estimate in zip(expected, estimates))
    # the epsilon * N bound holds per word with probability 1 - delta: check the typical case
    within = sum(e <= true + 0.05 * total for true, e in zip(expected, estimates))
    assert within >= 0.5 * len(words)


def test_estimates_are_close_on_a_larger_stream(any_db):
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(2000)]
    stream = [rng.choice(vocabulary[: rng.choice((20, 2000))]) for _ in range(20_000)]
    truth = Counter(stream)
    for chunk in range(0, len(stream), 1000):
        SketchMemory.words.add(" ".join(stream[chunk : chunk + 1000]), agent_id="big")
    estimates = SketchMemory.words.estimate_many(vocabulary, agent_id="big")
    bound = 0.001 * len(stream)
    assert all(truth[w] <= e for w, e in zip(vocabulary, estimates))
    assert sum(e <= truth[w] + bound for w, e in zip(vocabulary, estimates)) >= 0.99 * len(vocabulary)


def test_one_word_at_a_time(any_db):
    with pytest.raises(ValidationError):
        SketchMemory.words.estimate("deploy budget", agent_id="a")
    with pytest.raises(ValidationError):
        SketchMemory.words.estimate_many("deploy", agent_id="a")
    with pytest.raises(ValidationError):
        SketchMemory.words.add("deploy", count=1.5, agent_id="a")
