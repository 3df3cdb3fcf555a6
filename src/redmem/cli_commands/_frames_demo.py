"""The frames section of ``redmem demo``: an agent's SELF, ATTENTION and TASK frames on a few blocks.

It runs under the demo's key prefix as agent ``<agent>-frames``, whose blocks and frame keys an
earlier demo run left are removed first.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from ..recipes.frames import Block, FrameMemory, FrameResult, ScoredBlock
from ..recipes.frames._retrieval import block_keys
from ._why import why_tables

__all__ = ["run_frames", "BLOCKS", "QUESTION"]

#: (text, tags, category) of the demo's blocks.
BLOCKS: tuple[tuple[str, list[str], str], ...] = (
    ("I never make up facts; I say when I do not know.", ["self/constitutional"], "knowledge"),
    ("I explain my reasoning before giving a recommendation.", ["self/value"], "knowledge"),
    ("Finish the migration of background jobs this week.", ["self/goal"], "knowledge"),
    ("Use Celery with Redis as the broker for background jobs.", [], "knowledge"),
    ("Background jobs run from cron on the old server.", [], "knowledge"),
    ("The Redis broker listens on port 6380 in production.", [], "knowledge"),
    ("The user prefers short answers with code.", [], "observation"),
)
QUESTION = "how should background jobs run now?"


def run_frames(console: Console, agent: str, verbose: bool = False) -> None:
    """Learn the blocks, connect and contradict some, then show the three frames (one line each;
    ``verbose``: each frame's text and score table) and the cache."""
    console.print(Rule("frames: SELF / ATTENTION / TASK"))
    mem = FrameMemory(agent_id=f"{agent}-frames")
    _clear(mem)
    mem.begin_session()
    ids = [mem.learn(text, tags=tags, category=category) for text, tags, category in BLOCKS]
    mem.connect(ids[3], ids[5], weight=0.6)
    mem.connect(ids[2], ids[3], weight=0.3)
    mem.contradict(ids[3], ids[4])
    mem.update_confidence(ids[3], 0.9)
    console.print(f"agent {escape(mem.agent_id)}: {len(ids)} blocks, 2 edges, 'Celery' contradicts 'cron' "
                  "(Celery has more evidence)", highlight=False)
    _show(console, mem.frame("self"), "self", verbose)
    _show(console, mem.frame("attention", QUESTION, top_k=3), f"attention {QUESTION!r}", verbose)
    _show(console, mem.frame("task", QUESTION, top_k=3), "task", verbose)
    console.print(f"self again: cached={mem.frame('self').cached} (until a self/ block changes)")
    mem.end_session()


def _show(console: Console, result: FrameResult, call: str, verbose: bool) -> None:
    """One line: how each block got in, the tokens, the edges reinforced; verbose: the text and
    its explanation (the composite's terms per block, what was left out: ``redmem ask --why``'s tables)."""
    hows = ", ".join(_how(b) for b in result.blocks)
    console.print(f"[bold]{escape(call)}[/bold]: {len(result.blocks)} blocks ({hows}), {result.token_count} tokens, "
                  f"{result.edges_reinforced} edges +0.10", highlight=False)
    if not verbose:
        return
    console.print(escape(result.text))
    console.print(why_tables(result.explain()))


def _how(block: ScoredBlock) -> str:
    if block.guaranteed:
        return "guaranteed"
    return "graph" if block.was_expanded else "vector" if block.similarity else "salience"


def _clear(mem: FrameMemory) -> None:
    """Remove what an earlier run left for this agent: its blocks (with their indexes) and frame keys."""
    for block in Block.query.filter(agent_id=mem.agent_id).all():
        block.delete()
    keys = block_keys(mem.space)
    mem.client.delete(keys["clock"], keys["version"], keys["contradictions"], keys["definitions"])
