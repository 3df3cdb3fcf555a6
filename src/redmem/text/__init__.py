"""Text analysis shared by the lexical primitives: one analyser turns text into index terms."""

from .._public import publish
from ._analyzer import Analyzer, default_analyzer
from ._stopwords import ENGLISH_STOPWORDS

__all__ = ["Analyzer", "default_analyzer", "ENGLISH_STOPWORDS"]

publish(__name__, __all__)
