"""AssemblerConfig: the assembler's options as one frozen value, checked when made, and the
two ways to give them to ContextAssembler (keyword arguments, or a config) being one assembler."""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest

from models import Card
from models import SeedNote as Note
from redmem import ArgumentTypeError, AssemblerConfig, ConfigurationError, QueryException, ValidationError
from redmem.context._floor import DEFAULT_MIN_RELEVANCE
from redmem.context._tokens import default_counter
from redmem.recipes.context_assembler import ContextAssembler

OPTIONS = {
    "score_weights": {"rhythm": 1.0}, "max_items": 4, "max_tokens": 500, "surfacing_threshold": 0.2,
    "propagation_depth": 1, "output_format": "natural", "retrieval_mode": "lexical",
    "render_fields": ["content"], "max_proactive": 3, "fusion": "convex",
    "fusion_weights": {"keyword": 2.0}, "duplicate_cosine": None,
}


def test_the_defaults_are_the_assemblers():
    config = AssemblerConfig()
    assert (config.max_items, config.max_tokens, config.surfacing_threshold, config.propagation_depth) == (
        ContextAssembler.DEFAULT_MAX_ITEMS, None, ContextAssembler.DEFAULT_SURFACING_THRESHOLD,
        ContextAssembler.DEFAULT_PROPAGATION_DEPTH)
    assert (config.output_format, config.retrieval_mode, config.fusion, config.duplicate_cosine) == (
        "structured", "auto", "convex", 0.98)
    assert (config.min_relevance, config.newer_first) == (DEFAULT_MIN_RELEVANCE, True)
    assert (config.score_weights, config.render_fields, config.max_proactive, config.fusion_weights) == (
        None, None, None, None)
    assert config.token_counter is default_counter() and config.counter is default_counter()
    assert (config.proactive_limit, config.budget.max_items, config.budget.max_tokens) == (2, 10, None)


def test_options_or_a_config_make_the_same_assembler():
    by_options = ContextAssembler(Note, **OPTIONS)
    by_config = ContextAssembler(Note, config=AssemblerConfig(**OPTIONS))
    assert by_options.config == by_config.config
    for name in ("max_items", "max_tokens", "surfacing_threshold", "propagation_depth", "output_format",
                 "retrieval_mode", "render_fields", "max_proactive", "fusion", "fusion_weights",
                 "duplicate_cosine", "score_weights", "mode", "budget"):
        assert getattr(by_options, name) == getattr(by_config, name), name
    assert by_config.renderer == by_options.renderer
    assert ContextAssembler(Note, {"rhythm": 1.0}).config == AssemblerConfig(score_weights={"rhythm": 1.0})


def test_the_options_are_read_only_but_score_weights_can_be_tuned():
    assembler = ContextAssembler(Note, score_weights={"rhythm": 1.0})
    with pytest.raises(AttributeError):
        assembler.max_items = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        assembler.config.max_items = 3  # type: ignore[misc]
    assembler.score_weights = {"rhythm": 0.5}
    assert assembler.config.score_weights == {"rhythm": 1.0}


def test_a_config_and_options_together_are_refused():
    config = AssemblerConfig(max_items=3)
    with pytest.raises(TypeError, match="not both"):
        ContextAssembler(Note, config=config, max_items=4)
    with pytest.raises(TypeError, match="not both"):
        ContextAssembler(Note, {"rhythm": 1.0}, config=config)
    with pytest.raises(ArgumentTypeError, match="config must be an AssemblerConfig or None, got dict"):
        ContextAssembler(Note, config={"max_items": 3})
    with pytest.raises(TypeError, match="max_item"):
        ContextAssembler(Note, max_item=3)


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"max_items": None}, ArgumentTypeError, "max_items must be an int >= 1, got None"),
    ({"max_items": 0}, ValidationError, "max_items must be an int >= 1, got 0"),
    ({"max_tokens": 2.5}, ArgumentTypeError, r"max_tokens must be an int >= 1 or None, got 2.5"),
    ({"surfacing_threshold": math.nan}, ValidationError, "surfacing_threshold must be a finite number, got nan"),
    ({"propagation_depth": -1}, ValidationError, "propagation_depth must be an int >= 0, got -1"),
    ({"output_format": "yaml"}, ValidationError, r"unknown output_format 'yaml'"),
    ({"token_counter": "p50k"}, ConfigurationError, "p50k"),
    ({"render_fields": "content"}, ValidationError, "render_fields must be a list of field names or None"),
    ({"max_proactive": -1}, ValidationError, "max_proactive must be an int >= 0 or None, got -1"),
    ({"duplicate_cosine": 0.0}, ValidationError, r"duplicate_cosine must be a number in \(0, 1\] or None"),
    ({"fusion": "borda"}, QueryException, "unknown fusion 'borda'"),
    ({"fusion_weights": {"bm25": 1.0}}, QueryException, "fusion_weights names unknown list"),
], ids=lambda v: repr(v)[:40])
def test_a_config_checks_its_options_when_made(options, error, message):
    with pytest.raises(error, match=message):
        AssemblerConfig(**options)
    with pytest.raises(error, match=message):
        dataclasses.replace(AssemblerConfig(), **options)


def test_what_depends_on_the_model_is_checked_when_an_assembler_takes_the_config():
    config = AssemblerConfig(score_weights={"relevnce": 1.0})
    with pytest.raises(QueryException, match="Note has no signal 'relevnce'"):
        ContextAssembler(Note, config=config)
    with pytest.raises(QueryException, match="does not store"):
        ContextAssembler(Note, config=AssemblerConfig(render_fields=["nothing"]))
    with pytest.raises(QueryException, match="needs an EmbeddingField"):
        ContextAssembler(Card, config=AssemblerConfig(retrieval_mode="semantic"))


def test_an_old_record_counter_in_a_config_warns_where_the_config_is_made():
    with pytest.warns(DeprecationWarning, match="text") as caught:
        config = AssemblerConfig(token_counter=lambda record: len(record.content))
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # resolved once: the assembler does not warn again
        assert ContextAssembler(Card, config=config).token_counter is default_counter()
        assert dataclasses.replace(config, max_items=3).counter is default_counter()
