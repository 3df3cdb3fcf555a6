"""What operation keys cost a server: bytes each, how long each lives, so how many a write rate keeps.

Each write leaves one operation key (:mod:`redmem.store._outcome`) for its lifetime. On a fresh
private server this script makes ``--calls`` script writes (``update_confidence``) and as many
saves of one record, and reports per write: the growth of ``used_memory``, ``MEMORY USAGE`` of
one key and its TTL. Steady state: keys held = writes per second * TTL.
``python benchmarks/op_keys.py`` prints JSON (and writes ``benchmarks/results/op_keys.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import redmem
from redmem import AutoKeyField, ConfidenceField, KeyField, Model, StringField
from redmem.store._embedded import EmbeddedServer


class OpNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()
    confidence = ConfidenceField()


def per_write(client, write, calls: int) -> dict:
    """Bytes of ``used_memory`` added per call of ``write``, and one of its operation keys' size and TTL."""
    before = set(client.scan_iter(match="*:op:*", count=1000))
    start = client.info("memory")["used_memory"]
    for _ in range(calls):
        write()
    grown = client.info("memory")["used_memory"] - start
    key = next(k for k in client.scan_iter(match="*:op:*", count=1000) if k not in before)
    return {"used_memory_per_write": round(grown / calls), "memory_usage_of_one_key": client.memory_usage(key),
            "key_name_bytes": len(key), "ttl_seconds": client.ttl(key)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "op_keys.json"))
    args = parser.parse_args()
    with EmbeddedServer() as server:
        client = redmem.connect(server.url)
        redmem.configure(key_prefix="rm")
        note = OpNote.create(agent_id="agent-1", content="the standup moved to 10:30")
        results = {
            "script_write": per_write(client, lambda: ConfidenceField.update_confidence(note, "confidence", 0.9),
                                      args.calls),
            "save": per_write(client, note.save, args.calls),
        }
    print(json.dumps(results, indent=2))
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
