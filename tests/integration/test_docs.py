"""The Python examples of the documentation run as written, against the test server.

Every fenced block opened with ```` ```python ```` in the pages listed in ``PAGES`` runs in
page order, in one namespace per page. Blocks may be indented (inside an admonition); they
are dedented first. Examples check themselves with ``assert``, so an API change that breaks
one fails this test.

Every page runs twice, as a reader who tries the examples again would, against one server kept
for the whole module and never flushed: each run under one key prefix shared by every page
(``docs-1``, then ``docs-2``), so a page whose models shared a key space with another page's
would read that page's records, and the second run redefines every class of the page (a model
class redefined under its own module and name keeps its key space; see
:mod:`redmem.model._key_spaces`). The runs use two prefixes because the examples state exact
results (counts, rankings) of the records they write into an empty key space.

A block that cannot run here (``redmem.connect()`` to a server of the reader's, a global
setting such as the key prefix) is marked by an HTML comment on the last non-blank line
before its fence, invisible in the rendered page::

    <!-- skip -->
    ```python
    redmem.connect("redis://localhost:6379/0")
    ```

A skipped block is still compiled, so it must at least be valid Python.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import redmem
from redmem.store._connection import SETTING_NAMES, settings
from redmem.store._embedded import EmbeddedServer

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [
    "index.md",
    "getting-started.md",
    "models.md",
    "primitives/decay.md",
    "primitives/cyclic.md",
    "primitives/confidence.md",
    "primitives/cooccurrence.md",
    "primitives/bloom.md",
    "primitives/bm25.md",
    "primitives/embeddings.md",
    "primitives/mixins.md",
    "primitives/observation.md",
    "text-analysis.md",
    "retrieval/hybrid.md",
    "retrieval/filters.md",
    "lifecycle.md",
    "tokens.md",
    "primitives/composite.md",
    "recipes/context-assembler.md",
    "recipes/frames.md",
    "recipes/conversation-memory.md",
    "recipes/metacognition.md",
    "recipes/policy-cache.md",
    "recipes/subconscious-memory.md",
    "recipes/llm-integration.md",
    "recipes/hsca.md",
    "recipes/hce.md",
    "ui.md",
    "integrations.md",
    "operations.md",
    "tenants.md",
    "contributing.md",
    "mcp.md",
    "asyncio.md",
    "testing.md",
]
#: Pages whose examples need an optional extra: they run when its packages are installed.
EXTRAS = {"integrations.md": ("agents", "langgraph"), "mcp.md": ("mcp",)}
SKIP_MARKER = "<!-- skip -->"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block of a page."""

    line: int  # 1-based line of the opening fence
    source: str
    skipped: bool


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, in order, each flagged when marked to skip."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        ticks, info = match["ticks"], match["info"].strip()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(ticks):
            end += 1
        if info.split(" ")[0] == "python":
            body = textwrap.dedent("\n".join(lines[i + 1 : end]))
            blocks.append(Block(i + 1, body, _marked_to_skip(lines, i)))
        i = end + 1
    return blocks


def _marked_to_skip(lines: list[str], fence: int) -> bool:
    for previous in reversed(lines[:fence]):
        if previous.strip():
            return previous.strip() == SKIP_MARKER
    return False


def test_block_extraction_honours_the_skip_marker():
    text = "\n".join([
        "intro", "<!-- skip -->", "", "```python", "skipped()", "```",
        "```console", "$ not python", "```",
        '!!! note', '    ```python title="x.py"', "    indented = 1", "    ```",
        "````python", "a = '```'", "````",
    ])
    blocks = python_blocks(text)
    assert [(b.source, b.skipped) for b in blocks] == [
        ("skipped()", True), ("indented = 1", False), ("a = '```'", False),
    ]


@pytest.fixture(scope="module")
def docs_client():
    """The client of one server that every page's runs share, kept (not flushed) for the module;
    the settings of before are restored afterwards."""
    before = settings()
    with EmbeddedServer(unix_socket=False) as server:
        yield redmem.connect(server.url)
    redmem.configure(client=before.client, key_prefix=before.key_prefix)


@pytest.mark.parametrize("page", PAGES + ["../README.md"])
def test_page_examples_run_twice(docs_client, page):
    for package in EXTRAS.get(page, ()):
        pytest.importorskip(package)
    path = (DOCS / page).resolve()
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    assert any(not b.skipped for b in blocks), f"{page} has no runnable example"
    before = settings()
    try:
        for run in (1, 2):
            redmem.configure(client=docs_client, key_prefix=f"docs-{run}")
            namespace: dict = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
            for block in blocks:
                padded = "\n" * block.line + block.source  # tracebacks show the page's own line numbers
                code = compile(padded, str(path), "exec", dont_inherit=True)
                if not block.skipped:
                    exec(code, namespace)
    finally:  # a page's configure() (an embedding provider, a counter) must not reach the next tests
        redmem.configure(**{name: getattr(before, name) for name in SETTING_NAMES})


def test_docs_build_is_clean_under_strict(tmp_path):
    """``mkdocs build --strict`` succeeds: no docstring (mkdocstrings), link or nav warning."""
    root = DOCS.parent
    path = os.pathsep.join(filter(None, [str(root / "src"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": path}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )
    warnings = [line for line in build.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert build.returncode == 0 and not warnings, build.stderr[-4000:]


_OUTSIDE_REFERENCE = re.compile(r"\b(?:REFERENCE|DESIGN)(?:\.md)?\b|\bseeds/|\bSTYLE\.md\b")


def test_pages_and_sources_cite_no_file_outside_the_repository():
    """Docs pages, the README and the library's sources state facts themselves: they never send
    the reader to the project's planning files (REFERENCE.md, DESIGN.md, seeds/), which are not
    shipped."""
    root = DOCS.parent
    files = [*DOCS.rglob("*.md"), root / "README.md", *(root / "src" / "redmem").rglob("*.py"),
             *(root / "src" / "redmem").rglob("*.lua")]
    found = [f"{path.relative_to(root)}:{number}: {line.strip()}"
             for path in files
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _OUTSIDE_REFERENCE.search(line)]
    assert not found, "\n".join(found)
