"""recipes/llm_integration.py runs as written: against a local OpenAI-compatible server through
the real openai SDK, and without any endpoint (no model called). Its ``main`` runs in this process,
as ``python recipes/llm_integration.py`` would run it (the environment and output are its own)."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import subprocess
from pathlib import Path
from unittest import mock

import pytest

import redmem
from openai_server import OpenAICompatibleServer
from redmem.recipes.default_memory import DefaultMemory
from redmem.store._aio import is_cluster

SCRIPT = Path(__file__).resolve().parents[2] / "recipes" / "llm_integration.py"
DEPLOYMENT = {"deploy-blue-green", "deploy-freeze", "deploy-checks", "deploy-rollback"}
AGENT = "agent-7"


@pytest.fixture
def url(any_db, request):
    """The URL of the server (or cluster) behind ``any_db``, for the script's process."""
    return request.getfixturevalue("cluster_url" if is_cluster(any_db) else "redis_url")


def run_script(url: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    argv = ["--agent", AGENT, "--key-prefix", redmem.store.settings().key_prefix]
    out, err = io.StringIO(), io.StringIO()
    main = runpy.run_path(str(SCRIPT))["main"]
    with mock.patch.dict(os.environ, {**base, "REDIS_URL": url, **env}, clear=True), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return subprocess.CompletedProcess([str(SCRIPT), *argv], code, out.getvalue(), err.getvalue())


def memories() -> dict[str, DefaultMemory]:
    return {m.memory_id: m for m in DefaultMemory.query.filter(agent_id=AGENT).no_track().all()}


def confidence(memory: DefaultMemory) -> float:
    return DefaultMemory.confidence.get_confidence(memory, "confidence")


def test_the_model_gets_the_assembled_context_and_outcomes_are_stored(url):
    with OpenAICompatibleServer() as server:
        done = run_script(url, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test-key")
        assert done.returncode == 0, done.stderr
        (request,) = server.chat_requests()
        headers = server.requests[-1][2]
    assert request["model"] == "gpt-4.1-nano" and headers["authorization"] == "Bearer test-key"
    system, user = request["messages"]
    assert user == {"role": "user", "content": "What's our deployment strategy?"}
    assert system["role"] == "system"
    assert system["content"].startswith("You are a helpful assistant.\n\nRelevant context:\n[\n  {\n")
    stored = memories()
    for key, memory in stored.items():
        assert (memory.content in system["content"]) is (key in DEPLOYMENT)
    assert "echo: What's our deployment strategy?" in done.stdout
    for key, memory in stored.items():  # acted: confidence (0.5 + 0.9) / 2, one confirmed access
        used = key in DEPLOYMENT
        assert confidence(memory) == pytest.approx(0.7 if used else 0.5)
        assert memory.access_count == (1 if used else 0)


def test_without_an_endpoint_it_prints_the_messages_and_calls_nothing(db, redis_url):
    for _ in range(2):  # a rerun adds no memory
        done = run_script(redis_url)
        assert done.returncode == 0, done.stderr
    assert "no model was called" in done.stdout
    assert "Relevant context:" in done.stdout and "blue/green switch" in done.stdout
    stored = memories()
    assert set(stored) == DEPLOYMENT | {"coffee", "payments-lead"}
    assert all(confidence(m) == 0.5 and m.access_count == 0 for m in stored.values())


def test_a_base_url_alone_and_the_model_name_are_enough(db, redis_url):
    with OpenAICompatibleServer() as server:
        done = run_script(redis_url, OPENAI_BASE_URL=server.base_url, OPENAI_MODEL="local-model")
        assert done.returncode == 0, done.stderr
        assert [r["model"] for r in server.chat_requests()] == ["local-model"]
    assert "local-model answered:" in done.stdout
    assert all(memories()[key].access_count == 1 for key in DEPLOYMENT)
