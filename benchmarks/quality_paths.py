"""The entry points a user takes into redmem, each behind one small adapter, for quality.py.

A path stores a tenant's items (in the order said) the way its API is meant to be called, then
answers that tenant's questions: for each question its memories best first (each a group of item
labels: one item, or two for an HCE interaction), the items inside a 1,000-token context, and
what the answering call cost (wall ms with the query embedding, round trips). ``answer`` takes
every question of a tenant at once, so a stateful path (frames) can be asked in passes.

What "inside a 1,000-token context" means per path: an assembler (and the MCP ``recall`` tool)
is asked a second time, right after the timed call, with ``max_tokens=1000`` and room for 100 items; FrameMemory ``recall``
is asked with ``top_k=100`` and its blocks kept while their exact cl100k_base counts add up to
1,000 at most; ``frame()`` (which reinforces what it returns) and HCE are cut the same way from
their one answer (HCE's candidates by their own ``token_cost``).
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from common import CommandCounter
from hce import pairs_of
from redmem import (
    BM25Field,
    ConfidenceField,
    DatetimeField,
    DecayingSortedField,
    EmbeddingField,
    FloatField,
    Model,
    StringField,
)
from redmem.cli_commands import mcp_server
from redmem.context._tokens import TokenCounter
from redmem.model import AutoKeyField, KeyField
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.conversation import ConversationMemory, conversation_assembler, ingest_conversation
from redmem.recipes.conversation_append import append_turns
from redmem.recipes.default_memory import DefaultMemory, HybridMemory
from redmem.recipes.frames import FrameMemory
from redmem.recipes.hce import HCEPipeline

__all__ = ["Item", "Answer", "MemoryPath", "PATHS", "build_paths", "ReadmeMemory", "ReadmeHybridMemory"]

#: The token budget of the "evidence inside a small context" measure.
WITHIN_TOKENS = 1000
#: Items a budgeted ask may hold (the token budget is what binds).
WITHIN_ITEMS = 100
#: What the MCP ``recall`` tool uses when its caller gives nothing: max_tokens, max_items, format.
RECALL_DEFAULTS = (2000, 10, "structured")


@dataclass(frozen=True)
class Item:
    """One thing said: ``label`` (what the scorer knows it by), ``content`` (what a memory of text
    alone stores), the bare ``text`` and its ``speaker``, ``session`` and ``said_at`` (ISO 8601)."""

    label: str
    content: str
    text: str
    speaker: str | None = None
    session: str | None = None
    said_at: str | None = None


@dataclass
class Answer:
    """A path's answer to one question."""

    ranked: list[tuple[str, ...]]
    within: list[str]
    ms: float
    round_trips: int
    within_items: int = 0
    below_floor: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ReadmeMemory(Model):
    """The ``Memory`` of README.md, field for field."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    created_at = DatetimeField(auto_now_add=True)
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    content_bm25 = BM25Field(source="content")


class ReadmeHybridMemory(ReadmeMemory):
    """README's ``Memory`` plus an embedding of its content (the configured provider)."""

    embedding = EmbeddingField(source="content")


def measured(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float, int]:
    """``call(*args, **kwargs)``'s result, its wall ms and the round trips it sent."""
    CommandCounter.install()
    before, started = CommandCounter.snapshot(), time.perf_counter()
    result = call(*args, **kwargs)
    ms = (time.perf_counter() - started) * 1000
    return result, ms, CommandCounter.since(before)[0]


def cut(groups: Sequence[tuple[str, ...]], costs: Sequence[int], limit: int = WITHIN_TOKENS) -> list[str]:
    """The labels of the leading groups whose costs add up to ``limit`` at most."""
    kept: list[str] = []
    total = 0
    for group, cost in zip(groups, costs):
        total += cost
        if total > limit:
            break
        kept.extend(group)
    return kept


