"""Layer 2, domain tags: rule-based keyword lists per domain of the controlled vocabulary, thresholded.

A topical domain is tagged when its keywords (compared as analyser stems) make up at least
:data:`DOMAIN_SHARE` of the chunk's terms and number at least one (two once the chunk has
:data:`MIN_TERMS_FOR_TWO_HITS` terms or more). ``conversational`` is a register, not a topic: it
is tagged when first- and second-person words and interjections make up :data:`DOMAIN_SHARE` of
the surface words. ``cross_domain`` is added when two topical domains that are not related
(:data:`RELATED_DOMAINS`; an everyday topic, :data:`EVERYDAY_DOMAINS`, is related to every domain) are
both tagged. ``conversational`` is tagged only when no topical domain is: a register says what a
chunk is about only when nothing else does. No domain, or any failure, gives ``["unclassified"]``:
classification never raises.

Keyword weights (tuned per agent from its served history, :mod:`.keyword_tuning`) scale each
keyword's hits for one domain: ``hits[d] = sum(count(s) * keyword_weights[d].get(s, 1) for s in
stems(d))``, compared with the same thresholds; without weights every hit counts 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from itertools import combinations

from ...text._analyzer import default_analyzer
from ._interface import DomainTag
from ._text import ParsedTurn

__all__ = [
    "classify_domains", "conversational_register", "unrelated_pair", "domain_stems", "domain_keyword_hits", "KeywordWeights",
    "DOMAIN_KEYWORDS", "EVERYDAY_DOMAINS", "RELATED_DOMAINS", "DOMAIN_SHARE", "MIN_TERMS_FOR_TWO_HITS",
]

#: Per domain (its tag's value), per keyword stem, the factor on that keyword's hits for that domain.
KeywordWeights = Mapping[str, Mapping[str, float]]

#: Share of a chunk's terms a domain's keywords must reach to tag it.
DOMAIN_SHARE = 0.05
#: From this many terms on, a domain needs two keyword hits, not one.
MIN_TERMS_FOR_TWO_HITS = 12

#: Keywords of each topical domain (stemmed when compared). Audited on the tuning halves of the
#: evals (``benchmarks/hsca_evals.py``, ``keyword_audit``): a keyword found in at least two
#: labelled turns of other domains, and in more of them than of its own, is dropped --
#: ``meaning`` from philosophical (its stem ``mean`` is the verb "means"), ``system`` ("immune
#: system") and ``function`` (a mathematical function) from technical_prose, ``set`` ("set out")
#: from mathematics.
DOMAIN_KEYWORDS: dict[DomainTag, str] = {
    DomainTag.PHYSICS: "physics energy force mass velocity acceleration momentum gravity quantum particle electron "
                       "photon wave relativity thermodynamics entropy friction magnetic field atom nuclear orbit "
                       "inertia newton einstein light speed motion",
    DomainTag.MATHEMATICS: "mathematics equation theorem proof integral derivative matrix vector algebra geometry "
                           "calculus probability number prime function variable polynomial lemma axiom graph "
                           "sum formula infinity",
    DomainTag.LEGAL: "law legal court contract clause statute plaintiff defendant liability tenant landlord lease "
                     "agreement judge jury attorney lawyer rights breach party parties jurisdiction regulation "
                     "shall hereby compliance sue lawsuit",
    DomainTag.MEDICAL: "medical doctor patient disease symptom diagnosis treatment therapy drug dose medication "
                       "hospital clinical blood heart surgery infection fever pain nurse vaccine chronic cancer "
                       "prescription health",
    DomainTag.POETRY: "poem poetry verse stanza rhyme meter sonnet haiku lyric muse moon stars heart soul whisper "
                      "dream sorrow bloom petal dawn dusk tender",
    DomainTag.NARRATIVE: "story once upon tale hero character plot chapter journey adventure village king queen "
                         "forest rabbit tortoise hare fox wolf fable princess dragon race castle",
    DomainTag.TECHNICAL_PROSE: "software code server database api deploy deployment configuration install "
                               "network cache redis python kubernetes container latency memory query index "
                               "bug release version pipeline",
    DomainTag.PHILOSOPHICAL: "philosophy ethics moral virtue truth existence consciousness mind free will "
                             "reason knowledge being wisdom justice lesson patience humility "
                             "metaphysics socrates plato kant",
    DomainTag.HISTORICAL: "history historical century war empire ancient medieval revolution dynasty king treaty "
                          "battle era colonial kingdom roman reign archive monarchy independence",
    # everyday topics of conversation, written from general knowledge of what people chat about
    DomainTag.FAMILY: "family mom mum dad mother father parent kids son daughter brother sister grandma "
                      "grandpa grandmother grandfather baby children husband wife cousin aunt uncle",
    DomainTag.RELATIONSHIPS: "friend friendship boyfriend girlfriend partner date dating wedding marriage "
                             "breakup love together support lonely community",
    DomainTag.WORK: "job work career boss office colleague coworker interview promotion salary "
                    "project business company client shift hired",
    DomainTag.EDUCATION: "school college university class teacher student exam homework study degree course "
                         "graduate semester lecture",
    DomainTag.FOOD: "food cook cooking recipe dinner lunch breakfast restaurant bake baking cake pizza meal "
                    "coffee kitchen delicious",
    DomainTag.TRAVEL: "travel trip vacation holiday flight beach hotel camping hike hiking road abroad visit "
                      "tour mountains",
    DomainTag.PETS: "pet pets dog dogs puppy cat cats kitten vet walk leash adopt adopted",
    DomainTag.ARTS_HOBBIES: "painting paint art artist music guitar piano sing song concert book books reading "
                            "novel photography craft pottery dance garden gardening movie",
    DomainTag.FITNESS: "gym workout exercise run running yoga marathon fitness training sport sports soccer "
                       "football basketball swim swimming bike",
    DomainTag.EMOTIONS: "feel feeling feelings happy sad proud grateful stressed anxious excited nervous upset "
                        "scared afraid angry overwhelmed cry hope hopeful",
    DomainTag.COMMUNITY: "volunteer volunteering charity community activist activism campaign neighborhood "
                         "neighbors fundraiser donate donation nonprofit",
    DomainTag.HOME: "house home apartment move moving rent furniture room kitchen garden renovate chores "
                    "clean cleaning neighbor",
    DomainTag.ENTERTAINMENT: "movie movies film show series watch watched tv netflix game games gaming "
                             "video play played episode",
    DomainTag.CELEBRATIONS: "birthday party celebrate celebration anniversary christmas holiday holidays gift "
                            "gifts festival graduation",
}
#: The everyday topics: they mix with any domain in a conversation, so none makes a chunk cross-domain.
EVERYDAY_DOMAINS = frozenset({DomainTag.FAMILY, DomainTag.RELATIONSHIPS, DomainTag.WORK, DomainTag.EDUCATION,
                              DomainTag.FOOD, DomainTag.TRAVEL, DomainTag.PETS, DomainTag.ARTS_HOBBIES,
                              DomainTag.FITNESS, DomainTag.EMOTIONS, DomainTag.COMMUNITY, DomainTag.HOME,
                              DomainTag.ENTERTAINMENT, DomainTag.CELEBRATIONS})

#: Pairs of domains close enough that both together do not make a chunk cross-domain.
RELATED_DOMAINS: frozenset[frozenset[DomainTag]] = frozenset(
    frozenset(pair) for pair in [
        (DomainTag.PHYSICS, DomainTag.MATHEMATICS),
        (DomainTag.PHYSICS, DomainTag.TECHNICAL_PROSE),
        (DomainTag.MATHEMATICS, DomainTag.TECHNICAL_PROSE),
        (DomainTag.POETRY, DomainTag.NARRATIVE),
        (DomainTag.NARRATIVE, DomainTag.HISTORICAL),
        (DomainTag.LEGAL, DomainTag.HISTORICAL),
    ]
)

_CONVERSATIONAL_WORDS = frozenset(
    ["i", "me", "my", "mine", "you", "your", "yours", "we", "us", "our", "hi", "hello", "hey", "thanks", "thank", "yeah", "yes", "no", "ok", "okay", "sure", "please", "lol", "oh", "hmm", "wow"]
)


@cache
def domain_stems(domain: DomainTag) -> frozenset[str]:
    """The analyser stems of ``domain``'s keywords."""
    return frozenset(default_analyzer().tokens(DOMAIN_KEYWORDS[domain]))


