"""OpenAI Agents SDK: a redmem Session keeps every conversation; instructions carry what the agent remembers.

    python recipes/agents_sdk.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/integrations.md). With
``OPENAI_API_KEY`` (or ``OPENAI_BASE_URL``) set an agent answers; without, the script prints the
instructions the agent would get.
"""

import asyncio
import os
import uuid

from agents import Agent, RunContextWrapper, Runner

import redmem
from redmem import HashingEmbeddings
from redmem.integrations.openai_agents import RedmemSession, SessionItem, memory_instructions
from redmem.recipes.conversation import conversation_assembler

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}", embedding_provider=HashingEmbeddings(dimensions=64))

yesterday = RedmemSession("2024-05-01", agent_id="agent-1")
asyncio.run(yesterday.add_items([
    {"role": "user", "content": "My dog is called Biscuit"},
    {"role": "assistant", "content": "Biscuit is a lovely name."},
]))
instructions = memory_instructions("You are a helpful assistant.", conversation_assembler(SessionItem, max_items=5),
                                   agent_id="agent-1")
agent = Agent(name="helper", instructions=instructions, model=os.environ.get("OPENAI_MODEL", "gpt-4.1-nano"))
question = "What is my dog called?"

if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
    print(Runner.run_sync(agent, question, session=RedmemSession("2024-05-02", agent_id="agent-1")).final_output)
else:
    turn = RunContextWrapper(context=None, turn_input=[{"role": "user", "content": question}])
    print(asyncio.run(instructions(turn, agent)))
