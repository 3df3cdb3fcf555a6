"""HSCA layer 2 by meaning: EmbeddingDomains tags by prototype centroids, bridges a related earlier
turn's domain, and falls back to the keyword tags when the embedder fails."""

from __future__ import annotations

import numpy as np
import pytest

from redmem.embeddings import MiniLMEmbeddings
from redmem.recipes.hsca import EmbeddingDomains, HSCAEngine
from redmem.recipes.hsca._domain_model import SENTENCE_SHARE_FLOOR, default_domain_model, resolve_domain_model
from redmem.recipes.hsca._text import parse_turn
from redmem.recipes.hsca._window import build_snapshot
from redmem.store._errors import ValidationError


@pytest.fixture(scope="module")
def meaning() -> EmbeddingDomains:
    return EmbeddingDomains(MiniLMEmbeddings())


class Broken:
    def embed(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("the model is down")


class Table:
    """An embedder that looks each text up in a table of vectors (words of no domain's keyword list)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


E1, E2, E3 = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]


def test_tags_by_meaning_without_the_keywords(meaning):
    assert meaning.classify(parse_turn("The cardiologist says he should walk a little every day."))[0] == "medical"
    assert meaning.topical("Thinkers asked why a promise binds us at all.")[0] == "philosophical"


def test_a_related_earlier_turn_lends_its_domain_and_an_unrelated_one_does_not(meaning):
    fable = parse_turn("Aesop's tortoise kept a slow steady pace while the hare slept.")
    rabbit = parse_turn("A rabbit in our garden dashed across the lawn every morning.")
    unrelated = parse_turn("The court dismissed the lawsuit because it was filed too late.")
    assert "narrative" in meaning.classify(fable, [rabbit])
    assert meaning.classify(fable, [unrelated]) == meaning.classify(fable)


def test_classification_is_deterministic_and_never_raises():
    turn = parse_turn("The patient has a fever and the doctor ordered blood tests.")
    broken = EmbeddingDomains(Broken())
    assert broken.classify(turn) == ["medical"] and broken.failures == 1
    assert broken.classify(parse_turn("")) == ["unclassified"]


def test_the_engine_uses_it_and_bridged_snapshots_share_the_domain(meaning):
    engine = HSCAEngine(domain_model=meaning)
    first = [
        engine.ingest_turn(t)
        for t in [
            "A rabbit in our garden dashed across the lawn every morning.",
            "It was so quick that it would stop and nap under the hedge.",
        ]
    ]
    second = [
        engine.ingest_turn(t)
        for t in [
            "Aesop's tortoise kept a slow steady pace while the hare slept.",
            "The fable teaches that persistence beats arrogant talent.",
        ]
    ]
    assert all("narrative" in c.domain_tags for c in first + second)
    assert build_snapshot(second, 0, 20).domain_summary["narrative"] >= 0.2


def test_bad_settings_are_refused():
    with pytest.raises(ValidationError):
        EmbeddingDomains(Broken(), floor=2.0)
    with pytest.raises(ValidationError):
        EmbeddingDomains(Broken(), bridge=float("nan"))


def test_own_prototypes_replace_the_written_ones():
    meaning = EmbeddingDomains(
        MiniLMEmbeddings(),
        prototypes={"medical": ["A doctor treats a patient."], "legal": ["A court decides a lawsuit."]},
    )
    assert set(meaning.similarities("The nurse took his blood pressure.")) == {"medical", "legal"}
    assert meaning.topical("The nurse took his blood pressure.")[0] == "medical"
    with pytest.raises(ValidationError):
        EmbeddingDomains(Broken(), prototypes={"medical": []})
    with pytest.raises(ValidationError):
        EmbeddingDomains(Broken(), prototypes={"gardening": ["Roses need sun."]})


def test_the_engine_tags_by_meaning_by_default_when_the_offline_model_is_installed():
    assert (
        isinstance(HSCAEngine().domain_model, EmbeddingDomains) and HSCAEngine().domain_model is default_domain_model()
    )
    assert HSCAEngine(domain_model=None).domain_model is None and resolve_domain_model(None) is None
    with pytest.raises(ValidationError):
        HSCAEngine(domain_model="keywords")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("We took the puppy to the vet and then for a long walk by the river.", "pets"),
        ("I baked bread this morning and we had it with soup for lunch.", "food"),
        ("Grandma is coming to stay with the kids while my husband is away.", "family"),
        ("I finally finished my painting of the lake, it took me three months.", "arts_hobbies"),
    ],
)
def test_everyday_chat_gets_an_everyday_topic_not_conversational(text, topic):
    assert HSCAEngine().score_layers(text).domain_tags[0] == topic


def test_a_subject_domain_comes_before_an_everyday_topic_and_keywords_name_subject_domains(meaning):
    # "rent" and "landlord" sound like home, but the turn is about a lease: the subject domain wins
    assert meaning.classify(parse_turn("A lawyer told me a rent increase needs a clause in the lease."))[0] == "legal"
    # a subject domain named by the keyword lists joins the domains found by meaning
    tags = meaning.classify(
        parse_turn("The hospital's lawyer says the patient consent form may not survive a lawsuit.")
    )
    assert {"legal", "medical"} <= set(tags)


def test_only_domains_that_hold_a_share_of_the_turn_make_it_cross_domain(meaning):
    """A domain the keywords merely name, the turn's meaning far from it (under the floor), is a
    tag, not a share: the lease ruling that mentions a server is about the lease. Two sentences
    whose own domains are unrelated are a cross."""
    clause = parse_turn(
        "The court held that the tenant breached the lease, and the landlord kept the deposit and the old server."
    )
    tags = meaning.classify(clause)
    assert "technical_prose" in tags and "cross_domain" not in tags
    assert meaning.similarities(clause.text)["technical_prose"] < meaning.floor
    joined = parse_turn(
        "The court held that the tenant breached the lease and owes damages. "
        "We deploy the server and its database cache with a new configuration."
    )
    tags = meaning.classify(joined)
    assert {"legal", "technical_prose", "cross_domain"} <= set(tags)


def test_a_turn_just_under_the_floor_keeps_its_subject_beside_the_register():
    """First-person chat about a subject sits just under the floor: its best subject domain
    (reaching floor - margin and leading the everyday topics) is tagged, the register beside it."""
    meaning = EmbeddingDomains(MiniLMEmbeddings(), floor=0.15, margin=0.05)
    tags = meaning.classify(parse_turn("My laptop kept crashing until I reinstalled the drivers and cleared the disk."))
    assert tags[0] == "technical_prose" and "conversational" in tags
    # a phatic turn as near a centroid by chance has too few terms to take a subject
    assert meaning.classify(parse_turn("Oh wow, that is so cool, thanks!")) == ["conversational"]


def test_a_domain_is_as_near_as_its_nearest_prototypes_not_its_centroid():
    """A domain of two kinds of text (legal: rulings and licences) is as near a text of one kind
    as its prototypes of that kind: the mean of the nearest two, 1.0 here, where the centroid of
    both kinds is at 0.71 and loses to a domain of one kind at 0.8."""
    near = [0.8, 0.0, 0.6]
    meaning = EmbeddingDomains(
        Table({"ruling one": E1, "ruling two": E1, "licence one": E2, "licence two": E2, "other one": near,
               "other two": near, "Alpha bravo charlie delta echo.": E1}),
        prototypes={"legal": ["ruling one", "ruling two", "licence one", "licence two"],
                    "medical": ["other one", "other two"]},
    )
    similar = meaning.similarities("Alpha bravo charlie delta echo.")
    assert similar["legal"] == pytest.approx(1.0) and similar["medical"] == pytest.approx(0.8)
    assert meaning.topical("Alpha bravo charlie delta echo.")[0] == "legal"


def test_a_sentence_between_two_domains_is_ambiguous_not_cross_domain():
    """One sentence as near legal as medical (no keyword of either) takes both tags but is no
    cross: nothing in it holds a share of its own. Two sentences, one of each, are a cross."""
    one = "Kilo lima mike november oscar."
    first, second = "Alpha bravo charlie delta echo.", "Foxtrot golf hotel india juliett."
    both = f"{first} {second}"
    between = [float(np.sqrt(0.5)), 0.0, float(np.sqrt(0.5))]
    meaning = EmbeddingDomains(
        Table({"legal one": E1, "legal two": E1, "medical one": E3, "medical two": E3,
               one: between, first: E1, second: E3, both: between}),
        prototypes={"legal": ["legal one", "legal two"], "medical": ["medical one", "medical two"]},
    )
    tags = meaning.classify(parse_turn(one))
    assert {"legal", "medical"} <= set(tags) and "cross_domain" not in tags
    assert "cross_domain" in meaning.classify(parse_turn(both))


def test_a_sentence_under_the_floor_still_holds_its_best_subject_domain_as_a_share():
    """One sentence is little text and sits lower than a paragraph: in a turn of several
    sentences, a sentence whose best subject domain reaches SENTENCE_SHARE_FLOOR (under the
    floor) holds it as a share, so a legal sentence beside a medical one makes the turn
    cross-domain (issue 30, eval 2's real cross turns). Under SENTENCE_SHARE_FLOOR it holds none."""
    faint, far = "Alpha bravo charlie delta echo foxtrot golf.", "Hotel india juliett kilo lima mike november."
    medical = "Oscar papa quebec romeo sierra tango uniform."
    near_legal = [0.15, float(np.sqrt(1 - 0.15**2)), 0.0]
    far_legal = [0.05, float(np.sqrt(1 - 0.05**2)), 0.0]
    meaning = EmbeddingDomains(
        Table({"legal one": E1, "legal two": E1, "medical one": E3, "medical two": E3, faint: near_legal,
               far: far_legal, medical: E3, f"{faint} {medical}": E3, f"{far} {medical}": E3}),
        prototypes={"legal": ["legal one", "legal two"], "medical": ["medical one", "medical two"]},
    )
    assert meaning.topical(faint) == [] and meaning.floor > 0.15 >= SENTENCE_SHARE_FLOOR > 0.05
    tags = meaning.classify(parse_turn(f"{faint} {medical}"))
    assert {"legal", "medical", "cross_domain"} <= set(tags)
    assert "cross_domain" not in meaning.classify(parse_turn(f"{far} {medical}"))


#: Sentences of a programming language's reference, written for this test.
PYTHON_BEAT = (
    "Subtracting a float from an integer gives a float, and dividing either by zero raises an exception.",
    "Comparing two tuples compares their first items, then the next ones, until one differs.",
    "Adding two lists with + builds a new list; multiplying a list by 3 repeats its items.",
    "Passing a string to int() parses it as a whole number, and a bad string raises ValueError.",
)


def test_a_beat_of_programming_reference_is_technical_prose_not_mathematics(meaning):
    """Sentences about a language's operators, types and exceptions read as mathematics when
    technical prose's prototypes spoke of servers and only one of a language; with prototypes
    of interpreters, built-in types and errors, each is nearest technical prose and the beat's
    snapshots are dominated by it (issue 30, eval 2: Python's reference docs broke their beats
    into mathematics)."""
    for text in PYTHON_BEAT:
        assert meaning.classify(parse_turn(text))[0] == "technical_prose", text
    engine = HSCAEngine(domain_model=meaning)
    for text in PYTHON_BEAT:
        engine.ingest_turn(text)
    if engine.buffer:
        engine.take_snapshot()
    assert [step.dominant for step in engine.domain_evolution()] == ["technical_prose"] * len(engine.get_macro_context())


@pytest.mark.parametrize(
    "text",
    [
        "Linking the library into your application does not place your application under these terms.",
        "A compiled build of the program may be shared only together with the means to rebuild it.",
    ],
)
def test_a_licence_clause_about_software_is_legal_only(meaning, text):
    """A licence's clause speaks of programs and builds; with prototypes of software licences it
    is legal alone, not conversational, technical prose or cross-domain."""
    assert meaning.classify(parse_turn(text)) == ["legal"]
