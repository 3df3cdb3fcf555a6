"""LangGraph: redmem as the graph's long-term store (a BaseStore, one tenant per namespace).

    python recipes/langgraph_store.py

Redis: ``REDIS_URL``, else a private server that keeps nothing (docs/integrations.md).
"""

import os
import uuid

from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime

import redmem
from redmem.integrations.langgraph_store import RedmemStore

redmem.connect(throwaway="REDIS_URL" not in os.environ)
redmem.configure(key_prefix=f"recipe-{uuid.uuid4().hex[:8]}")


def remember(state: MessagesState, runtime: Runtime) -> dict:
    """Store the user's message, then answer with the best memory for it."""
    text = state["messages"][-1].content
    namespace = ("memories", "user-1")
    runtime.store.put(namespace, uuid.uuid4().hex, {"text": text})
    best = runtime.store.search(namespace, query=text, limit=1)[0]
    return {"messages": [("ai", f"noted: {best.value['text']}")]}


builder = StateGraph(MessagesState)
builder.add_node("remember", remember)
builder.add_edge(START, "remember")
store = RedmemStore()
graph = builder.compile(store=store)

graph.invoke({"messages": [("user", "I keep bees on the roof")]})
graph.invoke({"messages": [("user", "My sister lives in Porto")]})
print(store.search(("memories",), query="where does my sister live?")[0].value["text"])
