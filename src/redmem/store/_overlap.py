"""Run local work while the server executes a pipeline: send, work, then read the replies.

A bulk save sends one chunk's MULTI/EXEC and, meanwhile, builds and packs the next chunk. The
server and the client each use a core, so the round trip and the work cost the longer of the
two instead of their sum -- in one thread, so no second thread fights the first for the GIL
(the packing is Python). (A retrieval's vector scan, which releases the GIL, runs on a worker
thread instead: :mod:`redmem.fields.search_protocol`.)
On a cluster (replies come from several nodes), a pipeline in WATCH mode or the asyncio API's
facade (:mod:`.aio`: the event loop reads the replies), the pipeline runs as usual first, then the work.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ExecAbortError, ResponseError, WatchError

from ._aio import AioClient, is_cluster

__all__ = ["Request", "sendable"]


def sendable(client: Any, pipe: Any) -> bool:
    """Whether ``pipe`` can be sent ahead of reading its replies (one server, queued commands, no WATCH)."""
    return (not is_cluster(client) and not isinstance(client, AioClient) and bool(pipe.command_stack)
            and not getattr(pipe, "watching", False))


class Request:
    """A pipeline's commands packed on a pooled connection, sent, and its replies read later.

    A transaction pipeline goes as one MULTI / commands / EXEC. Until :meth:`replies` returns,
    the request holds its connection; :meth:`abandon` gives it back (closed if replies may be
    left unread). The pipeline itself is reset once the replies are read. A pipeline that cannot
    be sent ahead (:func:`sendable`: a cluster, a WATCH) simply runs at :meth:`send`.
    ``reply_timeout``: seconds each reply of a sent-ahead transaction may take, instead of the
    connection's ``socket_timeout`` (for a write that is never resent, so waiting is safe).
    """

    def __init__(self, client: Any, pipe: Any, *, reply_timeout: float | None = None) -> None:
        self.client, self.pipe, self.reply_timeout = client, pipe, reply_timeout
        self.connection, self.sent = None, False
        self.done: list[Any] = []
        if not sendable(client, pipe):
            return
        self.commands = list(pipe.command_stack)
        self.transaction = bool(getattr(pipe, "transaction", False))
        framed = [(("MULTI",), {}), *self.commands, (("EXEC",), {})] if self.transaction else self.commands
        self.connection = client.connection_pool.get_connection()
        try:
            self.payload = self.connection.pack_commands([args for args, _ in framed])
        except BaseException:
            self.abandon()
            raise

    def send(self) -> None:
        """Send the packed commands, retrying connection errors by the connection's retry policy.

        A retry reconnects first, and the server drops what it read of an unfinished transaction
        with the closed connection, so nothing runs twice.
        """
        self.sent = True
        if self.connection is None:
            self.done = self.pipe.execute()
            return
        self.connection.retry.call_with_retry(
            lambda: self.connection.send_packed_command(self.payload), lambda _: self.connection.disconnect()
        )

    def replies(self) -> list[Any]:
        """The replies, as ``pipe.execute()`` returns them; the first error reply is raised after all are read."""
        if self.connection is None:
            return self.done
        try:
            if self.transaction:
                replies = _read_transaction(self.client, self.connection, self.commands, self.reply_timeout)
            else:
                replies = [_reply(self.client, self.connection, args, options) for args, options in self.commands]
        except BaseException:
            self.abandon()
            raise
        self.client.connection_pool.release(self.connection)
        self.connection = None
        self.pipe.reset()
        for error in replies:
            if isinstance(error, ResponseError):
                raise error
        return replies

    def abandon(self) -> None:
        """Give the connection back without reading replies (closed first when anything was sent)."""
        if self.connection is None:
            return
        if self.sent:
            self.connection.disconnect()
        self.client.connection_pool.release(self.connection)
        self.connection = None


def _reply(client: Any, connection: Any, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
    """One parsed reply (the error itself when the server answered with one)."""
    try:
        return client.parse_response(connection, args[0], **options)
    except ResponseError as error:
        return error


def _read_transaction(
    client: Any, connection: Any, commands: list[tuple[tuple[Any, ...], dict[str, Any]]], timeout: float | None = None
) -> list[Any]:
    """The replies of a sent MULTI / commands / EXEC, each through its command's response callback.

    A command refused while queued aborts the whole transaction: its error is raised. A
    transaction that lost a WATCH race raises :class:`~redis.exceptions.WatchError`. ``timeout``:
    seconds each reply may take (default: the connection's ``socket_timeout``).
    """
    waits = {} if timeout is None else {"timeout": timeout}

    def read() -> Any:
        return connection.read_response(**waits)

    queued = []  # MULTI's OK, then QUEUED or the error of each refused command
    for _ in range(len(commands) + 1):
        try:
            queued.append(read())
        except ResponseError as error:
            queued.append(error)
    try:
        results = read()
    except ExecAbortError as aborted:
        refused = [e for e in queued if isinstance(e, ResponseError)]
        raise (refused[0] if refused else aborted) from None
    if results is None:
        raise WatchError("Watched variable changed.")
    callbacks = client.response_callbacks
    return [
        reply if isinstance(reply, Exception) or args[0] not in callbacks else callbacks[args[0]](reply, **options)
        for reply, (args, options) in zip(results, commands)
    ]
