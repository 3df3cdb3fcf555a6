"""CyclicDecayField: scores at chosen times, learned amplitudes, concurrency, threshold search.

Run as a script (``python test_cyclic.py URL PREFIX AGENT HABIT_ID COUNT``) it strengthens and
weakens one record COUNT times each, for the concurrency test.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import all_keys
from redmem import AutoKeyField, FloatField, KeyField, Model, ModelException, QueryException
from redmem.fields import CyclicDecayField, TemporalPeriod
from redmem.fields._cyclic import Cycle, cycle_weight, cyclic_score, pressure, scale_amplitude
from redmem.store._aio import is_cluster

DAY = 86400.0
T0 = 1_750_000_000.0
DAILY_KEY = f"{86400.0!r}@{T0!r}"
WEEKLY_KEY = f"{604800.0!r}@{T0 + 2 * DAY!r}"


class Habit(Model):
    habit_id = AutoKeyField()
    agent_id = KeyField()
    weight = FloatField(default=1.0)
    rhythm = CyclicDecayField(
        base_score_field="weight",
        cycles=[(TemporalPeriod.DAILY, 0.5, T0), (TemporalPeriod.WEEKLY, -0.2, T0 + 2 * DAY)],
        pressure_rate=0.1,
        partition_by="agent_id",
    )


class HabitRedeclared(Model):
    """The same records (model name Habit) after a code change: daily amplitude 0.7, no weekly cycle."""

    habit_id = AutoKeyField()
    agent_id = KeyField()
    weight = FloatField(default=1.0)
    rhythm = CyclicDecayField(
        base_score_field="weight", cycles=[(TemporalPeriod.DAILY, 0.7, T0)], pressure_rate=0.1,
        partition_by="agent_id",
    )

    class Meta:
        name = "Habit"


class CyclicRoutine(Model):
    """No base field, no pressure, one cycle."""

    routine_id = AutoKeyField()
    agent_id = KeyField()
    rhythm = CyclicDecayField(decay_rate=0.5, cycles=[(TemporalPeriod.DAILY, 1.0)], partition_by="agent_id")


# -- formulas ----------------------------------------------------------------------------------
def test_periods():
    assert [int(p) for p in TemporalPeriod] == [86400, 604800, 2592000, 7776000, 31536000]


def test_cycle_weights_and_pressure():
    assert cycle_weight(T0, DAY, T0) == 1.0
    assert cycle_weight(T0 + DAY / 2, DAY, T0) == pytest.approx(-1.0)
    assert cycle_weight(T0 + DAY / 4, DAY, T0) == pytest.approx(0.0, abs=1e-12)
    assert cycle_weight(T0 + 5 * DAY, DAY, T0) == pytest.approx(1.0)
    assert pressure(T0, T0 - 3 * DAY, 0.1) == pytest.approx(0.3)
    assert pressure(T0, T0 + DAY, 0.1) == 0.0  # resolved in the future: no pressure


def test_cyclic_score_hand_numbers():
    # decay 1 day old at rate 0.1 = 1.0; daily peak +0.5; 3 days unresolved at 0.1/day = +0.3
    assert cyclic_score(1.0, [0.5], [1.0], 0.3) == pytest.approx(1.8)
    # half a day later: trough -0.5; 3.5 days unresolved = +0.35
    assert cyclic_score(1.0, [0.5], [-1.0], 0.35) == pytest.approx(0.85)


def test_amplitude_scaling_is_clamped():
    assert scale_amplitude(0.5, 0.5, 1.2) == pytest.approx(0.6)
    assert scale_amplitude(0.9, 0.5, 1.2) == 1.0  # cap: 2 x declared
    assert scale_amplitude(0.5, 0.5, 0.8) == pytest.approx(0.4)
    assert scale_amplitude(-0.5, -0.5, 1.2) == pytest.approx(-0.6)  # sign of the declaration
    assert scale_amplitude(-0.9, -0.5, 1.5) == -1.0
    assert scale_amplitude(0.0, 0.0, 1.2) == 0.0


def test_declaration_errors():
    for cycles in ([86400], [(0, 0.5)], [(-5, 0.5)], [(86400, "x")], [(86400, 0.5, 1, 2)]):
        with pytest.raises(ModelException):
            CyclicDecayField(cycles=cycles)
    with pytest.raises(ModelException, match="share"):
        CyclicDecayField(cycles=[(86400, 0.5), (86400.0, 0.2, 0)])
    with pytest.raises(ModelException, match="pressure_rate"):
        CyclicDecayField(pressure_rate=-1)
    assert CyclicDecayField(cycles=[(TemporalPeriod.WEEKLY, 1)]).cycles == (Cycle(604800.0, 1.0, 0.0),)


# -- scores of stored records ------------------------------------------------------------------
def test_scores_at_chosen_times(any_db):
    habit = Habit.create(agent_id="a", weight=1.0)
    field = Habit.rhythm
    field.touch(habit, now=T0 - DAY)
    field.resolve_pressure(habit, now=T0 - 3 * DAY)
    # weekly term: -0.2 * cos(2 pi * -2/7) = -0.2 * -0.22252 = +0.044504
    weekly = -0.2 * math.cos(2 * math.pi * -2 / 7)
    assert field.score_of(habit, as_of=T0) == pytest.approx(1.8 + weekly)
    field.touch(habit, now=T0 - DAY / 2)
    weekly = -0.2 * math.cos(2 * math.pi * -1.5 / 7)
    assert field.score_of(habit, as_of=T0 + DAY / 2) == pytest.approx(0.85 + weekly)
    midnight = 20255 * DAY  # phase 0: the daily cycle peaks at every UTC midnight
    routine = CyclicRoutine.create(agent_id="a")
    CyclicRoutine.rhythm.touch(routine, now=midnight - 4 * DAY)
    assert CyclicRoutine.rhythm.score_of(routine, as_of=midnight) == pytest.approx(0.5 + 1.0)  # 4 ** -0.5 + peak
    assert CyclicRoutine.rhythm.score_of(routine, as_of=midnight + DAY / 2) == pytest.approx(4.5 ** -0.5 - 1.0)


def test_the_record_hash_holds_the_declared_amplitudes(any_db):
    habit = Habit.create(agent_id="a")
    assert json.loads(any_db.hget(habit.db_key.redis_key, "rhythm")) == {DAILY_KEY: 0.5, WEEKLY_KEY: -0.2}
    loaded = Habit.query.get(agent_id="a", habit_id=habit.habit_id)
    assert loaded.to_dict()["rhythm"] == habit.to_dict()["rhythm"] == {DAILY_KEY: 0.5, WEEKLY_KEY: -0.2}
    assert loaded.rhythm == pytest.approx(Habit.rhythm.score_of(habit), rel=1e-3)  # the record reads the score


def test_strengthen_and_weaken_scale_learned_amplitudes(any_db):
    habit = Habit.create(agent_id="a")
    field = Habit.rhythm
    assert field.amplitudes_of(habit) == {DAILY_KEY: 0.5, WEEKLY_KEY: -0.2}
    assert field.strengthen_cycle(habit) == {DAILY_KEY: 0.5 * 1.2, WEEKLY_KEY: -0.2 * 1.2}
    assert field.weaken_cycle(habit, 0.5) == {DAILY_KEY: 0.5 * 1.2 * 0.5, WEEKLY_KEY: -0.2 * 1.2 * 0.5}
    for _ in range(10):
        field.strengthen_cycle(habit, 1.5)
    assert field.amplitudes_of(habit) == {DAILY_KEY: 1.0, WEEKLY_KEY: -0.4}  # capped at 2 x declared
    with any_db.pipeline(transaction=False) as pipe:
        assert field.weaken_cycle(habit, 0.25, pipeline=pipe) is None
        pipe.execute()
    assert field.amplitudes_of(habit) == {DAILY_KEY: 0.25, WEEKLY_KEY: -0.1}
    with pytest.raises(ValueError):
        field.strengthen_cycle(habit, 0.9)
    with pytest.raises(ValueError):
        field.weaken_cycle(habit, 1.1)
    with pytest.raises(ValueError):
        field.weaken_cycle(habit, 0)


def test_learned_amplitudes_survive_resaves(any_db):
    habit = Habit.create(agent_id="a", weight=1.0)
    Habit.rhythm.strengthen_cycle(habit)
    learned = {DAILY_KEY: 0.6, WEEKLY_KEY: -0.24}
    habit.weight = 2.0
    habit.save()  # the same (now stale) instance
    Habit.query.get(agent_id="a", habit_id=habit.habit_id).save()  # a reloaded one
    Habit(agent_id="a", habit_id=habit.habit_id, weight=3.0).save()  # a fresh one over it
    assert Habit.rhythm.amplitudes_of(habit) == pytest.approx(learned)


def test_a_changed_declaration_resets_only_its_cycle(any_db):
    habit = Habit.create(agent_id="a")
    Habit.rhythm.strengthen_cycle(habit)
    space = Habit._meta.keyspace(("a",))
    weekly_index = Habit.rhythm.keys_in(space).amplitude(WEEKLY_KEY)
    assert any_db.zscore(weekly_index, habit.habit_id) == pytest.approx(-0.24)
    redeclared = HabitRedeclared.query.get(agent_id="a", habit_id=habit.habit_id)
    redeclared.save()
    assert HabitRedeclared.rhythm.amplitudes_of(redeclared) == {DAILY_KEY: 0.7}
    assert any_db.zscore(weekly_index, habit.habit_id) is None  # the undeclared cycle is gone
    HabitRedeclared.rhythm.strengthen_cycle(redeclared)
    redeclared.save()  # unchanged declaration: learned value kept
    assert HabitRedeclared.rhythm.amplitudes_of(redeclared) == {DAILY_KEY: pytest.approx(0.84)}


def test_delete_removes_every_entry_including_undeclared_cycles(any_db):
    habits = [Habit.create(agent_id="a") for _ in range(3)]
    Habit.rhythm.strengthen_cycle(habits[0])
    HabitRedeclared.query.get(agent_id="a", habit_id=habits[1].habit_id).delete()
    habits[0].delete()
    habits[2].delete()
    registry = Habit._meta.global_keyspace().key("partitions")
    assert all_keys(any_db) == {registry}


def test_operations_on_a_deleted_record_write_nothing(any_db):
    habit = Habit.create(agent_id="a")
    habit.delete()
    assert Habit.rhythm.strengthen_cycle(habit) == {}
    assert Habit.rhythm.touch(habit, now=T0) is False
    assert Habit.rhythm.resolve_pressure(habit, now=T0) is False
    assert Habit.rhythm.score_of(habit) is None
    assert all_keys(any_db) == {Habit._meta.global_keyspace().key("partitions")}


# -- concurrency -------------------------------------------------------------------------------
def _worker(url: str, prefix: str, agent: str, habit_id: str, count: int) -> None:
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)
    habit = Habit.query.get(agent_id=agent, habit_id=habit_id)
    for _ in range(count):
        Habit.rhythm.strengthen_cycle(habit, 1.001)
        Habit.rhythm.weaken_cycle(habit, 0.9995)


def test_concurrent_adjustments_and_saves_lose_nothing(any_db, request):
    cluster = is_cluster(any_db)
    url = request.getfixturevalue("cluster_url" if cluster else "redis_url")
    habit = Habit.create(agent_id="a")
    procs, count = 3, 100
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    args = [url, redmem.store.settings().key_prefix, "a", habit.habit_id, str(count)]
    workers = [subprocess.Popen([sys.executable, __file__, *args], env=env) for _ in range(procs)]
    while any(w.poll() is None for w in workers):
        Habit.query.get(agent_id="a", habit_id=habit.habit_id).save()  # re-saves keep learned values
        time.sleep(0.005)
    assert all(w.returncode == 0 for w in workers)
    factor = (1.001 * 0.9995) ** (procs * count)  # 1.16: under the cap of 2 x declared
    assert Habit.rhythm.amplitudes_of(habit) == {
        DAILY_KEY: pytest.approx(0.5 * factor, rel=1e-9),
        WEEKLY_KEY: pytest.approx(-0.2 * factor, rel=1e-9),
    }


# -- threshold search against brute force --------------------------------------------------------
_agents = itertools.count()


def stored_rows(model, agent_id):
    """(record id, base, t, last_resolved, [learned amplitudes]) of every record of a partition."""
    field, client = model.rhythm, model._meta.client
    keys = field.keys_in(model._meta.keyspace((agent_id,)))

    def scores(key):
        return {m.decode(): s for m, s in client.zrange(key, 0, -1, withscores=True)}

    times, resolved = scores(keys.updated), scores(keys.resolved)
    learned = [scores(keys.amplitude(c.key)) for c in field.cycles]
    rows = []
    for record in model.query.filter(agent_id=agent_id).all():
        rid = record.db_key.record_id
        base = getattr(record, "weight", 1.0)
        rows.append((rid, base, times[rid], resolved[rid], [a[rid] for a in learned]))
    return rows


def brute_force(model, rows, now, threshold, limit):
    scored = [(rid, model.rhythm.score(base, t, r, amps, now)) for rid, base, t, r, amps in rows]
    scored = sorted((p for p in scored if p[1] >= threshold), key=lambda p: (-p[1], p[0]))
    return scored if limit is None else scored[:limit]


AS_OF = [T0, T0 + DAY / 4, T0 + DAY / 2, T0 + 3.3 * DAY, T0 + 30 * DAY]
habit_spec = st.tuples(
    st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    st.sampled_from([T0 - 20 * DAY, T0 - DAY, T0]),
    st.sampled_from([T0 - 10 * DAY, T0 - DAY, T0 + DAY]),
    st.lists(st.sampled_from([1.2, 0.8, 0.5]), max_size=3),
)


def populate(agent, data):
    client = Habit._meta.client
    habits = [Habit.create(agent_id=agent, weight=base) for base, _, _, _ in data]
    with client.pipeline(transaction=False) as pipe:
        for habit, (_, t, resolved, factors) in zip(habits, data):
            Habit.rhythm.touch(habit, pipeline=pipe, now=t)
            Habit.rhythm.resolve_pressure(habit, pipeline=pipe, now=resolved)
            for factor in factors:
                scale = Habit.rhythm.strengthen_cycle if factor > 1 else Habit.rhythm.weaken_cycle
                scale(habit, factor, pipeline=pipe)
        pipe.execute()


def assert_threshold_search_matches(agent, thresholds, limits):
    rows = stored_rows(Habit, agent)
    query = Habit.query.filter(agent_id=agent)
    for now in AS_OF:
        for threshold in thresholds:
            for limit in limits:
                expected = brute_force(Habit, rows, now, threshold, limit)
                found = query.above_cyclic_threshold(threshold, as_of=now, limit=limit)
                assert [(h.db_key.record_id, h._cyclic_score) for h in found] == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(habit_spec, max_size=30), threshold=st.sampled_from([-1.0, 0.5, 1.0, 1.5, 2.5]),
       limit=st.one_of(st.none(), st.integers(1, 35)))
def test_threshold_search_matches_brute_force(any_db, data, threshold, limit):
    agent = f"agent-{next(_agents)}"
    populate(agent, data)
    assert_threshold_search_matches(agent, [threshold], [limit])


def test_threshold_search_on_many_records(any_db):
    rng = random.Random(5)
    data = [(rng.random() * 2, T0 - rng.random() * 30 * DAY, T0 - rng.random() * 10 * DAY,
             rng.sample([1.2, 0.8, 0.5, 1.5], rng.randrange(3))) for _ in range(500)]
    populate("many", data)
    assert_threshold_search_matches("many", [1.0, 2.0], [None, 10])


def test_a_record_just_above_the_threshold_deep_in_every_list_is_found(any_db):
    """X is last in the time list (a tie, smallest id) and after 100 stronger amplitudes; the
    bound after the first round (1 + 1.52) is barely above the threshold, and X (1 + 1.51) is in."""
    midnight = 20255 * DAY  # the daily cycle (phase 0) peaks: weight 1
    data = {"000": 1.51}
    data.update({f"t{i:03d}": 0.0 for i in range(100)})  # recent: 1 + 0 = 1
    data.update({f"a{i:03d}": 1.52 for i in range(100)})  # strong but 10,000 days old: 0.01 + 1.52
    for routine_id in data:
        CyclicRoutine.create(agent_id="x", routine_id=routine_id)
    keys = CyclicRoutine.rhythm.keys_in(CyclicRoutine._meta.keyspace(("x",)))
    times = {rid: midnight - (10_000 if rid.startswith("a") else 1) * DAY for rid in data}
    with any_db.pipeline(transaction=False) as pipe:
        pipe.zadd(keys.updated, times)
        pipe.zadd(keys.amplitude(CyclicRoutine.rhythm.cycles[0].key), data)
        pipe.execute()
    found = CyclicRoutine.query.filter(agent_id="x").above_cyclic_threshold(2.5, as_of=midnight)
    assert [(r.routine_id, round(r._cyclic_score, 6)) for r in found] == [("000", 2.51)]


def test_threshold_search_errors_and_scope(any_db):
    mine = Habit.create(agent_id="a", weight=1.0)
    Habit.create(agent_id="b", weight=1.0)
    assert Habit.query.filter(agent_id="a").above_cyclic_threshold(-10.0) == [mine]
    assert Habit.query.filter(agent_id="a").above_cyclic_threshold(100.0) == []
    assert Habit.query.filter(agent_id="a").above_cyclic_threshold(-10.0, limit=0) == []
    with pytest.raises(QueryException, match="partition"):
        Habit.query.above_cyclic_threshold(0.5)
    with pytest.raises(QueryException, match="limit"):
        Habit.query.filter(agent_id="a").above_cyclic_threshold(0.5, limit=-1)
    with pytest.raises(redmem.ValidationError):
        Habit.query.filter(agent_id="a").above_cyclic_threshold(float("nan"))


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
