"""The ``redmem`` subcommands, one module each, and what they share.

``memory`` declares the conversation memory the commands read and write, ``conversation``
reads conversation files, ``ingest`` stores turns, ``display`` draws tables, ``llm`` talks to
an OpenAI-compatible model. ``redmem.cli`` only parses arguments and dispatches.
"""
