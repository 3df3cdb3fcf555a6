"""The ContextAssembler over DefaultMemory: store facts, assemble a budgeted context, report the outcome.

    python recipes/assembler.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/recipes/context-assembler.md).
"""

import os
import uuid

import redmem
from redmem import ContextAssembler, DefaultMemory

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}")  # this run's own keys

for fact in ["Deploys go out on Tuesdays after stand-up", "Production is frozen from Friday 15:00",
             "The on-call rota lives in the ops wiki", "Lunch is at noon"]:
    DefaultMemory.create(agent_id="agent-1", content=fact)

assembler = ContextAssembler(DefaultMemory, max_items=3, max_tokens=60, output_format="content")
result = assembler.assemble("when can we deploy?", agent_id="agent-1")
print(result.formatted)
print(f"-- {len(result.records)} memories, {result.metadata['token_count']} tokens")
print("outcomes:", result.report("acted"))  # the agent used them: their confidence rises
