"""Values the command line offers before any command runs (kept free of imports, so that
``redmem --help`` builds its parser without loading the library)."""

__all__ = ["EMBEDDINGS"]

#: The ``--embeddings`` choices: the offline MiniLM model, hashing, or MiniLM when installed.
EMBEDDINGS = ("auto", "minilm", "hashing")
