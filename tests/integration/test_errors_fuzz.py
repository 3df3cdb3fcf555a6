"""Whatever a caller passes, the public API raises only RedmemError (or Python's own TypeError for a
wrong number or name of arguments): never a redis-py error, a KeyError or an AttributeError.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import (
    ArgumentTypeError,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    ContextAssembler,
    DecayingSortedField,
    EmbeddingField,
    FloatField,
    KeyField,
    Model,
    RedmemError,
    SortedField,
    StringField,
    TagField,
)
from redmem.embeddings import HashingEmbeddings

#: Any text, lone surrogates and control characters included.
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    TEXT, st.binary(max_size=8), st.just(object()), st.just(math.nan),
)
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)
KWARGS = st.dictionaries(st.sampled_from(["agent_id", "content", "kind", "rank", "note_id", "limit", "where",
                                           "now", "max_tokens", "offset", "x"]),
                         VALUE, max_size=4)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class FuzzNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()
    kind = TagField()
    rank = SortedField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    words = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(16))


def only_typed_errors(call) -> None:
    """Run ``call``; an exception other than RedmemError, or a TypeError about arguments, fails."""
    try:
        call()
    except RedmemError:
        pass
    except TypeError as exc:  # Python's own: a missing, extra or unknown argument
        assert "argument" in str(exc), repr(exc)


@pytest.fixture
def note(db):
    return FuzzNote.create(agent_id="a", content="the deploy runs on friday", kind=["fact"], rank=1.0)


@FUZZ
@given(kwargs=KWARGS)
def test_create_raises_only_typed_errors(note, kwargs):
    only_typed_errors(lambda: FuzzNote.create(**kwargs))


@FUZZ
@given(kwargs=KWARGS)
def test_get_and_filter_raise_only_typed_errors(note, kwargs):
    only_typed_errors(lambda: FuzzNote.query.get(**kwargs))
    only_typed_errors(lambda: FuzzNote.query.filter(**kwargs).all())
    only_typed_errors(lambda: FuzzNote.query.filter(**kwargs).count())


@FUZZ
@given(text=VALUE, limit=VALUE, agent=VALUE)
def test_searches_raise_only_typed_errors(note, text, limit, agent):
    only_typed_errors(lambda: FuzzNote.query.filter(agent_id=agent).keyword_search(text, limit=limit))
    only_typed_errors(lambda: FuzzNote.query.filter(agent_id="a").keyword_search(text, limit=limit))
    only_typed_errors(lambda: FuzzNote.query.filter(agent_id="a").semantic_search(text, limit=limit))


@FUZZ
@given(cues=VALUE, where=VALUE, now=VALUE, agent=VALUE, max_tokens=VALUE)
def test_assemble_raises_only_typed_errors(note, cues, where, now, agent, max_tokens):
    only_typed_errors(lambda: ContextAssembler(FuzzNote).assemble(cues, agent_id="a"))
    only_typed_errors(lambda: ContextAssembler(FuzzNote).assemble(cues, where=where, now=now, agent_id=agent))
    only_typed_errors(lambda: ContextAssembler(FuzzNote, max_tokens=max_tokens).assemble("deploy", agent_id="a"))


@FUZZ
@given(signal=VALUE, now=VALUE, limit=VALUE)
def test_field_methods_raise_only_typed_errors(note, signal, now, limit):
    only_typed_errors(lambda: ConfidenceField.update_confidence(note, "confidence", signal))
    only_typed_errors(lambda: FuzzNote.relevance.touch(note, now=now))
    only_typed_errors(lambda: FuzzNote.relevance.score_of(note, as_of=now))
    only_typed_errors(lambda: FuzzNote.query.filter(agent_id="a").order_by("rank").limit(limit).all())


def test_assemble_of_a_number_is_an_argument_type_error(note):
    with pytest.raises(ArgumentTypeError, match="query_cues must be a dict or a str"):
        ContextAssembler(FuzzNote).assemble(123, agent_id="a")
