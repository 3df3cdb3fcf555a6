"""The three frame templates: blocks as lines under section headings (pure, no I/O).

| template | sections | a block's line |
|---|---|---|
| self | ``## Identity`` | ``- <content>`` |
| attention | ``## Relevant Knowledge`` | ``[n] <content>`` |
| task | ``## Active Goals`` (blocks tagged ``self/goal``), ``## Context`` (the others) | ``- <content>`` / ``[n] <content>`` |

A block's line depends only on the blocks before it (its number), so the packer can cost every
line before choosing a prefix of them; :func:`compose` puts the chosen lines under their headings
(a section without lines is left out; no block: the empty string).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._scoring import ScoredBlock

__all__ = ["Template", "TEMPLATES_BY_NAME", "Line", "lines", "compose_template", "GOAL_TAG"]

#: Blocks carrying this tag are the task template's goals.
GOAL_TAG = "self/goal"


@dataclass(frozen=True)
class Line:
    """One block's rendered line and the section it goes under."""

    section: int
    text: str


@dataclass(frozen=True)
class Template:
    """Section headings; ``goal_section``: the section of blocks tagged ``self/goal`` (None: every
    block in section 0); ``numbered``: the sections whose lines are numbered ``[n]``."""

    name: str
    headings: tuple[str, ...]
    numbered: frozenset[int]
    goal_section: int | None = None

    def section_of(self, block: ScoredBlock) -> int:
        if self.goal_section is None:
            return 0
        return self.goal_section if GOAL_TAG in block.tags else 1 - self.goal_section


TEMPLATES_BY_NAME = {
    "self": Template("self", ("## Identity",), frozenset()),
    "attention": Template("attention", ("## Relevant Knowledge",), frozenset({0})),
    "task": Template("task", ("## Active Goals", "## Context"), frozenset({1}), goal_section=0),
}


def lines(template: Template, blocks: Sequence[ScoredBlock]) -> list[Line]:
    """Each block's line, in order; numbers count the blocks before it in the same section."""
    counts = [0] * len(template.headings)
    out = []
    for block in blocks:
        section = template.section_of(block)
        counts[section] += 1
        text = " ".join(block.content.split())  # one line per block
        prefix = f"[{counts[section]}] " if section in template.numbered else "- "
        out.append(Line(section, prefix + text))
    return out


def compose_template(template: Template, chosen: Sequence[Line]) -> str:
    """The chosen lines under their headings, sections in template order, one line each."""
    parts = []
    for section, heading in enumerate(template.headings):
        body = [line.text for line in chosen if line.section == section]
        if body:
            parts.append("\n".join([heading, *body]))
    return "\n".join(parts)
