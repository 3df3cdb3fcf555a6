"""A query text's embedding runs in the vector search's local work: the first round trip is out
while the provider embeds, the answers and the round trips are those of a search given the vector."""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar

import numpy as np
import pytest

from conftest import configured_embeddings
from models import RhythmicMemory as Memory
from redmem import EmbeddingError
from redmem.embeddings import HashingEmbeddings
from redmem.fields.search_protocol import run_search, run_searches
from redmem.recipes.context_assembler import ContextAssembler

TEXTS = ["deploy the helm chart", "canary rollback at noon", "green tea for Ana", "deploy freeze on friday"]
TENANT: ContextVar[str] = ContextVar("tenant", default="unset")


class Watching(HashingEmbeddings):
    """Hashing vectors; each query embedding waits (up to a second) for the caller's thread to
    have sent a request, and records whether it saw one and on which thread it ran."""

    def __init__(self, sent: list) -> None:
        super().__init__(64)
        self.sent, self.seen = sent, []  # (a request was out, the thread's ident)
        self.caller = threading.get_ident()

    def embed(self, texts, input_type="document"):
        if input_type == "query":
            deadline = time.monotonic() + 1.0
            while not self.sent and time.monotonic() < deadline:
                time.sleep(0.001)
            self.seen.append((bool(self.sent), threading.get_ident()))
        return super().embed(texts, input_type)


class ContextReading(HashingEmbeddings):
    """Hashing vectors; records the context variable each query embedding sees."""

    def __init__(self) -> None:
        super().__init__(64)
        self.seen: list[str] = []

    def embed(self, texts, input_type="document"):
        if input_type == "query":
            self.seen.append(TENANT.get())
        return super().embed(texts, input_type)


class Failing(HashingEmbeddings):
    def embed(self, texts, input_type="document"):
        if input_type == "query":
            raise RuntimeError("provider down")
        return super().embed(texts, input_type)


def remember(agent: str = "a") -> None:
    for text in TEXTS:
        Memory.create(agent_id=agent, topic="ops", content=text, salience=1.0)


def test_the_first_round_trip_is_sent_while_the_query_is_embedded(db, sent):
    """Before, the provider ran on the caller's thread inside ``searcher()``, before any request."""
    provider = Watching(sent)
    with configured_embeddings(provider):
        remember()
        space = Memory.query.filter(agent_id="a").partition()
        run_search(db, Memory.embedding.searcher(space, np.ones(64), 10))  # the matrix loaded
        sent.clear()
        hits = run_search(db, Memory.embedding.searcher(space, "deploy helm", 10))
        assert provider.seen == [(True, provider.seen[0][1])] and provider.seen[0][1] != provider.caller
        given = provider.embed(["deploy helm"], "query")[0]
        assert hits == run_search(db, Memory.embedding.searcher(space, given, 10)) and hits


def test_an_assembly_answers_as_with_the_vector_given_in_the_same_round_trips(db, sent):
    provider = Watching(sent)
    with configured_embeddings(provider):
        remember()
        assembler = ContextAssembler(Memory, retrieval_mode="hybrid")
        assembler.assemble("deploy helm", agent_id="a")
        sent.clear()
        result = assembler.assemble("deploy helm", agent_id="a", now=1e9)
        trips = len(sent)
        assert provider.seen[-1][0] and provider.seen[-1][1] != provider.caller
        space = Memory.query.filter(agent_id="a").partition()
        vector = provider.embed(["deploy helm"], "query")[0]
        assert run_searches(db, [Memory.embedding.searcher(space, "deploy helm", 25)]) == \
            run_searches(db, [Memory.embedding.searcher(space, vector, 25)])
        sent.clear()
        again = assembler.assemble("deploy helm", agent_id="a", now=1e9)
        assert (len(sent), again.formatted, [h.signals for h in again.hits]) == \
            (trips, result.formatted, [h.signals for h in result.hits])


def test_the_provider_sees_the_callers_context_variables(db):
    """A provider reading a ContextVar (a request's credentials, a tracing span) reads the caller's
    value, though the embedding runs on a worker thread."""
    provider = ContextReading()
    with configured_embeddings(provider):
        remember()
        token = TENANT.set("acme")
        try:
            ContextAssembler(Memory, retrieval_mode="hybrid").assemble("deploy helm", agent_id="a")
        finally:
            TENANT.reset(token)
        assert provider.seen == ["acme"]


def test_a_blank_query_embeds_nothing_and_a_failing_provider_releases_the_matrix(db):
    with configured_embeddings(Failing(64)):
        remember()
        space = Memory.query.filter(agent_id="a").partition()
        assert Memory.embedding.searcher(space, "   ", 10).empty
        search = Memory.embedding.searcher(space, "deploy", 10)
        assert not search.empty
        with pytest.raises(EmbeddingError, match="provider down"):
            run_search(db, search)
        assert not search.matrix.lock.locked()
        assert run_search(db, Memory.embedding.searcher(space, np.ones(64), 10))
