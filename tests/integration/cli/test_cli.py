"""The redmem command: doctor, demo, ingest, ask, chat, inspect, reindex (``run_cli`` runs it in this process;
the tests of the demo on its embedded server and of the shared local server start processes of their own)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import redmem
from conftest import configured_embeddings
from openai_server import OpenAICompatibleServer
from redmem import ObservationProtocol, cli
from redmem._demo import DEMO_PREFIX
from redmem.cli import parser
from redmem.cli_commands._demo_run import DemoRun
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.store import settings
from redmem.store._local_server import LocalServer

#: The environment of every run: wide tables, and no chat model unless a test gives one.
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}


def run_cli(*args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``redmem ARGS`` with its own environment, input and output, run in this process (``main`` as
    ``python -m redmem.cli`` calls it); the tests that need a process of its own start one."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, {**BASE_ENV, "COLUMNS": "200", **(env or {})}, clear=True), \
            mock.patch.object(sys, "stdin", io.StringIO(stdin or "")), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as stop:  # argparse's usage errors
            code = stop.code if isinstance(stop.code, int) else 1
    return subprocess.CompletedProcess(["redmem", *args], code, out.getvalue(), err.getvalue())


def redmem_cli(*args: str, env: dict | None = None, stdin: str | None = None) -> str:
    result = run_cli(*args, env=env, stdin=stdin)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def on_test_server(redis_url: str, *args: str, **options) -> str:
    """Run a command against the test server, under the current test's key prefix."""
    return redmem_cli("--url", redis_url, "--prefix", settings().key_prefix, *args, **options)


def test_doctor_reports_server_mode_and_latency(redis_url, db):
    out = redmem_cli("--url", redis_url, "doctor")
    version = db.info("server")["redis_version"]
    assert version in out
    assert "standalone" in out and "lua scripts" in out and " ok " in out
    assert "p50" in out and "over 200" in out
    assert "hiredis" in out


def test_doctor_on_a_cluster(cluster_url):
    out = redmem_cli("--url", cluster_url, "doctor")
    assert "cluster (3 primaries)" in out


def test_global_options_go_before_or_after_the_command():
    before = parser().parse_args(["--url", "redis://a:1", "--prefix", "p", "--embeddings", "hashing", "ask", "q"])
    after = parser().parse_args(["ask", "q", "--url", "redis://a:1", "--prefix", "p", "--embeddings", "hashing"])
    assert (before.url, before.prefix, before.embeddings) == (after.url, after.prefix, after.embeddings) \
        == ("redis://a:1", "p", "hashing")
    mixed = parser().parse_args(["--url", "redis://a:1", "--prefix", "p", "ingest", "f", "--prefix", "q"])
    assert (mixed.url, mixed.prefix, mixed.embeddings) == ("redis://a:1", "q", "auto")  # after wins, before kept
    neither = parser().parse_args(["demo"])
    assert (neither.url, neither.prefix, neither.embeddings, neither.verbose) == (None, None, "auto", False)


def test_url_after_the_command_reaches_the_server(redis_url, db, tmp_path):
    out = redmem_cli("doctor", "--url", redis_url)
    assert db.info("server")["redis_version"] in out and "the server of --url or REDIS_URL" in out
    lines = tmp_path / "ed.txt"
    lines.write_text("Ed keeps bees on the roof.\n")
    stored = redmem_cli("ingest", str(lines), "--agent", "ed", "--url", redis_url, "--prefix", settings().key_prefix,
                        "--embeddings", "hashing")
    assert f"key prefix {settings().key_prefix!r} on " in stored and "the server of --url or REDIS_URL" in stored
    stored = ChatMemory.query.filter(agent_id="ed").no_track().all()
    assert [m.content for m in stored] == ["Ed keeps bees on the roof."]


def test_doctor_names_an_unreachable_server():
    result = run_cli("--url", "redis://127.0.0.1:1", "doctor")
    assert result.returncode == 1
    assert "cannot reach Redis at 127.0.0.1:1" in result.stdout


# -- demo ----------------------------------------------------------------------------------------
def turns_of(out: str) -> list[str]:
    """The demo's output per user turn."""
    return re.split(r"─+ user turn \d: ", out)[1:]


