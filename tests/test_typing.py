"""What a type checker sees of a model: a record's field attribute has the field's value type,
the class attribute is the field itself (``mypy --strict`` over ``src/redmem`` runs in make test)."""

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = """
from redmem.recipes.default_memory import DefaultMemory

memory = DefaultMemory(agent_id="a", content="x")
reveal_type(memory.content)
reveal_type(memory.importance)
reveal_type(memory.created_at)
reveal_type(DefaultMemory.content)
"""


def test_a_record_field_reads_as_its_value_type_and_the_class_field_as_the_field(tmp_path, monkeypatch):
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    monkeypatch.setenv("MYPYPATH", str(ROOT / "src"))  # this tree's sources, not the installed copy
    out, err, status = api.run([str(snippet), "--config-file", str(ROOT / "pyproject.toml"),
                                "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"])
    revealed = [line.split('Revealed type is "')[1].rstrip('"').removeprefix("builtins.")  # older mypy names builtins
                for line in out.splitlines() if "Revealed type" in line]
    assert revealed == ["str", "float", "datetime.datetime", "redmem.model.fields.StringField"], out + err
    assert status == 0, out + err
