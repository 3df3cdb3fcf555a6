"""The token estimator: cl100k_base's pre-tokenizer, mirrored, and a cost per piece (opt-in; the
default counter is the exact one, :func:`redmem.context._tokens.default_counter`).

tiktoken encodes in two steps: a regular expression splits the text into *pieces* (a letter run
with one optional leading non-letter, a group of 1-3 digits, a punctuation run, a whitespace
run), then byte-pair merges run inside each piece, never across two. A text's token count is
therefore exactly the sum of its pieces' counts. :data:`PIECES` is cl100k_base's splitting
pattern rewritten for the standard ``re`` module (possessive quantifiers, Python >= 3.11;
``\\p{L}`` and ``\\p{N}`` spelt with ``\\w``, ``\\d`` and a table of other numbers, ``\\s`` as
Unicode White_Space); it splits exactly as tiktoken does (tested on mixed-script text). Only
each piece's count is estimated, from its shape: most pieces are one token; long, capitalised,
vowel-poor or mixed-case letter runs and long punctuation runs cost more; CJK characters cost
what cl100k's vocabulary gives them (tables below); other non-ASCII characters a rate by UTF-8
length.

``cost(piece) = sum(WEIGHTS[i] * piece_features(piece)[i])`` and
``estimate_tokens(text) = round(MARGIN * sum(cost(piece) for piece in pieces(text)))``.
WEIGHTS are non-negative least squares against cl100k_base on the TRAIN corpora of
``benchmarks/tokens.py`` (every content class weighted equally; ``--fit`` reproduces them);
MARGIN lifts the unbiased fit so that no class of the TEST corpora is underestimated. Piece
costs are memoised (pieces repeat: " the", ",", newline plus indent), which keeps the estimator
at C speed for the most part. Measured errors and speed: docs/tokens.md.

CJK tables (facts about cl100k_base, derived by ``benchmarks/tokens.py --tables``): the Han,
Hangul and kana characters that are one token; every other Han or Hangul character costs 2
tokens, or 3 where its 64-character block (one bit per block) mostly costs 3; other kana 2.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = [
    "FEATURES", "WEIGHTS", "MARGIN", "PIECES", "pieces", "estimate_tokens", "estimate_features", "piece_features",
]

#: Characters of Unicode categories Nl and No (below U+20000, Unicode 14): numbers for
#: tiktoken's ``\p{N}`` that ``re`` counts among ``\w`` but not ``\d``.
_OTHER_NUMBERS = """
00B2-00B3 00B9 00BC-00BE 09F4-09F9 0B72-0B77 0BF0-0BF2 0C78-0C7E 0D58-0D5E 0D70-0D78 0F2A-0F33
1369-137C 16EE-16F0 17F0-17F9 19DA 2070 2074-2079 2080-2089 2150-2182 2185-2189 2460-249B
24EA-24FF 2776-2793 2CFD 3007 3021-3029 3038-303A 3192-3195 3220-3229 3248-324F 3251-325F
3280-3289 32B1-32BF A6E6-A6EF A830-A835 10107-10133 10140-10178 1018A-1018B 102E1-102FB
10320-10323 10341 1034A 103D1-103D5 10858-1085F 10879-1087F 108A7-108AF 108FB-108FF 10916-1091B
109BC-109BD 109C0-109CF 109D2-109FF 10A40-10A48 10A7D-10A7E 10A9D-10A9F 10AEB-10AEF 10B58-10B5F
10B78-10B7F 10BA9-10BAF 10CFA-10CFF 10E60-10E7E 10F1D-10F26 10F51-10F54 10FC5-10FCB 11052-11065
111E1-111F4 1173A-1173B 118EA-118F2 11C5A-11C6C 11FC0-11FD4 12400-1246E 16B5B-16B61 16E80-16E96
1D2E0-1D2F3 1D360-1D378 1E8C7-1E8CF 1EC71-1ECAB 1ECAD-1ECAF 1ECB1-1ECB4 1ED01-1ED2D 1ED2F-1ED3D
1F100-1F10C
"""
#: Unicode White_Space (tiktoken's ``\s``; ``re``'s also takes U+001C..U+001F).
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _ranges(table: str) -> str:
    """``"00B2-00B3 00B9"`` as the body of a regex character class."""
    def char(hex_code: str) -> str:
        return re.escape(chr(int(hex_code, 16)))

    return "".join("-".join(map(char, item.split("-"))) for item in table.split())


def _pieces_pattern(letter: str, number: str, space: str) -> re.Pattern[str]:
    """cl100k_base's pre-tokenizer with these classes: contraction | letters | digits |
    punctuation | whitespace."""
    return re.compile(
        r"'(?i:[sdmt]|ll|ve|re)"
        rf"|(?:[^\w\r\n]|_)?+{letter}++"
        rf"|{number}{{1,3}}+"
        rf"| ?(?:[^{space}\w]|_)++[\r\n]*+"
        rf"|[{space}]++\Z|[{space}]*[\r\n]|[{space}]+(?![^{space}])|[{space}]"
    )


_NO = _ranges(_OTHER_NUMBERS)
PIECES = _pieces_pattern(rf"[^\W\d_{_NO}]", rf"[\d{_NO}]", _SPACE)
#: The same on ASCII text, where its small classes make it about a third faster.
_ASCII_PIECES = _pieces_pattern("[A-Za-z]", "[0-9]", "\t\n\x0b\x0c\r ")
_CONTRACTION = re.compile(r"'(?i:[sdmt]|ll|ve|re)")
_LETTER_PIECE = re.compile(r"((?:[^\w\r\n]|_)?)([^\W\d_]+)")

FEATURES = (
    "one",  # contraction, digit group or whitespace piece: one token
    "word",  # ASCII letter piece
    "word_long",  # its letters beyond 3, unless it follows a space
    "word_after_symbol",  # it follows a character other than space, "_", "." or "("
    "word_few_vowels",  # letters beyond 2 when under a quarter are vowels (random-looking)
    "word_upper",  # letters beyond 1 of an all-capitals run
    "word_camel",  # lower-to-upper transitions inside a mixed-case run
    "escape",  # a \u escape piece: backslash, "u", hex letters
    "escape_letters",  # its hex letters
    "punct",  # ASCII punctuation piece
    "punct_long",  # its characters beyond 2, line breaks excluded
    "cjk",  # summed cl100k cost of Han, Hangul and kana characters
    "utf8_2",  # other characters of two UTF-8 bytes (accented Latin, Cyrillic, Greek...)
    "utf8_3",  # other characters of three bytes (symbols, CJK punctuation, variation selectors)
    "utf8_4",  # characters of four bytes (emoji, rare ideographs)
    "ascii_in_unicode",  # ASCII characters inside a piece that holds non-ASCII ones
)
WEIGHTS = (
    1.0, 0.996, 0.096, 0.511, 0.185, 0.125, 1.827, 0.982,
    0.647, 1.006, 0.149, 0.878, 0.856, 1.656, 2.476, 0.139,
)
(
    _ONE, _WORD, _WORD_LONG, _AFTER_SYMBOL, _FEW_VOWELS, _UPPER, _CAMEL, _ESCAPE,
    _ESCAPE_LETTERS, _PUNCT, _PUNCT_LONG, _CJK, _UTF8_2, _UTF8_3, _UTF8_4, _ASCII_IN_UNICODE,
) = range(len(FEATURES))
MARGIN = 1.03
#: Memoised piece costs are dropped when this many have accumulated (random ids never repeat).
CACHE_LIMIT = 1 << 16
#: Longer pieces (a base64 blob) are costed every time, not memoised.
CACHE_MAX_PIECE = 64

_VOWELS = str.maketrans("", "", "aeiouyAEIOUY")
_HEX_LETTERS = "abcdef"
#: Leading characters that usually merge with the letters that follow (``_id``, ``.append``, ``(self``).
_MERGING_PREFIXES = " _.("
_CAMEL_CHANGE = re.compile(r"[a-z][A-Z]")

_HAN_SINGLE = (
    "一万三上下不与专业东两个中串为主么义之也书了事二于五些交产享京人亿今介从他付代以们件价任份企优会传但位体何余作你使例供価"
    "保信修倍值停像元先入全公共关其具内円册再写出击分列则初利别到制前力功加务动動包化北区十午华单南即历原去县参及友反发取变口"
    "只可台右号司合同名后向否含听启告员周命和品哈商問器四回因国图土在地场址型城基報場填增声处备复外多大天失头女好如始子字存学"
    "安宋完定实审客家容密对导将小少尔就局展山岁州工左已市布常平年并广序库应店度建开异式引张当录形影径待後得微心必志态思性总息"
    "您情意感成我或户所手打找技投报拉持指按换据排接推提播支收改放政效数整文料断新方族无日时明易星是時景更最月有服期木未本机权"
    "束条来板构析果查标样核格案检模次款止正此步歳段每比民気水求江汽没治法注活流海消清游源火点無然片版物特率环现球理生用由电男"
    "画界番登的监目直相省看県真知码确示社票私种科秒称移程稍税稿空立站章端笑符第等签简算管箱米类系素索约级线组经结给络统编网置"
    "美老考者而联能自至色节英藏行表装西要見见规视角解言計記話読计认议记论设证评试话询该详语误说请读调象责败账货购费资起超路身"
    "车转软载辑输达过运近还这进连述退送选通速造連道邮部都配释里重量金钟钮链销错键长開間関门闭问间队阳陆限院除雅集雷需非面音页"
    "项预频题额首验高黑"
)
_HANGUL_SINGLE = (
    "가간값개거게결경고공과구그글기나내는능니다당대도동되된드든들디라래러력로록료류른를름리만메면명목문미버번보복부분비사산상"
    "색생서성세션소수스습시식신아야어에여열오와요용우운원위으은을음의이인일임입자작장재적전정제져조주지진째체출치크태터턴트튼"
    "하한할함해호화환회"
)
_KANA_SINGLE = (
    "あいうえおかがきくけこごさざしじすせそただちっつてでとどなにのはばまみめもやよらりるれろわをんアィイウェエオカキクグコサ"
    "シジスズセタダチッテデトドナニバパビピフブプペポマムメャュョラリルレロン・ー"
)
_HAN_TRIPLE = 0xb7fffdb0c003ef701f001831fdfe407083c90009c1ce3cede0000fd4000900e400781f404784001400
_HANGUL_TRIPLE = 0x7cdfebe5fdbaff2e801ff383feb279143fe653cbfc50
_HAN, _HANGUL, _KANA = (0x4E00, 0xA000), (0xAC00, 0xD7A4), (0x3040, 0x3100)


@cache
def _cjk_costs() -> dict[str, int]:
    """cl100k cost of every Han, Hangul and kana character (built once, ~32k entries)."""
    costs = {}
    for (lo, hi), triple in ((_HAN, _HAN_TRIPLE), (_HANGUL, _HANGUL_TRIPLE), (_KANA, 0)):
        for o in range(lo, hi):
            costs[chr(o)] = 3 if triple >> ((o >> 6) - (lo >> 6)) & 1 else 2
    costs.update(dict.fromkeys(_HAN_SINGLE + _HANGUL_SINGLE + _KANA_SINGLE, 1))
    return costs


def piece_features(piece: str) -> list[float]:
    """The :data:`FEATURES` of one piece of :data:`PIECES`."""
    f = [0.0] * len(FEATURES)
    if not piece.isascii():
        _unicode(f, piece)
    elif piece.isspace() or piece.isdecimal() or _CONTRACTION.fullmatch(piece):
        f[_ONE] = 1
    elif m := _LETTER_PIECE.fullmatch(piece):
        _word(f, m.group(1), m.group(2))
    else:
        f[_PUNCT] = 1
        f[_PUNCT_LONG] = max(0, len(piece.lstrip(" ").rstrip("\r\n")) - 2)
    return f


def _word(f: list[float], prefix: str, letters: str) -> None:
    """Features of an ASCII letter piece: ``prefix`` is its optional leading character."""
    n = len(letters)
    if prefix == "\\" and letters[0] == "u" and not letters[1:].strip(_HEX_LETTERS):
        f[_ESCAPE], f[_ESCAPE_LETTERS] = 1, n - 1
        return
    f[_WORD] = 1
    if prefix and prefix not in _MERGING_PREFIXES:
        f[_AFTER_SYMBOL] = 1
    if prefix != " ":
        f[_WORD_LONG] = max(0, n - 3)
    if n >= 3 and 4 * (n - len(letters.translate(_VOWELS))) < n:
        f[_FEW_VOWELS] = n - 2
    if letters.isupper():
        f[_UPPER] = n - 1
    elif not letters.islower() and not letters.istitle():
        f[_CAMEL] = len(_CAMEL_CHANGE.findall(letters))


def _unicode(f: list[float], piece: str) -> None:
    """Features of a piece holding non-ASCII characters, counted character by character."""
    cjk = _cjk_costs()
    for ch in piece:
        cost = cjk.get(ch)
        o = ord(ch)
        if cost is not None:
            f[_CJK] += cost
        elif o < 0x80:
            f[_ASCII_IN_UNICODE] += 1
        elif o < 0x800:
            f[_UTF8_2] += 1
        elif o < 0x10000:
            f[_UTF8_3] += 1
        else:
            f[_UTF8_4] += 1


def pieces(text: str) -> list[str]:
    """``text`` split as cl100k_base's pre-tokenizer splits it."""
    return (_ASCII_PIECES if text.isascii() else PIECES).findall(text)


def estimate_features(text: str) -> list[float]:
    """Sums of the :data:`FEATURES` over the pieces of ``text`` (what WEIGHTS were fitted on)."""
    total = [0.0] * len(FEATURES)
    for piece in pieces(text):
        total = [a + b for a, b in zip(total, piece_features(piece))]
    return total


class _PieceCosts(dict[str, float]):
    """piece -> weighted cost, computed on first sight; emptied when CACHE_LIMIT is reached."""

    def __missing__(self, piece: str) -> float:
        cost = sum(w * x for w, x in zip(WEIGHTS, piece_features(piece)))
        if len(piece) <= CACHE_MAX_PIECE:
            if len(self) >= CACHE_LIMIT:
                self.clear()
            self[piece] = cost
        return cost


_costs = _PieceCosts()


def estimate_tokens(text: str) -> int:
    """Estimated cl100k_base token count of ``text``: pure Python, no dependencies.

    A few percent over the exact count summed over each content class measured, but not an upper
    bound: a short text can be under-counted by up to a third (docs/tokens.md), which is why the
    default counter is the exact one. 0 for the empty string.
    """
    return int(MARGIN * sum(map(_costs.__getitem__, pieces(text))) + 0.5)