def test_demo_on_the_embedded_server_assembles_reports_and_moves_scores():
    env = {k: v for k, v in BASE_ENV.items() if k != "REDIS_URL"}
    result = subprocess.run([sys.executable, "-m", "redmem.cli", "demo", "--verbose"], capture_output=True, text=True,
                            timeout=120, env={**env, "COLUMNS": "200"})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "private embedded server, gone when the command ends" in out and "chat model: none" in out
    assert "outcomes are scripted, not chosen by an LLM" in out
    assert "stored 102 memories" in out
    turns = turns_of(out)
    assert len(turns) == 4
    for turn in turns:
        assert re.search(r"context \(structured, \d+ / 600 tokens\)", turn)
        # pull records, and the routines the push path surfaced among them
        assert re.search(r"[1-8] records \(\d+ pull, \d push(, \d of them both)?\) of \d+ candidates, "
                         r"\d+ / 600 tokens, hybrid", turn)
        header = turn.split("trace:")[1].splitlines()[2]
        assert all(name in header for name in ("rank", "source", "score", "bm25", "vector", "convex", "match"))
        assert re.search(r"^\s+1\s+(pull|both)\s+\d\.\d{3}", turn, re.M)
    dinner, lisbon, billing, biscuit = turns
    # the glucosamine routine is a hit of this question, and due. (Of the dinner question too
    # before ChatMemory searched each turn's context: now its 8 slots go to turns about cooking
    # for the parents, and a due routine that is no hit comes after every hit.)
    assert "cyclic" in biscuit.split("trace:")[1].splitlines()[2]
    assert re.search(r"^\s+\d\s+both\s.*\s\d\.\d{3}\s+Maya: .*every", biscuit, re.M)
    for turn in (lisbon, billing):  # unrelated: the hits fill the 8 slots, no proactive record
        assert not re.search(r"^\s+\d\s+push\s", turn, re.M)
    assert "vegetarian" in dinner.split("trace:")[0] and "Dana is coming instead" in lisbon.split("trace:")[0]
    assert "idempotency key" in billing.split("trace:")[0] and "glucosamine" in biscuit.split("trace:")[0]
    # the outcomes move the scores: acted-on memories gain confidence and are refreshed,
    # contradicted ones lose confidence, dismissed routines weaken
    acted = re.findall(r"acted\s+0\.500 -> 0\.700\s+(\d\.\d{3}) -> (\d\.\d{3})", out)
    assert acted and all(float(after) > float(before) for before, after in acted)
    assert re.search(r"contradicted\s+0\.500 -> 0\.300\s+.*steak", dinner)
    # (the Lisbon question's context no longer holds the overturned "sister Jo" plan, only the
    # turns that overturned it, so nothing there is reported contradicted)
    dismissed = re.findall(r"dismissed\s+\S+ -> \S+\s+\S+ -> \S+\s+(\d\.\d{3}) -> (\d\.\d{3})", out)
    assert all(float(after) < float(before) for before, after in dismissed)  # (none: no routine was pushed unasked)
    moved = re.search(r"confidence rose for (\d+) memories acted on and fell for (\d+) contradicted", out)
    assert moved and int(moved[1]) >= 4 and int(moved[2]) >= 1
    assert "demo done in" in out


