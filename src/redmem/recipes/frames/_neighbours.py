"""Neighbour context: a block is found through the blocks learned just before and after it.

An agent learns what happens as it happens, one block after another ("Yes, twice last year!"
answers the block before it). So, as :class:`~redmem.recipes.conversation.ConversationMemory`
does for dialog turns, :meth:`FrameMemory.learn` keeps each session's blocks in learn order
(the session's sorted set of :func:`~redmem.recipes.conversation_append.append_turns`) and
saves a block with :func:`~.learning.append_block`: its ``context``, indexed by the keyword arm (BM25 with
:class:`~redmem.recipes.conversation.TurnContextAnalyzer`), is the block's own text weighted 4
and the blocks one and two steps either side of it in the same session weighted 2 and 1. The
block learned next joins the earlier blocks' contexts in the same MULTI/EXEC, which writes
their ``context`` entry alone (what reinforcement wrote to them stays). The embedding,
rendering, wiring and every judge read ``content`` only (a vector of the neighbours too blurs
two different statements together, and costs an embedding per changed block).

On LoCoMo (turns learned one by one, "[date] speaker: text") it takes ATTENTION's pure
``recall()`` R@5 from 0.655 to 0.758 (``benchmarks/results/frames_sequence.md``). Blocks learned outside a session (no :meth:`FrameMemory.begin_session`), or with
``neighbours=0``, are indexed on their own text alone.
"""

from __future__ import annotations

from ...context._neighbours import Turn
from ._models import Block

__all__ = ["turn_of_block", "session_turn", "NEIGHBOURS"]

#: Blocks either side of a block whose text joins its ``context`` by default.
NEIGHBOURS = 2


def turn_of_block(block: Block) -> Turn:
    """The block as a turn of its session (:func:`session_turn`)."""
    return session_turn(block.content or "", block.session or "")


def session_turn(text: str, session: str) -> Turn:
    """A block's text as a turn of its session (no speaker, no date: the text says them if it has them)."""
    return Turn("", text, session, "")
