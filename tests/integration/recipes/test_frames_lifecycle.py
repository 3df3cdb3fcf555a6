"""Issue 31.5: frames' contradiction and supersede flags come from the fact lifecycle
(redmem.lifecycle): one judge (LLM-free rules, or the lifecycle's OpenAIJudge), a superseded
block closed through lifecycle.supersede, and frames that leave it out unless read as_of."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import frames_support
import redmem
from conftest import configured_embeddings
from frames_support import WordEmbeddings
from redmem.lifecycle import ALL_TIMES, LifecycleMixin, OpenAIJudge, history
from redmem.recipes.frames import FrameMemory, LearnWiring, OpenAIContradictionJudge
from redmem.recipes.frames._wiring import DEFAULT_WIRING, heuristic_judge, rules_judge
from redmem.store._errors import RecordNotFound, ValidationError

clock = frames_support.clock  # the frames tests' fixture, defined once


@pytest.fixture
def mem(db, clock):
    with configured_embeddings(WordEmbeddings()):
        memory = FrameMemory(agent_id="lifecycle-agent", clock=clock)
        memory.begin_session()
        yield memory


def texts(blocks):
    return [b.content for b in blocks]


def test_one_judge_the_lifecycles():
    assert DEFAULT_WIRING.judge is rules_judge and heuristic_judge is rules_judge
    assert OpenAIContradictionJudge is OpenAIJudge
    from redmem.recipes.frames._models import Block
    assert issubclass(Block, LifecycleMixin)


@pytest.mark.parametrize(("new", "old", "verdict"), [
    ("Ann lives in a flat in Lisbon", "Ann lives in a flat in Berlin", "supersedes"),  # the lifecycle's slot rule
    ("the nightly deploy starts at 5 am", "the nightly deploy starts at 3 am", "supersedes"),
    ("the cache is not enabled in production", "the cache is enabled in production", "supersedes"),
    ("Ann lives in Berlin.", "Ann lives in a flat in Berlin", "duplicate"),  # the lifecycle's restatement
    ("[8 May 2023] Ann: I love painting", "[9 June 2023] Ann: I love painting", "unrelated"),
    ("the standup is at ten", "Bob plays chess on sundays", "unrelated"),
])
def test_rules_judge_answers_the_lifecycles_verdicts(new, old, verdict):
    assert rules_judge(new, old) == verdict


def test_an_update_supersedes_the_older_block_and_frames_leave_it_out(mem, clock):
    berlin = mem.learn("Ann lives in a flat in Berlin")
    between = clock() + 1800
    clock.advance_hours(1)
    lisbon = mem.learn("Ann lives in a flat in Lisbon")
    older = mem.get(berlin)
    assert older.valid_to == clock() and older.superseded_by == lisbon and mem.get(lisbon).supersedes == berlin
    assert [b.block_id for b in history(older)] == [berlin, lisbon]
    assert not mem.contradict(berlin, lisbon)  # recorded as a contradiction too
    assert texts(mem.recall("attention", "where does Ann live", top_k=5)) == ["Ann lives in a flat in Lisbon"]
    assert "Berlin" not in mem.frame("attention", "where does Ann live").text
    assert texts(mem.recall("attention", None, top_k=5)) == ["Ann lives in a flat in Lisbon"]  # queryless too
    assert texts(mem.recall("attention", "where does Ann live", top_k=5, as_of=between)) == ["Ann lives in a flat in Berlin"]
    assert "Ann lives in a flat in Berlin" in mem.frame("attention", "where does Ann live", as_of=between).text


def test_as_of_all_reads_superseded_blocks(mem):
    old = mem.learn("the office wifi password is swordfish 41")
    new = mem.learn("the office wifi password is swordfish 42")
    assert mem.get(old).superseded_by == new
    seen = mem.recall("attention", "office wifi password", top_k=5, as_of=ALL_TIMES)
    assert {b.id for b in seen} & {old, new}  # both candidates again (suppression keeps one of the pair)
    assert old not in [b.id for b in mem.recall("attention", "office wifi password", top_k=5)]


def test_a_superseded_guaranteed_block_leaves_its_frame(mem):
    first = mem.learn("Ann lives in a flat in Berlin", tags=["self/constitutional"])
    second = mem.learn("Ann lives in a flat in Lisbon", tags=["self/constitutional"])
    assert [b.id for b in mem.frame("self").blocks] == [second]
    assert mem.get(first).superseded_by == second


def test_supersede_by_hand(mem):
    a = mem.learn("the launch is on monday")
    b = mem.learn("launch moved, see the calendar")
    mem.supersede(a, b)
    assert mem.get(a).superseded_by == b
    assert a not in [x.id for x in mem.recall("attention", "launch monday", top_k=5)]
    with pytest.raises(RecordNotFound):
        mem.supersede(a, "missing")
    with pytest.raises(ValidationError):
        mem.supersede(a, a)


def test_the_lifecycles_openai_judge_decides_when_plugged_in(db, clock):
    asked = []

    def create(**request):
        asked.append(request)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="supersedes"))])

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    with configured_embeddings(WordEmbeddings()):
        mem = FrameMemory(agent_id="judged-lifecycle", clock=clock,
                          wiring=LearnWiring(judge=OpenAIJudge(client=client, model="some-model")))
        a = mem.learn("our office is in the harbour district")
        b = mem.learn("our office is in the harbour district now")
    assert asked and asked[0]["model"] == "some-model"
    assert mem.get(a).superseded_by == b


def test_blocks_stored_before_the_lifecycle_stay_current(mem):
    block = mem.learn("a block written before valid_to existed")
    client = redmem.store.get_client()
    client.zrem(mem.space.key(redmem.store._keys.KeyKind.SORTED, "valid_to"), block)
    assert [b.id for b in mem.recall("attention", "block written before", top_k=5)] == [block]


def superseded_left_out(result) -> dict[str, str | None]:
    return {o.record_id: o.superseded_by for o in result.explain().left_out if o.reason == "superseded"}


def test_the_explanation_names_the_superseded_block_and_its_successor(mem, clock, sent):
    """The candidate script names it in its own reply: the frame's round trips do not change."""
    berlin = mem.learn("Ann lives in a flat in Berlin")
    between = clock() + 1800
    clock.advance_hours(1)
    lisbon = mem.learn("Ann lives in a flat in Lisbon")
    mem.frame("attention", "where does Ann live", as_of=ALL_TIMES)  # warm: scripts cached, vectors loaded
    sent.clear()
    current = mem.frame("attention", "where does Ann live")
    trips = len(sent)
    sent.clear()
    every = mem.frame("attention", "where does Ann live", as_of=ALL_TIMES)
    assert trips == len(sent)
    assert superseded_left_out(current) == {berlin: lisbon}
    (cut,) = [o for o in current.explain().left_out if o.reason == "superseded"]
    assert f"superseded by {lisbon}" in cut.detail and "fused #" in cut.detail
    assert superseded_left_out(every) == {} and superseded_left_out(mem.frame("attention", "where does Ann live",
                                                                               as_of=between)) == {}
