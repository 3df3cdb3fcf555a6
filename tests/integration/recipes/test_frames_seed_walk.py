"""The candidate script's seed walk (``frames_candidates.lua``, stage 2's pre-filter): over the
fused ranking, best first, the first ``top_k * 4`` eligible blocks are the seeds; a block left
out only because it is superseded is reported (its place in the ranking) while seeds and such
blocks together fill fewer than the seeds wanted. The script reads each ranked id's window and
validity entries as the walk reaches them, so the ids after the walk's stop are not read.

A hypothesis property compares the script's seeds, ids examined and superseded report with a
reference walk written here in Python over the same server state (any ranking: archived,
superseded, outside the window, unknown ids); and a count of the window entries the script
reads for the ranking. On a real server."""

from __future__ import annotations

import itertools
import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from frames_support import Clock, WordEmbeddings
from redmem.fields.search_protocol import run_search
from redmem.recipes.frames import ATTENTION_FRAME, FrameMemory
from redmem.recipes.frames._retrieval import N_SEEDS_MULTIPLIER, CandidateSearch, block_keys

OPEN_END = 253402300799
MORE = re.compile(rb"\.\.\. \((\d+) more arguments\)")


def partition(blocks: int, archived: float, superseded: float, stale: float, seed: int):
    """A FrameMemory of ``blocks`` blocks, shares of them archived, superseded (by the next
    block) and last reinforced outside ATTENTION's window; the memory and its block ids."""
    rng = random.Random(seed)
    clock = Clock()
    memory = FrameMemory(agent_id=f"walk-{seed}-{rng.random()}", clock=clock, wiring=None, neighbours=0)
    memory.begin_session()
    ids = [memory.learn(f"block number {i} about topic {i % 7}") for i in range(blocks)]
    clock.advance_hours(ATTENTION_FRAME.filters.search_window_hours + 1)
    for block_id in ids:
        if rng.random() >= stale:
            memory.touch(block_id)  # back inside the window
    for older, newer in itertools.pairwise(ids):
        if rng.random() < superseded:
            memory.supersede(older, newer)
    for block_id in ids:
        if rng.random() < archived:
            memory.archive(block_id)
    return memory, ids


def reference_walk(memory: FrameMemory, now_hours: float, ranked: list[str], wanted: int):
    """The walk over the stored window and validity entries: (seeds, ids examined, superseded ids
    with their 1-based place in the ranking)."""
    client, keys = memory.client, block_keys(memory.space)
    cutoff = now_hours - ATTENTION_FRAME.filters.search_window_hours
    seeds, superseded, examined = [], [], 0
    for place, block_id in enumerate(ranked, start=1):
        if len(seeds) >= wanted:
            break
        examined += 1
        window = client.zscore(keys["window"], block_id)
        valid_to = client.zscore(keys["valid_to"], block_id)
        closed = valid_to is not None and valid_to < OPEN_END
        if window is not None and window > cutoff and not closed:
            seeds.append(block_id)
        elif len(seeds) + len(superseded) < wanted and closed and window is not None and window > cutoff:
            superseded.append((block_id, place))
    return seeds, examined, superseded


def walked(memory: FrameMemory, ranked: list[str], top_k: int):
    scores = {block_id: 1.0 - n / (len(ranked) + 1) for n, block_id in enumerate(ranked)}
    search = CandidateSearch(memory.space, ATTENTION_FRAME, memory.clock(), top_k * N_SEEDS_MULTIPLIER, scores)
    return run_search(memory.client, search)


def texts(values) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else v for v in values]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    blocks=st.integers(1, 60),
    archived=st.floats(0.0, 0.5),
    superseded=st.floats(0.0, 0.6),
    stale=st.floats(0.0, 0.6),
    unknown=st.integers(0, 10),
    top_k=st.integers(1, 6),
)
def test_the_seed_walk_is_the_reference_walk(db, seed, blocks, archived, superseded, stale, unknown, top_k):
    before = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=WordEmbeddings())
    try:
        memory, ids = partition(blocks, archived, superseded, stale, seed)
        ranked = ids + [f"{n:032x}" for n in range(unknown)]  # ids no block has
        random.Random(seed).shuffle(ranked)
        reply = walked(memory, ranked, top_k)
        seeds, examined, left_out = reference_walk(memory, float(reply[0]), ranked, top_k * N_SEEDS_MULTIPLIER)
        assert texts(reply[1]) == seeds
        assert int(reply[6]) == examined
        out = texts(reply[7])
        assert [(out[i], int(out[i + 2])) for i in range(0, len(out), 3)] == left_out
    finally:
        redmem.configure(embedding_provider=before)


def window_reads(client, window_key: str) -> int:
    """The ids the scripts' ZMSCORE calls on the window key asked for, by SLOWLOG (every command
    logged; an entry keeps 31 arguments and counts the rest)."""
    asked = 0
    for entry in client.slowlog_get(10_000):
        command = entry["command"]
        parts = command.split(b" ")
        if parts[0].lower() == b"zmscore" and parts[1] == window_key.encode():
            more = MORE.search(command)
            asked += len(parts) - 2 - (4 if more else 0) + (int(more[1]) if more else 0)
    return asked


def test_ranked_ids_after_the_walk_stops_are_not_read(db):
    before = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=WordEmbeddings())
    try:
        memory, ids = partition(60, 0.0, 0.0, 0.0, 7)  # every block eligible
        top_k = 2
        wanted = top_k * N_SEEDS_MULTIPLIER
        db.config_set("slowlog-log-slower-than", 0)
        db.config_set("slowlog-max-len", 10_000)
        db.slowlog_reset()
        reply = walked(memory, ids, top_k)
        reads = window_reads(db, block_keys(memory.space)["window"])
    finally:
        db.config_set("slowlog-log-slower-than", 10_000)
        redmem.configure(embedding_provider=before)
    assert len(reply[1]) == wanted and int(reply[6]) == wanted
    assert reads == wanted  # the old script read all 60 ranked ids' window entries