def test_demo_asks_the_configured_model(redis_url, db):
    with OpenAICompatibleServer() as server:
        out = on_test_server(redis_url, "--embeddings", "hashing", "demo",
                             env={"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "tiny-model"})
        chats = [body for path, body, _ in server.requests if path == "/v1/chat/completions"]
    assert "chat model: tiny-model at" in out
    assert "tiny-model: echo: My parents are visiting again. What should I cook for dinner?" in out
    assert len(chats) == 4 and all(body["model"] == "tiny-model" for body in chats)
    system = chats[0]["messages"][0]
    assert system["role"] == "system" and "vegetarian" in system["content"]
    assert "redmem --url" in out and "inspect" in out  # memories kept on a server of the user's


def sections_of(out: str) -> list[list[str]]:
    """The demo's output cut at its rules (the start, each user turn, what the outcomes did)."""
    sections: list[list[str]] = [[]]
    for line in out.splitlines():
        if line.startswith("──"):
            sections.append([])
        sections[-1].append(line)
    return sections


def test_demo_keeps_to_its_own_memories_and_one_screen_per_section(redis_url, db, tmp_path):
    prefix, demo = settings().key_prefix, ChatMemory.query.filter(agent_id="demo").no_track()
    first = on_test_server(redis_url, "--embeddings", "hashing", "demo")
    assert "writes to agent 'demo', key prefix " + repr(prefix) in first and "stored 102 memories" in first
    again = on_test_server(redis_url, "--embeddings", "hashing", "demo")
    assert "removed the 102 memories an earlier demo run created" in again and demo.count() == 102
    lines = tmp_path / "mem.txt"
    lines.write_text("Fay's locker code is 4711.\nFay cycles to work.\nFay's cat is called Pixel.\n")
    on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(lines), "--agent", "demo")  # as the report did
    mixed = run_cli("--url", redis_url, "--prefix", prefix, "--embeddings", "hashing", "demo")
    assert mixed.returncode == 1
    assert f"agent 'demo' under key prefix {prefix!r} holds 3 memories the demo did not create" in mixed.stdout
    assert demo.count() == 105  # the demo deleted nothing and added nothing
    # by default the demo writes under its own prefix, apart from ingest / ask / chat
    assert parser().parse_args(["ask", "q"]).prefix is None and DEMO_PREFIX != "rm"
    try:
        out = redmem_cli("--url", redis_url, "--embeddings", "hashing", "demo", env={"COLUMNS": "80"})
        flat = " ".join(out.split())  # lines wrap at 80 columns
        assert f"key prefix {DEMO_PREFIX!r} on " in flat and "(the server of --url or REDIS_URL)" in flat
        assert f"under key prefix {DEMO_PREFIX!r}, agent 'demo'" in flat
        assert f"redmem --url {redis_url} --prefix {DEMO_PREFIX} ask --agent demo" in flat
        assert "outcomes are scripted, not chosen by an LLM" in flat
        # piped at 80 columns: each section fits one screen (the trace and context need --verbose)
        assert len(out.splitlines()) <= 100, out
        assert max(len(section) for section in sections_of(out)) <= 24, out
        assert len(sections_of(out)) == 8 and "╭─ context" not in out  # the 7th: HSCA, the 8th: frames
    finally:
        redmem.configure(key_prefix=DEMO_PREFIX)
        DemoRun("demo").clear()
        redmem.configure(key_prefix=prefix)
    found = on_test_server(redis_url, "--embeddings", "hashing", "ask", "What is the locker code?", "--agent", "demo",
                           "--format", "content")
    assert "- Fay's locker code is 4711." in found


# -- ingest, ask, inspect ------------------------------------------------------------------------
CONVERSATION = {
    "sessions": [
        {"session": "a1", "date": "2026-01-10", "turns": [
            {"speaker": "Ana", "text": "My favourite tea is smoked lapsang souchong."},
            {"speaker": "assistant", "text": "Lapsang souchong has a lovely pine smoke aroma."},
            {"speaker": "Ana", "text": "I drink it every afternoon at four.", "recurring": True},
        ]},
        {"session": "a2", "date": "2026-02-01T09:30:00", "turns": [
            {"speaker": "Ana", "text": "My cat Pixel knocked the teapot off the shelf."},
            {"speaker": "assistant", "text": "Poor teapot! Is Pixel alright?"},
        ]},
    ]
}


def ingest_conversation(tmp_path, redis_url) -> str:
    conversation = tmp_path / "ana.json"
    conversation.write_text(json.dumps(CONVERSATION))
    return on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(conversation), "--agent", "ana")


def test_ingest_then_ask_finds_the_ingested_text_for_that_agent_only(redis_url, db, tmp_path):
    out_a = ingest_conversation(tmp_path, redis_url)
    lines = tmp_path / "bo.txt"
    lines.write_text("Bo prefers green tea with jasmine.\n\nBo's bicycle is a red fixie.\n")
    out_b = on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(lines), "--agent", "bo")
    assert "ingested 5 memories for agent 'ana' from 2 sessions" in out_a and "5/5" in out_a
    assert "ingested 2 memories for agent 'bo'" in out_b
    ana = on_test_server(redis_url, "--embeddings", "hashing", "ask", "Which tea do I like?", "--agent", "ana")
    assert "lapsang souchong" in ana and "jasmine" not in ana
    assert re.search(r"context \(structured, \d+ / 2000 tokens\)", ana)
    assert f"{settings().key_prefix}:ChatMemory:{{ana}}:r:" in ana  # the trace names the keys
    bo = on_test_server(redis_url, "--embeddings", "hashing", "ask", "Which tea do I like?", "--agent", "bo",
                        "--format", "content", "--max-items", "1")
    assert "- Bo prefers green tea with jasmine." in bo and "lapsang" not in bo
    assert "1 records (1 pull, 0 push)" in bo
    stored = ChatMemory.query.filter(agent_id="ana").no_track().all()
    assert {m.session for m in stored} == {"a1", "a2"} and {m.date for m in stored} == {"2026-01-10", "2026-02-01"}
    assert {m.speaker for m in stored} == {"Ana", "assistant"}
    assert [m.routine for m in stored if "four" in m.content] == [1.0]


