"""SubconsciousMemory: memory injected into and extracted from LLM turns without the agent asking.

Around each chat turn of one agent:

1. ``inject_context(messages)`` assembles the memories relevant to the last user message (a
   :class:`ContextAssembler` over the model, ``output_format="content"`` by default) and returns
   a copy of ``messages`` whose system message ends with ``"Relevant context:\\n<formatted>"``
   (a system message is inserted first when there is none; nothing is added when no memory was
   selected). The caller's list and dicts are never changed.
2. ``extract_memories(response_text)`` runs the extractor (heuristic by default, or
   :class:`~redmem.recipes.assembler._extractors.LLMExtractor`), stores each new fact once (its id is a
   digest of the agent and the text, so a repeated fact is not stored twice) and, on the model's
   CoOccurrenceField, links every memory to the entities it mentions and every pair of those
   entities (``Entity`` nodes, weight 0.1; an existing edge keeps its weight).
3. ``report_outcomes(result, outcome)`` feeds what the agent did with the injected memories back
   through :meth:`ObservationProtocol.on_context_used` (confidence, access, cycles, proposals).

Defaults (``max_items`` 10, ``max_tokens`` 4000, ``output_format`` "content", entity links of
weight 0.1) as in popoto's Subconscious Memory recipe.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

from ...context._neighbours import SearchText
from ...fields._bm25 import BM25Field
from ...fields._cooccurrence import CoOccurrenceField, Entity
from ...model._indexed import AutoKeyField
from ...store._aio import async_variant
from ...store._connection import server_errors
from ...store._errors import ModelException, ValidationError
from ._context_assembler import AssemblyResult, ContextAssembler
from ._extractors import ExtractedMemory, HeuristicExtractor, find_entities
from ._models import DefaultMemory

if TYPE_CHECKING:
    from ...model._base import Model

__all__ = ["SubconsciousMemory", "CONTEXT_HEADER", "ENTITY_LINK_WEIGHT", "last_user_text", "with_context"]

CONTEXT_HEADER = "Relevant context:\n"
ENTITY_LINK_WEIGHT = 0.1

Extractor = Callable[[str], Sequence["ExtractedMemory | str"]]


def _text(content: Any) -> str:
    """A message's text: a str as is, the text parts of a list of content parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last ``user`` message ("" when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def with_context(messages: Sequence[Mapping[str, Any]], formatted: str) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose first system message ends with the context block. Pure."""
    copied = [dict(m) for m in messages]
    if not formatted:
        return copied
    block = CONTEXT_HEADER + formatted
    system = next((m for m in copied if m.get("role") == "system"), None)
    if system is None:
        return [{"role": "system", "content": block}, *copied]
    content = system.get("content")
    if isinstance(content, list):
        system["content"] = [*content, {"type": "text", "text": block}]
    else:
        system["content"] = f"{content}\n\n{block}" if content else block
    return copied


def _memory_text_field(model: type[Model]) -> str:
    """The field holding a memory's text: its BM25Field's source, or the text a search text of
    its own line is made of (:class:`~redmem.context._neighbours.SearchText`), else ``content``."""
    bm25 = next(iter(model._meta.fields_of(BM25Field)), None)
    if bm25 is None:
        return "content"
    source = model._meta.fields.get(bm25.source)
    return source.own_line_of or bm25.source if isinstance(source, SearchText) else bm25.source


