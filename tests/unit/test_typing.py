"""What a type checker sees of a model: a record's field attribute has the field's value type,
the class attribute is the field itself, a search's hit holds the model's record and float scores
(``mypy --strict`` over ``src/redmem`` runs in make test)."""

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
from redmem.recipes.default_memory import DefaultMemory

memory = DefaultMemory(agent_id="a", content="x")
reveal_type(memory.content)
reveal_type(memory.importance)
reveal_type(memory.created_at)
reveal_type(DefaultMemory.content)
"""


HITS_SNIPPET = """
from redmem import AssemblyResult, HitList
from redmem.recipes.default_memory import DefaultMemory

found: HitList[DefaultMemory] = DefaultMemory.query.filter(agent_id="a").keyword_search("x")
reveal_type(found[0])
reveal_type(found.hits[0].record)
reveal_type(found.hits[0].score)
reveal_type(found.hits[0].signals)
reveal_type(AssemblyResult().hits[0].score)
"""


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One cache for the module's runs: the first analyses redmem, the others only their snippet."""
    return tmp_path_factory.mktemp("mypy-cache")


def revealed_types(snippet_text, tmp_path, monkeypatch, cache):
    """What mypy (the project's configuration, this tree's sources) reveals in ``snippet_text``."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(snippet_text)
    monkeypatch.setenv("MYPYPATH", str(ROOT / "src"))  # this tree's sources, not the installed copy
    out, err, status = api.run([str(snippet), "--config-file", str(ROOT / "pyproject.toml"),
                                "--cache-dir", str(cache), "--no-error-summary"])
    assert status == 0, out + err
    return [line.split('Revealed type is "')[1].rstrip('"').removeprefix("builtins.")  # older mypy names builtins
            for line in out.splitlines() if "Revealed type" in line]


def test_a_record_field_reads_as_its_value_type_and_the_class_field_as_the_field(tmp_path, monkeypatch, mypy_cache):
    revealed = revealed_types(SNIPPET, tmp_path, monkeypatch, mypy_cache)
    assert revealed == ["str", "float", "datetime.datetime", "redmem.model._fields.StringField"]


def test_a_search_hit_reads_as_its_model_and_its_scores(tmp_path, monkeypatch, mypy_cache):
    revealed = revealed_types(HITS_SNIPPET, tmp_path, monkeypatch, mypy_cache)
    memory = "redmem.recipes.assembler._models.DefaultMemory"
    assert revealed == [memory, memory, "float", "typing.Mapping[str, float]", "float"]


ASYNC_SNIPPET = """
from redmem import ContextAssembler
from redmem.recipes.default_memory import DefaultMemory


async def main() -> None:
    memory = DefaultMemory(agent_id="a", content="x")
    reveal_type(await memory.asave())
    reveal_type(await DefaultMemory.acreate(agent_id="a", content="y"))
    reveal_type(await DefaultMemory.query.filter(agent_id="a").acount())
    reveal_type(await ContextAssembler(DefaultMemory).aassemble("x", agent_id="a"))
"""


def test_an_async_variant_awaits_to_its_sync_twins_type(tmp_path, monkeypatch, mypy_cache):
    revealed = revealed_types(ASYNC_SNIPPET, tmp_path, monkeypatch, mypy_cache)
    assert revealed == ["bool", "redmem.recipes.assembler._models.DefaultMemory", "int",
                        "redmem.recipes.assembler._context_assembler.AssemblyResult"]
