"""Make a partly loaded frames partition the benchmark's partition at the size it reached.

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/frames_partial.py --server URL

When a ``frames.py --parts latency --server URL --bulk`` load of N blocks is stopped before its
end (a loaded host), its agent holds the first M blocks of :func:`facts.blocks` in learn order
(each batch of :func:`frames_bulk.bulk_learn` is one pipeline), with their wiring but not the
benchmark's hand-made edges and contradictions, which ``frames.py`` adds once every block is in.
This script reads the M blocks' ids from the session in position order, connects the benchmark's
edges among them and records its contradictions among them, as ``frames.py`` would have after a
load of ``--sizes M`` (``facts.edges(M)`` and ``facts.contradictions(M)``: the workload at M), then
marks the partition loaded for M (``--reuse``) and SAVEs the RDB.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

import facts
import redmem
from common import save_rdb
from frames import AGENT, LOADED_KEY
from redmem.recipes.assembler._conversation import session_turns_key
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._retrieval import block_keys
from redmem.store._keys import KeyKind


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    args = parser.parse_args(argv)
    redmem.connect(args.server)
    client = redis.Redis.from_url(args.server)
    memory = FrameMemory(agent_id=AGENT)
    session = client.hget(block_keys(memory.space)["clock"], "session")
    ids = [i.decode() for i in client.zrange(session_turns_key(memory.space, session.decode()), 0, -1)]
    count = len(ids)
    blocks = facts.blocks(count)
    for n in (0, count // 2, count - 1):  # the session's order is facts' order
        assert memory.get(ids[n]).content == blocks[n]["text"], n
    assert client.zcard(memory.space.key(KeyKind.ALL_RECORDS)) == count  # every record is in the session
    for a, b, weight in facts.edges(count):
        memory.connect(ids[a], ids[b], weight=weight)
    for a, b in facts.contradictions(count):
        memory.contradict(ids[a], ids[b])
    client.set(LOADED_KEY.format(n=count), 1)
    save_rdb(client)
    print(count)
    return count


if __name__ == "__main__":
    main()
