"""``redmem ui``: a local memory inspector in the browser (tenants, memories, one memory, a query
playground, forget / feedback / export), served on the ASGI stack of the ``mcp`` extra."""

from .app import build_app
from .guard import Guard

__all__ = ["build_app", "Guard"]
