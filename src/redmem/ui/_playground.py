"""The query playground: a question's assembled context, its budget use, each item's explanation
beside what was cut (:meth:`AssemblyResult.explain`)."""

from __future__ import annotations

from typing import Any

from ..cli_commands._memory import memory_assembler
from ..cli_commands._windows import read_memories
from ..store._errors import QueryArgumentError

__all__ = ["assemble_for"]


def assemble_for(agent: str, question: str, max_items: int = 10, max_tokens: int = 2000) -> dict[str, Any]:
    """Assemble ``question`` over ``agent``'s memories (the CLI's assembler, with its post-effects)."""
    if not question.strip():
        raise QueryArgumentError("type a question to assemble context for")
    if not (1 <= max_items <= 100 and 1 <= max_tokens <= 100_000):
        raise QueryArgumentError("max_items must be 1-100 and max_tokens 1-100000")
    result = read_memories(memory_assembler(max_items, max_tokens), question, agent, None)
    contents = {r.memory_id: r.content for r in result.records}
    explanation = result.explain().to_dict()
    for item in explanation["items"]:
        item["content"] = contents.get(item["record_id"])
    return {"context": result.formatted, "token_count": result.metadata["token_count"], "max_tokens": max_tokens,
            "explanation": explanation}
