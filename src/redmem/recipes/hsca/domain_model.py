"""Layer 2 by meaning: domain tags from sentence embeddings instead of keyword lists.

Each topical domain has a centroid, the mean unit vector of a few prototype sentences written
for it (:data:`DOMAIN_PROTOTYPES`, or the caller's own ``prototypes``, e.g. labelled turns of
the agent's own conversations). A chunk's vector ``v`` is compared with every centroid
``c_d``; a domain is tagged when::

    cos(v, c_d) >= floor   and   cos(v, c_d) >= max_d' cos(v, c_d') - margin

(at most :data:`MAX_TAGS`, best first). A chunk also takes the best domain of each earlier turn
of its context (the engine's recent turns) whose vector is close to its own
(``cos >= bridge``): the semantic thread carries the earlier framing across the domain
boundary, so a text about a rabbit's race and one about Aesop's fable share ``narrative``
though they share no keyword. ``conversational`` (a register, only when no topical domain is
found) and ``cross_domain`` follow the keyword classifier's rules. Any failure of the embedder gives the keyword classifier's tags:
classification never raises. Vectors are cached by text (the last :data:`CACHED_VECTORS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...store.errors import ValidationError
from ...store.validation import finite_number
from .domains import classify_domains, conversational_register, unrelated_pair
from .interface import DomainTag
from .text import ParsedTurn

__all__ = ["EmbeddingDomains", "DOMAIN_PROTOTYPES", "MAX_TAGS", "DEFAULT_FLOOR", "DEFAULT_MARGIN", "DEFAULT_BRIDGE"]

#: The most domains one chunk is tagged with by meaning.
MAX_TAGS = 2
#: Cosine to a domain centroid a chunk needs at least (calibrated on eval 5's tuning half).
DEFAULT_FLOOR = 0.2
#: How far below the best domain's cosine another domain may be and still be tagged.
DEFAULT_MARGIN = 0.05
#: Cosine between two turns from which the later one takes the earlier one's best domain
#: (calibrated with the floor on eval 5's tuning half).
DEFAULT_BRIDGE = 0.3
#: Turn vectors kept in the cache.
CACHED_VECTORS = 4096

DOMAIN_PROTOTYPES: dict[DomainTag, tuple[str, ...]] = {
    DomainTag.PHYSICS: (
        "Forces, motion, energy and gravity govern how objects move.",
        "Waves, light, heat and particles follow the laws of physics.",
        "A physicist measures momentum, friction and acceleration.",
    ),
    DomainTag.MATHEMATICS: (
        "A mathematical proof establishes a theorem from axioms.",
        "Numbers, equations, functions and probability are studied in mathematics.",
        "An algorithm or formula computes a result step by step.",
    ),
    DomainTag.LEGAL: (
        "A court rules on a contract dispute between two parties.",
        "Laws, rights, obligations and liability are decided by judges.",
        "A lawyer reads the agreement and the statute before going to trial.",
    ),
    DomainTag.MEDICAL: (
        "A doctor diagnoses a patient's illness and prescribes treatment.",
        "The body's health, disease, infection and recovery are medicine's concern.",
        "Hospitals, nurses, drugs and surgery care for the sick.",
    ),
    DomainTag.POETRY: (
        "A poem uses verse, rhythm and imagery to evoke feeling.",
        "The poet's lines and stanzas speak of love, loss and beauty.",
        "Lyrical language turns a moment into song.",
    ),
    DomainTag.NARRATIVE: (
        "A story follows a character through events from beginning to end.",
        "Fables, tales and myths tell what happened to a hero and what it meant.",
        "Once upon a time something happened, and then something else followed.",
    ),
    DomainTag.TECHNICAL_PROSE: (
        "Software systems, servers and databases must be configured and maintained.",
        "Engineers debug code, deploy releases and monitor the network.",
        "A technical system processes requests, stores data and fails under load.",
    ),
    DomainTag.PHILOSOPHICAL: (
        "Philosophy asks what is true, what is good and how we should live.",
        "Questions of ethics, virtue, the mind and meaning.",
        "A lesson about human nature, wisdom and the right way to act.",
    ),
    DomainTag.HISTORICAL: (
        "In past centuries empires rose and fell through wars and treaties.",
        "Historians study ancient kingdoms, revolutions and the records of earlier eras.",
        "Long ago people lived under kings, built cities and fought battles.",
    ),
}


class EmbeddingDomains:
    """Domain tags by cosine to each domain's prototype centroid (module docstring).

    Args:
        embedder: any redmem embedding provider (``embed(texts) -> unit rows``), e.g.
            :class:`~redmem.embeddings.MiniLMEmbeddings`.
        floor: the least cosine to a centroid for a tag.
        margin: how far below the best cosine a second tag may be.
        bridge: the cosine between two turns from which the later takes the earlier's best domain.
        prototypes: per topical domain, the sentences of its centroid (default
            :data:`DOMAIN_PROTOTYPES`); a domain without sentences is never tagged by meaning.
    """

    def __init__(self, embedder: Any, floor: float = DEFAULT_FLOOR, margin: float = DEFAULT_MARGIN,
                 bridge: float = DEFAULT_BRIDGE, prototypes: Mapping[str, Sequence[str]] | None = None) -> None:
        self.embedder = embedder
        chosen = {d.value: t for d, t in DOMAIN_PROTOTYPES.items()} if prototypes is None else prototypes
        topical = {d.value for d in DOMAIN_PROTOTYPES}
        if not set(chosen) <= topical:
            raise ValidationError(f"prototypes are for the topical domains {sorted(topical)}, got {sorted(chosen)}")
        self.prototypes = {DomainTag(d): tuple(texts) for d, texts in chosen.items() if texts}
        if not self.prototypes or not all(isinstance(t, str) for texts in self.prototypes.values() for t in texts):
            raise ValidationError("EmbeddingDomains needs prototype sentences (str) for at least one domain")
        self.floor = finite_number("floor", floor, low=-1.0, high=1.0)
        self.margin = finite_number("margin", margin, low=0.0, high=2.0)
        self.bridge = finite_number("bridge", bridge, low=-1.0, high=1.0)
        self._centroids: tuple[list[DomainTag], np.ndarray] | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self.failures = 0

    def centroids(self) -> tuple[list[DomainTag], np.ndarray]:
        """The domains and their unit centroids (embedded once, on first use)."""
        if self._centroids is None:
            domains = list(self.prototypes)
            rows = [_unit(self._embed(self.prototypes[d]).mean(axis=0)) for d in domains]
            self._centroids = (domains, np.vstack(rows))
        return self._centroids

    def similarities(self, text: str) -> dict[str, float]:
        """The cosine of ``text`` to each domain centroid."""
        domains, centroids = self.centroids()
        cosines = centroids @ self.vector(text)
        return {d.value: float(c) for d, c in zip(domains, cosines, strict=True)}

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of ``text`` (cached)."""
        found = self._vectors.get(text)
        if found is None:
            found = _unit(self._embed([text])[0])
            if len(self._vectors) >= CACHED_VECTORS:
                self._vectors.pop(next(iter(self._vectors)))
            self._vectors[text] = found
        return found

    def topical(self, text: str) -> list[str]:
        """The topical domains of ``text`` by its own meaning, best first (floor and margin)."""
        similar = self.similarities(text)
        best = max(similar.values())
        return sorted((d for d, c in similar.items() if c >= self.floor and c >= best - self.margin),
                      key=lambda d: -similar[d])[:MAX_TAGS]

    def classify(self, turn: ParsedTurn, context: Sequence[ParsedTurn] = ()) -> list[str]:
        """The chunk's domain tags by meaning, with those bridged from ``context``; the keyword
        tags if the embedder fails."""
        if not turn.sentences:
            return [DomainTag.UNCLASSIFIED.value]
        try:
            chosen = self.topical(turn.text)
            own = self.vector(turn.text)
            for past in context:
                if past.sentences and float(self.vector(past.text) @ own) >= self.bridge:
                    chosen += self.topical(past.text)[:1]
        except Exception:  # fail closed: a broken embedder must not stop ingestion
            self.failures += 1
            return classify_domains(turn)
        tags = list(dict.fromkeys(chosen))
        topical = [DomainTag(d) for d in tags]
        if not tags and conversational_register(turn):
            tags.append(DomainTag.CONVERSATIONAL.value)
        if unrelated_pair(topical):
            tags.append(DomainTag.CROSS_DOMAIN.value)
        return tags or [DomainTag.UNCLASSIFIED.value]

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