class MemoryPath:
    """Base of the adapters: the labels of each tenant's stored records."""

    systems: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, str]] = {}

    def store(self, tenant: str, items: Sequence[Item]) -> None:
        raise NotImplementedError

    def answer(self, tenant: str, questions: Sequence[str]) -> dict[str, list[Answer]]:
        raise NotImplementedError

    def label(self, tenant: str, ids: Sequence[Any]) -> list[str]:
        return [self.labels[tenant][str(i)] for i in ids]


class AssemblerPath(MemoryPath):
    """A model written with ``save_many`` (or a recipe's ingest) and read with ``ContextAssembler``."""

    def __init__(self, system: str, model: type[Model], make: Callable[..., ContextAssembler],
                 ingest: Callable[[type[Model], str, Sequence[Item]], list[Any]] | None = None) -> None:
        super().__init__()
        self.systems = (system,)
        self.model = model
        self.default = make(model)
        self.small = make(model, max_tokens=WITHIN_TOKENS, max_items=WITHIN_ITEMS)
        self.ingest = ingest or save_contents

    def store(self, tenant: str, items: Sequence[Item]) -> None:
        records = self.ingest(self.model, tenant, items)
        self.labels[tenant] = {str(r.memory_id): item.label for r, item in zip(records, items)}

    def answer(self, tenant: str, questions: Sequence[str]) -> dict[str, list[Answer]]:
        answers = []
        for question in questions:
            result, ms, trips = measured(self.default.assemble, question, agent_id=tenant)
            small = self.small.assemble(question, agent_id=tenant)
            answers.append(Answer([(label,) for label in self.label(tenant, [r.memory_id for r in result.records])],
                                  self.label(tenant, [r.memory_id for r in small.records]), ms, trips,
                                  within_items=len(small.records), below_floor=result.metadata.get("below_floor")))
        return {self.systems[0]: answers}


def save_contents(model: type[Model], tenant: str, items: Sequence[Item]) -> list[Any]:
    """One record per item holding its content, embedded in batches and saved with ``save_many``."""
    records = [model(agent_id=tenant, content=item.content) for item in items]
    for embedding in model._meta.fields_of(EmbeddingField):
        embedding.embed_many(records)
    model.save_many(records)
    return records


def append_sessions(model: type[Model], tenant: str, items: Sequence[Item]) -> list[Any]:
    """One record per item holding its content, session and when it was said, each session's run of
    items appended in order with ``append_turns`` (what ``Memory.add(text, session=..., said_at=...)``
    does one at a time)."""
    records = []
    for session, run in itertools.groupby(items, key=lambda item: item.session or ""):
        group = [model(agent_id=tenant, content=item.content, session=session or None,
                       said_at=datetime.fromisoformat(item.said_at) if item.said_at else None) for item in run]
        records.extend(append_turns(group))
    return records


def ingest_turns(model: type[Model], tenant: str, items: Sequence[Item]) -> list[Any]:
    """ConversationMemory's own ingest: speaker, bare text, session and date of each turn."""
    turns = [{"speaker": i.speaker or "", "text": i.text, "session": i.session or "", "said_at": i.said_at or ""}
             for i in items]
    return ingest_conversation(turns, tenant, model=model)


