"""A lifecycle read's explanation lists the superseded records its searches left out that would
have ranked, with reason ``superseded`` and their successor, at no extra round trip; the set is the
brute-force one (the records superseded at the read's time that rank within the search depth when
no window is checked), on one server and on the cluster."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rich.console import Console

from redmem import AutoKeyField, BM25Field, EmbeddingField, HashingEmbeddings, KeyField, Model, StringField
from redmem.cli_commands._why import why_tables
from redmem.context._explain import Explanation
from redmem.context._retrieval import keyword_hits
from redmem.fields.search_protocol import run_search
from redmem.lifecycle import ALL_TIMES, Lifecycle, LifecycleMixin, supersede, visible_at
from redmem.model._filters import compile_where
from redmem.recipes.context_assembler import ContextAssembler

WORDS = ("alice", "berlin", "lisbon", "tea", "coffee", "bike", "editor", "vim", "rust", "paris")
#: Scores this close to the depth's last one count as tied with it (the searches round differently).
TIE = 1e-6


class ExplainedFact(LifecycleMixin, Model):
    lifecycle = Lifecycle(merge=False, supersede=False)
    fact_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(64))

    class Meta:
        partition_by = "agent_id"


def _superseded(explanation: Explanation) -> dict[str, str | None]:
    return {o.record_id: o.superseded_by for o in explanation.left_out if o.reason == "superseded"}


def _stored_move(agent: str) -> tuple[ExplainedFact, ExplainedFact]:
    berlin = ExplainedFact(agent_id=agent, content="Alice lives in Berlin.", valid_from=1.0)
    lisbon = ExplainedFact(agent_id=agent, content="Alice moved to Lisbon, where she lives now.", valid_from=2.0)
    other = ExplainedFact(agent_id=agent, content="The team drinks tea at four.", valid_from=1.0)
    ExplainedFact.save_many([berlin, lisbon, other])
    supersede(berlin, lisbon)
    return berlin, lisbon


def test_a_superseded_fact_that_matches_is_left_out_with_its_successor(any_db):
    agent = uuid.uuid4().hex
    berlin, lisbon = _stored_move(agent)
    result = ContextAssembler(ExplainedFact, max_items=3).assemble("Where does Alice live?", agent_id=agent)
    assert result.records[0].fact_id == lisbon.fact_id
    explanation = result.explain()
    assert _superseded(explanation) == {berlin.fact_id: lisbon.fact_id}
    (cut,) = [o for o in explanation.left_out if o.reason == "superseded"]
    assert f"superseded by {lisbon.fact_id}" in cut.detail and "keyword #" in cut.detail and 0 < cut.score <= 1
    assert explanation.cut_counts()["superseded"] == 1
    assert Explanation.from_dict(explanation.to_dict()) == explanation


def test_a_read_of_every_version_or_of_the_past_leaves_nothing_out_as_superseded(any_db):
    agent = uuid.uuid4().hex
    berlin, _ = _stored_move(agent)
    assembler = ContextAssembler(ExplainedFact, max_items=3)
    every = assembler.assemble("Where does Alice live?", agent_id=agent, where={"as_of": ALL_TIMES})
    then = assembler.assemble("Where does Alice live?", agent_id=agent, where={"as_of": 1.5})
    assert berlin.fact_id in [r.fact_id for r in every.records] and _superseded(every.explain()) == {}
    assert then.records[0].fact_id == berlin.fact_id and _superseded(then.explain()) == {}


def test_ask_why_and_recall_show_the_reason(db):
    """``redmem ask --why`` renders the reason and successor; MCP ``recall(explain=true)`` sends them."""
    agent = uuid.uuid4().hex
    berlin, lisbon = _stored_move(agent)
    explanation = (
        ContextAssembler(ExplainedFact, max_items=3).assemble("Where does Alice live?", agent_id=agent).explain()
    )
    console = Console(width=240, record=True)
    console.print(why_tables(explanation))
    text = console.export_text()
    assert "superseded" in text and f"superseded by {lisbon.fact_id}" in text
    (sent,) = [o for o in explanation.to_dict()["left_out"] if o["reason"] == "superseded"]
    assert sent["record_id"] == berlin.fact_id and sent["superseded_by"] == lisbon.fact_id


def test_finding_the_superseded_costs_no_round_trip(db, sent):
    """The same count as a read of every version (which sends no search of the superseded) and as
    the tenant had before anything was superseded."""
    agent = uuid.uuid4().hex
    facts = [
        ExplainedFact(agent_id=agent, content=f"{WORDS[i % 10]} {WORDS[i * 3 % 10]} fact {i}", valid_from=float(i))
        for i in range(40)
    ]
    ExplainedFact.save_many(facts)
    assembler = ContextAssembler(ExplainedFact, max_items=5)

    def round_trips(where: dict[str, object] | None) -> tuple[int, int]:
        assembler.assemble("alice berlin", agent_id=agent, where=where)  # warm: scripts cached, vectors loaded
        sent.clear()
        result = assembler.assemble("alice berlin", agent_id=agent, where=where)
        return len(sent), len(_superseded(result.explain()))

    before = round_trips(None)
    for older, newer in zip(facts[:4], facts[10:14], strict=True):
        supersede(older, newer)
    assert before == (round_trips({"as_of": ALL_TIMES})[0], 0)
    count, left_out = round_trips(None)
    assert count == before[0] and left_out > 0


def _ranked(agent: str, text: str, where: dict[str, object]) -> dict[str, list[tuple[str, float]]]:
    """Each searched list of ``text`` under ``where``, every hit, best first."""
    space, compiled = ExplainedFact._meta.keyspace((agent,)), compile_where(ExplainedFact, where)
    fields = ExplainedFact._meta.fields
    client = ExplainedFact._meta.client
    return {
        "keyword": run_search(client, keyword_hits(fields["content_bm25"], space, text, 1000, compiled)),
        "vector": run_search(client, fields["embedding"].searcher(space, text, 1000, compiled)),
    }


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    count=st.integers(1, 30),
    pairs=st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=12),
    probe=st.integers(0, 30),
    at=st.one_of(st.none(), st.integers(0, 35)),
    max_items=st.integers(1, 6),
)
def test_the_left_out_superseded_are_those_that_rank_within_the_depth(any_db, count, pairs, probe, at, max_items):
    """Brute force: rank every record a read at ``at`` could see or left out as superseded (no
    window checked), keep each list's top ``depth``; the superseded among them are the ones listed
    (a record tied with the depth's last score may fall either side)."""
    agent = uuid.uuid4().hex
    records = [
        ExplainedFact(agent_id=agent, content=f"{WORDS[i % 10]} {WORDS[i * 3 % 10]} {i}", valid_from=float(i))
        for i in range(count)
    ]
    ExplainedFact.save_many(records)
    for a, b in pairs:
        older, newer = records[min(a, b) % count], records[max(a, b) % count]
        if older.valid_from < newer.valid_from and older.valid_to is None:
            supersede(older, newer)
    windows = {
        r.fact_id: (r.valid_from, r.valid_to, r.superseded_by) for r in ExplainedFact.query.filter(agent_id=agent).all()
    }

    def closed(fact_id: str) -> bool:
        end = windows[fact_id][1]
        return end is not None and (at is None or end <= at)

    def seen(fact_id: str) -> bool:
        start, end, _ = windows[fact_id]
        return (end is None if at is None else visible_at(start, end, float(at))) or closed(fact_id)

    text = records[probe % count].content
    depth = max_items * ContextAssembler.CANDIDATE_MULTIPLIER
    surely, maybe = set(), set()
    for hits in _ranked(agent, text, {"as_of": ALL_TIMES}).values():
        ranked = [(i, s) for i, s in hits if seen(i)]
        last = ranked[depth - 1][1] if len(ranked) >= depth else float("-inf")
        surely |= {i for i, s in ranked if closed(i) and s > last + TIE}
        maybe |= {i for i, s in ranked if closed(i) and s >= last - TIE}
    where = None if at is None else {"as_of": float(at)}
    result = ContextAssembler(ExplainedFact, max_items=max_items).assemble(text, agent_id=agent, where=where)
    listed = _superseded(result.explain())
    assert surely <= set(listed) <= maybe
    event(f"superseded listed: {min(len(listed), 3)}{'+' if len(listed) >= 3 else ''}")
    # the successor is read with the candidates' records: unknown only when the read found none
    assert all(by == windows[i][2] if result.explain().items else by is None for i, by in listed.items())
