"""The frames benchmark's bulk loader (``benchmarks/frames_bulk.py``) writes what ``learn()`` one
block at a time writes: the same keys with the same values, compared key by key on a real server
(ids and clock made deterministic in both runs), with wiring (edges, duplicates, supersedes)
and neighbour contexts across the loader's batch boundaries."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import redmem
from conftest import all_keys
from frames_support import WordEmbeddings
from redmem.model import _registry as registry
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames import _engine as engine

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import facts
from frames_bulk import bulk_learn

#: Pairs the default judge calls an update, a restatement, a negation: wiring writes all it can.
WIRED = [
    {"text": "Ann has 2 cats at home.", "tags": ["people/ann"], "category": "knowledge"},
    {"text": "Ann lives in Berlin with her partner.", "tags": ["people/ann"], "category": "knowledge"},
    {"text": "Ann has 3 cats at home.", "tags": ["people/ann"], "category": "knowledge"},
    {"text": "I value honest answers above all.", "tags": ["self/value"], "category": "knowledge"},
    {"text": "Ann lives in Lisbon with her partner.", "tags": ["people/ann"], "category": "observation"},
    {"text": "Ann has 3 cats at home, she says.", "tags": ["people/ann"], "category": "knowledge"},
    {"text": "Ann does not have 3 cats at home.", "tags": ["people/ann"], "category": "knowledge"},
]


class SteppingClock:
    """Wall time that moves 90 seconds at each read (both runs read it in the same order)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        self.now += 90.0
        return self.now


def contents(client) -> dict[str, object]:
    """Every key of the test's prefix (operation keys aside) with its type and decoded value."""
    prefix = redmem.store.settings().key_prefix
    out: dict[str, object] = {}
    for key in sorted(all_keys(client, prefix)):
        kind = client.type(key).decode()
        if kind == "hash":
            value: object = dict(client.hgetall(key))
            if key.endswith((":v", ":ver")) and b"epoch" in value:  # type: ignore[operator]
                value.pop(b"epoch")  # type: ignore[attr-defined]  # an index version: wall time
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        elif kind == "set":
            value = client.smembers(key)
        elif kind == "list":
            value = client.lrange(key, 0, -1)
        else:
            value = client.get(key)
        out[key] = (kind, value)
    return out


def load(db, monkeypatch, blocks, *, bulk: bool, session: bool, batch: int) -> dict[str, object]:
    db.flushdb()
    monkeypatch.setattr(registry, "_added", {})  # the partition registry is written anew after the flush
    ids = (f"{n:032x}" for n in itertools.count(1))
    monkeypatch.setattr(engine, "uuid", SimpleNamespace(uuid4=lambda: SimpleNamespace(hex=next(ids))))
    memory = FrameMemory(agent_id="bulk", clock=SteppingClock())
    if session:
        memory.begin_session()
    if bulk:
        bulk_learn(memory, blocks, batch=batch, new_id=lambda: next(ids))
    else:
        for block in blocks:
            memory.learn(block["text"], tags=block["tags"], category=block["category"])
    return contents(db)


@pytest.mark.parametrize(("session", "batch"), [(True, 5), (True, 64), (False, 5)])
def test_bulk_load_writes_the_keys_learn_writes(db, monkeypatch, session, batch):
    blocks = facts.blocks(60)[:50] + WIRED + facts.blocks(80)[60:80]
    before = redmem.store.settings().embedding_provider
    try:
        redmem.configure(embedding_provider=WordEmbeddings())
        learned = load(db, monkeypatch, blocks, bulk=False, session=session, batch=batch)
        redmem.configure(embedding_provider=WordEmbeddings())
        bulked = load(db, monkeypatch, blocks, bulk=True, session=session, batch=batch)
    finally:
        redmem.configure(embedding_provider=before)
    kinds = {key.split("}:", 1)[-1].split(":")[0] for key in learned}
    assert {"co", "z", "b", "v", "r"} <= kinds  # edges, sorted indexes, keywords, vectors, records written
    assert any(b"valid_to" in value[1] for value in learned.values() if value[0] == "hash")  # a supersede ran
    assert set(bulked) ^ set(learned) == set()
    assert [key for key, value in learned.items() if bulked[key] != value] == []
