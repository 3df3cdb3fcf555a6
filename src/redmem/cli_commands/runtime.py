"""What every data command sets up first: the server, the key prefix, the embedding provider."""

from __future__ import annotations

import argparse
import importlib
import os
from dataclasses import dataclass
from typing import Any

from ..model.base import Model
from ..store.connection import configure, connect, server_address
from ..store.errors import ConfigurationError
from .memory import choose_embeddings

__all__ = ["Runtime", "start", "import_model"]


@dataclass(frozen=True)
class Runtime:
    """The client in use, where it points, and the embedding provider chosen (with a note on fallback)."""

    client: Any
    address: str
    embedded: bool
    provider: Any
    note: str | None

    def describe(self) -> str:
        where = f"{self.address} (private embedded server)" if self.embedded else self.address
        return f"{where}, embeddings {self.provider!r}"


def start(args: argparse.Namespace) -> Runtime:
    """Connect (``--url``, else REDIS_URL, else an embedded server) and set prefix and provider."""
    embedded = not (args.url or os.environ.get("REDIS_URL"))
    client = connect(args.url)
    provider, note = choose_embeddings(args.embeddings)
    configure(key_prefix=args.prefix, embedding_provider=provider)
    return Runtime(client, server_address(client), embedded, provider, note)


def import_model(spec: str) -> type:
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
