"""The BM25 formulas of :class:`~redmem.fields._bm25.BM25Field`, as pure functions of plain values.

Okapi BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and
Beyond"), with the non-negative idf of Lucene's ``BM25Similarity`` (the variant popoto's
BM25Field uses)::

    idf(t)     = ln((N - df + 0.5) / (df + 0.5) + 1)
    tf_norm    = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    score(q,d) = sum over distinct query terms t of  qtf(t) * idf(t) * tf_norm(t, d)

``qtf`` is how often the term occurs in the query, so a repeated query word counts twice, as
in ``rank_bm25.BM25Okapi.get_scores``.

Impact-ordered postings store ``tf_norm`` computed with a per-term *reference* average length
``R`` instead of the current ``avgdl``. Writing ``tf_norm = (k1 + 1) / (1 + D)`` with
``D(A) = k1 (1 - b) / tf + (k1 b / A) * dl / tf`` (both parts >= 0 for k1 > 0, 0 <= b <= 1)::

    D(A) >= min(1, R / A) * D(R)                                                        (*)

(if A <= R the second part only grows; if A > R each part shrinks by at most the factor R / A).
So a posting whose stored impact is at most ``I`` has, at any current ``avgdl = A``,
``tf_norm <= (k1 + 1) / (1 + min(1, R / A) * ((k1 + 1) / I - 1))`` -- an exact upper bound
whatever the drift of avgdl since the posting was written (:func:`impact_bound`).

Postings store ``ceil(I * unit)`` with ``unit = 2 ** (52 - e)``, ``2 ** e`` the smallest power of
two above ``k1 + 1`` (:func:`impact_unit`): integers below 2**52, which Redis keeps as integers
(compact, no decimal parsing); the step ``1 / unit`` (8.9e-16 at k1 = 1.2) leaves ``tf`` exact and,
rounded up, keeps every stored impact an upper bound of the true one.
"""

from __future__ import annotations

import math

__all__ = [
    "idf",
    "tf_norm",
    "length_factor",
    "term_frequency",
    "impact_bound",
    "impact_unit",
    "bm25_score",
]


def idf(n_docs: int, df: int) -> float:
    """``ln((N - df + 0.5) / (df + 0.5) + 1)``: always > 0, falls as the term gets common."""
    return math.log((n_docs - df + 0.5) / (df + 0.5) + 1)


def length_factor(dl: float, avgdl: float, k1: float, b: float) -> float:
    """``L = k1 * (1 - b + b * dl / avgdl)``, the length-normalised saturation constant."""
    return k1 * (1 - b + b * dl / avgdl)


def tf_norm(tf: float, dl: float, avgdl: float, k1: float, b: float) -> float:
    """``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``; 0 when tf is 0, below k1 + 1."""
    return tf * (k1 + 1) / (tf + length_factor(dl, avgdl, k1, b))


def term_frequency(impact: float, dl: float, reference: float, k1: float, b: float) -> int:
    """Invert :func:`tf_norm` at ``avgdl = reference``: ``tf = I * L / (k1 + 1 - I)``, rounded.

    A posting stores its impact ``I`` only; with the document length and the list's reference
    this gives back the exact integer term frequency.
    """
    return round(impact * length_factor(dl, reference, k1, b) / (k1 + 1 - impact))


def impact_unit(k1: float) -> float:
    """``2 ** (52 - e)`` where ``k1 + 1 < 2 ** e`` (frexp): every ``tf_norm * unit`` is below 2**52."""
    return 2.0 ** (52 - math.frexp(k1 + 1)[1])


def impact_bound(impact: float, avgdl: float, reference: float, k1: float, b: float) -> float:
    """Largest ``tf_norm`` at ``avgdl`` of any posting whose stored impact (at ``reference``) is <= ``impact``.

    ``(k1 + 1) / (1 + min(1, R / A) * ((k1 + 1) / I - 1))`` by inequality (*) of the module
    docstring; ``impact`` 0 (an exhausted list) bounds nothing: 0.
    """
    if impact <= 0:
        return 0.0
    drift = min(1.0, reference / avgdl)
    return (k1 + 1) / (1 + drift * ((k1 + 1) / impact - 1))


def bm25_score(
    query_tf: dict[str, int],
    doc_tf: dict[str, int],
    dl: int,
    df: dict[str, int],
    n_docs: int,
    avgdl: float,
    k1: float,
    b: float,
) -> float:
    """``sum qtf(t) * idf(t) * tf_norm(t, d)`` over the query terms the document holds."""
    total = 0.0
    for term in sorted(query_tf):
        tf = doc_tf.get(term, 0)
        if tf:
            total += query_tf[term] * idf(n_docs, df[term]) * tf_norm(tf, dl, avgdl, k1, b)
    return total
