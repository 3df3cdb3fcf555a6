"""The frames engine: typed memory blocks served as SELF, ATTENTION and TASK frames.

    python recipes/frames.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/recipes/frames.md).
"""

import os
import uuid

import redmem
from redmem import HashingEmbeddings
from redmem.recipes.frames import FrameMemory

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}", embedding_provider=HashingEmbeddings(256))

memory = FrameMemory(agent_id="agent-1")
memory.begin_session()
memory.learn("I never deceive the user.", tags=["self/constitutional"])
jobs = memory.learn("Use Celery with Redis for background jobs.", category="knowledge")
broker = memory.learn("Port 6380 hosts the message queue.")
memory.connect(jobs, broker, weight=0.4)  # reached through the graph when jobs is found

print(memory.frame("self").text)
attention = memory.frame("attention", "how do I run background tasks with celery?", top_k=3)
print(attention.text)
attention.report({jobs: "acted"})
memory.end_session()
