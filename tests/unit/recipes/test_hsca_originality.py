"""Layer 1 against keyword stuffing: the originality discount (issue 30.3)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from redmem.recipes.hsca import HSCAEngine
from redmem.recipes.hsca._originality import originality
from redmem.recipes.hsca._text import parse_turn

GENUINE = (
    "The river rose after three days of rain, and the village moved its boats to higher ground. "
    "Farmers watched the water cover the lower fields where the barley had just been sown. "
    "By the end of the week the river fell again, leaving a layer of silt that the farmers said "
    "would feed next year's barley. The village council met to plan a wall along the lower fields."
)
REPEATED = " ".join(["Cheap flights to Paris. Book cheap flights to Paris today. Cheap Paris flights now."] * 4)
KEYWORD_LIST = "\n".join(["flights, Paris, cheap flights, Paris hotels, cheap Paris, flights deals"] * 5)
SPUN = " ".join(f"This {a} guide to Paris flights is the {b} way to book cheap flights {c}."
                for a, b, c in [("great", "easy", "today"), ("superb", "simple", "now"),
                                ("excellent", "painless", "this week"), ("fantastic", "effortless", "today"),
                                ("great", "simple", "right away")])


def layer1(text: str) -> float:
    return HSCAEngine().score_layers(text).layer1_score


def test_stuffed_forms_score_below_a_genuine_paragraph_of_the_same_length():
    genuine = layer1(GENUINE)
    assert genuine > 0
    for stuffed in (REPEATED, KEYWORD_LIST, SPUN):
        assert abs(len(stuffed.split()) - len(GENUINE.split())) < 30
        assert layer1(stuffed) < genuine


def test_prose_and_short_turns_are_not_discounted():
    assert originality(parse_turn(GENUINE)) > 0.9
    assert originality(parse_turn("ok ok ok ok")) == 1.0
    assert originality(parse_turn(REPEATED)) < 0.2 and originality(parse_turn(KEYWORD_LIST)) < 0.2


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab cd. the of\n,"), max_size=300))
def test_originality_is_a_factor_in_the_unit_interval(text):
    assert 0.0 <= originality(parse_turn(text)) <= 1.0
