"""Issue 29.1: frames render a block's text through the shared Renderer (no private renderer);
the template adds only its headings and line marks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from redmem.context._oversize import cut
from redmem.context._rendering import Renderer
from redmem.recipes.frames import render_blocks
from redmem.recipes.frames._models import Block
from redmem.recipes.frames._rendering import BLOCK_RENDERER
from redmem.recipes.frames._scoring import ScoredBlock


def scored(content: str, block_id: str = "b") -> ScoredBlock:
    return ScoredBlock(id=block_id, content=content, tags=[], category="knowledge", similarity=0.0, confidence=0.5,
                       recency=1.0, centrality=0.0, reinforcement=0.0, score=0.0)


def test_the_block_renderer_is_the_shared_one():
    assert isinstance(BLOCK_RENDERER, Renderer)
    assert (BLOCK_RENDERER.model, BLOCK_RENDERER.output_format) == (Block, "content")


def test_a_block_too_big_is_cut_as_every_recipe_cuts():
    text = "word " * 200
    rendered = render_blocks([scored(text)], "attention", 20, count_tokens=lambda s: len(s.split()))
    line = rendered.splitlines()[1]
    marker = cut("x" * 100, 50).lstrip("x")  # the shared cut's end mark
    assert line.startswith("[1] word") and line.endswith(marker)


@given(st.lists(st.text(alphabet="ab \n", min_size=1, max_size=20).filter(str.strip), min_size=1, max_size=5))
def test_each_line_is_the_renderers_text_on_one_line(contents):
    text = render_blocks([scored(c, str(i)) for i, c in enumerate(contents)], "self", 10_000)
    record = Block.__new__(Block)
    expected = []
    for content in contents:
        record.content = content
        expected.append("- " + " ".join(BLOCK_RENDERER.render(record).split()))
    assert text.splitlines() == ["## Identity", *expected]
