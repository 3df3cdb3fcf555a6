"""What every data command sets up first: the server, the key prefix, the embedding provider.

The server is ``--url``, else ``REDIS_URL``, else the persistent local server of the data
directory (``redmem.store._local_server``), so that data stored by one command is found by the
next. The demo alone asks for a private throwaway server instead (``keep=False``).
"""

from __future__ import annotations

import argparse
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..model._base import Model
from ..store._connection import configure, connect, server_address
from ..store._errors import ConfigurationError
from ..store._local_server import LocalServer, default_data_dir
from ._memory import choose_embeddings

__all__ = ["Runtime", "Server", "DEFAULT_PREFIX", "open_server", "start", "print_notes", "import_model"]

#: Key prefix of the data commands when ``--prefix`` is not given.
DEFAULT_PREFIX = "rm"


@dataclass(frozen=True)
class Server:
    """The client in use and where it points; for a server redmem runs, where its data lives.

    ``data_dir``: the local server's data directory (``started``: this command started it);
    ``throwaway``: a private embedded server that keeps nothing.
    """

    client: Any
    address: str
    data_dir: Path | None = None
    started: bool = False
    throwaway: bool = False

    @property
    def storage(self) -> str:
        """Where the data lives, in words."""
        if self.data_dir is not None:
            return f"local server, data in {self.data_dir}"
        if self.throwaway:
            return "private embedded server, gone when the command ends"
        return "the server of --url or REDIS_URL"

    def describe(self) -> str:
        return f"{self.address} ({self.storage})"


@dataclass(frozen=True)
class Runtime:
    """The server, the key prefix and the embedding provider chosen (with a note on fallback)."""

    server: Server
    prefix: str
    provider: Any
    note: str | None

    @property
    def address(self) -> str:
        return self.server.address

    @property
    def location(self) -> str:
        """``key prefix 'rm' on <address> (<where the data lives>)``."""
        return f"key prefix {self.prefix!r} on {self.server.describe()}"

    def describe(self) -> str:
        return f"{self.location}, embeddings {self.provider!r}"


def open_server(url: str | None, *, keep: bool = True) -> Server:
    """Connect to ``url``, else REDIS_URL, else the local server (``keep``) or a private throwaway one."""
    url = url or os.environ.get("REDIS_URL")
    if url is None and keep:
        local = LocalServer(default_data_dir())
        started = local.ensure()
        client = connect(local.url)
        return Server(client, server_address(client), data_dir=local.directory, started=started)
    client = connect(url, throwaway=url is None)
    return Server(client, server_address(client), throwaway=url is None)


def start(args: argparse.Namespace, *, keep: bool = True, default_prefix: str = DEFAULT_PREFIX) -> Runtime:
    """Connect (:func:`open_server`), then set the key prefix and the embedding provider."""
    server = open_server(args.url, keep=keep)
    provider, note = choose_embeddings(args.embeddings)
    prefix = args.prefix or default_prefix
    configure(key_prefix=prefix, embedding_provider=provider)
    return Runtime(server, prefix, provider, note)


def print_notes(console: Console, runtime: Runtime) -> None:
    """Say that this command started the local server (and how to stop it), and any embeddings fallback."""
    server = runtime.server
    if server.started:
        console.print(f"[yellow]note:[/yellow] started the local server with its data in "
                      f"{escape(str(server.data_dir))}; it keeps running for the next commands "
                      "(`redmem server stop` stops it)", highlight=False)
    if runtime.note:
        console.print(f"[yellow]note:[/yellow] {runtime.note}")


def import_model(spec: str) -> type[Model]:
    """The Model class named ``MODULE:Class`` (the module is imported, so it may declare others)."""
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise ConfigurationError(f"name a model as MODULE:Class (e.g. myapp.memory:Memory), not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r}: {exc}") from exc
    model = getattr(module, class_name, None)
    if not (isinstance(model, type) and issubclass(model, Model)):
        raise ConfigurationError(f"{spec!r} is not a redmem Model class")
    return model