def test_ingest_then_ask_without_a_url_share_the_local_server(tmp_path):
    env = {k: v for k, v in BASE_ENV.items() if k != "REDIS_URL"}
    lines = tmp_path / "gus.txt"
    lines.write_text("Gus grows chillies on the balcony.\nGus plays the cello.\nGus is allergic to cats.\n")
    with tempfile.TemporaryDirectory(prefix="rm-cli-", dir="/tmp") as directory:
        data = Path(directory) / "data"
        local = LocalServer(data)
        env["REDMEM_DATA_DIR"] = str(data)

        def cli(*args: str) -> str:
            result = subprocess.run([sys.executable, "-m", "redmem.cli", "--embeddings", "hashing", *args],
                                    capture_output=True, text=True, timeout=120, env={**env, "COLUMNS": "200"})
            assert result.returncode == 0, result.stdout + result.stderr
            return result.stdout

        try:
            stored = cli("ingest", str(lines))
            assert "ingested 3 memories for agent 'default'" in stored and f"local server, data in {data}" in stored
            assert f"started the local server with its data in {data}" in stored
            found = cli("ask", "What does Gus grow?", "--format", "content")
            assert "- Gus grows chillies on the balcony." in found and "started the local server" not in found
            assert "stopped the local server" in cli("server", "stop")
            assert "not running" in cli("server", "status")
            again = cli("ask", "Who plays the cello?", "--format", "content")  # started again from the same files
            assert "started the local server" in again and "- Gus plays the cello." in again
        finally:
            local.stop()


def test_ingest_names_a_malformed_file(redis_url, db, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sessions": [{"turns": [{"speaker": "x"}]}]}))
    result = run_cli("--url", redis_url, "--prefix", settings().key_prefix, "ingest", str(bad))
    assert result.returncode == 1
    assert 'session 1, turn 1: a turn is an object with a non-empty "text"' in result.stdout


def test_ingest_with_said_at_and_session_dates_and_links_the_turns(redis_url, db, tmp_path):
    lines = tmp_path / "cy.txt"
    lines.write_text("Did you ever go scuba diving near Belize?\nYes, twice last year!\n")
    out = on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(lines), "--agent", "cy",
                         "--said-at", "1:56 pm on 8 May, 2023", "--session", "s1")
    assert "ingested 2 memories for agent 'cy' from 1 sessions" in out
    question, answer = sorted(ChatMemory.query.filter(agent_id="cy").no_track().all(), key=lambda m: m.position)
    assert (question.date, question.said_at, answer.said_at) == (
        "2023-05-08", "2023-05-08T13:56:00+00:00", "2023-05-08T13:56:01+00:00")
    assert answer.context == "> Did you ever go scuba diving near Belize?\n[1:56 pm on 8 May, 2023] Yes, twice last year!"
    space = ChatMemory._meta.keyspace(("cy",))
    stamp = db.zscore(ChatMemory.relevance.keys_in(space).updated, answer.db_key.record_id)
    assert stamp == 1683554161.0  # the decay clock starts when it was said
    found = on_test_server(redis_url, "--embeddings", "hashing", "ask", "scuba diving Belize", "--agent", "cy",
                           "--format", "content", "--max-items", "2")
    assert "- Yes, twice last year!" in found
    conversation = tmp_path / "dy.json"
    conversation.write_text(json.dumps({"sessions": [{"session": "d", "date": "2023-05-08", "turns": [
        {"speaker": "Dy", "text": "Back from Oslo.", "said_at": "2023-06-01T09:00:00Z"}]}]}))
    on_test_server(redis_url, "--embeddings", "hashing", "ingest", str(conversation), "--agent", "dy")
    [oslo] = ChatMemory.query.filter(agent_id="dy").no_track().all()
    assert (oslo.date, oslo.said_at) == ("2023-06-01", "2023-06-01T09:00:00+00:00")


