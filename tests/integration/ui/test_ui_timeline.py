"""The one-memory page's decay curve (redmem.ui._timeline): the field's own scores from the last
touch to a month past now, falling, now and the accesses placed on it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redmem.cli_commands._memory import ChatMemory
from redmem.ui._timeline import AHEAD_DAYS, DAY, decay_timeline

FIELD = ChatMemory._meta.fields["relevance"]


@given(base=st.floats(0.05, 5.0), age=st.floats(0.0, 400.0), confidence=st.one_of(st.none(), st.floats(0.0, 1.0)),
       accessed=st.lists(st.floats(-10.0, 10.0), max_size=4))
def test_the_curve_is_the_fields_own_score_and_falls(base, age, confidence, accessed):
    now = 2_000_000_000.0
    touched = now - age * DAY
    line = decay_timeline(FIELD, base, touched, confidence, now, [touched + d * DAY for d in accessed])
    points = line["points"]
    assert points[0]["days"] == 0 and points[-1]["days"] == pytest.approx(age + AHEAD_DAYS, abs=1e-9)
    for point in points:
        assert point["decay"] == FIELD.score(base, touched, confidence, touched + point["days"] * DAY)
        assert point["past"] == (point["days"] <= line["now_days"])
    decays = [p["decay"] for p in points]
    assert decays == sorted(decays, reverse=True)
    assert line["now_days"] == pytest.approx(age, abs=1e-9) and any(p["days"] == line["now_days"] for p in points)
    assert [a["days"] for a in line["accesses"]] == pytest.approx(accessed, abs=1e-9)  # days from epoch seconds near 2e9: ~1e-11 apart
