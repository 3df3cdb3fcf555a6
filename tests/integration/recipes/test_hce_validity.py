"""HCE reads see current interactions only: one superseded through redmem.lifecycle is left out of
the keyword list, the tree and the graph, unless the read asks ``as_of`` a time it was valid."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from redmem.lifecycle import supersede
from redmem.recipes.hce import HCEInteraction, HCEPipeline, hierarchical_relevance_search, spreading_activation
from redmem.store._errors import QueryArgumentError

BERLIN = ("I live in Berlin with my cat Miso.", "Berlin is lovely.")
LISBON = ("I moved to Lisbon with my cat Miso.", "Lisbon is sunny.")
QUERY = "Where do I live with Miso, Berlin or Lisbon?"


def stored(session: str = "s") -> tuple[HCEPipeline, HCEInteraction, HCEInteraction]:
    """A session whose Berlin turn is superseded by its Lisbon turn, both out of the focus buffer."""
    pipe = HCEPipeline(session_id=session, max_focus=2, context_budget=400)
    old_id, new_id = pipe.update(*BERLIN), pipe.update(*LISBON)
    pipe.update("The weather is grey.", "Autumn.")
    old, new = (HCEInteraction.query.get(session_id=session, interaction_id=i) for i in (old_id, new_id))
    supersede(old, new)
    return pipe, old, new


def shown(pipe: HCEPipeline, **options: object) -> list[str]:
    found = pipe.retrieve_candidates(QUERY, **options)  # type: ignore[arg-type]
    return [c.metadata["interaction_id"] for c in found.candidates if c.metadata.get("interaction_id")]


def test_a_superseded_interaction_is_left_out_of_every_list(db):
    pipe, old, new = stored()
    ids = shown(pipe)
    assert new.interaction_id in ids and old.interaction_id not in ids
    assert BERLIN[0] not in pipe.retrieve_context(QUERY) and LISBON[0] in pipe.retrieve_context(QUERY)
    keys = pipe.extractor.mentions(QUERY)
    assert [i for i, _ in spreading_activation(pipe.graph, keys)] == [new.interaction_id]
    assert [r.interaction_id for r, _ in hierarchical_relevance_search(pipe.tree, QUERY)] == [new.interaction_id]


def test_as_of_reads_the_session_as_it_was(db):
    pipe, old, new = stored()
    then = (old.valid_from + new.valid_from) / 2  # a datetime keeps microseconds: a time strictly between
    ids = shown(pipe, as_of=then)
    assert old.interaction_id in ids and new.interaction_id not in ids
    assert old.interaction_id in shown(pipe, as_of=datetime.fromtimestamp(then, UTC))
    assert {old.interaction_id, new.interaction_id} <= set(shown(pipe, as_of="all"))
    assert BERLIN[0] in pipe.retrieve_context(QUERY, as_of=then)
    keys = pipe.extractor.mentions(QUERY)
    assert [i for i, _ in spreading_activation(pipe.graph, keys, as_of=then)] == [old.interaction_id]
    assert [r.interaction_id for r, _ in hierarchical_relevance_search(pipe.tree, QUERY, as_of=then)] == [
        old.interaction_id]


def test_a_bad_as_of_is_refused(db):
    pipe, _, _ = stored()
    with pytest.raises(QueryArgumentError):
        pipe.retrieve_candidates(QUERY, as_of="yesterday")


def test_a_saved_and_loaded_session_keeps_what_was_superseded(db, tmp_path):
    pipe, old, new = stored()
    pipe.save(tmp_path)
    copy = HCEPipeline(session_id="copy", max_focus=2)
    copy.load(tmp_path)
    ids = shown(copy)
    assert new.interaction_id in ids and old.interaction_id not in ids
    assert old.interaction_id in shown(copy, as_of=old.valid_from)


def superseded_left_out(found) -> dict[str, str | None]:
    return {o.record_id: o.superseded_by for o in found.explain().left_out if o.reason == "superseded"}


def test_the_explanation_names_the_superseded_interaction_and_its_successor(any_db):
    """Found by the tree (dropped once loaded) and by the keyword search's twin over the superseded."""
    pipe, old, new = stored()
    found = pipe.retrieve_candidates(QUERY)
    assert superseded_left_out(found) == {old.interaction_id: new.interaction_id}
    (cut,) = [o for o in found.explain().left_out if o.reason == "superseded"]
    assert f"superseded by {new.interaction_id}" in cut.detail and "tree #" in cut.detail and "keyword #" in cut.detail
    then = (old.valid_from + new.valid_from) / 2
    assert superseded_left_out(pipe.retrieve_candidates(QUERY, as_of=then)) == {}
    assert superseded_left_out(pipe.retrieve_candidates(QUERY, as_of="all")) == {}
    assert superseded_left_out(pipe.retrieve_candidates(QUERY, as_of=new.valid_from + 1)) == {
        old.interaction_id: new.interaction_id}


def test_naming_the_superseded_costs_no_round_trip(db, sent):
    pipe, _, _ = stored()
    counts = []
    for as_of in (None, "all"):
        pipe.retrieve_candidates(QUERY, as_of=as_of)  # warm: scripts cached, vectors loaded
        sent.clear()
        found = pipe.retrieve_candidates(QUERY, as_of=as_of)
        counts.append((len(sent), found.round_trips))
    assert counts[0] == counts[1]
