"""The inspector's API and its door (redmem.ui): token, host and origin checks, no write on a GET,
paging and ordering without loading a partition, typed errors, the actions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from conftest import configured_embeddings
from redmem.cli_commands._conversation import ChatTurn
from redmem.cli_commands._ingest import store_turns
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.store import settings
from redmem.ui import build_app
from redmem.ui._decay_order import wait_for_builds
from redmem.ui._inventory import parse_filter

TOKEN = "t0k3n"
HEADERS = {"X-Redmem-Token": TOKEN}
LINES = ["Ana drinks lapsang souchong every morning.", "Ana's bicycle is a red fixie.",
         "The deploy freeze starts on Friday.", "Ana's sister lives in Porto.", "Ana drinks green tea at night."]


@pytest.fixture
def client(db):
    with configured_embeddings(HashingEmbeddings(384)):
        start = datetime(2026, 1, 10, 9, tzinfo=UTC)
        store_turns([ChatTurn(line, start + timedelta(days=i), f"s{i}", "Ana") for i, line in enumerate(LINES)], "ana")
        store_turns([ChatTurn("Bo keeps bees.", start, "s9", "Bo")], "bo")
        yield TestClient(build_app(TOKEN, {"testserver"}, "ana"))


def test_the_page_and_the_api_need_the_token(client):
    assert client.get("/").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    page = client.get(f"/?token={TOKEN}")
    assert page.status_code == 200 and "/static/app.js" in page.text and "http" not in page.text.split("<body>")[1]
    assert client.get("/api/tenants").status_code == 403
    assert client.get("/api/tenants", headers=HEADERS).status_code == 200
    assert client.get("/static/app.js").status_code == 200  # package files, no data
    assert client.get("/static/app.py").status_code == 404


def test_other_origins_and_hosts_are_refused(client):
    evil = client.get("/api/tenants", headers={**HEADERS, "Origin": "http://evil.example"})
    assert evil.status_code == 403 and "refused" in evil.json()["error"]["message"]
    assert client.get("/api/tenants", headers={**HEADERS, "Origin": "http://testserver"}).status_code == 200
    rebound = client.get("/api/tenants", headers={**HEADERS, "Host": "attacker.example"})
    assert rebound.status_code == 403


def test_tenants_with_counts_and_sizes(client):
    tenants = {t["agent"]: t for t in client.get("/api/tenants", headers=HEADERS).json()["tenants"]}
    assert tenants["ana"]["memories"] == 5 and tenants["bo"]["memories"] == 1
    assert tenants["ana"]["bytes"] > tenants["bo"]["bytes"] > 0


@pytest.mark.parametrize("sort", ["decay", "confidence", "newest", "oldest", "id"])
def test_pages_cover_every_memory_once_in_each_order(client, sort):
    seen = []
    for offset in (0, 2, 4):
        page = client.get(f"/api/agents/ana/memories?sort={sort}&offset={offset}&limit=2", headers=HEADERS).json()
        assert page["total"] == 5
        seen += [row["memory_id"] for row in page["rows"]]
    assert len(seen) == len(set(seen)) == 5
    if sort in ("newest", "oldest"):
        contents = [client.get(f"/api/agents/ana/memories/{i}", headers=HEADERS).json()["fields"]["content"] for i in seen]
        assert contents == (LINES[::-1] if sort == "newest" else LINES)


def test_search_ranks_by_match_and_the_filter_error_is_typed(client):
    found = client.get("/api/agents/ana/memories?q=lapsang souchong", headers=HEADERS).json()
    assert found["order"] == "relevance" and "lapsang" in found["rows"][0]["content"]
    assert found["rows"][0]["match"] >= found["rows"][-1]["match"]
    bad = client.get("/api/agents/ana/memories?filter=speaker=Ana", headers=HEADERS)
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "QueryException" and "indexed fields" in bad.json()["error"]["message"]
    unreadable = client.get("/api/agents/ana/memories?filter=speaker", headers=HEADERS)
    assert "field=value" in unreadable.json()["error"]["message"]


def test_one_memory_and_a_missing_one(client):
    first = client.get("/api/agents/ana/memories?sort=oldest&limit=1", headers=HEADERS).json()["rows"][0]
    one = client.get(f"/api/agents/ana/memories/{first['memory_id']}", headers=HEADERS).json()
    assert one["fields"]["content"] == LINES[0] and one["scores"]["confidence"] == pytest.approx(0.5)
    assert {"count", "log", "staged"} <= set(one["access"]) and "evidence_count" in one["outcomes"]
    assert [version["memory_id"] for version in one["history"]] == [first["memory_id"]]  # ChatMemory's versions
    assert one["history"][0]["valid_to"] is None
    timeline = one["timeline"]
    decays = [p["decay"] for p in timeline["points"]]
    assert decays == sorted(decays, reverse=True) and len(decays) >= 5  # the curve falls from the last touch
    assert any(p["past"] for p in timeline["points"]) and not timeline["points"][-1]["past"]  # and runs ahead
    now = next(p for p in timeline["points"] if p["days"] == timeline["now_days"])
    assert now["decay"] == pytest.approx(one["scores"]["decay"], rel=1e-3)
    missing = client.get("/api/agents/ana/memories/nope-nope", headers=HEADERS)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "RecordNotFound"


def test_nothing_is_done_without_a_confirmed_post(client):
    target = client.get("/api/agents/ana/memories?sort=oldest&limit=1", headers=HEADERS).json()["rows"][0]["memory_id"]
    assert client.get("/api/agents/ana/actions/forget", headers=HEADERS).status_code == 405
    unconfirmed = client.post("/api/agents/ana/actions/forget", json={"memory_ids": [target]}, headers=HEADERS)
    assert unconfirmed.status_code == 400 and "confirm" in unconfirmed.json()["error"]["message"]
    assert client.post("/api/agents/ana/actions/forget", json={"memory_ids": [target], "confirm": True}).status_code == 403
    assert ChatMemory.query.filter(agent_id="ana").count() == 5
    done = client.post("/api/agents/ana/actions/forget", json={"memory_ids": [target], "confirm": True}, headers=HEADERS)
    assert done.json() == {"forgotten": [target], "not_found": []}
    assert ChatMemory.query.filter(agent_id="ana").count() == 4


def test_feedback_export_and_unknown_action(client):
    target = client.get("/api/agents/ana/memories?sort=oldest&limit=1", headers=HEADERS).json()["rows"][0]["memory_id"]
    reported = client.post("/api/agents/ana/actions/feedback", headers=HEADERS,
                           json={"outcomes": {target: "contradicted"}, "confirm": True})
    assert reported.json() == {"outcomes": {target: "contradicted"}}
    after = client.get(f"/api/agents/ana/memories/{target}", headers=HEADERS).json()
    assert after["outcomes"]["contradictions"] == 1 and after["scores"]["confidence"] < 0.5
    bad = client.post("/api/agents/ana/actions/feedback", headers=HEADERS,
                      json={"outcomes": {target: "loved"}, "confirm": True})
    assert bad.status_code == 400 and bad.json()["error"]["type"]
    exported = client.post("/api/agents/ana/actions/export", json={"confirm": True}, headers=HEADERS).json()
    assert sorted(m["content"] for m in exported["memories"]) == sorted(LINES)
    unknown = client.post("/api/agents/ana/actions/rewrite", json={"confirm": True}, headers=HEADERS)
    assert unknown.status_code == 400 and "unknown action" in unknown.json()["error"]["message"]


def test_the_playground_explains_and_shows_the_budget(client):
    reply = client.post("/api/agents/ana/assemble", headers=HEADERS,
                        json={"question": "What tea does Ana drink?", "max_tokens": 300, "confirm": True}).json()
    assert reply["max_tokens"] == 300 and 0 < reply["token_count"] <= 300
    items = reply["explanation"]["items"]
    assert items and items[0]["arms"] and "tea" in items[0]["content"]
    assert "lapsang" in reply["context"]


def test_filter_text():
    assert parse_filter("") == {}
    assert parse_filter("memory_id__in=a, b&kind=fact") == {"memory_id__in": ["a", "b"], "kind": "fact"}
    assert parse_filter('{"importance__gte": 0.5}') == {"importance__gte": 0.5}


def test_redmem_ui_serves_the_page_at_the_url_it_prints(redis_url, db):
    """``redmem ui --port 0`` prints a loopback URL with its token; the page answers there, and not without it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "redmem.cli", "--url", redis_url, "--prefix", settings().key_prefix,
         "--embeddings", "hashing", "ui", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "300"})
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", line).group(0)
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.status == 200 and b"/static/app.js" in reply.read()
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(url.split("?")[0], timeout=10)
    finally:
        process.terminate()
        process.wait(10)


def test_a_large_partition_pages_by_its_exact_decay_order(client, monkeypatch):
    """Above EXACT_DECAY_LIMIT memories the decay order is the exact one at a stated time, read from Redis
    (once built in the background: tests/integration/ui/test_ui_decay_order.py)."""
    monkeypatch.setattr("redmem.ui._inventory.EXACT_DECAY_LIMIT", 3)
    client.get("/api/agents/ana/memories?sort=decay&limit=5", headers=HEADERS)
    wait_for_builds()
    page = client.get("/api/agents/ana/memories?sort=decay&limit=5", headers=HEADERS).json()
    assert page["order"].startswith("decay (exact at ") and len(page["rows"]) == 5
    assert [row["decay"] for row in page["rows"]] == sorted((row["decay"] for row in page["rows"]), reverse=True)
    small = client.get("/api/agents/bo/memories?sort=decay", headers=HEADERS).json()
    assert small["order"] == "decay"
