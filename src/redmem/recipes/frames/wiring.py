"""What :meth:`FrameMemory.learn` wires into the graph, so centrality, expansion and suppression
work without hand wiring.

- Edges: a new block is linked to its ``max_links`` nearest blocks (the vector search of its
  embedding) whose cosine is at least ``link_similarity``, each edge at the pair's cosine; a
  block keeps at most :data:`DEGREE_CAP` edges (``Block.edges``' ``max_edges``: linking beyond it
  drops the node's weakest edge).
- Flags: a neighbour at cosine >= ``flag_similarity`` is judged against the new block:
  ``"contradiction"`` is recorded as :meth:`FrameMemory.contradict` records it (suppression then
  keeps one of the two in a frame), ``"duplicate"`` in the agent's duplicate pairs
  (:meth:`FrameMemory.duplicates`). The default judge, :func:`heuristic_judge`, needs no model:
  near-equal texts whose negations or numbers differ contradict, near-equal texts that agree on
  both duplicate. :class:`OpenAIContradictionJudge` asks a chat model instead (the ``openai`` SDK, configured by
  the user).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...store.errors import ConfigurationError
from ...store.validation import finite_number, non_negative_int

__all__ = ["LearnWiring", "DEFAULT_WIRING", "Judge", "VERDICTS", "DEGREE_CAP", "heuristic_judge", "OpenAIContradictionJudge", "polarity", "numbers"]

#: The most edges a block keeps (``Block.edges`` prunes the weakest beyond).
DEGREE_CAP = 20
#: What a judge says of a pair of blocks.
VERDICTS = ("contradiction", "duplicate", "none")
#: A judge: (new block's text, neighbour's text, cosine) -> one of :data:`VERDICTS`.
Judge = Callable[[str, str, float], str]

_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor", "cannot",
                        "without"})
_WORD = re.compile(r"[a-z0-9']+(?:\.[0-9]+)?")
_NUMBER = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")


def polarity(text: str) -> bool:
    """Whether ``text`` is negated: an odd number of negation words (``not``, ``never``, ``-n't`` ...)."""
    words = _WORD.findall(text.lower())
    return sum(1 for w in words if w in _NEGATIONS or w.endswith("n't")) % 2 == 1


def numbers(text: str) -> frozenset[str]:
    """The numbers ``text`` states (``3``, ``4.5``), as written."""
    return frozenset(w for w in _WORD.findall(text.lower()) if _NUMBER.match(w))


#: Cosine from which the heuristic judge calls agreeing texts duplicates.
DUPLICATE_SIMILARITY = 0.95


#: The least share of words two texts have in common (numbers and negations aside) to be the same statement.
SAME_STATEMENT = 0.8


def _plain_words(text: str) -> set[str]:
    """The words of ``text`` but its numbers and negations."""
    return {w for w in _WORD.findall(text.lower())
            if not _NUMBER.match(w) and w not in _NEGATIONS and not w.endswith("n't")}


def heuristic_judge(new: str, old: str, cosine: float) -> str:
    """The LLM-free judge of two near-equal texts. The same statement (their words, numbers and
    negations aside, overlap by at least :data:`SAME_STATEMENT`, Jaccard) is a ``contradiction``
    when one is negated and the other not, or both state numbers and not the same ones. Else
    ``duplicate`` at cosine >= :data:`DUPLICATE_SIMILARITY`; else ``none``."""
    a, b = _plain_words(new), _plain_words(old)
    same = bool(a | b) and len(a & b) / len(a | b) >= SAME_STATEMENT
    stated_new, stated_old = numbers(new), numbers(old)
    if same and (polarity(new) != polarity(old) or (stated_new and stated_old and stated_new != stated_old)):
        return "contradiction"
    return "duplicate" if cosine >= DUPLICATE_SIMILARITY and same else "none"


@dataclass(frozen=True)
class LearnWiring:
    """How :meth:`FrameMemory.learn` wires a new block (see the module docs).

    Args:
        link_similarity: the least cosine of a linked neighbour.
        max_links: the most neighbours linked per new block (0: no edges).
        flag_similarity: the least cosine of a neighbour the judge is asked about (above 1: never).
        judge: the judge of a near pair (default :func:`heuristic_judge`).
    """

    link_similarity: float = 0.6
    max_links: int = 5
    flag_similarity: float = 0.8
    judge: Judge = field(default=heuristic_judge)

    def __post_init__(self) -> None:
        finite_number("link_similarity", self.link_similarity, low=-1.0, high=1.0)
        non_negative_int("max_links", self.max_links)
        finite_number("flag_similarity", self.flag_similarity, low=-1.0)
        if not callable(self.judge):
            raise ConfigurationError(f"judge must be callable, got {self.judge!r}")

    @property
    def neighbours_wanted(self) -> int:
        """How many nearest blocks to look at: enough to link and to flag."""
        return self.max_links if self.flag_similarity > 1 else max(self.max_links, 5)


#: What :class:`~.engine.FrameMemory` wires by default.
DEFAULT_WIRING = LearnWiring()

_PROMPT = ("Two notes from one agent's memory. Answer with one word: 'contradiction' if they cannot both be true, "
           "'duplicate' if they say the same thing, else 'none'.\nNote A: {new}\nNote B: {old}")


class OpenAIContradictionJudge:
    """A judge asking a chat model through the ``openai`` SDK (``pip install redmem[openai]``).

    Args:
        model: the chat model's name.
        client: an ``openai.OpenAI`` client (default: one built from the environment, ``OPENAI_API_KEY``).
    """

    def __init__(self, model: str = "gpt-4o-mini", client: Any = None) -> None:
        if client is None:
            try:
                import openai
            except ImportError as error:  # pragma: no cover - depends on the optional extra
                raise ConfigurationError("OpenAIContradictionJudge needs the openai package: pip install redmem[openai]") from error
            client = openai.OpenAI()
        self.model, self.client = model, client

    def __call__(self, new: str, old: str, cosine: float) -> str:
        reply = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": _PROMPT.format(new=new, old=old)}],
            max_tokens=3, temperature=0)
        answer = (reply.choices[0].message.content or "").strip().lower()
        return next((verdict for verdict in VERDICTS if answer.startswith(verdict)), "none")
