"""What :meth:`FrameMemory.learn` wires into the graph, so centrality, expansion and suppression
work without hand wiring, and how it flags what the fact lifecycle (:mod:`redmem.lifecycle`) acts on.

- Edges: a new block is linked to its ``max_links`` nearest blocks (the vector search of its
  embedding) whose cosine is at least ``link_similarity``, each edge at the pair's cosine; a
  block keeps at most :data:`DEGREE_CAP` edges (``Block.edges``' ``max_edges``: linking beyond it
  drops the node's weakest edge).
- Flags: a neighbour at cosine >= ``flag_similarity`` is judged against the new block by a
  lifecycle judge (:data:`redmem.lifecycle.Judge`: ``judge(new_text, old_text)`` answers
  ``"duplicate"``, ``"supersedes"`` or ``"unrelated"``, the same judges ``Lifecycle(judge=...)``
  takes). ``"supersedes"``: the older block is superseded through
  :func:`redmem.lifecycle.supersede` (its ``valid_to`` closed, the two linked both ways) and the
  pair recorded as :meth:`FrameMemory.contradict` records it; frames then leave the older block
  out unless read ``as_of`` a time it was valid. ``"duplicate"``: the pair is listed by
  :meth:`FrameMemory.duplicates` (nothing hidden).
- The default judge, :func:`rules_judge`, needs no model: it is the lifecycle's LLM-free
  detection (:func:`~redmem.lifecycle._detect.restates` for a restatement, the same subject and
  slot with another value for an update) with one more rule for the negated or renumbered same
  statement. :class:`~redmem.lifecycle.OpenAIJudge` asks a chat model instead (the ``openai`` SDK);
  ``OpenAIContradictionJudge`` is its name in the frames seed (an alias, the same class).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...lifecycle import Judge, OpenAIJudge, infer_slot
from ...lifecycle._detect import restates, same_value
from ...store._errors import ConfigurationError
from ...store._validation import finite_number, non_negative_int

__all__ = ["LearnWiring", "DEFAULT_WIRING", "Judge", "VERDICTS", "DEGREE_CAP", "rules_judge", "heuristic_judge",
           "OpenAIContradictionJudge", "polarity", "numbers", "same_statement"]

#: The most edges a block keeps (``Block.edges`` prunes the weakest beyond).
DEGREE_CAP = 20
#: What a judge says of a new block and an older one (the lifecycle's verdicts).
VERDICTS = ("duplicate", "supersedes", "unrelated")

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


#: The least share of words two texts have in common (numbers and negations aside) to be the same statement.
SAME_STATEMENT = 0.8


def _plain_words(text: str) -> set[str]:
    """The words of ``text`` but its numbers and negations."""
    return {w for w in _WORD.findall(text.lower())
            if not _NUMBER.match(w) and w not in _NEGATIONS and not w.endswith("n't")}


def same_statement(new: str, old: str) -> bool:
    """Whether two texts make one statement, their numbers and negations aside: their other
    words overlap by at least :data:`SAME_STATEMENT` (Jaccard)."""
    a, b = _plain_words(new), _plain_words(old)
    return bool(a | b) and len(a & b) / len(a | b) >= SAME_STATEMENT


def rules_judge(new: str, old: str) -> str:
    """The LLM-free judge (a :data:`~redmem.lifecycle.Judge`), first rule that holds:

    1. ``"supersedes"``: the same statement (:func:`same_statement`) with the other polarity,
       or both stating numbers and not the same ones ("Ann has 2 cats" / "Ann has 3 cats");
    2. ``"duplicate"``: the lifecycle's restatement (same names and numbers, the content words
       of one among the other's);
    3. ``"supersedes"``: the lifecycle's slot rule, the same subject and attribute family
       (:func:`~redmem.lifecycle.infer_slot`) with another value ("Ann lives in Berlin" /
       "Ann lives in Lisbon");
    4. else ``"unrelated"``.
    """
    stated_new, stated_old = numbers(new), numbers(old)
    if same_statement(new, old) and (
            polarity(new) != polarity(old) or (stated_new and stated_old and stated_new != stated_old)):
        return "supersedes"
    if restates(new, old):
        return "duplicate"
    slot = infer_slot(new)
    if slot is not None and infer_slot(old) == slot and not same_value(new, old, slot[0]):
        return "supersedes"
    return "unrelated"


#: The frames seed's name of the LLM-free judge (an alias of :func:`rules_judge`).
heuristic_judge = rules_judge


@dataclass(frozen=True)
class LearnWiring:
    """How :meth:`FrameMemory.learn` wires a new block (see the module docs).

    Args:
        link_similarity: the least cosine of a linked neighbour.
        max_links: the most neighbours linked per new block (0: no edges).
        flag_similarity: the least cosine of a neighbour the judge is asked about (above 1: never).
        judge: the judge of a near pair, a :data:`~redmem.lifecycle.Judge` (default :func:`rules_judge`).
    """

    link_similarity: float = 0.6
    max_links: int = 5
    flag_similarity: float = 0.8
    judge: Judge = field(default=rules_judge)

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

#: The frames seed's name of the optional model judge: the lifecycle's :class:`~redmem.lifecycle.OpenAIJudge`.
OpenAIContradictionJudge = OpenAIJudge
