"""Large filter lists (issue 28.8): a list condition takes at most ``MAX_FILTER_VALUES`` values
(a typed error before any request, on ``filter()`` and ``where=`` alike); below the cap a large
``__any`` group is read once as one set, so a search's cost does not grow with values x candidates."""

from __future__ import annotations

import pytest

from redmem import AutoKeyField, BM25Field, KeyField, Model, QueryArgumentError, SortedField, StringField, TagField
from redmem.model._filters import MAX_FILTER_VALUES


class LimitsLabelled(Model):
    """One tag per record, so a long ``tags__any`` list names many small sets."""

    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    rank = SortedField(partition_by="agent_id")
    tags = TagField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


SET_READS = ("sismember", "smismember", "smembers", "sunion", "sinter")


def set_reads(client) -> int:
    """Set-reading commands the server has run so far (scripts' calls included)."""
    stats = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in SET_READS)


@pytest.fixture
def labelled(db):
    LimitsLabelled.save_many([LimitsLabelled(agent_id="a", content=f"ops note {i}", rank=i, tags=[f"t{i}"]) for i in range(2500)])
    return LimitsLabelled.query.filter(agent_id="a")


def test_a_list_longer_than_the_cap_raises_before_any_request(labelled):
    too_many = [f"t{i}" for i in range(MAX_FILTER_VALUES + 1)]
    for build in (
        lambda: labelled.filter(tags__any=too_many),
        lambda: labelled.filter(tags__all=too_many),
        lambda: labelled.filter(note_id__in=too_many),
        lambda: labelled.keyword_search("ops", where={"tags__any": too_many}),
    ):
        with pytest.raises(QueryArgumentError, match=f"at most {MAX_FILTER_VALUES:,}"):
            build()


def test_a_list_at_the_cap_matches_exactly_and_reads_each_set_once(labelled, db):
    wanted = [f"t{i}" for i in range(0, 2 * MAX_FILTER_VALUES, 2)]
    expected = {f"ops note {i}" for i in range(0, 2 * MAX_FILTER_VALUES, 2)}
    assert {n.content for n in labelled.filter(tags__any=wanted).all()} == expected
    before = set_reads(db)
    assert labelled.filter(tags__any=wanted, rank__gte=0).count() == MAX_FILTER_VALUES  # range source, any checked
    hits = labelled.keyword_search("ops", limit=3000, where={"tags__any": wanted})
    assert {hit.content for hit in hits} == expected
    assert set_reads(db) - before <= 2 * MAX_FILTER_VALUES + 50  # each set read once per call (was per candidate chunk)
