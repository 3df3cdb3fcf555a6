"""What a full server does to redmem under ``noeviction`` and under an evicting policy.

For each ``maxmemory-policy`` a fresh private server with ``maxmemory 4mb`` gets small memories
(decay + BM25 model) saved one ``save()`` at a time until a save fails (at most 20,000).
Recorded: the saves that succeeded, the error that stopped them, keys the server evicted,
record hashes left, ids in the model's record index, and how many records ``assemble()``
returns for a query that matches every memory (``max_items`` 10)::

    python benchmarks/eviction.py        # writes results/eviction.json
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, write_json
from redmem import AutoKeyField, BM25Field, DecayingSortedField, FloatField, KeyField, Model, StringField
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer

POLICIES = ("noeviction", "allkeys-lru", "volatile-lru")
LIMIT = 20_000


class Note(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    body = BM25Field(source="content")


def fill(policy: str) -> dict[str, Any]:
    """Save until the server refuses, then count what is left and what a search finds."""
    with EmbeddedServer(extra_args=["--maxmemory", "4mb", "--maxmemory-policy", policy]) as server:
        client = redmem.connect(server.url)
        redmem.configure(client=client, key_prefix="ev")
        saved, error = 0, None
        for i in range(LIMIT):
            try:
                Note(agent_id="a", content=f"memory {i} about the deployment of service{i}").save()
            except Exception as exc:  # the point is which error a full server gives
                error = f"{type(exc).__module__}.{type(exc).__name__}"
                break
            saved += 1
        space = Note.query.filter(agent_id="a").partition()
        found = ContextAssembler(Note, max_items=10).assemble("deployment memory", agent_id="a").records
        row = {"policy": policy, "saves_accepted": saved, "stopping_error": error,
               "evicted_keys": int(client.info("stats")["evicted_keys"]),
               "record_hashes_left": sum(1 for _ in client.scan_iter(f"{space.base}:r:*", count=1000)),
               "ids_in_record_index": client.zcard(space.key("all")),
               "assemble_records": len(found)}
        client.close()
        return row


def main() -> None:
    rows = []
    for policy in POLICIES:
        rows.append(fill(policy))
        print(rows[-1], flush=True)
    write_json("eviction", {"benchmark": "eviction", "command": "python benchmarks/eviction.py",
                            "maxmemory": "4mb", "machine": machine(), "results": rows})


if __name__ == "__main__":
    main()
