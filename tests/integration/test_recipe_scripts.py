"""Each script of the top-level recipes/ folder runs as written (in this process, as ``python
recipes/<script>`` would run it, with the test server as REDIS_URL and no model endpoint) and
prints what its recipe promises."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[2] / "recipes"

#: Each script and a line of what it prints.
EXPECTED = {
    "assembler.py": "Deploys go out on Tuesdays after stand-up",
    "conversation.py": "Caroline: The Rockies, with the whole family!",
    "frames.py": "Use Celery with Redis for background jobs.",
    "hce.py": "[Focus Buffer]",
    "hsca.py": "most relevant to 'redis memory': beat 0",
    "mcp_tools.py": "lapsang souchong",
    "langgraph_store.py": "My sister lives in Porto",
    "agents_sdk.py": "My dog is called Biscuit",
}


def test_every_script_is_run_here():
    assert set(EXPECTED) | {"llm_integration.py"} == {p.name for p in RECIPES.glob("*.py")}  # tests/integration/test_llm_example.py


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_recipe_script_runs(script, redis_url, monkeypatch, capsys):
    monkeypatch.setenv("REDIS_URL", redis_url)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    runpy.run_path(str(RECIPES / script), run_name="__main__")
    assert EXPECTED[script] in capsys.readouterr().out
