"""The records a read leaves out as superseded: never one it reads, and together with those it
reads every record that had started by the read's time (a record not valid yet is neither)."""

from __future__ import annotations

import operator

from hypothesis import given
from hypothesis import strategies as st

from redmem.lifecycle import ALL_TIMES, OPEN_END
from redmem.lifecycle._timeline import superseded_conditions, validity_conditions

COMPARE = {"lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge}
TIMES = st.integers(0, 50).map(float)


def passes(conditions: tuple[tuple[str, str, float], ...], start: float, end: float | None) -> bool:
    stored = {"valid_from": start, "valid_to": OPEN_END if end is None else end}
    return all(COMPARE[op](stored[name], value) for name, op, value in conditions)


@given(start=TIMES, length=st.one_of(st.none(), st.integers(1, 20).map(float)), at=st.one_of(st.none(), TIMES))
def test_superseded_and_read_records_split_the_records_started_by_then(start, length, at):
    end = None if length is None else start + length
    read = passes(validity_conditions(at), start, end)
    superseded = passes(superseded_conditions(at), start, end)
    assert not (read and superseded)
    assert (read or superseded) == (at is None or start <= at)
    assert superseded == (end is not None and (at is None or end <= at))


def test_a_read_of_every_version_leaves_nothing_out():
    assert superseded_conditions(ALL_TIMES) == ()
