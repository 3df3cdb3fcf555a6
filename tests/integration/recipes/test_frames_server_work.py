"""The candidate script's server work per frame (issue 29, ATTENTION at 100k): the scoring inputs
of every candidate are read in batches (no ZSCORE or HGET per candidate), and the contradictions
among the candidates are found whether the script reads the partition's contradiction set whole
(a few entries per candidate) or a range per candidate (more). On a real server."""

from __future__ import annotations

import itertools

import pytest

import redmem
from frames_support import Clock, WordEmbeddings
from redmem.recipes.frames import FrameMemory

PER_CANDIDATE = ("zscore", "hget")


@pytest.fixture
def mem(db):
    before = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=WordEmbeddings())
    memory = FrameMemory(agent_id="agent-1", clock=Clock(), wiring=None, neighbours=0)
    memory.begin_session()
    yield memory
    redmem.configure(embedding_provider=before)


def calls(client, names) -> dict[str, int]:
    """How many times the server has run each command so far (scripts' calls included)."""
    stats = client.info("commandstats")
    return {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in names}


def ids(blocks):
    return [b.id for b in blocks]


def test_the_candidates_scoring_inputs_are_read_in_batches(mem, db):
    jobs = [mem.learn(f"background jobs run on worker {i}") for i in range(12)]
    others = [mem.learn(f"the broker of team {i}") for i in range(12)]
    for job, other in zip(jobs, others):
        mem.connect(job, other, weight=0.3)  # each seed brings a neighbour in
    mem.contradict(jobs[0], jobs[1])
    mem.recall("attention", "background jobs worker")  # the process's copies catch up
    before = calls(db, (*PER_CANDIDATE, "zmscore", "hmget"))
    blocks = mem.recall("attention", "background jobs worker", top_k=5)
    after = calls(db, (*PER_CANDIDATE, "zmscore", "hmget"))
    assert len(blocks) == 5
    ran = {name: after[name] - before[name] for name in PER_CANDIDATE}
    assert ran["zscore"] == 0 and ran["hget"] <= 1  # the one HGET: the keyword index's total length
    assert after["hmget"] - before["hmget"] >= 12  # one per seed: its text (neighbours that cannot be chosen: none)


@pytest.mark.parametrize("unrelated_pairs", [0, 200])
def test_contradictions_among_candidates_are_found_however_many_others_exist(mem, unrelated_pairs):
    """200 pairs among blocks no frame asks for: more than a few per candidate, the script reads
    a range per candidate; none: it reads the set whole. The suppression is the same."""
    deploy = [mem.learn(f"deploy day is day{i}") for i in range(3)]
    mem.update_confidence(deploy[1], 0.9)
    mem.contradict(deploy[0], deploy[1])
    mem.contradict(deploy[2], deploy[1])
    unrelated = [mem.learn(f"zebra stripe {i}") for i in range(unrelated_pairs + 1)]
    for a, b in itertools.pairwise(unrelated):
        mem.contradict(a, b)
    assert ids(mem.recall("attention", "deploy day", top_k=3)) == [deploy[1]]
