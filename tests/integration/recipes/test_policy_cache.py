"""PolicyCache: the formulas (Wilson, TD, chi-square), crystallisation from the event stream,
timing cycles, concurrency and tenant isolation."""

from __future__ import annotations

import hashlib
import json
import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import all_keys
from redmem import ObservationProtocol, ValidationError
from redmem.recipes.policy_cache import PolicyCache
from redmem.recipes.policy_models import PolicyEntry, PolicyEvent, PolicyRules, fold_event, state_fingerprint
from redmem.recipes.policy_stats import chi_square_sf, chi_square_statistic, td_update, timing_peak, wilson_lower_bound

DAY, HOUR = 86400.0, 3600.0
MONDAY = 20_255 * DAY  # 2025-06-16, a Monday, 00:00 UTC
THURSDAY = MONDAY + 3 * DAY
STATE = {"task": "deploy", "env": "prod"}
DAILY_9 = f"{86400.0!r}@{9.5 * HOUR!r}"
DAILY_21 = f"{86400.0!r}@{21.5 * HOUR!r}"
WEEKLY_MONDAY = f"{604800.0!r}@{4.5 * DAY!r}"
WEEKLY_THURSDAY = f"{604800.0!r}@{0.5 * DAY!r}"


# -- formulas ------------------------------------------------------------------------------------
def test_wilson_lower_bound_numbers():
    assert round(wilson_lower_bound(8, 8), 3) == 0.676
    assert round(wilson_lower_bound(6, 6), 4) == 0.6097  # the fewest straight successes above 0.6
    assert round(wilson_lower_bound(5, 5), 4) == 0.5655
    assert round(wilson_lower_bound(5, 10), 4) == 0.2366
    assert wilson_lower_bound(0, 0) == 0.0
    assert wilson_lower_bound(0, 10) == pytest.approx(0.0, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 500), data=st.data())
def test_wilson_bound_lies_below_the_rate_and_grows_with_successes(n, data):
    k = data.draw(st.integers(0, n))
    bound = wilson_lower_bound(k, n)
    assert -1e-12 <= bound <= k / n + 1e-12
    if k < n:
        assert wilson_lower_bound(k + 1, n) > bound


def test_td_update():
    assert td_update(0.0, 1.0, 0.5) == pytest.approx(0.1 * (1 + 0.95 * 0.5))
    assert td_update(0.2, 0.0, 0.0) == pytest.approx(0.18)
    assert td_update(0.5, 1.0, 1.0, alpha=1.0, gamma=0.0) == 1.0


def test_chi_square_statistic_and_critical_values_at_p_005():
    assert chi_square_statistic([10, 0, 0, 0]) == 30.0  # E = 2.5: (7.5^2 + 3 * 2.5^2) / 2.5
    assert chi_square_statistic([3, 3, 3]) == 0.0 and chi_square_statistic([0, 0]) == 0.0
    for critical, df in [(3.841459, 1), (12.591587, 6), (35.172462, 23)]:  # table values, p = 0.05
        assert chi_square_sf(critical, df) == pytest.approx(0.05, abs=1e-6)
    assert chi_square_sf(0.0, 6) == 1.0


@settings(max_examples=200, deadline=None)
@given(x=st.floats(0.0, 200.0), k=st.integers(1, 15))
def test_chi_square_sf_matches_closed_forms(x, k):
    """Even df = 2k: e^(-x/2) sum_{i<k} (x/2)^i / i!; df = 1: erfc(sqrt(x/2))."""
    half = x / 2
    even = math.exp(-half) * sum(half**i / math.factorial(i) for i in range(k))
    assert chi_square_sf(x, 2 * k) == pytest.approx(even, rel=1e-9, abs=1e-300)
    assert chi_square_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(half)), rel=1e-9, abs=1e-300)


def test_timing_peak_needs_significance_and_enough_events():
    concentrated = [0] * 24
    concentrated[9] = 12
    assert timing_peak(concentrated) == 9
    assert timing_peak([1] * 24) is None  # uniform
    assert timing_peak([0] * 9 + [9] + [0] * 14) is None  # 9 events < 10
    assert timing_peak([5, 5, 0, 0, 0, 0, 0]) == 0  # a tie goes to the lowest bin


def test_fingerprint_is_sha256_of_sorted_features():
    assert state_fingerprint({"task": "deploy", "env": "prod"}) == state_fingerprint({"env": "prod", "task": "deploy"})
    expected = hashlib.sha256(json.dumps(['env="prod"', 'task="deploy"']).encode()).hexdigest()
    assert state_fingerprint(STATE) == expected
    assert state_fingerprint(["b", "a", "a"]) == state_fingerprint(("a", "b"))
    assert state_fingerprint({"task": "deploy"}) != state_fingerprint({"task": "rollback"})
    assert state_fingerprint("idle") == state_fingerprint(["idle"])
    with pytest.raises(ValidationError):
        state_fingerprint(42)


