"""Memory: the shortest path to an agent's memory — add facts, search them, get a prompt context.

A thin face over the ready-made :class:`~redmem.recipes.assembler._models.DefaultMemory` (or any
model of that shape, e.g. ``HybridMemory`` for vectors) and the ContextAssembler, for the first
hour with redmem::

    memory = Memory(agent_id="alice")
    memory.add("Alice is vegetarian")
    result = memory.context("what should I cook for Alice?")
    prompt = result.formatted
    result.report("acted")  # the agent used it: these memories gain confidence

``add`` stores a text once: its id is a digest of the agent and the text, so adding the same text
again (a retried call, a repeated fact) stores nothing new. ``search`` ranks the agent's memories
for a query; ``context`` fits them into a token budget as prompt text. Both return an
:class:`~redmem.recipes.assembler._context_assembler.AssemblyResult`.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from ...model._base import Model
from ._context_assembler import AssemblyResult, ContextAssembler
from ._conversation_append import append_turns
from ._models import DefaultMemory

__all__ = ["Memory"]


class Memory:
    """One agent's memory with ``add`` / ``search`` / ``context`` (see the module docstring).

    ``model`` has the fields ``memory_id`` (its key), ``agent_id`` (the partition) and
    ``content`` (and ``session``, ``position``, ``context``, ``passage`` to add with a session); ``max_tokens`` is the budget of :meth:`context`.
    """

    def __init__(self, agent_id: str = "default", *, model: type[Model] = DefaultMemory, max_tokens: int = 2000) -> None:
        self.agent_id = agent_id
        self.model = model
        self._context = ContextAssembler(model, max_tokens=max_tokens, output_format="content")

    def add(self, text: str, *, importance: float = 1.0, session: str | None = None,
            said_at: datetime | None = None) -> Any:
        """Store ``text`` as a memory of this agent, unless it is stored already; return the record.

        ``session``: the conversation ``text`` was said in; memories added to one session in
        order are linked (:func:`~.conversation_append.append_turns`): each is searchable through
        the ones said just before and after it. ``said_at``: when it was said (for a model with a
        ``said_at`` field, as ``DefaultMemory``): its date is written on the memory's search line,
        so a question naming the month or year finds it.
        """
        memory_id = hashlib.sha256(f"{self.agent_id}\n{text}".encode()).hexdigest()[:32]
        stored = self.model.query.get(agent_id=self.agent_id, memory_id=memory_id)
        if stored is not None:
            return stored
        when = {} if said_at is None else {"said_at": said_at}
        if not session:
            return self.model.create(memory_id=memory_id, agent_id=self.agent_id, content=text, importance=importance,
                                     **when)
        memory = self.model(memory_id=memory_id, agent_id=self.agent_id, content=text, importance=importance,
                            session=session, **when)
        return append_turns([memory])[0]

    def search(self, query: str, *, limit: int = 5) -> AssemblyResult:
        """The agent's ``limit`` memories most relevant to ``query``, best first (``result.records``)."""
        return ContextAssembler(self.model, max_items=limit, output_format="content").assemble(query, agent_id=self.agent_id)

    def context(self, query: str) -> AssemblyResult:
        """The agent's memories for ``query`` within the token budget; ``result.formatted`` is the prompt text."""
        return self._context.assemble(query, agent_id=self.agent_id)