def test_ingest_with_an_unreadable_said_at_names_it_and_writes_nothing(redis_url, db, tmp_path):
    lines = tmp_path / "ed.txt"
    lines.write_text("Ed keeps bees.\n")
    result = run_cli("--url", redis_url, "--prefix", settings().key_prefix, "--embeddings", "hashing",
                     "ingest", str(lines), "--agent", "ed", "--said-at", "yesterday")
    assert result.returncode == 1
    assert "--said-at: 'yesterday' is not a time: use ISO 8601" in result.stdout + result.stderr
    bad = tmp_path / "ed.json"
    bad.write_text(json.dumps({"sessions": [{"session": "e", "turns": [
        {"text": "Ed keeps bees."}, {"text": "Since May.", "said_at": "sometime in May"}]}]}))
    result = run_cli("--url", redis_url, "--prefix", settings().key_prefix, "--embeddings", "hashing",
                     "ingest", str(bad), "--agent", "ed")
    assert result.returncode == 1 and "session 1, turn 2: 'sometime in May' is not a time" in result.stdout
    assert ChatMemory.query.filter(agent_id="ed").no_track().count() == 0


def test_inspect_shows_fields_scores_confidence_edges_and_access_without_tracking(redis_url, db, tmp_path):
    ingest_conversation(tmp_path, redis_url)
    on_test_server(redis_url, "--embeddings", "hashing", "ask", "smoked lapsang tea", "--agent", "ana")
    memories = ChatMemory.query.filter(agent_id="ana").no_track().all()
    tea = next(m for m in memories if "favourite tea" in m.content)
    staged = tea.staged_accesses
    assert len(staged) == 1  # the ask staged a read
    ObservationProtocol.on_context_used([tea], {tea.db_key.redis_key: "acted"})
    reply = next(m for m in memories if m.content.startswith("Lapsang souchong has"))
    ChatMemory.associations.link(tea, reply, 0.5)  # (turns are linked by their context, not in the graph)
    out = on_test_server(redis_url, "inspect", tea.db_key.redis_key)
    assert "My favourite tea is smoked lapsang souchong." in out and "2026-01-10" in out
    assert "0.7000 from 1 signals (1 corroborating, 0 contradicting)" in out
    assert re.search(r"relevance \(decay\)\s+│\s+1\.5849 now", out)  # touched by the outcome
    edges = out.split("edges (associations")[1]
    assert "0.500" in edges and "Lapsang souchong has a lovely pine smoke aroma." in edges
    assert "Pixel" not in edges  # the next session is not linked
    assert re.search(r"confirmed accesses\s+│\s+1", out)
    same = on_test_server(redis_url, "inspect", tea.memory_id[:6], "--agent", "ana")
    assert "My favourite tea is smoked lapsang souchong." in same
    assert tea.staged_accesses == [] and tea.access_count == 1  # inspecting staged nothing


def test_inspect_names_what_it_cannot_find(redis_url, db):
    result = run_cli("--url", redis_url, "--prefix", settings().key_prefix, "inspect", "zzzz", "--agent", "nobody")
    assert result.returncode == 1 and "no record" in result.stdout
    other = run_cli("--url", redis_url, "inspect", "rm:Other:{x}:r:1")
    assert other.returncode == 1 and "pass --model MODULE:Other" in other.stdout


# -- reindex -------------------------------------------------------------------------------------
NOTES_V1 = """
from redmem import AutoKeyField, BM25Field, Model, StringField

class Note(Model):
    class Meta:
        name = "Note"  # both versions, imported in one process, name the one key space on purpose

    note_id = AutoKeyField()
    text = StringField()
"""
#: The same model once a BM25 index is declared on it.
NOTES_V2 = NOTES_V1 + """    text_bm25 = BM25Field(source="text")
"""