class McpPath(MemoryPath):
    """ChatMemory written and read by the functions behind the MCP ``remember`` and ``recall`` tools."""

    systems = ("ChatMemory via MCP remember / recall",)

    def __init__(self) -> None:
        super().__init__()
        self.store_options = set(inspect.signature(mcp_server.store_memory).parameters)
        self.recall_options = set(inspect.signature(mcp_server.recall_context).parameters)

    def store(self, tenant: str, items: Sequence[Item]) -> None:
        labels = {}
        for item in items:
            extra = self._when(item)
            # the tool takes the speaker apart: the text alone, as a client calling remember gives it
            stored = mcp_server.store_memory(tenant, item.text, item.speaker, item.session, 1.0, False, **extra)
            labels[stored.memory_id] = item.label
        self.labels[tenant] = labels

    def _when(self, item: Item) -> dict[str, Any]:
        """``said_at`` for a store function that takes it (as its annotation asks: datetime or text)."""
        if "said_at" not in self.store_options or not item.said_at:
            return {}
        annotation = str(inspect.signature(mcp_server.store_memory).parameters["said_at"].annotation)
        return {"said_at": datetime.fromisoformat(item.said_at) if "datetime" in annotation else item.said_at}

    def answer(self, tenant: str, questions: Sequence[str]) -> dict[str, list[Answer]]:
        answers = []
        for question in questions:
            recalled, ms, trips = measured(mcp_server.recall_context, tenant, question, *RECALL_DEFAULTS)
            small = mcp_server.recall_context(tenant, question, WITHIN_TOKENS, WITHIN_ITEMS, "structured")
            answers.append(Answer([(label,) for label in self.label(tenant, [m.memory_id for m in recalled.memories])],
                                  self.label(tenant, [m.memory_id for m in small.memories]), ms, trips,
                                  within_items=len(small.memories)))
        return {self.systems[0]: answers}


class FramesPath(MemoryPath):
    """FrameMemory's ATTENTION frame: every question through ``recall()`` (pure), then through ``frame()``."""

    systems = ("FrameMemory recall()", "FrameMemory frame()")
    top_k = 10

    def __init__(self, count: TokenCounter) -> None:
        super().__init__()
        self.count = count
        self.memories: dict[str, FrameMemory] = {}

    def store(self, tenant: str, items: Sequence[Item]) -> None:
        memory = self.memories[tenant] = FrameMemory(agent_id=tenant)
        memory.begin_session()
        self.labels[tenant] = {str(memory.learn(item.content)): item.label for item in items}

    def answer(self, tenant: str, questions: Sequence[str]) -> dict[str, list[Answer]]:
        memory = self.memories[tenant]
        recalls = []
        for question in questions:
            blocks, ms, trips = measured(memory.recall, "attention", question, top_k=self.top_k)
            wide = memory.recall("attention", question, top_k=WITHIN_ITEMS)
            within = cut([(b.id,) for b in wide], [self.count(b.content) for b in wide])
            recalls.append(Answer([(label,) for label in self.label(tenant, [b.id for b in blocks])],
                                  self.label(tenant, within), ms, trips, within_items=len(within)))
        frames = []
        for question in questions:
            result, ms, trips = measured(memory.frame, "attention", question, top_k=self.top_k)
            within = cut([(b.id,) for b in result.blocks], [self.count(b.content) for b in result.blocks])
            frames.append(Answer([(label,) for label in self.label(tenant, [b.id for b in result.blocks])],
                                 self.label(tenant, within), ms, trips, within_items=len(within)))
        memory.end_session()
        return dict(zip(self.systems, (recalls, frames)))


class HcePath(MemoryPath):
    """HCEPipeline at one context budget: interactions written with ``update_many``, read with
    ``retrieve_candidates``. ``paired``: consecutive items form one interaction (dialog turns),
    else each item is an interaction of its own with an empty reply."""

    def __init__(self, budget: int, provider: Any, paired: bool) -> None:
        super().__init__()
        self.budget, self.provider, self.paired = budget, provider, paired
        self.systems = (f"HCEPipeline, {budget} tokens",)
        self.pipes: dict[str, HCEPipeline] = {}
        self.groups: dict[str, dict[str, tuple[str, ...]]] = {}

    def store(self, tenant: str, items: Sequence[Item]) -> None:
        pipe = self.pipes[tenant] = HCEPipeline(session_id=f"{tenant}-hce{self.budget}", context_budget=self.budget,
                                                embedding_provider=self.provider, token_counter="cl100k_base")
        chunks = pairs_of(list(items)) if self.paired else [[item] for item in items]
        ids = pipe.update_many([(c[0].content, c[1].content if len(c) > 1 else "") for c in chunks])
        self.groups[tenant] = {rid: tuple(i.label for i in chunk) for rid, chunk in zip(ids, chunks)}

    def answer(self, tenant: str, questions: Sequence[str]) -> dict[str, list[Answer]]:
        pipe, groups = self.pipes[tenant], self.groups[tenant]
        focus = pipe.focus.get_recent()
        answers = []
        for question in questions:
            found, ms, trips = measured(pipe.retrieve_candidates, question)
            shown: list[tuple[str, ...]] = []
            for c in found.selected:
                if c.source == "buffer":
                    entry = focus[c.metadata["position"]]
                    group = groups[entry.interaction_id]
                    shown.append((group[0] if entry.role == "user" else group[-1],))
                else:
                    shown.append(groups[c.metadata["interaction_id"]])
            within = cut(shown, [c.token_cost for c in found.selected])
            answers.append(Answer(shown, within, ms, trips, within_items=len(found.selected)))
        return {self.systems[0]: answers}


