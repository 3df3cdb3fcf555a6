"""The seed's usage examples (seeds/context-assembler.txt), run as written with only the import line changed.

Each block below is copied from the seed character for character. Two kinds of change only:
``from popoto... import`` becomes ``from redmem... import`` (checked by :func:`redmem_import`), and
the quality-probe block, whose indentation the seed's text lost, gets its one ``return`` line
indented again and is run as the body of a function (a ``return`` needs one). The model the
examples assume is the documented ``Memory`` (DESIGN.md "Public API"), shared from ``tests/models.py``.

The quality block names no tenant, and ``Memory`` is partitioned by ``agent_id``: as written it
is refused with QueryException (redmem never searches across tenants), so a second test runs
it with ``agent_id="agent-1"`` added to its two calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import configured_embeddings
from models import SeedMemory as Memory
from openai_server import OpenAICompatibleServer
from redmem import (
    AutoKeyField,
    ConfidenceField,
    DecayingSortedField,
    FloatField,
    KeyField,
    Model,
    QueryException,
    StringField,
)
from redmem.embeddings import HashingEmbeddings


class SeedExamplesBare(Model):
    """A model with neither BM25Field nor EmbeddingField, for the "raises if fields absent" comment."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()


# "Pull Path Modes" (no import line of its own: it follows the Usage import)
MODES = r'''# Hybrid mode — auto-detected when BM25Field + EmbeddingField are on the model
assembler = ContextAssembler(
model_class=Memory,
score_weights={"relevance": 0.6}, # ignored in hybrid pull path
max_items=10,
)
# retrieval_mode defaults to "auto"; resolves to "hybrid" if both fields present
# Force composite path (pre-v1.7 behaviour)
assembler = ContextAssembler(
model_class=Memory,
score_weights={"relevance": 0.6, "confidence": 0.3},
retrieval_mode="composite",
)
# Force hybrid explicitly (raises QueryException if fields absent)
assembler = ContextAssembler(
model_class=Memory,
score_weights={},
retrieval_mode="hybrid",
)'''

# "Usage"
USAGE = r'''from popoto.recipes.context_assembler import ContextAssembler
assembler = ContextAssembler(
model_class=Memory,
score_weights={"relevance": 0.6, "confidence": 0.3},
max_items=10,
max_tokens=4000,
)
result = assembler.assemble(
query_cues={"topic": "deployment"},
agent_id="agent-1",
)
# result.records — selected instances
# result.proactive — push-path subset
# result.formatted — LLM-ready string
# result.metadata — scores, timing, token counts'''

# "Counter contract" (``enc`` comes from "Hard-budget recommendations":
# enc = tiktoken.encoding_for_model("gpt-4"))
COUNTER = r'''# Correct contract — text is the serialized record string
token_counter=lambda text: len(enc.encode(text))
# Old contract — do NOT use (tokenizes the Redis key, not the content)
# token_counter=lambda record: len(enc.encode(str(record))) # broken'''

# "LLM Integration"
LLM = r'''from openai import OpenAI
from popoto import ContextAssembler, ObservationProtocol
client = OpenAI() # uses OPENAI_API_KEY env var
assembler = ContextAssembler(
model_class=Memory,
score_weights={"relevance": 0.6, "confidence": 0.3},
max_items=10,
max_tokens=4000,
)
result = assembler.assemble(
query_cues={"topic": "deployment"},
agent_id="agent-1",
)
# Build messages with injected memory context
messages = [
{"role": "system", "content": f"You are a helpful assistant.\n\nRelevant context:\n{result.formatted}"},
{"role": "user", "content": "What's our deployment strategy?"},
]
# Call the LLM
response = client.chat.completions.create(
model="gpt-4.1-nano",
messages=messages,
)
answer = response.choices[0].message.content
# Report outcomes — which memories did the agent actually use?
outcome_map = {r.db_key.redis_key: "acted" for r in result.records}
ObservationProtocol.on_context_used(result.records, outcome_map)'''

# "Retrieval Quality Scoring"
QUALITY = r'''# Pre-retrieval probe (cheap — no propagation, no push path)
quality = assembler.assess({"topic": "deployment"})
if quality.fok_score < 0.3:
return # skip retrieval; memory store has nothing relevant
# Post-retrieval quality attached to metadata
result = assembler.assemble({"topic": "deployment"}, assess_quality=True)
quality = result.metadata["quality"] # RetrievalQuality dataclass
print(quality.avg_confidence, quality.fok_score)'''

USAGE_IMPORT = "from redmem.recipes.context_assembler import ContextAssembler"


def redmem_import(block: str) -> str:
    """``block`` with its one ``popoto`` import line pointed at redmem, and nothing else changed."""
    changed = block.replace("from popoto.recipes.context_assembler import",
                            "from redmem.recipes.context_assembler import")
    changed = changed.replace("from popoto import", "from redmem import")
    before, after = block.splitlines(), changed.splitlines()
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after)) == 1
    return changed


def run(source: str, **names) -> dict:
    namespace = {"__name__": "seed_example", "Memory": Memory, **names}
    exec(compile(source, "context-assembler.txt", "exec"), namespace)
    return namespace


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


