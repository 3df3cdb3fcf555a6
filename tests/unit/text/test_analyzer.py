"""The text analyser: stems, stop words, identifiers, CJK bigrams, Unicode, options."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redmem import ConfigurationError
from redmem.text import ENGLISH_STOPWORDS, Analyzer, default_analyzer
from redmem.text._runs import _ASCII_RUNS, _unicode_runs, runs

tokens = default_analyzer().tokens


@pytest.mark.parametrize(
    "text, expected",
    [
        ("running", ["run"]),
        ("Runs RUNNING runner", ["run", "run", "runner"]),
        ("studies connected generously", ["studi", "connect", "generous"]),
        ("the deployment of the pipelines", ["deploy", "pipelin"]),
    ],
)
def test_words_are_stemmed(text, expected):
    assert tokens(text) == expected


def test_stop_words_are_dropped_and_only_them():
    assert tokens("The cat and the hat were in it") == ["cat", "hat"]
    assert tokens("I don't know what it's about") == ["know"]
    assert tokens("the and of to") == []
    assert {"the", "and", "don't", "itself"} <= ENGLISH_STOPWORDS
    assert not {"deploy", "memory", "said"} & ENGLISH_STOPWORDS


@pytest.mark.parametrize(
    "text, expected",
    [
        ("AI", ["ai"]),
        ("Q3 revenue", ["q3", "revenu"]),
        ("ship v2 today", ["ship", "v2", "today"]),
        ("fixes #594", ["fix", "#594"]),
        ("gpt-4o", ["gpt-4o"]),
        ("Python 3.5", ["python", "3.5"]),
        ("v1.2.3-beta on 2024-05-01", ["v1.2.3-beta", "2024-05-01"]),
        ("user_id and snake_case_name", ["user_id", "snake_case_name"]),
        ("at 10:30 for $100 (50%)", ["10", "30", "100", "50"]),
        ("a b x", ["b", "x"]),  # one-letter words survive unless stop words
    ],
)
def test_short_tokens_and_identifiers_survive_unstemmed(text, expected):
    assert tokens(text) == expected


def test_hyphens_and_dots_split_plain_words_only():
    assert tokens("well-known e-mail node.js") == ["well", "known", "e", "mail", "node", "js"]
    assert tokens("covid-19 x86-64") == ["covid-19", "x86-64"]
    assert tokens("trailing-, dots... --double") == ["trail", "dot", "doubl"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("東京都", ["東京", "京都"]),
        ("中", ["中"]),
        ("東京都に行きます", ["東京", "京都", "都に", "に行", "行き", "きま", "ます"]),
        ("カタカナ", ["カタ", "タカ", "カナ"]),
        ("한국어 텍스트", ["한국", "국어", "텍스", "스트"]),
        ("AI模型2024年", ["ai", "模型", "2024", "年"]),
        ("東京、大阪。", ["東京", "大阪"]),
        ("ｶﾀｶﾅ", ["カタ", "タカ", "カナ"]),  # half-width Katakana, normalised first
    ],
)
def test_cjk_runs_become_overlapping_bigrams(text, expected):
    assert tokens(text) == expected


def test_cjk_unigrams_when_bigrams_are_off():
    assert Analyzer(cjk_bigrams=False).tokens("東京都 中") == ["東", "京", "都", "中"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello—world… “quoted” «guillemets» 🙂emoji", ["hello", "world", "quot", "guillemet", "emoji"]),
        ("ＡＩ ｖ２ ﬁle", ["ai", "v2", "file"]),  # full-width forms and ligatures (NFKC)
        ("O’Neil’s", tokens("O'Neil's")),  # typographic apostrophe
        ("Straße résumé naïve", ["strass", "résumé", "naïv"]),
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # combining marks stay inside words
        ("❤️ co\u00adoperate", ["cooper"]),  # variation selector and soft hyphen are invisible
        ("Ελληνικά кириллица", ["ελληνικά", "кириллица"]),
    ],
)
def test_unicode_text(text, expected):
    assert tokens(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "...!!! ???", "🙂🙂", "\n\t", "#", "-", "the"])
def test_empty_or_contentless_text(text):
    assert tokens(text) == []


def test_order_and_duplicates_are_kept():
    assert tokens("deploy cats, deploy dogs, deploy") == ["deploy", "cat", "deploy", "dog", "deploy"]


def test_options():
    assert Analyzer(stem=False).tokens("Running studies") == ["running", "studies"]
    assert Analyzer(lowercase=False, stem=False).tokens("The AI Lab") == ["AI", "Lab"]
    assert Analyzer(min_length=3).tokens("AI Q3 lab gpt-4o #7 中") == ["lab", "gpt-4o", "#7", "中"]
    assert Analyzer(stopwords={"Cat"}).tokens("the cat sat") == ["the", "sat"]
    assert Analyzer(stopwords=()).tokens("the cat") == ["the", "cat"]


@pytest.mark.parametrize("options", [{"min_length": 0}, {"min_length": 1.5}, {"min_length": True}, {"stopwords": "the"}])
def test_bad_options_raise(options):
    with pytest.raises(ConfigurationError):
        Analyzer(**options)


def test_default_analyzer_is_shared_and_immutable():
    assert default_analyzer() is default_analyzer()
    assert default_analyzer() == Analyzer()
    with pytest.raises(AttributeError):
        default_analyzer().stem = False  # type: ignore[misc]
    assert hash(Analyzer()) == hash(Analyzer())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_unicode_pattern_agrees_with_the_ascii_pattern_on_ascii(text):
    assert _unicode_runs().findall(text) == _ASCII_RUNS.findall(text)


@given(st.text())
def test_terms_are_nonempty_and_free_of_separators(text):
    for term in tokens(text):
        assert term and term == term.strip() and not any(c.isspace() for c in term)


@given(st.text(), st.text())
def test_a_space_separates(first, second):
    assert tokens(f"{first} {second}") == tokens(first) + tokens(second)


def test_runs_report_their_kind():
    assert runs("gpt-4o 東京 #12", lowercase=True) == [("gpt-4o", "", ""), ("", "東京", ""), ("", "", "12")]