def test_fold_event_is_pure_and_counts_hours_and_weekdays():
    event = {"agent_id": "a", "fingerprint": "f", "features": ["x"], "action": "go", "reward": 1.0,
             "at": MONDAY + 9 * HOUR + 60}
    first = fold_event(None, event, next_max=0.5)
    assert (first["events"], first["successes"], first["q"]) == (1, 1, pytest.approx(0.1475))
    assert first["hours"][9] == 1 and first["weekdays"][0] == 1 and not first["crystallised"]
    second = fold_event(first, {**event, "reward": -1.0}, next_max=0.0)
    assert (second["events"], second["successes"]) == (2, 1) and first["events"] == 1


# -- crystallisation -------------------------------------------------------------------------------
def record_many(cache, count, action="canary", reward=1.0, start=MONDAY + 9 * HOUR, step=DAY, state=STATE):
    return [cache.record(state, action, reward, at=start + i * step) for i in range(count)]


def test_eight_successes_crystallise_with_bound_0_676(any_db):
    cache = PolicyCache("a")
    record_many(cache, 8)
    assert cache.best_action(STATE) is None  # recorded, not folded yet
    assert cache.crystallise() == 8
    entry = cache.entry(STATE, "canary")
    assert (entry.events, entry.successes, entry.crystallised) == (8, 8, True)
    assert round(entry.wilson, 3) == 0.676
    assert cache.best_action(STATE) == "canary"
    assert entry.features == ['env="prod"', 'task="deploy"']


def test_crystallisation_needs_more_than_three_events(any_db):
    cache = PolicyCache("a", rules=PolicyRules(wilson_threshold=0.3))
    record_many(cache, 3)
    cache.crystallise()
    assert round(cache.entry(STATE, "canary").wilson, 3) == 0.438  # above 0.3, but only 3 events
    assert cache.best_action(STATE) is None
    assert cache.best_action(STATE, crystallised_only=False) == "canary"
    record_many(cache, 1)
    cache.crystallise()
    assert cache.entry(STATE, "canary").crystallised and cache.best_action(STATE) == "canary"


def test_failures_take_crystallisation_back(any_db):
    cache = PolicyCache("a")
    record_many(cache, 8)
    record_many(cache, 6, reward=0.0)
    assert cache.crystallise() == 14
    entry = cache.entry(STATE, "canary")
    assert not entry.crystallised and round(entry.wilson, 3) == round(wilson_lower_bound(8, 14), 3)
    assert cache.best_action(STATE) is None


def test_td_update_uses_the_best_q_of_the_next_state(any_db):
    cache = PolicyCache("a")
    cache.record("s2", "b", 1.0)  # terminal: Q(s2, b) = 0.1
    cache.crystallise()
    cache.record("s1", "a", 0.0, next_state="s2")  # 0.1 * (0 + 0.95 * 0.1)
    cache.record("s1", "c", 0.5)  # 0.1 * 0.5
    cache.crystallise()
    assert cache.entry("s2", "b").q == pytest.approx(0.1)
    assert cache.entry("s1", "a").q == pytest.approx(0.0095)
    assert [(e.action, round(e.q, 4)) for e in cache.entries("s1")] == [("c", 0.05), ("a", 0.0095)]
    assert cache.best_action("s1", crystallised_only=False) == "c"


def test_each_event_is_folded_once(any_db):
    cache = PolicyCache("a", consumer="first")
    events = record_many(cache, 5)
    assert cache.crystallise() == 5 and cache.crystallise() == 0
    assert PolicyCache("a", consumer="second").crystallise() == 0  # same group: nothing left
    assert cache.apply_event(events[0].db_key.redis_key) is False  # folded already
    assert cache.apply_event(events[0].db_key.redis_key.replace(events[0].event_id, "gone")) is False
    assert cache.entry(STATE, "canary").events == 5
    assert cache.consumer.pending_count() == 0


def test_concurrent_consumers_lose_no_event(any_db):
    writer = PolicyCache("a")
    record_many(writer, 40, step=HOUR)
    workers = [PolicyCache("a", consumer=f"w{i}") for i in range(3)]
    counts = [0] * len(workers)

    def work(i):
        counts[i] = workers[i].crystallise()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == 40
    assert writer.entry(STATE, "canary").events == 40


