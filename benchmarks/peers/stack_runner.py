"""Runs INSIDE the Stack venv (``stack_bridge.ensure_venv``): drives redisvl 0.28 for the side-by-side runs.

Started by ``stack_bridge.StackProcess`` with ``REDIS_URL`` (a Redis Stack server) in its
environment; one JSON request per line on stdin, one JSON answer per line on stdout.

- ``setup {name}`` -- a redisvl ``SearchIndex`` ``name`` over hashes under ``<name>:``, schema:
  ``content`` TEXT, ``agent_id`` TAG (what the memories need for a filtered full-text search) -> ``{}``
- ``ingest {name, agent_id, texts, chunk}`` -> ``{seconds, keys}``: ``SearchIndex.load`` in
  chunks, then waits until the index reports every document indexed (``percent_indexed`` 1)
- ``search {name, agent_id, queries, k}`` -> ``{results: [{ids, ms}]}``: per query, one redisvl
  ``TextQuery`` (its defaults: BM25STD scorer, English stop words removed, the words OR-ed)
  on ``content`` with the tag filter ``agent_id == <agent>``, returning ``content`` of the top
  ``k``. The question is cleaned first: every character that is not a letter or digit becomes a
  space. redisvl escapes punctuation instead of dropping it, so "about?" would be searched as the
  term ``about?`` and "Joanna's" as ``joanna's``, terms RediSearch never indexed (its tokenizer
  splits on them): uncleaned, most questions lose their last word and their names.
- ``quit``
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from typing import Any

from redisvl.index import SearchIndex
from redisvl.query import TextQuery
from redisvl.query.filter import Tag

from runner_protocol import serve

_NOT_WORD = re.compile(r"[^0-9A-Za-z]+")
indexes: dict[str, SearchIndex] = {}


def setup(name: str) -> dict[str, Any]:
    schema = {"index": {"name": name, "prefix": f"{name}:", "storage_type": "hash"},
              "fields": [{"name": "content", "type": "text"}, {"name": "agent_id", "type": "tag"}]}
    index = SearchIndex.from_dict(schema, redis_url=os.environ["REDIS_URL"])
    index.create(overwrite=True, drop=True)
    indexes[name] = index
    return {}


def ingest(name: str, agent_id: str, texts: list[str], chunk: int = 1000) -> dict[str, Any]:
    index, started, keys = indexes[name], time.perf_counter(), []
    for first in range(0, len(texts), chunk):
        rows = [{"content": text, "agent_id": agent_id} for text in texts[first:first + chunk]]
        keys += index.load(rows, keys=[f"{name}:{i}" for i in range(first, first + len(rows))])
    while float(index.info()["percent_indexed"]) < 1.0:
        time.sleep(0.05)
    return {"seconds": time.perf_counter() - started, "keys": len(keys)}


def search(name: str, agent_id: str, queries: list[str], k: int = 10) -> dict[str, Any]:
    index, results = indexes[name], []
    for text in queries:
        query = TextQuery(_NOT_WORD.sub(" ", text), "content", filter_expression=Tag("agent_id") == agent_id,
                          num_results=k, return_fields=["content"])
        started = time.perf_counter()
        found = index.query(query)
        ms = (time.perf_counter() - started) * 1000
        results.append({"ids": [int(doc["id"].rsplit(":", 1)[1]) for doc in found], "ms": ms})
    return {"results": results}


OPS = {"setup": setup, "ingest": ingest, "search": search}


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    serve(lambda op, arguments: OPS[op](**arguments))

if __name__ == "__main__":
    main()
