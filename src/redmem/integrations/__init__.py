"""Adapters that put redmem where agent frameworks look for memory.

Each module needs its framework, an optional extra, and nothing here imports one eagerly:
``redmem.integrations.openai_agents`` (``pip install 'redmem[agents]'``) and
``redmem.integrations.langgraph_store`` (``pip install 'redmem[langgraph]'``).
"""
