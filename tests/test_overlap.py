"""execute_while: local work runs while the server executes a pipeline, replies as pipe.execute's."""

from __future__ import annotations

import time

import pytest
import redis

import redmem
from redmem.store.overlap import execute_while
from redmem.store.scripts import queue_script


def _key(name: str) -> str:
    return f"{redmem.store.settings().key_prefix}:{{ov}}:{name}"


def _queue_mixed(pipe) -> None:
    pipe.hset(_key("h"), mapping={"a": "1", "b": "2"})
    pipe.hgetall(_key("h"))
    pipe.incr(_key("n"))
    queue_script(pipe, "ping", [_key("p")], [])


def test_replies_equal_a_plain_execute(any_db):
    with any_db.pipeline(transaction=False) as pipe:
        _queue_mixed(pipe)
        replies, result = execute_while(any_db, pipe, lambda: "worked")
    with any_db.pipeline(transaction=False) as pipe:
        _queue_mixed(pipe)
        expected = pipe.execute()
    assert result == "worked"
    assert replies[1] == expected[1] == {b"a": b"1", b"b": b"2"}
    assert replies[3] == expected[3] == b"pong"
    assert (replies[2], expected[2]) == (1, 2)


def test_the_commands_reach_the_server_before_the_work_runs(db, redis_url):
    """The work sees the pipeline's write from another connection: it was sent first."""
    other = redis.Redis.from_url(redis_url)
    seen = []

    def work():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if other.get(_key("flag")) == b"set":
                seen.append(True)
                return
            time.sleep(0.001)

    with db.pipeline(transaction=False) as pipe:
        pipe.set(_key("flag"), "set")
        execute_while(db, pipe, work)
    assert seen == [True]


def test_an_error_reply_is_raised_after_every_reply_is_read(db):
    with db.pipeline(transaction=False) as pipe:
        pipe.set(_key("s"), "x")
        pipe.incr(_key("s"))  # not an integer: error reply
        pipe.set(_key("after"), "y")
        with pytest.raises(redis.ResponseError):
            execute_while(db, pipe, lambda: None)
    assert db.get(_key("after")) == b"y"
    assert db.ping() is True  # the pooled connection is in step


def test_work_that_raises_leaves_the_client_usable(db):
    def work():
        raise KeyError("boom")

    with db.pipeline(transaction=False) as pipe:
        pipe.set(_key("w"), "1")
        with pytest.raises(KeyError):
            execute_while(db, pipe, work)
    assert db.get(_key("w")) == b"1"  # sent before the work failed
    for _ in range(20):  # every pooled connection answers its own commands
        assert db.incr(_key("count")) > 0
