"""A frame's blocks packed into its token budget under its template's headings (no I/O).

A block's text is rendered by the shared stage, :class:`redmem.context._rendering.Renderer`
(:data:`BLOCK_RENDERER`: the ``content`` format of :class:`~.model.Block`, its memory text, cut
as every recipe's is when it is too big), on one line; the template (:mod:`.templates`) adds the
line's ``[n] `` / ``- `` and the section headings, as the shared packer's
:class:`~redmem.context._rendering.Layout`. Stop-at-first-miss in the order given (guaranteed blocks first): a block's line is admitted while
the whole text, headings included, stays within the budget; a block bigger than the whole budget
is handled as ``oversize`` says (:mod:`redmem.context._oversize`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...context._oversize import Cuttable, check_oversize
from ...context._packing import Budget, Fitted, Layout, fit
from ...context._rendering import Renderer
from ...context._tokens import TokenCounter, quarter_length
from ...store._errors import ValidationError
from ...store._validation import non_negative_int
from ._models import Block
from ._scoring import ScoredBlock
from ._templates import TEMPLATES_BY_NAME, Line, Template, compose_template, lines

__all__ = ["fit_blocks", "render_blocks", "quarter_length", "BLOCK_RENDERER"]

#: How a block's text is rendered: the shared renderer's ``content`` format (its memory text).
BLOCK_RENDERER = Renderer(Block, "content", render_fields=("content",))


def fit_blocks(blocks: Sequence[ScoredBlock], template: str, token_budget: int, count_tokens: TokenCounter,
               oversize: str = "truncate") -> Fitted:
    """The blocks' lines under ``template`` packed into ``token_budget`` tokens (see the module docs)."""
    if template not in TEMPLATES_BY_NAME:
        raise ValidationError(f"unknown template {template!r}; use one of {sorted(TEMPLATES_BY_NAME)}")
    chosen = TEMPLATES_BY_NAME[template]
    rendered = lines(chosen, blocks)
    return fit([_cuttable(line, block) for line, block in zip(rendered, blocks)], _layout(chosen, rendered),
               count_tokens, Budget(max_tokens=non_negative_int("token_budget", token_budget)),
               "stop_at_first_miss", check_oversize(oversize),
               guaranteed=[i for i, block in enumerate(blocks) if block.guaranteed])


def render_blocks(blocks: Sequence[ScoredBlock], template: str, token_budget: int, *,
                  count_tokens: TokenCounter = quarter_length, oversize: str = "truncate") -> str:
    """The seed's ``render_blocks``: the text :meth:`FrameMemory.frame` would show for these blocks
    (by default costed with the seed's ``len // 4``)."""
    return fit_blocks(blocks, template, token_budget, count_tokens, oversize).text


def _cuttable(line: Line, block: ScoredBlock) -> Cuttable:
    """A block's line at any cut of its text, rendered by :data:`BLOCK_RENDERER` on one line (its
    ``- `` / ``[n] `` prefix kept)."""
    record = Block.__new__(Block)  # the renderer reads the record's fields; a scored block carries its content
    record.content = block.content
    rendered = BLOCK_RENDERER.cuttable(record)
    prefix = line.text[: len(line.text) - len(" ".join(block.content.split()))]
    return Cuttable(rendered.longest, lambda chars: prefix + " ".join(rendered.render(chars).split()))


def _layout(template: Template, rendered: Sequence[Line]) -> Layout:
    """Lines under the template's headings; the headings costed once, each line with its break."""
    return Layout(lambda position, piece: piece,
                  lambda indices, pieces: compose_template(template, [Line(rendered[i].section, p) for i, p in zip(indices, pieces)]),
                  "\n", "".join(heading + "\n" for heading in template.headings))
