"""Validation at the public boundary: every bad argument raises a redmem error (which also is the
builtin error raised before) naming the argument and what it accepts, before anything is written.

The checks themselves (``redmem.store._validation``) first, then one test per defect of the
public entry points: ContextAssembler's options, ``create``, ``now``, query limits, lone
surrogates and embedding providers.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from fractions import Fraction

import numpy as np
import pytest

from redmem import (
    AccessTrackerMixin,
    ArgumentTypeError,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CyclicDecayField,
    DecayingSortedField,
    EmbeddingError,
    EmbeddingField,
    Entity,
    FloatField,
    HashingEmbeddings,
    KeyField,
    Model,
    ModelException,
    ObservationProtocol,
    PredictionLedgerMixin,
    QueryArgumentError,
    QueryArgumentTypeError,
    QueryException,
    RecallProposal,
    RedmemError,
    StringField,
    ValidationError,
)
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._validation import (
    finite,
    finite_number,
    instance_of,
    integer,
    is_finite_number,
    is_int,
    is_int_or_float,
    is_integral,
    is_real,
    non_negative_int,
    one_of,
    positive_int,
    subclass_of,
    timestamp,
    utf8_text,
)


class ValidationRecollection(AccessTrackerMixin, PredictionLedgerMixin, Model):
    """Hybrid-capable, with a base score, access tracking and a prediction ledger."""

    recollection_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(dimensions=32))


class ValidationTally(Model):
    """No text field at all: nothing the content format could show."""

    tally_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")


class Jotting(Model):
    """A text field that may be left unset."""

    jotting_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    topic = StringField()
    importance = FloatField(default=1.0)
    rhythm = CyclicDecayField(base_score_field="importance", partition_by="agent_id")


class FailingProvider:
    """A custom provider whose service is down."""

    dimensions = 4
    max_batch_size = 8

    def embed(self, texts, input_type="document"):
        raise RuntimeError("service down")


class ValidationEmbedded(Model):
    embedded_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=FailingProvider())


# -- the checks --------------------------------------------------------------------------------
def test_the_error_types_are_redmem_errors_and_the_builtins_they_replace():
    assert issubclass(ArgumentTypeError, ValidationError) and issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ValidationError, RedmemError) and issubclass(ValidationError, ValueError)
    assert issubclass(QueryArgumentError, QueryException) and issubclass(QueryArgumentError, ValueError)
    assert issubclass(QueryArgumentTypeError, QueryArgumentError) and issubclass(QueryArgumentTypeError, TypeError)


def test_kind_checks_take_no_bool_for_a_number():
    assert [check(True) or check(False) for check in (is_int, is_integral, is_real, is_int_or_float, is_finite_number)] == [False] * 5
    assert is_int(3) and not is_int(np.int64(3)) and is_integral(np.int64(3)) and not is_integral(3.0)
    assert is_real(Fraction(1, 3)) and not is_int_or_float(Fraction(1, 3)) and is_int_or_float(np.float64(0.5))
    assert is_int_or_float(math.inf) and not is_finite_number(math.inf) and not is_finite_number(math.nan)
    assert not is_real("1") and not is_real(None)


def test_instance_of_composes():
    record_name = instance_of(str, int)
    assert record_name("k") and record_name(7) and not record_name(True) and not record_name(b"k")
    assert instance_of(bool, exclude=())(True) and not instance_of(int, exclude=(bool,))(True)
    assert finite(instance_of(float))(0.5) and not finite(instance_of(float))(math.nan) and not finite(instance_of(float))(1)


@pytest.mark.parametrize(("value", "error"), [
    (None, ArgumentTypeError), (True, ArgumentTypeError), (1.5, ArgumentTypeError), ("5", ArgumentTypeError),
    (0, ValidationError), (-3, ValidationError),
], ids=repr)
def test_positive_int_names_the_argument_and_the_accepted_values(value, error):
    with pytest.raises(error, match=r"^size must be an int >= 1, got "):
        positive_int("size", value)


def test_integer_checks_return_the_value():
    assert positive_int("n", 3) == 3 and non_negative_int("n", 0) == 0 and integer("n", -7) == -7
    assert positive_int("n", None, none=True) is None and type(positive_int("n", np.int64(4))) is int
    with pytest.raises(QueryArgumentTypeError, match="limit must be an int >= 0 or None, got 1.5"):
        non_negative_int("limit", 1.5, none=True, error=QueryArgumentError)
    with pytest.raises(ModelException, match="cap must be an int >= 1, got 0"):
        positive_int("cap", 0, error=ModelException)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "0.5", True, None], ids=repr)
def test_finite_number_rejects_non_finite_and_non_numbers(value):
    with pytest.raises(ValidationError, match=r"^x must be a finite number in \[0, 1\], got "):
        finite_number("x", value, low=0, high=1)


def test_finite_number_bounds():
    assert finite_number("x", 1) == 1.0 and finite_number("x", None, none=True) is None
    with pytest.raises(ValidationError, match=r"x must be a finite number >= 0, got -0.5"):
        finite_number("x", -0.5, low=0)


def test_one_of_and_subclass_of():
    assert one_of("fmt", "xml", ("xml", "natural")) == "xml"
    with pytest.raises(ValidationError, match=r"fmt must be one of \['xml', 'natural'\], got list \[\]"):
        one_of("fmt", [], ("xml", "natural"))
    assert subclass_of("model_class", ValidationTally, Model, "a Model class") is ValidationTally
    with pytest.raises(ArgumentTypeError, match="model_class must be a Model class, got str 'ValidationTally'"):
        subclass_of("model_class", "ValidationTally", Model, "a Model class")


def test_timestamp_accepts_numbers_datetimes_and_none_only():
    assert timestamp("now", 1_700_000_000) == 1_700_000_000.0
    assert timestamp("now", datetime(2024, 1, 1)) == datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    assert abs(timestamp("now", None) - datetime.now(UTC).timestamp()) < 60
    for bad, error in [(math.nan, ValidationError), (math.inf, ValidationError), ("x", ArgumentTypeError),
                       (False, ArgumentTypeError)]:
        with pytest.raises(error, match="now must be epoch seconds"):
            timestamp("now", bad)


def test_utf8_text_rejects_a_lone_surrogate_and_says_where():
    assert utf8_text("t", "naïve ✓") == "naïve ✓"
    with pytest.raises(ValidationError, match=r"t must be text encodable as UTF-8, got a lone surrogate '\\udcff' at position 2"):
        utf8_text("t", "ab\udcff")


# -- ContextAssembler: every option checked at construction (issue 12, items 4 and 6) ------------
def test_a_misspelt_score_weight_is_rejected_at_construction():
    with pytest.raises(QueryException, match=r"score_weights: ValidationRecollection has no signal 'relevnce'; valid: relevance"):
        ContextAssembler(ValidationRecollection, {"relevnce": 0.6})
    with pytest.raises(ValidationError, match=r"score_weights: weight of 'relevance' must be a finite number >= 0"):
        ContextAssembler(ValidationRecollection, {"relevance": math.nan})
    assert ContextAssembler(ValidationRecollection, {ValidationRecollection.relevance: 1}).score_weights == {"relevance": 1.0}


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"max_items": None}, ArgumentTypeError, "max_items must be an int >= 1, got None"),
    ({"max_items": 0}, ValidationError, "max_items must be an int >= 1, got 0"),
    ({"max_tokens": 0}, ValidationError, r"max_tokens must be an int >= 1 or None, got 0"),
    ({"max_tokens": 2.5}, ArgumentTypeError, r"max_tokens must be an int >= 1 or None, got 2.5"),
    ({"surfacing_threshold": math.nan}, ValidationError, "surfacing_threshold must be a finite number, got nan"),
    ({"surfacing_threshold": "high"}, ArgumentTypeError, "surfacing_threshold must be a finite number"),
    ({"propagation_depth": -1}, ValidationError, "propagation_depth must be an int >= 0, got -1"),
    ({"output_format": "yaml"}, ValidationError, r"unknown output_format 'yaml'; use one of \['structured'"),
    ({"output_format": ["xml"]}, ValidationError, r"unknown output_format \['xml'\]"),
    ({"max_proactive": -1}, ValidationError, "max_proactive must be an int >= 0 or None, got -1"),
    ({"render_fields": "content"}, ValidationError, "render_fields must be a list of field names or None"),
], ids=lambda v: repr(v)[:40])
def test_each_bad_option_raises_a_redmem_error_naming_it(options, error, message):
    with pytest.raises(error, match=message):
        ContextAssembler(ValidationRecollection, **options)


def test_max_items_none_is_still_a_type_error():
    with pytest.raises(TypeError):
        ContextAssembler(ValidationRecollection, max_items=None)


def test_model_class_must_be_a_redmem_model_class():
    for bad in ("ValidationRecollection", ValidationRecollection(agent_id="a"), dict):
        with pytest.raises(ArgumentTypeError, match="model_class must be a redmem Model class, got "):
            ContextAssembler(bad)


def test_the_content_format_is_refused_on_a_model_without_text():
    with pytest.raises(ValidationError, match=r"output_format='content' .* ValidationTally has no shown str field"):
        ContextAssembler(ValidationTally, output_format="content")
    assert ContextAssembler(ValidationTally, output_format="natural").output_format == "natural"


def test_a_record_whose_text_is_unset_shows_its_fields_not_its_repr_in_the_content_format(db):
    Jotting.create(agent_id="a", topic="deploys", importance=2.0)
    result = ContextAssembler(Jotting, output_format="content", surfacing_threshold=0.0).assemble(agent_id="a")
    assert result.formatted == "- topic: deploys, importance: 2.0"
    assert "<Jotting" not in result.formatted


def test_create_names_the_field_that_was_set_not_the_derived_score(db):
    with pytest.raises(ValidationError, match=r"^ValidationRecollection.importance \(the base score of ValidationRecollection.relevance\) "
                                              r"expects a number, got str 'high'"):
        ValidationRecollection.create(agent_id="a", content="x", importance="high")
    with pytest.raises(ValidationError, match=r"^ValidationRecollection.importance .* must be >= 0"):
        ValidationRecollection.create(agent_id="a", content="x", importance=-1.0)
    assert ValidationRecollection.query.filter(agent_id="a").count() == 0


def test_an_unknown_outcome_is_a_validation_error(db):
    record = ValidationRecollection.create(agent_id="a", content="x")
    record.record_prediction({"clicks": 3})
    with pytest.raises(ValidationError, match=r"unknown outcome 'loved': expected one of \['acted'"):
        record.auto_resolve("loved")


# -- now: rejected before anything is written (issue 13, item 4) ---------------------------------
@pytest.mark.parametrize(("now", "error"), [(math.nan, ValidationError), (math.inf, ValidationError),
                                            ("x", ArgumentTypeError)], ids=repr)
def test_assemble_rejects_a_bad_now_before_writing_a_read(db, now, error):
    record = ValidationRecollection.create(agent_id="a", content="deploy the service")
    assembler = ContextAssembler(ValidationRecollection)
    with pytest.raises(error, match="now must be epoch seconds"):
        assembler.assemble("deploy", agent_id="a", now=now)
    with pytest.raises(error, match="now must be epoch seconds"):
        assembler.assess("deploy", agent_id="a", now=now)
    assert record.confirm_access() == 0  # no read was staged, so there is nothing to count
    assert record.access_log == []


@pytest.mark.parametrize("now", [math.nan, math.inf, "x"], ids=repr)
def test_every_public_now_is_checked(db, now):
    record = ValidationRecollection.create(agent_id="a", content="x")
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        record.confirm_access(now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        ValidationRecollection.queue_stage_reads(None, [record.db_key], now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        record.record_prediction({"clicks": 3}, now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        RecallProposal.list_pending("a", now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        RecallProposal.expire_stale("a", now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        ValidationRecollection.relevance.touch(record, now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        ObservationProtocol.on_read([record], now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        ObservationProtocol.on_surfaced([record], "test", now=now)
    with pytest.raises(ValidationError, match="now must be epoch seconds"):
        ObservationProtocol.on_context_used([record], {record.db_key.redis_key: "acted"}, now=now)
    assert RecallProposal.list_pending("a") == []
    assert record.access_log == [] and record.prediction_state == {"state": None}


# -- query limits: the same error everywhere (issue 13, item 4) ----------------------------------
@pytest.mark.parametrize(("limit", "error"), [
    (-1, QueryArgumentError), (math.nan, QueryArgumentTypeError), (1.5, QueryArgumentTypeError),
    (None, QueryArgumentTypeError), ("5", QueryArgumentTypeError),
], ids=repr)
def test_semantic_and_keyword_search_reject_a_bad_limit_alike(db, limit, error):
    ValidationRecollection.create(agent_id="a", content="deploy the service")
    query = ValidationRecollection.query.filter(agent_id="a")
    for search in (query.semantic_search, query.keyword_search):
        with pytest.raises(error, match=r"limit must be an int >= 0, got "):
            search("deploy", limit=limit)


def test_a_bad_limit_is_still_the_builtin_error_raised_before(db):
    query = ValidationRecollection.query.filter(agent_id="a")
    with pytest.raises(TypeError):
        query.semantic_search("deploy", limit=None)
    with pytest.raises(QueryException):
        query.keyword_search("deploy", limit=None)


# -- lone surrogates and embedding providers (issue 13, item 5) ----------------------------------
@pytest.mark.parametrize("field", ["agent_id", "recollection_id", "content"])
def test_a_lone_surrogate_in_a_stored_string_names_the_field(db, field):
    values = {"agent_id": "a", "content": "x", field: "note \udcff"}
    with pytest.raises(ValidationError, match=rf"ValidationRecollection.{field} must be text encodable as UTF-8"):
        ValidationRecollection.create(**values)
    assert ValidationRecollection.query.filter(agent_id="a").count() == 0


def test_a_lone_surrogate_in_a_tenant_or_an_entity_is_a_validation_error(db):
    with pytest.raises(ValidationError, match="ValidationRecollection.agent_id must be text encodable as UTF-8"):
        ValidationRecollection.query.filter(agent_id="\udcff").keyword_search("deploy")
    with pytest.raises(ValidationError, match="ValidationRecollection.agent_id must be text encodable as UTF-8"):
        ContextAssembler(ValidationRecollection).assemble("deploy", agent_id="\udcff")
    with pytest.raises(ValidationError, match="Entity name must be text encodable as UTF-8"):
        Entity("Par\udcffis")


def test_a_custom_provider_failure_is_an_embedding_error_naming_the_provider(db):
    with pytest.raises(EmbeddingError, match="embedding provider FailingProvider failed on 1 text.*service down") as caught:
        ValidationEmbedded.create(agent_id="a", content="x")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert ValidationEmbedded.query.filter(agent_id="a").count() == 0


def test_query_limit_checks_its_arguments(db):
    query = ValidationRecollection.query.filter(agent_id="a")
    with pytest.raises(QueryArgumentTypeError, match="limit: count must be an int >= 0, got None"):
        query.limit(None)
    with pytest.raises(QueryArgumentError, match="limit: offset must be an int >= 0, got -1"):
        query.limit(5, -1)
    assert query.limit(0).all() == []


def test_order_by_and_a_proposal_ttl_check_their_arguments(db):
    record = ValidationRecollection.create(agent_id="a", content="x")
    with pytest.raises(QueryArgumentTypeError, match="order_by: field must be a field name"):
        ValidationRecollection.query.filter(agent_id="a").order_by(None)
    for ttl in (None, "60", math.nan, -1.0):
        with pytest.raises(ValidationError, match=r"ttl must be a finite number >= 0"):
            ObservationProtocol.on_surfaced([record], "test", ttl=ttl)
    assert RecallProposal.list_pending("a") == []
