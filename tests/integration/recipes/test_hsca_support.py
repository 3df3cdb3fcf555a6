"""Relational weight as support strength (issue 30.5, spec §5.2)."""

from __future__ import annotations

from redmem import ConfidenceField, KeyField, Model
from redmem.recipes.hsca import HSCAEngine
from redmem.recipes.hsca._support import confidence_signal

TURNS = (
    "Redis keeps its data in memory, so memory access keeps Redis fast.",
    "Because Redis keeps data in memory, a Redis restart reloads the data from disk.",
    "The data on disk is a snapshot of the memory Redis held.",
    "Completely unrelated: the bakery sells rye bread on Sundays.",
)


def engine_with_beats() -> HSCAEngine:
    engine = HSCAEngine()
    for turn in TURNS:
        engine.ingest_turn(turn)
    if engine.buffer:
        engine.take_snapshot()
    return engine


def test_a_claim_woven_into_a_beat_is_supported_more_than_a_passing_one():
    engine = engine_with_beats()
    woven = engine.support_strength("Redis keeps data in memory")
    passing = engine.support_strength("rye bread on Sundays")
    assert 0.0 <= passing < woven <= 1.0 and woven > 0.5
    assert engine.support_strength("zeppelins fly over Tokyo") == 0.0
    assert engine.support_strength("") == 0.0


class SupportClaim(Model):
    claim_id = KeyField()
    confidence = ConfidenceField()


def test_support_strength_feeds_a_confidence_field(db):
    claim = SupportClaim(claim_id="c1")
    claim.save()
    strength = engine_with_beats().support_strength("Redis keeps data in memory")
    assert confidence_signal(strength) >= 0.5 and confidence_signal(0.0) == 0.5
    updated = ConfidenceField.update_confidence(claim, "confidence", confidence_signal(strength))
    assert updated is not None and updated > 0.5
