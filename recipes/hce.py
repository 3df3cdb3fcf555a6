"""The HCE pipeline: wrap a chat function so every prompt carries a budgeted context block.

    python recipes/hce.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/recipes/hce.md). The model
here is a stand-in function; call any chat model in its place.
"""

import os
import uuid

import redmem
from redmem.recipes.hce import HCEPipeline

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}")

pipeline = HCEPipeline(session_id="user-42", max_focus=4, context_budget=150)


@pipeline.wrap_chat
def chat(prompt: str) -> str:
    print(f"--- prompt the model sees ---\n{prompt}\n")
    return "Noted."


chat("I moved to Lisbon in March and started at Acme.")
for small_talk in ["Any tips for sleeping better?", "I watched a film about whales.", "My laptop fan is loud."]:
    chat(small_talk)
chat("where do I work now? acme")