def test_run_folds_events_as_they_arrive(any_db):
    cache = PolicyCache("a")
    stop = threading.Event()
    folded = []
    worker = threading.Thread(target=lambda: folded.append(cache.run(stop, block_ms=50)))
    worker.start()
    record_many(PolicyCache("a"), 3)
    for _ in range(200):
        entry = cache.entry(STATE, "canary")
        if entry is not None and entry.events == 3:
            break
        threading.Event().wait(0.01)
    stop.set()
    worker.join()
    assert folded == [3]


# -- timing -------------------------------------------------------------------------------------
def amplitudes(entry):
    return {k: v for k, v in PolicyEntry.timing.amplitudes_of(entry).items() if v}


def test_timing_discovery_switches_on_daily_and_weekly_cycles(any_db):
    cache = PolicyCache("a")
    record_many(cache, 12, start=MONDAY + 9 * HOUR + 600, step=7 * DAY)  # Mondays ~09:10
    cache.crystallise()
    entry = cache.entry(STATE, "canary")
    assert sorted(entry.cycles) == sorted([DAILY_9, WEEKLY_MONDAY])
    assert amplitudes(entry) == {DAILY_9: 0.5, WEEKLY_MONDAY: 0.5}
    later_monday = MONDAY + 52 * 7 * DAY
    due = cache.due_actions(as_of=later_monday + 9.5 * HOUR)
    assert [e.action for e in due] == ["canary"]
    weekly = 0.5 * math.cos(2 * math.pi * 2.5 / 168)  # 2.5 h before the Monday-noon peak
    assert due[0]._cyclic_score == pytest.approx(entry.wilson + 0.5 + weekly)
    assert cache.due_actions(as_of=later_monday + 21.5 * HOUR) == []


def test_uniform_timing_creates_no_cycle(any_db):
    cache = PolicyCache("a")
    for hour in range(24):
        cache.record(STATE, "canary", 1.0, at=MONDAY + hour * HOUR + (hour % 7) * DAY)
    cache.crystallise()
    entry = cache.entry(STATE, "canary")
    assert entry.cycles == [] and amplitudes(entry) == {}
    assert entry.crystallised and cache.due_actions(as_of=MONDAY + 9.5 * HOUR) == []


def test_cycles_follow_the_peak_and_keep_what_feedback_learnt(any_db):
    cache = PolicyCache("a")
    record_many(cache, 12, start=MONDAY + 9 * HOUR, step=7 * DAY)
    cache.crystallise()
    entry = cache.entry(STATE, "canary")
    ObservationProtocol.on_context_used([entry], {entry.db_key.redis_key: "acted"})
    assert amplitudes(entry) == {DAILY_9: pytest.approx(0.6), WEEKLY_MONDAY: pytest.approx(0.6)}
    cache.record(STATE, "canary", 1.0, at=MONDAY + 9 * HOUR)  # still the peak: learnt 0.6 kept
    cache.crystallise()
    assert amplitudes(entry) == {DAILY_9: pytest.approx(0.6), WEEKLY_MONDAY: pytest.approx(0.6)}
    record_many(cache, 14, start=THURSDAY + 21 * HOUR, step=7 * DAY)  # the peak moves
    cache.crystallise()
    assert amplitudes(entry) == {DAILY_21: 0.5, WEEKLY_THURSDAY: 0.5}


# -- tenants, validation, keys -----------------------------------------------------------------
def test_agents_learn_apart(any_db):
    alice, bob = PolicyCache("alice"), PolicyCache("bob")
    record_many(alice, 8)
    assert bob.crystallise() == 0 and alice.crystallise() == 8
    assert alice.best_action(STATE) == "canary" and bob.best_action(STATE) is None
    assert bob.entries(STATE) == [] and bob.due_actions(as_of=MONDAY + 9.5 * HOUR) == []


def test_every_key_lives_in_the_agents_slot(any_db):
    cache = PolicyCache("a:b{c}")
    record_many(cache, 12, step=7 * DAY)
    cache.crystallise()
    keys = {k for k in all_keys(any_db) if "Policy" in k}
    partitioned = {k for k in keys if "{%g}" not in k}
    assert partitioned and all("{a%3Ab%7Bc%7D}" in k for k in partitioned)
    assert keys - partitioned <= {k for k in keys if k.endswith(":partitions")}


def test_bad_input_is_rejected(any_db):
    with pytest.raises(ValidationError):
        PolicyCache("")
    cache = PolicyCache("a")
    with pytest.raises(ValidationError):
        cache.record(STATE, "", 1.0)
    with pytest.raises(ValidationError):
        cache.record(STATE, "go", float("nan"))
    assert PolicyEvent.query.filter(agent_id="a").count() == 0
