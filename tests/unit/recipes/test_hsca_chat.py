"""HSCA on ordinary chat: a chat turn is scored in the context of its conversation (issue 30.4)."""

from __future__ import annotations

from redmem.recipes.hsca import HSCAEngine
from redmem.recipes.hsca._relational import relational_weight
from redmem.recipes.hsca._text import parse_turn

CHAT = ("I finally adopted a puppy from the shelter last weekend!", "She chews every shoe in the house.",
        "The shelter said she is a beagle mix.")
REPLY = "Wow, a beagle puppy! That's great news! Does the puppy sleep through the night yet?"


def test_a_chat_turn_of_few_words_takes_its_weight_from_the_words_it_takes_up():
    engine = HSCAEngine()
    for turn in CHAT:
        engine.ingest_turn(turn)
    reply = engine.ingest_turn(REPLY)
    assert len(parse_turn(REPLY).sentences) == 3
    assert reply.layer1_score > 0.0 and "short_chunk" in reply.nuance_flags


def test_a_chat_turn_sharing_no_word_with_its_conversation_still_scores_zero():
    context = [parse_turn(t) for t in CHAT]
    assert relational_weight(parse_turn("Okay. The train leaves soon. Bye!"), 5, context).score == 0.0


def test_a_text_alone_keeps_its_own_structure():
    alone = relational_weight(parse_turn(REPLY), 5)
    assert not alone.short_chunk and alone.score == 0.0
