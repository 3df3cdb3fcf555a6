"""BM25Field(cache_filtered=True): a search with a ``where`` filter ranks in-process over the
postings copy (the filter's ids listed by ``filter_ids.lua`` in the same round trip), with the
answers of the search inside Redis; without the option it ranks inside Redis."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, KeyField, Model, SortedField, StringField
from redmem.fields._bm25 import BM25Field
from redmem.fields.search_protocol import run_search
from redmem.model._filters import compile_where

WORDS = ["deploy", "redis", "cluster", "memory", "agent", "python", "vector", "search"]
#: One filter of each kind filter_ids.lua answers: "only" (these pass) and "except" (all but these).
FILTERS = [{"kind": "b"}, {"importance__gte": 0.2}, {"importance__lt": 0.2}, {"kind": "a", "importance__gte": 0.5}]


class CopyMemory(Model):
    memory_id = AutoKeyField()
    kind = KeyField()
    agent_id = KeyField()
    importance = SortedField(partition_by="agent_id")
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id", cache_filtered=True)


_agents = itertools.count()


def same_answers(space: object, question: str, limit: int) -> None:
    """Each filter: the in-process search (mode "cached") == the exhaustive search inside Redis."""
    field = CopyMemory.content_bm25
    for where in FILTERS:
        compiled = compile_where(CopyMemory, where)
        cached = field.search(space, question, limit, where=compiled)
        inside = field.search(space, question, limit, exhaustive=True, where=compiled)
        assert cached.mode == "cached"
        assert [r for r, _ in cached.ranked] == [r for r, _ in inside.ranked]
        assert [s for _, s in cached.ranked] == [s for _, s in inside.ranked]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.lists(st.sampled_from(WORDS + ["the"]), max_size=10).map(" ".join),
                            st.sampled_from("ab"), st.sampled_from([0.0, 0.1, 0.3, 0.6, 0.9])),
                  min_size=1, max_size=80),
    question=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    limit=st.integers(1, 12),
    changed=st.integers(0, 10),
)
def test_a_filtered_search_in_process_equals_the_search_inside_redis(any_db, rows, question, limit, changed):
    """Also after records change (their text, kind or importance) once the copy holds the lists."""
    agent = f"copy-{next(_agents)}"
    records = [CopyMemory(agent_id=agent, content=text, kind=kind, importance=importance)
               for text, kind, importance in rows]
    CopyMemory.save_many(records, chunk_size=23)
    space = CopyMemory.query.filter(agent_id=agent).partition()
    same_answers(space, question, limit)
    for record in records[:changed]:
        record.content, record.kind = f"{record.content} {WORDS[changed % len(WORDS)]}", "b"
        record.importance = 0.1 if record.importance >= 0.2 else 0.7
        record.save()
    same_answers(space, question, limit)


def test_both_modes_of_the_filter_are_met(any_db):
    """The filters above reach both answers of filter_ids.lua on a typical partition."""
    agent = f"copy-{next(_agents)}"
    CopyMemory.save_many([CopyMemory(agent_id=agent, content=f"memory {WORDS[i % 8]}", kind="ab"[i % 5 == 0],
                                     importance=0.1 if i % 7 == 0 else 0.8) for i in range(70)])
    space = CopyMemory.query.filter(agent_id=agent).partition()
    modes = {run_search(any_db, _Reply(compile_where(CopyMemory, where), space)) for where in FILTERS}
    assert modes == {b"only", b"except"}
    same_answers(space, "memory redis", 10)


class _Reply:
    """A filter_ids call as a search whose answer is its mode."""

    def __init__(self, where: object, space: object) -> None:
        self.call = where.ids_call(space)  # type: ignore[attr-defined]

    def calls(self) -> list:
        return [self.call]

    def finish(self, replies: list) -> bytes:
        return replies[0][0]


def test_by_default_a_filtered_search_ranks_inside_redis(any_db):
    class Uncached(Model):
        memory_id = AutoKeyField()
        kind = KeyField()
        agent_id = KeyField()
        content = StringField()
        words = BM25Field(source="content", partition_by="agent_id")

    Uncached.save_many([Uncached(agent_id="u", kind="a", content="memory agent") for _ in range(3)])
    space = Uncached.query.filter(agent_id="u").partition()
    assert Uncached.words.search(space, "memory", 5, where=compile_where(Uncached, {"kind": "a"})).mode != "cached"