def test_reindex_makes_old_records_searchable(redis_url, db, tmp_path, monkeypatch):
    (tmp_path / "notes_v1.py").write_text(NOTES_V1)
    (tmp_path / "notes_v2.py").write_text(NOTES_V2)
    monkeypatch.syspath_prepend(str(tmp_path))
    import notes_v1
    import notes_v2

    texts = ["the heron stands in the reeds", "a kingfisher dives", "herons nest in colonies"]
    notes_v1.Note.save_many([notes_v1.Note(text=t) for t in texts])
    assert notes_v2.Note.query.keyword_search("heron") == []  # declared after the records were saved
    out = on_test_server(redis_url, "reindex", "notes_v2:Note", "--fields", "text_bm25",
                         env={"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    assert "reindexed 3 Note records (text_bm25)" in out and "3/3" in out
    found = notes_v2.Note.query.keyword_search("heron")
    assert sorted(n.text for n in found) == ["herons nest in colonies", "the heron stands in the reeds"]


def test_reindex_names_a_model_it_cannot_import(redis_url, db):
    result = run_cli("--url", redis_url, "reindex", "no_such_module:Note")
    assert result.returncode == 1 and "cannot import 'no_such_module'" in result.stdout


# -- chat ----------------------------------------------------------------------------------------
def test_chat_without_a_model_shows_what_it_would_send_and_remembers(redis_url, db):
    stdin = "My bike is a green Gazelle from 1986.\nWhat colour is my bike?\n/quit\nnever read\n"
    out = on_test_server(redis_url, "--embeddings", "hashing", "chat", "--agent", "cy", stdin=stdin)
    assert "no chat model" in out and out.count("would send:") == 2
    second = out.split("would send:")[2]
    system = second.split("╭─ user")[0]
    assert "Memories:" in system and "My bike is a green Gazelle from 1986." in system
    assert "bye: 2 memories stored" in out
    stored = ChatMemory.query.filter(agent_id="cy").no_track().all()
    assert sorted(m.content for m in stored) == ["My bike is a green Gazelle from 1986.", "What colour is my bike?"]
    assert {m.speaker for m in stored} == {"user"} and len({m.session for m in stored}) == 1


def test_chat_with_a_model_shows_its_replies_and_remembers_both_sides(redis_url, db):
    with OpenAICompatibleServer() as server:
        out = on_test_server(redis_url, "--embeddings", "hashing", "chat", "--agent", "di",
                             stdin="Remember that my locker code is 4711.\nWhat is my locker code?\n",
                             env={"OPENAI_BASE_URL": server.base_url})
        chats = [body for path, body, _ in server.requests if path == "/v1/chat/completions"]
    assert "model gpt-4.1-nano at" in out
    assert "assistant> echo: Remember that my locker code is 4711." in out
    assert "assistant> echo: What is my locker code?" in out
    assert "bye: 4 memories stored" in out  # each turn and each reply; end of input leaves
    second = chats[1]["messages"]
    assert "locker code is 4711" in second[0]["content"]  # the first turn came back from memory
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    stored = ChatMemory.query.filter(agent_id="di").no_track().all()
    assert sorted(m.speaker for m in stored) == ["assistant", "assistant", "user", "user"]
    first = next(m for m in stored if m.content == "Remember that my locker code is 4711.")
    reply = next(m for m in stored if m.position == first.position + 1)
    assert reply.speaker == "assistant" and "> Remember that my locker code is 4711." in reply.context  # its turn before



# -- upgrade -------------------------------------------------------------------------------------
def test_upgrade_makes_memories_of_older_versions_found_by_keyword(redis_url, db):
    from test_chat_memory import old_chat_memory

    with configured_embeddings(HashingEmbeddings(384)):
        old = old_chat_memory()
        record = old(agent_id="ana", session="s0", date="2026-01-10", speaker="Ana",
                     content="My favourite tea is smoked lapsang souchong.")
        record.save()
    keyword = ChatMemory.query.filter(agent_id="ana").no_track()
    assert keyword.keyword_search("lapsang souchong") == []  # written before ChatMemory searched contexts
    out = on_test_server(redis_url, "--embeddings", "hashing", "upgrade", "--agent", "ana")
    assert "upgraded 1 memories of agent 'ana'" in out
    assert [hit.memory_id for hit in keyword.keyword_search("lapsang souchong")] == [record.memory_id]
    assert "upgraded 0 memories" in on_test_server(redis_url, "--embeddings", "hashing", "upgrade", "--agent", "ana")
