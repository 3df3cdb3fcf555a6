"""PredictionLedgerMixin: the error formula, exactly-once resolution, feedback, the ledger.

Run as a script (``python test_predictions.py URL PREFIX AGENT N MODE``) this file is a resolver
process: it waits for the parent's go signal, then tries to resolve the predictions of records
r0..r{N-1} (MODE ``actual``: resolve_prediction, ``outcome``: auto_resolve) and prints how many
it won.
"""

from __future__ import annotations

import itertools
import math
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import redmem
from redmem import KeyField, Model, StringField
from redmem.fields import ConfidenceField
from redmem.observation import EventStreamMixin, PredictionLedgerMixin
from redmem.observation._predictions import (
    ResolvedPrediction,
    group_errors,
    percentile,
    prediction_error,
    summarize_errors,
    value_error,
)
from redmem.store._aio import is_cluster

HERE = Path(__file__).parent


class PredictionsForecast(PredictionLedgerMixin, EventStreamMixin, Model):
    agent_id = KeyField()
    forecast_id = KeyField()
    text = StringField()
    confidence = ConfidenceField(partition_by="agent_id")


class Bare(PredictionLedgerMixin, Model):
    item_id = KeyField()
    prediction_history_size = 3


class Global(PredictionLedgerMixin, EventStreamMixin, Model):
    agent_id = KeyField()
    item_id = KeyField()
    confidence = ConfidenceField(partition_by="agent_id")
    event_stream_per_model = True


@pytest.fixture
def url(any_db, request):
    return request.getfixturevalue("cluster_url" if is_cluster(any_db) else "redis_url")


# -- the formulas --------------------------------------------------------------------------------
def test_error_is_the_mean_over_predicted_keys():
    predicted = {"count": 10, "label": "x", "missing": 1, "small": 0.2}
    actual = {"count": 8, "label": "y", "small": 0.5, "extra": 99}
    # 2/10, string mismatch 1, missing 1, |0.2-0.5|/max(0.2,0.5,1) = 0.3
    assert prediction_error(predicted, actual) == pytest.approx((0.2 + 1 + 1 + 0.3) / 4)
    assert prediction_error({"a": "same", "b": -5}, {"a": "same", "b": -5}) == 0.0
    assert value_error(-4, 4) == 2.0  # |p - a| / max(|p|, |a|, 1) can exceed 1 for opposite signs
    assert value_error(True, 1) == 1.0 and value_error(True, True) == 0.0
    assert value_error(None, None) == 0.0 and value_error([1], [1]) == 0.0
    with pytest.raises(redmem.ValidationError):
        prediction_error({}, {"a": 1})


def test_summary_by_hand():
    summary = summarize_errors([0.1, 0.5, 0.9, 0.3])
    assert summary["count"] == 4 and summary["max"] == 0.9
    assert summary["mean"] == pytest.approx(0.45)
    assert summary["stddev"] == pytest.approx(math.sqrt(0.35 / 4))
    assert summary["p50"] == pytest.approx(0.4)  # h = 1.5 between 0.3 and 0.5
    assert summary["p90"] == pytest.approx(0.78)  # h = 2.7 between 0.5 and 0.9
    assert summary["p99"] == pytest.approx(0.888)
    assert summarize_errors([])["count"] == 0 and summarize_errors([])["mean"] is None


@given(st.lists(st.floats(0, 1), min_size=2, max_size=50), st.sampled_from([50, 90, 99]))
def test_percentile_agrees_with_the_standard_library(errors, q):
    cuts = statistics.quantiles(errors, n=100, method="inclusive")  # cut points 1..99
    assert percentile(sorted(errors), q / 100) == pytest.approx(cuts[q - 1], abs=1e-12)


def test_grouping_by_time_and_by_callable():
    def entry(error, when, key="k"):
        at = when.replace(tzinfo=UTC).timestamp()
        return ResolvedPrediction("i", key, error, {"a": 1}, None, "acted", at, at)

    entries = [entry(0.2, datetime(2025, 1, 6, 9)), entry(0.4, datetime(2025, 1, 6, 17)),
               entry(0.6, datetime(2025, 1, 7, 9), key="j")]
    assert {g: s["count"] for g, s in group_errors(entries, "hour").items()} == {9: 2, 17: 1}
    assert list(group_errors(entries, "weekday")) == [0, 1]  # Monday, Tuesday
    assert group_errors(entries, "day")["2025-01-06"]["mean"] == pytest.approx(0.3)
    assert group_errors(entries, lambda e: e.key)["j"]["max"] == 0.6
    assert group_errors(entries)["count"] == 3
    with pytest.raises(ValueError):
        group_errors(entries, "month")


# -- recording and resolving ------------------------------------------------------------------------
def test_resolve_once_and_file_the_ledger(any_db):
    record = PredictionsForecast.create(agent_id="a", forecast_id="f", text="rain")
    assert record.record_prediction({"rain_mm": 10, "sky": "grey"}, now=100.0) == 1
    assert record.prediction_state["state"] == "open"
    assert record.resolve_prediction({"rain_mm": 8, "sky": "grey"}, now=200.0) == pytest.approx(0.1)
    assert record.resolve_prediction({"rain_mm": 0}) is None
    assert record.auto_resolve("acted") is None
    state = record.prediction_state
    assert (state["state"], state["error"], state["actual"]) == ("resolved", pytest.approx(0.1), {"rain_mm": 8, "sky": "grey"})
    [entry] = PredictionsForecast.resolved_predictions(agent_id="a")
    assert (entry.id, entry.key, entry.predicted_at, entry.resolved_at) == ("f#1", record.db_key.redis_key, 100.0, 200.0)


