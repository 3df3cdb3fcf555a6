"""``redmem ui``: a local memory inspector in the browser (tenants, memories, one memory, a query
playground, forget / feedback / export), served on the ASGI stack of the ``mcp`` extra."""

from .._public import publish
from ._app import build_app
from ._guard import Guard

__all__ = ["build_app", "Guard"]

publish(__name__, __all__)