@pytest.fixture
def memories(any_db):
    """agent-1's memories about deployment (and one about lunch), and agent-2's."""
    made = [
        Memory.create(agent_id="agent-1", topic="deployment", content=text, importance=importance)
        for text, importance in [("We deploy with blue/green switches behind the load balancer", 1.0),
                                 ("Deployment freezes start every Friday at noon", 0.8),
                                 ("Rollbacks of a deployment go through helm history", 0.6)]
    ]
    Memory.create(agent_id="agent-1", topic="lunch", content="The team orders pizza on Fridays")
    Memory.create(agent_id="agent-2", topic="deployment", content="Deployment of agent two is canary only")
    return made


def test_mode_examples(memories):
    namespace = run(MODES, ContextAssembler=run(USAGE_IMPORT)["ContextAssembler"])
    assert namespace["assembler"].mode == "hybrid"
    with pytest.raises(QueryException, match="hybrid"):  # "raises QueryException if fields absent"
        run(MODES, ContextAssembler=namespace["ContextAssembler"], Memory=SeedExamplesBare)


def test_usage_example(memories):
    namespace = run(redmem_import(USAGE))
    result = namespace["result"]
    assert {r.content for r in result.records} >= {m.content for m in memories}
    assert all(r.agent_id == "agent-1" for r in result.records)
    assert result.proactive == []
    assert result.formatted.startswith("[\n  {") and result.metadata["token_count"] <= 4000
    assert {"pull_count", "push_count", "token_count", "timing_ms", "total_candidates"} <= set(result.metadata)
    assert result.metadata["retrieval_mode"] == "hybrid"  # score_weights are not used by the hybrid pull path


def test_counter_example(memories):
    import tiktoken  # importing redmem seeded the cache tiktoken reads: no network needed

    enc = tiktoken.encoding_for_model("gpt-4")
    namespace = run(COUNTER, enc=enc)
    ContextAssembler = run(USAGE_IMPORT)["ContextAssembler"]
    assembler = ContextAssembler(model_class=Memory, token_counter=namespace["token_counter"], max_tokens=4000)
    result = assembler.assemble(query_cues={"topic": "deployment"}, agent_id="agent-1")
    assert result.records and result.metadata["token_count"] == len(enc.encode(result.formatted))  # what is sent


SEED_COUNTER_OFFLINE = """
import json, sys
import redmem, tiktoken
enc = tiktoken.encoding_for_model("gpt-4")
namespace = {"enc": enc}
exec(sys.argv[1], namespace)
print(json.dumps({"hello world": namespace["token_counter"]("hello world"), "name": enc.name}))
"""


@pytest.mark.parametrize("user_cache", [False, True])
def test_counter_example_runs_offline_after_importing_redmem(tmp_path, user_cache):
    """The seed's ``tiktoken.encoding_for_model("gpt-4")`` in a fresh process with no network: an
    empty temp dir (tiktoken's default cache) or the user's own empty TIKTOKEN_CACHE_DIR."""
    base = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    no_network = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    (tmp_path / "tmp").mkdir()
    env = {**base, **no_network, "TMPDIR": str(tmp_path / "tmp"), "REDMEM_CACHE_DIR": str(tmp_path / "redmem")}
    if user_cache:
        env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "mine")
    done = subprocess.run([sys.executable, "-c", SEED_COUNTER_OFFLINE, COUNTER], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"hello world": 2, "name": "cl100k_base"}
    seeded = tmp_path / "mine" if user_cache else tmp_path / "tmp" / "data-gym-cache"
    assert len(list(seeded.iterdir())) == 2  # cl100k_base and o200k_base, where tiktoken reads


def llm_example(memories, monkeypatch, source: str) -> None:
    with OpenAICompatibleServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        namespace = run(source)
        (path, body, headers), = server.requests
    result = namespace["result"]
    assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer test-key"
    assert body["model"] == "gpt-4.1-nano"
    assert result.formatted in body["messages"][0]["content"] and result.records
    assert namespace["answer"] == "echo: What's our deployment strategy?"
    for record in result.records:  # "acted": the one staged read confirmed, confidence 0.9 applied once
        assert record.access_count == 1
        assert ConfidenceField.get_confidence(record, "confidence") == pytest.approx(0.7)


def test_llm_integration_example(memories, monkeypatch):
    llm_example(memories, monkeypatch, redmem_import(LLM))


def test_llm_integration_example_with_the_module_import(memories, monkeypatch):
    source = redmem_import(LLM).replace(
        "from redmem import ContextAssembler, ObservationProtocol",
        "from redmem import ObservationProtocol\n" + USAGE_IMPORT)
    llm_example(memories, monkeypatch, source)


def quality_probe(block: str) -> str:
    """The block as a function body, its ``return`` indented under the ``if`` again."""
    restored = block.replace("\nreturn #", "\n    return #")
    return "def probe():\n" + textwrap.indent(restored, "    ") + "\n    return quality\n"


def usage_assembler():
    return run(redmem_import(USAGE))["assembler"]


def test_quality_example_as_written_needs_the_partition(memories):
    """No tenant named: refused, not searched across tenants, with the keyword argument to add."""
    probe = run(quality_probe(QUALITY), assembler=usage_assembler())["probe"]
    with pytest.raises(QueryException) as refused:
        probe()
    assert 'e.g. assembler.assess(query_cues, agent_id="<tenant>"); got none' in str(refused.value)


def test_quality_example_with_the_partition(memories):
    source = quality_probe(QUALITY).replace('{"topic": "deployment"}', '{"topic": "deployment"}, agent_id="agent-1"')
    quality = run(source, assembler=usage_assembler())["probe"]()
    assert 0.0 <= quality.fok_score <= 1.0 and quality.avg_confidence == pytest.approx(0.5)