def test_a_large_error_lowers_confidence(any_db):
    record = PredictionsForecast.create(agent_id="a", forecast_id="f")
    record.record_prediction({"n": 100})
    assert record.resolve_prediction({"n": 1}) == pytest.approx(0.99)
    assert ConfidenceField.get_confidence(record, "confidence") == pytest.approx(0.35)  # (0.5 + 0.2) / 2
    record.record_prediction({"n": 100})
    record.resolve_prediction({"n": 40})  # error 0.6: no signal
    assert ConfidenceField.get_confidence_data(record, "confidence")["evidence_count"] == 1
    ops = [e.op for e in PredictionsForecast.read_events(agent_id="a")]
    assert ops == ["create", "prediction_resolved", "confidence_update", "prediction_resolved"]


def test_auto_resolve_uses_the_outcome_error(any_db):
    record = PredictionsForecast.create(agent_id="a", forecast_id="f")
    record.record_prediction({"x": 1})
    assert record.auto_resolve("deferred") is None
    assert record.prediction_state["state"] == "open"
    with pytest.raises(ValueError, match="unknown outcome"):
        record.auto_resolve("ignored")
    assert record.auto_resolve("contradicted") == 0.9
    assert ConfidenceField.get_confidence(record, "confidence") == pytest.approx(0.35)
    assert PredictionsForecast.resolved_predictions(agent_id="a")[0].outcome == "contradicted"


def test_recording_replaces_an_open_prediction(any_db):
    record = Bare.create(item_id="i")
    record.record_prediction({"a": 1})
    assert record.record_prediction({"a": 2}) == 2
    assert record.resolve_prediction({"a": 2}) == 0.0
    assert [e.id for e in Bare.resolved_predictions()] == ["i#2"]


def test_a_record_that_is_not_stored_cannot_predict(any_db):
    with pytest.raises(redmem.RecordNotFound, match="not stored"):
        Bare(item_id="ghost").record_prediction({"a": 1})
    with pytest.raises(redmem.ValidationError):
        Bare.create(item_id="i").record_prediction({"a": math.nan})
    assert Bare(item_id="ghost").resolve_prediction({"a": 1}) is None
    assert not any_db.exists(Bare(item_id="ghost").db_key.redis_key)


def test_highest_errors_and_trimmed_history(any_db):
    for i, error_input in enumerate([5, 1, 9, 3]):
        record = Bare.create(item_id=f"i{i}")
        record.record_prediction({"v": 10})
        record.resolve_prediction({"v": 10 - error_input}, now=float(i))
    assert [round(e.error, 2) for e in Bare.get_highest_errors(2)] == [0.9, 0.3]
    assert [e.id for e in Bare.resolved_predictions()] == ["i1#1", "i2#1", "i3#1"]  # the oldest went
    assert Bare.error_summary()["count"] == 3
    assert Bare.get_highest_errors(0) == []


def test_delete_removes_the_prediction_but_not_the_ledger(any_db):
    record = Bare.create(item_id="i")
    record.record_prediction({"a": 1})
    record.resolve_prediction({"a": 1})
    record.record_prediction({"a": 2})
    record.delete()
    assert record.prediction_state == {"state": None}
    assert len(Bare.resolved_predictions()) == 1


def test_per_model_streams_get_the_resolution_event(any_db):
    record = Global.create(agent_id="a", item_id="i")
    record.record_prediction({"a": 1})
    record.resolve_prediction({"a": 5})
    resolved = [e for e in Global.read_events() if e.op == "prediction_resolved"]
    assert [e.data["error"] for e in resolved] == [pytest.approx(0.8)]
    assert ConfidenceField.get_confidence(record, "confidence") == pytest.approx(0.35)


# -- exactly once under concurrent resolvers -----------------------------------------------------------
_agents = itertools.count()


def test_concurrent_resolvers_resolve_each_prediction_once(any_db, url):
    modes = ("actual", "outcome", "actual")
    agent, n = f"race{next(_agents)}", 30
    records = [PredictionsForecast.create(agent_id=agent, forecast_id=f"r{i}") for i in range(n)]
    for record in records:
        record.record_prediction({"x": 1.0})
    prefix = redmem.store.settings().key_prefix
    workers = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), url, prefix, agent, str(n), mode],
                                stdout=subprocess.PIPE, text=True, cwd=HERE) for mode in modes]
    for worker in workers:
        assert worker.stdout.readline().strip() == "ready"
    any_db.set(f"{prefix}:go:{agent}", 1)
    wins = [int(worker.communicate(timeout=60)[0]) for worker in workers]
    assert sum(wins) == n
    ledger = PredictionsForecast.resolved_predictions(agent_id=agent)
    assert sorted(e.id for e in ledger) == sorted(f"r{i}#1" for i in range(n))
    events = [e for e in PredictionsForecast.read_events(agent_id=agent) if e.op == "prediction_resolved"]
    assert len(events) == n


def _resolve_all(url: str, prefix: str, agent: str, n: str, mode: str) -> None:
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)
    client = redmem.get_client()
    records = [PredictionsForecast.query.no_track().get(agent_id=agent, forecast_id=f"r{i}") for i in range(int(n))]
    print("ready", flush=True)
    while not client.exists(f"{prefix}:go:{agent}"):
        time.sleep(0.001)
    won = 0
    for record in records:
        result = record.resolve_prediction({"x": 2.0}) if mode == "actual" else record.auto_resolve("used")
        won += result is not None
    print(won, flush=True)


if __name__ == "__main__":
    _resolve_all(*sys.argv[1:6])
