"""The MCP server in-process: remember, recall and feedback through the MCP SDK's client.

    python recipes/mcp_tools.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/mcp.md). For a client
application, run ``redmem mcp`` instead (stdio or HTTP).
"""

import os
import uuid

import anyio
from mcp import Client

import redmem
from redmem import HashingEmbeddings
from redmem.cli_commands.mcp_server import build_server

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}", embedding_provider=HashingEmbeddings(dimensions=384))


async def main() -> None:
    async with Client(build_server("ana")) as client:
        stored = await client.call_tool("remember", {"content": "Ana drinks lapsang souchong at four."})
        found = await client.call_tool("recall", {"query": "What tea does Ana like?", "max_tokens": 300})
        print(found.structured_content["context"])
        memory_id = stored.structured_content["memory_id"]
        await client.call_tool("feedback", {"outcomes": {memory_id: "acted"}})


anyio.run(main)
