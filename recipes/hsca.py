"""The HSCA engine: score each turn in four layers, close beats into snapshots, read the macro context.

    python recipes/hsca.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/recipes/hsca.md).
"""

import os
import uuid

import redmem
from redmem.recipes.hsca import HSCAEngine

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}")

engine = HSCAEngine(agent_id="agent-1", session_id="chat-42")
for turn in [
    "Redis stores data in memory. Memory access makes Redis fast. Fast data access is why teams pick Redis.",
    "So how does Redis persist data to disk? Does the memory data survive a restart?",
    "Once upon a time a tortoise and a hare agreed to race. The hare ran ahead and slept under a tree.",
    "The hare woke too late, and the tortoise had won the race. The tortoise was slow, but the hare was careless.",
]:
    chunk = engine.ingest_turn(turn)
    print(f"{chunk.layer1_score:.2f} {chunk.domain_tags} {turn[:50]}")

for beat in engine.get_macro_context():
    print(f"beat {beat.conversation_position}: {max(beat.domain_summary, key=beat.domain_summary.get)}")
best = engine.relevant("redis memory", context_position=1)[0]
print(f"most relevant to 'redis memory': beat {best.snapshot.conversation_position} ({best.relevance:.2f})")
