"""Conversation memory: each dialog turn stored with its neighbours, recalled by hybrid search.

    python recipes/conversation.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/recipes/conversation-memory.md).
Vectors come from HashingEmbeddings here; ``MiniLMEmbeddings()`` (the ``local`` extra) matches meaning.
"""

import os
import uuid

import redmem
from redmem import HashingEmbeddings
from redmem.recipes.conversation import conversation_assembler, ingest_conversation

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}", embedding_provider=HashingEmbeddings(dimensions=64))

turns = [
    {"speaker": "Mel", "text": "Where did you go camping last summer?", "session": "3", "said_at": "8 May, 2023"},
    {"speaker": "Caroline", "text": "The Rockies, with the whole family!", "session": "3", "said_at": "8 May, 2023"},
    {"speaker": "Mel", "text": "I painted a lake at sunrise", "session": "4", "said_at": "9 June, 2023"},
]
ingest_conversation(turns, agent_id="agent-1", window=2)
result = conversation_assembler(max_items=2).assemble("Where did Caroline go camping?", agent_id="agent-1")
for record in result.records:
    print(f"{record.speaker}: {record.content}")
result.report("acted")
