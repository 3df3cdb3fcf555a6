"""A pytest plugin: each test that asks for it gets a private real Redis server, and redmem uses it.

A project opts in, in its top-level ``conftest.py``: ``pytest_plugins = ["redmem.testing"]`` (or
``pytest -p redmem.testing``). It is not auto-loaded: that would import redmem into every pytest run
on the machine, before coverage starts measuring it.
Its fixtures, for tests of code built on redmem without a fake Redis:

- ``redmem_server``: an :class:`~redmem.store._embedded.EmbeddedServer` started for this test alone
  (unix socket, nothing on disk) and stopped after it, with every key it held.
- ``redmem_client``: a client of that server made redmem's default for the test (``connect``);
  every setting :func:`~redmem.store._connection.configure` changes is put back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .store._connection import SETTING_NAMES, configure, connect, settings
from .store._embedded import EmbeddedServer

__all__ = ["redmem_client", "redmem_server"]


@pytest.fixture
def redmem_server() -> Iterator[EmbeddedServer]:
    """A private Redis server for this test alone, stopped when it ends."""
    with EmbeddedServer() as server:
        yield server


@pytest.fixture
def redmem_client(redmem_server: EmbeddedServer) -> Iterator[Any]:
    """The default client for this test: one of its private server; redmem's settings restored after."""
    before = settings()
    client = connect(redmem_server.url)
    configure(async_client=None)  # the asyncio API follows the new client, not a previous one's twin
    try:
        yield client
    finally:
        configure(**{name: getattr(before, name) for name in SETTING_NAMES})
        client.close()
