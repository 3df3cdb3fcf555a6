"""OpenAI Agents SDK: a ``Session`` on ConversationMemory and instructions that carry recalled memory.

:class:`RedmemSession` keeps a session's items as :class:`SessionItem` records (a
ConversationMemory subclass) of the agent's partition: each item's JSON as given, and its
speaker and text indexed like any dialog turn, so an agent's past sessions become memory that
:func:`memory_instructions` recalls into the system prompt of each turn. The SDK's async
methods run redmem over ``redis.asyncio`` (:mod:`redmem.store._aio`, docs/asyncio.md), on the
caller's event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

try:
    from agents import Agent, RunContextWrapper, TResponseInputItem
    from agents.memory import SessionSettings
except ImportError as missing:  # pragma: no cover - depends on the install
    raise ImportError("redmem.integrations.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'redmem[agents]'") from missing

from ..model._indexed import SortedField, TagField
from ..recipes.assembler._context_assembler import ContextAssembler
from ..recipes.assembler._conversation import (
    DEFAULT_WINDOW,
    ConversationMemory,
    SearchText,
    Turn,
    build_contexts,
    build_passages,
)
from ..store._aio import greenlet_spawn
from ..store._validation import non_negative_int

__all__ = ["SessionItem", "SessionTag", "RedmemSession", "item_turn", "latest_user_text", "memory_instructions"]


class SessionTag(TagField):
    """A tag field kept for lookups only, never rendered into an assembled context."""

    shown = False


class SessionItem(ConversationMemory):
    """One item of an Agents SDK session: a dialog turn plus the item's JSON and its place.

    ``position`` orders a session's items (a sorted field, so the latest come first cheaply);
    ``thread`` holds the session id as a tag, to list one session of the agent's partition.
    """

    position = SortedField(type=int, partition_by="agent_id")
    thread = SessionTag()
    item = SearchText()

    class Meta:
        max_text_bytes = 0  # the SDK gets its items back whole (a tool's output may be large): no limit


def _parts_text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` / ``refusal`` of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") or part.get("refusal") or "" for part in content if isinstance(part, Mapping)]
        return "\n".join(text for text in texts if text)
    return ""


def item_turn(item: Mapping[str, Any], session_id: str) -> Turn:
    """The dialog turn an item reads as: a message's role and text, a tool call's name and arguments."""
    kind = item.get("type")
    if kind == "function_call":
        return Turn("tool call", f"{item.get('name', '')}({item.get('arguments', '')})", session_id)
    if kind == "function_call_output":
        return Turn("tool result", _parts_text(item.get("output")), session_id)
    if "role" in item:
        return Turn(str(item["role"]), _parts_text(item.get("content")), session_id)
    return Turn(str(kind or "item"), "", session_id)


class RedmemSession:
    """An Agents SDK ``Session`` whose items are :class:`SessionItem` records of ``agent_id``.

    ``model`` is SessionItem or a subclass (its own keyspace or embedding provider); ``window``
    is the neighbouring turns each new item's search context holds (earlier items of the session
    are not rewritten when later ones arrive). Writes of one session object are serialised.
    """

    def __init__(
        self, session_id: str, agent_id: str, *, model: type[SessionItem] = SessionItem,
        window: int = DEFAULT_WINDOW, session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.agent_id = agent_id
        self.model = model
        self.window = non_negative_int("window", window)
        self.session_settings = session_settings or SessionSettings()
        self._writing = asyncio.Lock()

    def _query(self) -> Any:
        return self.model.query.filter(agent_id=self.agent_id, thread=self.session_id).no_track()

    def _latest(self, count: int | None) -> list[Any]:
        """The session's last ``count`` records (all when None), oldest first."""
        if count is None:
            return list(self._query().order_by("position").all())
        return list(reversed(self._query().order_by("-position").limit(count).all())) if count else []

    def _add(self, items: list[TResponseInputItem]) -> None:
        previous = self._latest(self.window)
        start = previous[-1].position + 1 if previous else 0
        turns = [Turn(r.speaker, r.content, self.session_id) for r in previous]
        turns += [item_turn(item, self.session_id) for item in items]
        texts = zip(items, turns[len(previous):], build_contexts(turns, self.window)[len(previous):],
                    build_passages(turns)[len(previous):])
        records = [self.model(agent_id=self.agent_id, speaker=turn.speaker, content=turn.text, session=self.session_id,
                              position=start + offset, context=context, passage=passage, thread=[self.session_id],
                              item=json.dumps(item))
                   for offset, (item, turn, context, passage) in enumerate(texts)]
        self.model.save_many(records)

    def _pop(self) -> TResponseInputItem | None:
        latest = self._latest(1)
        if not latest or not latest[0].delete():
            return None
        popped: TResponseInputItem = json.loads(latest[0].item)
        return popped

    def _clear(self) -> None:
        for record in self._query().all():
            record.delete()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order; with ``limit``, its latest ``limit`` items."""
        records = await greenlet_spawn(self._latest, limit)
        return [json.loads(record.item) for record in records]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items``: one SessionItem each, embedded and saved in one bulk save."""
        if not items:
            return
        async with self._writing:
            await greenlet_spawn(self._add, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item, or None when the session is empty."""
        async with self._writing:
            return await greenlet_spawn(self._pop)

    async def clear_session(self) -> None:
        """Delete every item of the session (the agent's other sessions stay)."""
        async with self._writing:
            await greenlet_spawn(self._clear)


def latest_user_text(items: list[TResponseInputItem]) -> str:
    """The text of the last user message among ``items`` ("" when there is none)."""
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == "user":
            return _parts_text(item.get("content"))
    return ""


def memory_instructions(
    instructions: str, assembler: ContextAssembler, *, heading: str = "Relevant memory:",
    **partition: Any,
) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
    """Dynamic ``Agent(instructions=...)``: ``instructions`` plus what ``assembler`` recalls this turn.

    Each turn assembles the memories of ``partition`` (e.g. ``agent_id="agent-1"``) for the
    turn's last user message and appends ``heading`` and the assembled text; a turn with no user
    text or nothing recalled gets ``instructions`` alone.
    """

    async def with_memory(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        query = latest_user_text(context.turn_input)
        if not query:
            return instructions
        result = await assembler.aassemble(query, **partition)
        return f"{instructions}\n\n{heading}\n{result.formatted}" if result.records else instructions

    return with_memory

