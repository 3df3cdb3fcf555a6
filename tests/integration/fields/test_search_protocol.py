"""The search protocol: searches built without I/O, sent together in one round trip, each
finishing from its own replies; the vector search's matrix released whatever happens."""

from __future__ import annotations

import threading
import time

import pytest

from conftest import configured_embeddings
from models import RhythmicMemory as Memory
from redmem import ServerError
from redmem.embeddings import HashingEmbeddings
from redmem.fields.search_protocol import LocalSearch, Mapped, run_search, run_searches
from redmem.store._scripts import ScriptCall


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


def remember(agent: str = "a") -> list:
    texts = ["deploy the helm chart", "canary rollback at noon", "green tea for Ana", "deploy freeze"]
    made = [Memory.create(agent_id=agent, topic="ops", content=text, salience=1.0) for text in texts]
    Memory.associations.link(made[0], made[3], initial_weight=0.8)
    return made


def searches(space, now, seed):
    graph = Memory.associations.graph(agent_id="a")
    return [
        Memory.topics_seen.searcher(space, ["ops", "kubernetes"]),
        Memory.content_bm25.searcher(space, "deploy", 10),
        Memory.rhythm.searcher(space, now, 0.5, 10),
        graph.size_searcher(),
        graph.searcher([seed]),
        Memory.embedding.searcher(space, "deploy helm", 10),
    ]


def test_any_set_of_searches_shares_one_round_trip(db, sent):
    seed = remember()[0].db_key
    space = Memory.query.filter(agent_id="a").partition()
    now = time.time()
    run_search(db, searches(space, now, seed)[1])  # the BM25 postings copied in: later searches send none
    alone = [run_search(db, search) for search in searches(space, now, seed)]
    planned = searches(space, now, seed)  # built without I/O
    sent.clear()
    together = run_searches(db, planned)
    assert len(sent) == 1
    assert together == alone
    flags, keyword, push, size, reached, vector = together
    assert flags == [True, False] and size > 0 and len(keyword.ranked) == 2 and len(push) == 4
    assert [weight for _, weight in reached] == [pytest.approx(0.4)] and vector


def test_a_search_with_nothing_to_ask_costs_no_round_trip(db, sent):
    remember()
    space = Memory.query.filter(agent_id="a").partition()
    stop_words = Memory.content_bm25.searcher(space, "the of and", 10)
    no_seeds = Memory.associations.graph(agent_id="a").searcher([])
    assert stop_words.calls() == [] and no_seeds.calls() == []
    sent.clear()
    result, reached = run_searches(db, [stop_words, no_seeds])
    assert (result.ranked, reached, len(sent)) == ([], [], 0)


class Refused:
    """A search whose call the server refuses (a script given a key of the wrong type)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def calls(self) -> list[ScriptCall]:
        return [ScriptCall("graph_size", [self.key], [])]

    def finish(self, replies):
        return replies[0]


def test_the_vector_search_releases_its_matrix_when_the_round_trip_fails(db):
    remember()
    space = Memory.query.filter(agent_id="a").partition()
    db.set(space.key("wrong"), "a string")
    vector = Memory.embedding.searcher(space, "deploy", 10)
    assert isinstance(vector, LocalSearch)
    with pytest.raises(ServerError, match="WRONGTYPE"):
        run_searches(db, [vector, Refused(space.key("wrong"))])
    assert vector.matrix.lock.acquire(blocking=False)  # not left locked
    vector.matrix.lock.release()
    assert run_search(db, Memory.embedding.searcher(space, "deploy", 10))  # and usable


def test_mapped_passes_the_answer_through_and_refuses_a_local_search(db):
    remember()
    space = Memory.query.filter(agent_id="a").partition()
    ids = Mapped(Memory.content_bm25.searcher(space, "deploy", 10), lambda result: [rid for rid, _ in result.ranked])
    assert len(run_search(db, ids)) == 2
    with pytest.raises(TypeError, match="VectorSearch works in-process"):
        Mapped(Memory.embedding.searcher(space, "deploy", 10), len)


class Work:
    """A local search whose work waits (up to a second) for ``signal``, noting its thread and
    when it ended; ``fail`` makes the work raise."""

    def __init__(self, signal: threading.Event, fail: bool = False) -> None:
        self.signal, self.fail = signal, fail
        self.thread: int | None = None
        self.events: list[str] = []

    def calls(self) -> list[ScriptCall]:
        return []

    def work(self) -> None:
        self.thread = threading.get_ident()
        self.events.append("signalled" if self.signal.wait(1.0) else "timed out")
        if self.fail:
            raise ValueError("work failed")

    def finish(self, replies):
        return self.events

    def abandon(self) -> None:
        self.events.append("abandoned")


class Signalling:
    """A search without local work whose finish sets ``signal``."""

    def __init__(self, key: str, signal: threading.Event) -> None:
        self.key, self.signal = key, signal

    def calls(self) -> list[ScriptCall]:
        return [ScriptCall("graph_size", [self.key], [])]

    def finish(self, replies):
        self.signal.set()
        return replies[0]


def test_local_work_runs_on_a_worker_while_the_other_searches_finish(db):
    signal = threading.Event()
    local = Work(signal)
    assert isinstance(local, LocalSearch)
    events, size = run_searches(db, [local, Signalling("graph-size-of-nothing", signal)])
    assert (events, size) == (["signalled"], 0)  # the other search finished while the work waited
    assert local.thread is not None and local.thread != threading.get_ident()


def test_an_error_of_the_local_work_is_raised_and_its_search_abandoned(db):
    signal = threading.Event()
    local = Work(signal, fail=True)
    with pytest.raises(ValueError, match="work failed"):
        run_searches(db, [local, Signalling("graph-size-of-nothing", signal)])
    assert local.events == ["signalled", "abandoned"]


def test_a_failed_round_trip_abandons_the_local_search_only_once_its_work_ended(db):
    space = Memory.query.filter(agent_id="a").partition()
    db.set(space.key("wrong"), "a string")
    local = Work(threading.Event())  # never signalled: the work ends by timing out
    with pytest.raises(ServerError, match="WRONGTYPE"):
        run_searches(db, [local, Refused(space.key("wrong"))])
    assert local.events == ["timed out", "abandoned"]


def test_finish_current_catches_the_matrix_up_then_ranks_it(db):
    made = remember()
    space = Memory.query.filter(agent_id="a").partition()
    assert run_search(db, Memory.embedding.searcher(space, "deploy helm", 10))  # the matrix loaded
    added = Memory.create(agent_id="a", topic="ops", content="deploy the helm chart again", salience=1.0)
    made[0].delete()
    search = Memory.embedding.searcher(space, "deploy helm", 10)
    with db.pipeline(transaction=False) as pipe:
        for call in search.calls():
            call.queue(pipe)
        hits = search.finish_current(pipe.execute())
    assert search.matrix.lock.acquire(blocking=False)  # released
    search.matrix.lock.release()
    ids = [record_id for record_id, _ in hits]
    assert added.db_key.record_id == ids[0] and made[0].db_key.record_id not in ids
    assert hits == run_search(db, Memory.embedding.searcher(space, "deploy helm", 10))