class SubconsciousMemory:
    """Automatic memory around LLM turns for one agent (see the module docs).

    Args:
        agent_id: the agent; its memories are the model's partition of that value.
        model: a memory model with one partition field and a text field (its BM25Field's
            source, else ``content``); DefaultMemory by default.
        max_items: the ContextAssembler's record budget.
        max_tokens: the ContextAssembler's token budget (None: no token limit).
        output_format: the ContextAssembler's format of the injected context.
        extractor: ``callable(text) -> list[ExtractedMemory | str]``; default HeuristicExtractor.
    """

    def __init__(
        self, agent_id: str, model: type[Model] = DefaultMemory, max_items: int = 10, max_tokens: int | None = 4000,
        output_format: str = "content", extractor: Extractor | None = None,
    ) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValidationError(f"SubconsciousMemory needs an agent_id (a non-empty str), got {agent_id!r}")
        partition = model._meta.partition_fields
        if len(partition) != 1:
            raise ModelException(f"{model.__name__} must be partitioned by one field (the agent), not {partition}")
        self.agent_id, self.model = agent_id, model
        self.partition: dict[str, Any] = {partition[0]: agent_id}
        self.assembler = ContextAssembler(model, max_items=max_items, max_tokens=max_tokens, output_format=output_format)
        self.extractor = extractor if extractor is not None else HeuristicExtractor()
        self.text_field = _memory_text_field(model)
        self.graph_field = next(iter(model._meta.fields_of(CoOccurrenceField)), None)
        self.id_field = next((f.name for f in model._meta.fields_of(AutoKeyField)), None)

    # -- before the model call ---------------------------------------------------------------------
    def inject_context(self, messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], AssemblyResult]:
        """Messages with the relevant memories in the system message, and the assembly result.

        The query is the last user message; without one, only the push path can select memories.
        """
        query = last_user_text(messages)
        result = self.assembler.assemble(query or None, **self.partition)
        return with_context(messages, result.formatted), result

    # -- after the model call ----------------------------------------------------------------------
    def extract_memories(self, response_text: str) -> list[Any]:
        """Store the facts the extractor finds in ``response_text`` and link their entities.

        Returns the newly stored memories (facts already stored are left as they are, their
        entity links ensured). Entity names are case-folded. Round trips: one to find known facts,
        a save per new fact, one for every link.
        """
        extracted = _distinct(self.extractor(response_text))
        if not extracted:
            return []
        records = [self._record(memory.content) for memory in extracted]
        client = self.model._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for record in records:
                pipe.exists(record.db_key.redis_key)
            known = pipe.execute()
        new = [record for record, exists in zip(records, known) if not exists]
        for record in new:
            record.save()
        self._link(list(zip(records, extracted)))
        return new

    def _record(self, content: str) -> Any:
        values = {**self.partition, self.text_field: content}
        if self.id_field is not None:
            digest = hashlib.sha256(f"{self.agent_id}\n{content.casefold()}".encode()).hexdigest()
            values[self.id_field] = digest[:32]
        return self.model(**values)

    def _link(self, pairs: list[tuple[Any, ExtractedMemory]]) -> None:
        """Link each memory to its entities and the entities pairwise, in one pipeline."""
        if self.graph_field is None:
            return
        graph = self.graph_field.graph(**self.partition)
        client = self.model._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for record, memory in pairs:
                entities = [Entity(name) for name in dict.fromkeys(e.casefold() for e in memory.entities)]
                for entity in entities:
                    graph.link(record, entity, ENTITY_LINK_WEIGHT, pipeline=pipe)
                for a, b in combinations(entities, 2):
                    graph.link(a, b, ENTITY_LINK_WEIGHT, pipeline=pipe)
            if len(pipe):
                pipe.execute()

    def report_outcomes(self, result: AssemblyResult, outcome: str | Mapping[Any, str]) -> dict[str, str]:
        """Apply ``outcome`` to every record of ``result`` (or ``{record: outcome}`` per record, as
        :meth:`AssemblyResult.report` takes it; unnamed records are ``deferred``); returns
        ``{key: outcome}``. OutcomeError (a ValueError) for an unknown outcome or record."""
        return result.report(outcome)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    ainject_context = async_variant(inject_context)
    aextract_memories = async_variant(extract_memories)
    areport_outcomes = async_variant(report_outcomes)


def _distinct(items: Sequence[ExtractedMemory | str]) -> list[ExtractedMemory]:
    """The extractor's memories as ExtractedMemory, each text once (case-insensitively)."""
    found: dict[str, ExtractedMemory] = {}
    for item in items:
        memory = ExtractedMemory(item, find_entities(item)) if isinstance(item, str) else item
        if not isinstance(memory, ExtractedMemory):
            raise ValidationError(f"an extractor returns ExtractedMemory or str items, not {item!r}")
        content = " ".join(memory.content.split())
        if content:
            found.setdefault(content.casefold(), ExtractedMemory(content, tuple(memory.entities)))
    return list(found.values())
