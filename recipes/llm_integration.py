"""LLM integration: assemble an agent's memories, inject them into a chat call, report the outcome.

    python recipes/llm_integration.py [--agent agent-1] [--key-prefix rm] [--model gpt-4.1-nano]

Redis: ``REDIS_URL``, else the persistent local server (its data kept for the next run). Model: any OpenAI-compatible endpoint
through the ``openai`` SDK (v1+): ``OPENAI_BASE_URL`` and/or ``OPENAI_API_KEY`` (OpenAI itself,
vLLM, Ollama, LM Studio, a gateway...); ``OPENAI_MODEL`` or ``--model`` names the model. With
neither variable set, the script prints the messages it would send and exits without calling a
model.

The steps are those of the ContextAssembler's "LLM Integration" example: assemble with the
agent's partition, put ``result.formatted`` under "Relevant context:" in the system message,
call the model, then tell the ObservationProtocol which memories were used ("acted"), which
raises their confidence and confirms their staged reads.
"""

from __future__ import annotations

import argparse
import os
import sys

import redmem
from redmem import ObservationProtocol
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.default_memory import DefaultMemory

SAMPLE_MEMORIES = {
    "deploy-blue-green": "Deployments go out through a blue/green switch on the Kubernetes cluster, never in place.",
    "deploy-freeze": "Production deployment is frozen from Friday 15:00 until Monday 09:00.",
    "deploy-checks": "Every deployment needs a green CI run and one approving review.",
    "deploy-rollback": "Rolling back a deployment is one command: make rollback ENV=prod.",
    "coffee": "The coffee machine is on the third floor, next to the printers.",
    "payments-lead": "Alice leads the payments team.",
}
QUESTION = "What's our deployment strategy?"


def out(text: str = "") -> None:
    """Write one line of the script's report to stdout."""
    sys.stdout.write(text + "\n")


def seed_memories(agent_id: str) -> None:
    """Store the sample memories the agent does not have yet (fixed ids: reruns add nothing)."""
    memories = [DefaultMemory(memory_id=key, agent_id=agent_id, content=text) for key, text in SAMPLE_MEMORIES.items()]
    client = DefaultMemory._meta.client
    with client.pipeline(transaction=False) as pipe:
        for memory in memories:
            pipe.exists(memory.db_key.redis_key)
        known = pipe.execute()
    for memory, exists in zip(memories, known):
        if not exists:
            memory.save()


def chat_client() -> object | None:
    """An OpenAI SDK client for the configured endpoint, or None when none is configured."""
    base_url, api_key = os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY")
    if not base_url and not api_key:
        return None
    from openai import OpenAI  # imported only when a model will be called (the SDK is optional)

    return OpenAI(api_key=api_key or "not-needed", base_url=base_url or None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="agent-1", help="the agent whose memories are used")
    parser.add_argument("--key-prefix", default="rm", help="prefix of every redmem key")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4.1-nano"))
    args = parser.parse_args(argv)
    redmem.connect()
    redmem.configure(key_prefix=args.key_prefix)
    seed_memories(args.agent)

    assembler = ContextAssembler(
        model_class=DefaultMemory,
        score_weights={"relevance": 0.6, "confidence": 0.3},
        max_items=10,
        max_tokens=4000,
    )
    result = assembler.assemble(query_cues={"topic": "deployment"}, agent_id=args.agent)

    # Build messages with injected memory context
    messages = [
        {"role": "system", "content": f"You are a helpful assistant.\n\nRelevant context:\n{result.formatted}"},
        {"role": "user", "content": QUESTION},
    ]
    for message in messages:
        out(f"--- {message['role']} ---\n{message['content']}")
    out(f"{len(result.records)} memories, {result.metadata['token_count']} tokens, "
        f"mode {result.metadata['retrieval_mode']}")

    client = chat_client()
    if client is None:
        out("No OPENAI_BASE_URL or OPENAI_API_KEY is set: no model was called.")
        return 0

    # Call the LLM
    response = client.chat.completions.create(model=args.model, messages=messages)
    answer = response.choices[0].message.content
    out(f"\n{args.model} answered:\n{answer}\n")

    # Report outcomes: which memories did the agent actually use?
    outcome_map = {r.db_key.redis_key: "acted" for r in result.records}
    ObservationProtocol.on_context_used(result.records, outcome_map)
    for record in result.records:
        confidence = DefaultMemory.confidence.get_confidence(record, "confidence")
        out(f"acted on: {record.content}  (confidence {confidence:.2f}, accesses {record.access_count})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
