"""Request: a pipeline sent ahead, local work while the server executes it, replies as pipe.execute's."""

from __future__ import annotations

import time

import pytest
import redis

import redmem
import redmem.store._aio as aio
from redmem.store._overlap import Request, sendable
from redmem.store._scripts import queue_script


def _key(name: str) -> str:
    return f"{redmem.store.settings().key_prefix}:{{ov}}:{name}"


def execute_while(client, pipe, work):
    """(replies, work()) with ``work`` run between sending ``pipe`` and reading its replies, as
    a bulk save runs its next chunk's packing."""
    request = Request(client, pipe)
    try:
        request.send()
        result = work()
    except BaseException:
        request.abandon()
        raise
    return request.replies(), result


def _queue_mixed(pipe) -> None:
    pipe.hset(_key("h"), mapping={"a": "1", "b": "2"})
    pipe.hgetall(_key("h"))
    pipe.incr(_key("n"))
    queue_script(pipe, "ping", [_key("p")], [])


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi-exec"])
def test_replies_equal_a_plain_execute(any_db, transaction):
    """Plain pipelines and transactions (sent as one MULTI/EXEC): the replies of pipe.execute()."""
    with any_db.pipeline(transaction=transaction) as pipe:
        _queue_mixed(pipe)
        replies, result = execute_while(any_db, pipe, lambda: "worked")
    with any_db.pipeline(transaction=transaction) as pipe:
        _queue_mixed(pipe)
        expected = pipe.execute()
    assert result == "worked"
    assert (replies[0], expected[0]) == (2, 0)  # hset: two new fields, then none
    assert replies[1] == expected[1] == {b"a": b"1", b"b": b"2"}
    assert (replies[2], expected[2]) == (1, 2)
    assert replies[3] == expected[3] == b"pong"


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


def test_an_error_inside_a_transaction_is_raised_after_exec(db):
    with db.pipeline(transaction=True) as pipe:
        pipe.set(_key("s"), "x")
        pipe.incr(_key("s"))  # runs inside EXEC and fails there: the others still run
        pipe.set(_key("after"), "y")
        with pytest.raises(redis.ResponseError, match="not an integer"):
            execute_while(db, pipe, lambda: None)
    assert db.get(_key("after")) == b"y"
    assert db.ping() is True


def test_a_command_refused_while_queued_aborts_the_transaction(db):
    with db.pipeline(transaction=True) as pipe:
        pipe.set(_key("first"), "1")
        pipe.execute_command("SET", _key("bad"))  # wrong number of arguments: refused at MULTI time
        with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
            execute_while(db, pipe, lambda: None)
    assert db.get(_key("first")) is None  # the whole transaction was discarded
    assert db.ping() is True


@pytest.mark.sync_only  # patches a sync pooled connection
def test_a_failed_send_is_retried_on_a_new_connection(db):
    with db.pipeline(transaction=True) as pipe:
        pipe.set(_key("retried"), "1")
        request = Request(db, pipe)
        connection, failures = request.connection, []
        real = connection.send_packed_command

        def flaky(payload, check_health=True):
            if not failures:
                failures.append(True)
                raise redis.ConnectionError("dropped")
            return real(payload, check_health)

        connection.send_packed_command = flaky  # this pooled connection only, removed below
        try:
            request.send()
            assert request.replies() == [True]
        finally:
            del connection.send_packed_command
    assert failures == [True] and db.get(_key("retried")) == b"1"
    assert "send_packed_command" not in vars(connection)


@pytest.mark.sync_only  # the asyncio facade's pipelines are never sent ahead (see the next test)
def test_sendable_only_on_one_server_with_queued_commands(db):
    with db.pipeline(transaction=True) as pipe:
        assert not sendable(db, pipe)  # nothing queued
        pipe.set(_key("x"), "1")
        assert sendable(db, pipe)
    with db.pipeline(transaction=True) as pipe:
        pipe.watch(_key("x"))
        assert not sendable(db, pipe)  # WATCH mode: commands run at once


def test_the_asyncio_facade_runs_the_pipeline_first_then_the_work(db):
    """Replies of a facade's pipeline are read by the event loop: no send-ahead, same replies."""
    thread = aio.LoopThread()
    facade = aio.AioClient(aio.async_twin(db), thread.resolve)
    try:
        with facade.pipeline(transaction=False) as pipe:
            pipe.set(_key("facade"), "1")
            assert not sendable(facade, pipe)
            replies, work = execute_while(facade, pipe, lambda: db.get(_key("facade")))
        assert replies == [True] and work == b"1"
    finally:
        facade.close()
        thread.stop()
