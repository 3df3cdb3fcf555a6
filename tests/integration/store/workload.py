"""A model and a random write workload shared by the crash and concurrency tests.

Run as a script (``python workload.py URL PREFIX SEED N``) it performs N random writes and
prints a line after each, so a parent process can kill it in the middle of its work.
"""

from __future__ import annotations

import random
import sys

import redmem
from redmem import KeyField, Model, SortedField, StringField, TagField


class WorkloadNote(Model):
    agent_id = KeyField()
    note_id = KeyField()
    kind = KeyField()
    body = StringField()
    score = SortedField(partition_by="agent_id")
    tags = TagField()


def random_write(rng: random.Random) -> str:
    """Create, update or delete one of a small set of notes."""
    agent, note_id = rng.choice(["a", "b"]), str(rng.randrange(20))
    kind = rng.choice(["x", "y"])
    if rng.random() < 0.2:
        existing = WorkloadNote.query.get(agent_id=agent, note_id=note_id, kind=kind)
        if existing is not None:
            existing.delete()
        return "delete"
    note = WorkloadNote(agent_id=agent, note_id=note_id, kind=kind, body="b" * rng.randrange(100),
                score=rng.choice([None, rng.uniform(-5, 5)]),
                tags=rng.sample(["t1", "t2", "t3", "t4"], rng.randrange(4)))
    note.save()
    return "save"


def main() -> None:
    url, prefix, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)
    rng = random.Random(seed)
    for i in range(count):
        print(i, random_write(rng), flush=True)


if __name__ == "__main__":
    main()
