"""Query-adaptive list weights: how much the keyword and vector lists count for one English query.

A first-person query (about the user's own memories) is often paraphrased, so the semantic list
helps; a query naming exact tokens (quoted spans, numbers, dates, proper names) is what lexical
search finds and embeddings blur. The rule reads the query's words only: no model, no I/O.
"""

from __future__ import annotations

import re

__all__ = ["query_adaptive_weights", "FIRST_PERSON", "MONTHS_AND_DAYS"]

#: Words that make a query first-person (about the user's own memories).
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"})

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|(?<!\w)'[^']+'(?!\w)")
#: Month and weekday names, whole or abbreviated, as written (capitalised).
MONTHS_AND_DAYS = re.compile(
    r"\b(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
)


def _capitalised_after_start(text: str) -> bool:
    """True when a word other than a sentence's first starts with a capital letter."""
    previous_end = None
    for match in _WORD.finditer(text):
        initial = previous_end is None or any(c in ".!?" for c in text[previous_end : match.start()])
        if not initial and match.group()[0].isupper():
            return True
        previous_end = match.end()
    return False


def query_adaptive_weights(query_text: str) -> dict[str, float]:
    """Weights of the ``keyword``, ``vector`` and ``graph`` lists for one query.

    - first-person (I, me, my, we, our, ...): keyword 1, vector 1 — personal recall is often
      paraphrased, so the semantic list helps (a pronoun written in capitals, "US", is an
      acronym unless the whole query is);
    - else a quoted span, a number, a date (digits, month or weekday name) or a capitalised
      word that does not start a sentence: keyword 1, vector 0 — exact tokens (names, ids,
      figures) are what lexical search finds and embeddings blur;
    - else keyword 1, vector 1.

    The graph list always weighs 1. Rule as in popoto's ContextAssembler.
    """
    shouted = query_text.isupper()
    if any(_first_person(word, shouted) for word in _WORD.findall(query_text)):
        return {"keyword": 1.0, "vector": 1.0, "graph": 1.0}
    specific = (
        bool(_QUOTED.search(query_text))
        or any(ch.isdigit() for ch in query_text)
        or bool(MONTHS_AND_DAYS.search(query_text))
        or _capitalised_after_start(query_text)
    )
    return {"keyword": 1.0, "vector": 0.0 if specific else 1.0, "graph": 1.0}


def _first_person(word: str, shouted: bool) -> bool:
    """A first-person pronoun, not an acronym spelled like one ("US" the country, in a query not
    written all in capitals)."""
    return word.lower() in FIRST_PERSON and (shouted or len(word) == 1 or not word.isupper())
