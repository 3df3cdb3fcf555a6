"""learn() and supersede() against reinforcement landing mid-write (issue 29): they write the
fields they change, so a touch (or a frame's reinforcement) that lands between their read and
their write is never lost; and learn() costs two round trips. On a real server."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import frames_support
from frames_support import WordEmbeddings
from redmem.context._neighbours import Turn, build_contexts
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._retrieval import block_keys

provider, clock = frames_support.provider, frames_support.clock  # the frames tests' fixtures, defined once

#: Where a reinforcement is made to land inside a write: while the new block is embedded (the
#: old learn: after it loaded the earlier blocks), or just before the MULTI/EXEC is sent.
POINTS = ("embed", "exec")
_agents = itertools.count()


class Interleaver:
    """Runs an armed action once, at the armed point of the next write: when the provider
    embeds a document, or when a connection is about to send a MULTI."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, words: WordEmbeddings) -> None:
        self.point: str | None = None
        self.action = lambda: None
        send = redis.connection.AbstractConnection.send_packed_command
        embed = words.embed

        def sending(connection, command, check_health=True):
            first = command[0] if isinstance(command, list) else command
            if self.point == "exec" and b"MULTI" in bytes(first)[:16]:
                self.fire()
            return send(connection, command, check_health)

        def embedding(texts, input_type="document"):
            if self.point == "embed" and input_type == "document":
                self.fire()
            return embed(texts, input_type)

        monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", sending)
        monkeypatch.setattr(words, "embed", embedding)

    def arm(self, point: str, action) -> None:
        self.point, self.action = point, action

    def fire(self) -> None:
        self.point = None  # once; the action's own commands pass straight through
        self.action()


@pytest.fixture
def interleaver(provider, monkeypatch):
    return Interleaver(monkeypatch, provider)


def stored(mem: FrameMemory, block_id: str) -> tuple[int, float, float | None, str]:
    """(reinforcement count, last reinforced, window score, context) as stored."""
    client, keys = mem.client, block_keys(mem.space)
    count, last, context = client.hmget(mem.space.record(block_id), "reinforcement_count", "last_reinforced", "context")
    window = client.zscore(keys["window"], block_id)
    assert float(client.zscore(keys["count"], block_id)) == int(count)
    return int(count), float(last), window, context.decode()


steps = st.lists(
    st.tuples(st.sampled_from(POINTS), st.lists(st.integers(0, 7), max_size=3)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_a_reinforcement_during_learn_is_never_lost(interleaver, clock, steps):
    """Each step learns a block while touching some earlier ones (counted from the newest, so
    the blocks whose context the new block changes are hit) at a point inside the learn. Every
    touch stays counted, at its time, and every context is the one the whole session gives."""
    mem = FrameMemory(agent_id=f"race-{next(_agents)}", clock=clock, wiring=None)
    mem.begin_session()
    ids = [mem.learn("the first block of the session")]
    touches = {ids[0]: 0}
    last = {ids[0]: mem.active_hours()}
    for number, (point, picks) in enumerate(steps):
        clock.advance_hours(0.25)
        targets = [ids[-1 - pick % len(ids)] for pick in picks]

        def touch_all(targets=targets):
            for target in targets:
                last[target] = mem.touch(target)
                touches[target] += 1

        interleaver.arm(point, touch_all)
        learned_at = mem.active_hours()
        ids.append(mem.learn(f"block {number} says {point} {' '.join(map(str, picks))}"))
        touches[ids[-1]], last[ids[-1]] = 0, learned_at
    texts = ["the first block of the session"] + [
        f"block {n} says {p} {' '.join(map(str, k))}" for n, (p, k) in enumerate(steps)
    ]
    contexts = build_contexts([Turn("", text, "1", "") for text in texts], mem.neighbours)
    for block_id, context in zip(ids, contexts):
        assert stored(mem, block_id) == (
            touches[block_id],
            pytest.approx(last[block_id]),
            pytest.approx(last[block_id]),
            context,
        )


def test_a_touch_while_superseding_is_kept(interleaver, clock):
    """supersede() loads both blocks, then writes; touches landing before its MULTI/EXEC stay."""
    mem = FrameMemory(agent_id=f"race-{next(_agents)}", clock=clock, wiring=None)
    mem.begin_session()
    older, newer = mem.learn("the deploy runs at 3 am"), mem.learn("the deploy runs at 5 am")
    clock.advance_hours(1)

    def touch_both():
        mem.touch(older)
        mem.touch(newer)

    interleaver.arm("exec", touch_both)
    mem.supersede(older, newer)
    now = mem.active_hours()
    assert stored(mem, older)[:2] == (1, pytest.approx(now))
    assert stored(mem, newer)[:2] == (1, pytest.approx(now))
    assert mem.get(older).superseded_by == newer and mem.get(newer).supersedes == older


def test_an_archive_during_learn_stays(interleaver, clock):
    """A block archived while the next block is learned stays archived and out of the window."""
    mem = FrameMemory(agent_id=f"race-{next(_agents)}", clock=clock, wiring=None)
    mem.begin_session()
    first = mem.learn("a block archived mid-learn")
    interleaver.arm("exec", lambda: mem.archive(first))
    mem.learn("the block after it")
    assert mem.get(first).status == "archived"
    assert mem.client.zscore(block_keys(mem.space)["window"], first) is None


@pytest.mark.parametrize("wiring", [False, True])
def test_learn_costs_two_round_trips_and_three_with_wiring(provider, clock, sent, wiring):
    """Read (WATCH + the session's tail), then MULTI/EXEC; the wiring's vector search before them."""
    options = {} if wiring else {"wiring": None}
    mem = FrameMemory(agent_id=f"trips-{wiring}", clock=clock, **options)
    mem.begin_session()
    for n in range(4):
        mem.learn(f"note {n} on the helm chart of service {n}")
    sent.clear()
    mem.learn("a last note on the helm chart")
    assert len(sent) == (3 if wiring else 2)


def test_alearn_appends_as_learn_does(provider, clock):
    """Under the asyncio API the read goes after the WATCH (its own round trip); the same contexts result."""
    mem = FrameMemory(agent_id=f"async-{next(_agents)}", clock=clock, wiring=None)
    mem.begin_session()

    async def learn_both():
        return await mem.alearn("Did you ever get to visit Zanzibar?"), await mem.alearn("Yes, twice last year!")

    asked, answer = asyncio.run(learn_both())
    assert mem.get(answer).context == "> Did you ever get to visit Zanzibar?\nYes, twice last year!"
    assert mem.get(asked).context == "Did you ever get to visit Zanzibar?\n> Yes, twice last year!"