#: Options every assembler of every path is made with besides its own (``quality.py --no-question-cues``).
ASSEMBLER_EXTRA: dict[str, Any] = {}


def _readme_assembler(model: type[Model], **options: Any) -> ContextAssembler:
    return ContextAssembler(model, score_weights={"relevance": 1.0}, **{"max_items": 10, **options, **ASSEMBLER_EXTRA})


def _default_assembler(model: type[Model], **options: Any) -> ContextAssembler:
    return ContextAssembler(model, **options, **ASSEMBLER_EXTRA)


def _conversation_assembler(model: type[Model], **options: Any) -> ContextAssembler:
    return conversation_assembler(model, **options, **ASSEMBLER_EXTRA)


#: Path names (``--paths``) and what each measures.
PATHS = {
    "readme": "README Memory, ContextAssembler(score_weights relevance 1.0, max_items 10): lexical",
    "readme-embedding": "README Memory + EmbeddingField(content), same assembler: auto = hybrid",
    "default": "DefaultMemory, each session's items appended in order with their date (append_turns), ContextAssembler(model) defaults",
    "hybrid": "HybridMemory, each session's items appended in order with their date (append_turns), ContextAssembler(model) defaults",
    "mcp": "ChatMemory through the MCP remember / recall tools' functions (tool defaults)",
    "conversation": "ConversationMemory: ingest_conversation + conversation_assembler()",
    "frames": "FrameMemory ATTENTION: recall() then frame(), top_k 10",
    "hce": "HCEPipeline.retrieve_candidates at 500 and 1,500 tokens",
}


def build_paths(names: Sequence[str], provider: Any, count: TokenCounter, paired: bool) -> list[MemoryPath]:
    """The adapters of the named paths (``PATHS`` keys), in that order."""
    makers: dict[str, Callable[[], list[MemoryPath]]] = {
        "readme": lambda: [AssemblerPath("README Memory (lexical)", ReadmeMemory, _readme_assembler)],
        "readme-embedding": lambda: [AssemblerPath("README Memory + embedding (auto: hybrid)", ReadmeHybridMemory,
                                                   _readme_assembler)],
        "default": lambda: [AssemblerPath("DefaultMemory", DefaultMemory, _default_assembler, append_sessions)],
        "hybrid": lambda: [AssemblerPath("HybridMemory", HybridMemory, _default_assembler, append_sessions)],
        "mcp": lambda: [McpPath()],
        "conversation": lambda: [AssemblerPath("ConversationMemory, conversation_assembler()", ConversationMemory,
                                               _conversation_assembler, ingest_turns)],
        "frames": lambda: [FramesPath(count)],
        "hce": lambda: [HcePath(500, provider, paired), HcePath(1500, provider, paired)],
    }
    unknown = sorted(set(names) - set(makers))
    if unknown:
        raise SystemExit(f"unknown paths {unknown}: use {', '.join(PATHS)}")
    return [path for name in names for path in makers[name]()]