def domain_keyword_hits(terms: Iterable[str]) -> dict[DomainTag, Counter[str]]:
    """Per topical domain, how often each of its keyword stems occurs in ``terms`` (domains hit only)."""
    counts = Counter(terms)
    hits = {d: Counter({s: counts[s] for s in domain_stems(d) if counts[s]}) for d in DOMAIN_KEYWORDS}
    return {d: found for d, found in hits.items() if found}


def classify_domains(turn: ParsedTurn, keyword_weights: KeywordWeights | None = None) -> list[str]:
    """The chunk's domain tags (most weighted keyword hits first), ``cross_domain`` last when it applies."""
    try:
        return _classify(turn.terms, [w.lower() for w in turn.words], keyword_weights or {})
    except Exception:  # fail closed: classification is advisory and must never stop ingestion
        return [DomainTag.UNCLASSIFIED.value]


def _classify(terms: list[str], words: list[str], keyword_weights: KeywordWeights) -> list[str]:
    needed = 2 if len(terms) >= MIN_TERMS_FOR_TWO_HITS else 1
    found = domain_keyword_hits(terms)
    hits = {d: sum(n * keyword_weights.get(d.value, {}).get(s, 1.0) for s, n in found.get(d, Counter()).items())
            for d in DOMAIN_KEYWORDS}
    topical = sorted((d for d, n in hits.items() if n >= needed and n >= DOMAIN_SHARE * len(terms)),
                     key=lambda d: -hits[d])
    tags = [d.value for d in topical]
    if not tags and _spoken(words):
        tags.append(DomainTag.CONVERSATIONAL.value)
    if unrelated_pair(topical):
        tags.append(DomainTag.CROSS_DOMAIN.value)
    return tags or [DomainTag.UNCLASSIFIED.value]


def _spoken(words: list[str]) -> bool:
    return bool(words) and sum(1 for w in words if w in _CONVERSATIONAL_WORDS) >= DOMAIN_SHARE * len(words)


def conversational_register(turn: ParsedTurn) -> bool:
    """Whether first/second-person words and interjections make :data:`DOMAIN_SHARE` of the words."""
    return _spoken([w.lower() for w in turn.words])


def unrelated_pair(domains: Iterable[DomainTag]) -> bool:
    """Whether two of ``domains`` are not a related pair (so the chunk is cross-domain)."""
    spec = [d for d in domains if d not in EVERYDAY_DOMAINS]
    return any(frozenset(pair) not in RELATED_DOMAINS for pair in combinations(spec, 2))
