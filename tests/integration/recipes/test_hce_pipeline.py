"""HCEPipeline end to end: retrieval improving as facts are stored, the budget, wrap_chat through the
real openai SDK, save/load, sessions kept apart, concurrent updates, round trips, bad input."""

from __future__ import annotations

import asyncio
import base64
import json
import multiprocessing
import shutil
import struct
from typing import Any

import openai
import pytest

import redmem
from conftest import all_keys
from openai_server import OpenAICompatibleServer
from redmem.context._tokens import exact_counter
from redmem.recipes.hce import ExportError, HCEInteraction, HCEPipeline, HCETopic
from redmem.recipes.hce._export import FILE_NAME
from redmem.store._aio import is_cluster
from redmem.store._errors import ArgumentTypeError, ValidationError

FILLER = [
    ("What should I cook tonight?", "Maybe a vegetable curry."),
    ("The weather is grey again.", "Autumn does that."),
    ("I watched a documentary about whales.", "Whales are fascinating animals."),
    ("Any tips for sleeping better?", "Keep a regular schedule and less screen time."),
    ("I started reading a fantasy novel.", "Enjoy the story!"),
    ("My laptop fan is loud.", "Cleaning the vents can help."),
]
#: Planted facts and a question about each (the measure: is the fact's turn in the context block).
FACTS = [
    (("I moved to Lisbon in March and started working at Acme.", "Congratulations on the new job!"),
     "where do I work now? acme"),
    (("My sister Ana Sousa is a marine biologist.", "What an interesting job she has."),
     "what does Ana do for a living?"),
    (("My dog Biscuit is allergic to chicken.", "Good to know for his food."),
     "what food should biscuit avoid?"),
]


def found(pipe: HCEPipeline) -> float:
    """The share of planted facts whose user turn is in the context block of their question."""
    return sum(fact[0] in pipe.retrieve_context(question) for fact, question in FACTS) / len(FACTS)


def test_retrieval_improves_as_facts_are_stored(any_db):
    pipe = HCEPipeline(session_id="user-42", max_focus=4, context_budget=120)
    for q, a in FILLER[:3]:
        pipe.update(q, a)
    assert found(pipe) == 0.0
    for (fact, _), filler in zip(FACTS, FILLER[3:]):
        pipe.update(*fact)
        pipe.update(*filler)
    for q, a in FILLER:  # push the facts out of the focus buffer: they come back from the graph and tree
        pipe.update(q, a)
    assert found(pipe) == 1.0
    prompt = pipe.build_prompt("where do I work now? acme")
    assert prompt.startswith("[Context Block]\n") and "[Focus Buffer]\n" in prompt
    assert prompt.endswith("[User Query]\nwhere do I work now? acme")
    assert "Acme" in prompt.split("[Focus Buffer]")[0]


def test_the_budget_holds_with_the_exact_counter(db):
    count = exact_counter("cl100k_base")
    pipe = HCEPipeline(session_id="s", max_focus=4, context_budget=40, token_counter="cl100k_base")
    for q, a in [fact for fact, _ in FACTS] + FILLER:
        pipe.update(q, a)
    for _, question in FACTS:
        found = pipe.retrieve_candidates(question)
        assert len(found.candidates) > len(found.selected) > 0
        assert sum(c.token_cost for c in found.selected) <= 40
        assert count(found.block) <= 40
        assert all(c.token_cost == count(c.content + "\n") for c in found.candidates)


def test_a_budget_below_every_candidate_gives_an_empty_block_when_oversize_skips(db):
    pipe = HCEPipeline(session_id="s", context_budget=1, oversize="skip")
    pipe.update("I moved to Lisbon.", "Nice city.")
    assert pipe.retrieve_context("Lisbon") == ""
    assert "[Context Block]\n(none)" in pipe.build_prompt("Lisbon")


def test_a_budget_below_every_candidate_cuts_one_by_default(db):
    pipe = HCEPipeline(session_id="s", context_budget=8)
    pipe.update("I moved to Lisbon.", "Nice city.")
    found = pipe.retrieve_candidates("Lisbon")
    assert found.block.endswith("…[truncated]") and found.token_count == pipe.count_tokens(found.block) <= 8
    assert found.oversize["truncated"] and found.selected[0].metadata["truncated"] is True


def each_source_wins(pipe: HCEPipeline, query: str) -> list[str]:
    first = pipe.retrieve_candidates(query).selected[0]
    return first.metadata.get("sources", [first.source])


def test_each_source_can_win_the_knapsack(db):
    pipe = HCEPipeline(session_id="s", max_focus=2, context_budget=60)
    pipe.update("Zorblat Industries hired me as a welder.", "Welding is a skill.")
    for q, a in FILLER:
        pipe.update(q, a)
    # graph: a named entity nothing else shares; tree: words close to one stored turn, no entity
    assert "graph" in each_source_wins(pipe, "what about zorblat industries")
    assert "tree" in each_source_wins(pipe, "tips for sleeping schedule")
    # buffer: the newest entries, sharing the query's words
    assert each_source_wins(pipe, "vents help cleaning") == ["buffer"]


def test_token_counter_none_is_the_configured_counter_else_the_exact_one(db):
    import redmem
    from redmem.context._tokens import default_counter, word_estimate

    line = "user: I'm off to Zürich on 2024-05-03, ok?\nassistant: Enjoy!"
    pipe = HCEPipeline(session_id="s")
    assert pipe.count_tokens is default_counter() and pipe.count_tokens(line) > word_estimate(line)
    assert HCEPipeline(session_id="s", token_counter="words").count_tokens is word_estimate
    redmem.configure(token_counter="o200k_base")
    assert repr(HCEPipeline(session_id="s").count_tokens) == "ExactCounter('o200k_base')"


def test_the_keyword_list_of_the_shared_retrieval_finds_a_rare_word(db):
    pipe = HCEPipeline(session_id="s", max_focus=2, context_budget=200)
    pipe.update("My cat is called Quibbleworth.", "A fine name.")
    for q, a in FILLER:
        pipe.update(q, a)
    found = pipe.retrieve_candidates("quibbleworth")
    first = found.selected[0]
    assert "Quibbleworth" in first.content and "keyword" in first.metadata["sources"]
    assert first.metadata["signals"]["bm25"] > 0 and found.round_trips <= 3


def test_no_text_is_both_in_the_context_block_and_the_focus_buffer(db):
    pipe = HCEPipeline(session_id="s", max_focus=4, context_budget=500)
    for q, a in FILLER:
        pipe.update(q, a)
    prompt = pipe.build_prompt("laptop fan vents whales documentary")
    block, rest = prompt.split("[Focus Buffer]")
    for entry in pipe.focus.get_recent():
        assert entry.content in rest and entry.content not in block
    assert "whales" in block  # older turns still come from the tree


def test_sessions_never_see_each_other(any_db):
    alice, bob = HCEPipeline(session_id="alice"), HCEPipeline(session_id="bob")
    alice.update("I work at Acme in Lisbon.", "Noted.")
    bob.update("I work at Globex in Oslo.", "Noted.")
    assert "Globex" not in alice.retrieve_context("where do I work? Globex Acme Oslo Lisbon")
    assert "Acme" not in bob.retrieve_context("where do I work? Globex Acme Oslo Lisbon")
    assert [e.content for e in alice.focus.get_recent()] == ["I work at Acme in Lisbon.", "Noted."]
    assert set(alice.graph.entities()) == {"acme", "lisbon"}


def test_round_trips(db, sent):
    pipe = HCEPipeline(session_id="s")
    pipe.update("I moved to Lisbon and started at Acme.", "Congratulations!")
    vector = pipe.embed_query("where is acme")
    sent.clear()
    pipe.update("Ana visited me.", "Lovely.")
    assert len(sent) == 2  # topic search + mention check, then one MULTI/EXEC
    sent.clear()
    found = pipe.retrieve_candidates("where is acme", query_vector=vector)
    assert found.round_trips == len(sent) == 3  # searches, propagation, interactions
    sent.clear()
    assert pipe.retrieve_candidates("what about tea", query_vector=vector).round_trips == len(sent) == 2


def test_the_interactions_found_are_read_in_one_command(db, sent):
    pipe = HCEPipeline(session_id="s", max_focus=2)
    pipe.update_many([(f"Ana went to Lisbon on trip {i}.", f"Nice trip number {i}.") for i in range(12)])
    vector = pipe.embed_query("Ana Lisbon trip")
    pipe.retrieve_candidates("Ana Lisbon trip", query_vector=vector)  # the server caches the scripts
    sent.clear()
    found = pipe.retrieve_candidates("Ana Lisbon trip", query_vector=vector)
    assert sum(c.source != "buffer" for c in found.candidates) > 2
    assert found.round_trips == len(sent)
    load = b"".join(bytes(part) for part in sent[-1]) if isinstance(sent[-1], list) else bytes(sent[-1])
    assert load.count(b"EVALSHA") == 1 and b"HMGET" not in load  # one script call, not an HMGET per candidate


# -- wrap_chat -------------------------------------------------------------------------------------
def test_wrap_chat_enriches_the_prompt_and_stores_the_reply(db):
    pipe = HCEPipeline(session_id="user-42", context_budget=200)
    with OpenAICompatibleServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)

        @pipe.wrap_chat
        def chat(prompt: str) -> str:
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
            return reply.choices[0].message.content

        assert chat("I moved to Lisbon in March and started at Acme.").startswith("echo: [Context Block]")
        for q, a in FILLER:
            pipe.update(q, a)
        chat("where do I work now? acme")
        sent = server.chat_requests()[-1]["messages"][0]["content"]
    assert "user: I moved to Lisbon in March and started at Acme." in sent.split("[Focus Buffer]")[0]
    assert sent.endswith("[User Query]\nwhere do I work now? acme")
    assert pipe.focus.get_recent()[-2].content == "where do I work now? acme"
    assert pipe.focus.get_recent()[-1].content.startswith("echo: [Context Block]")


def test_wrap_chat_with_openai_messages_and_an_async_function(db):
    pipe = HCEPipeline(session_id="user-42")
    pipe.update("I moved to Lisbon in March and started at Acme.", "Congratulations!")
    for q, a in FILLER:
        pipe.update(q, a)
    with OpenAICompatibleServer() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)

        @pipe.wrap_chat
        async def chat(messages: list[dict[str, Any]], model: str = "m") -> Any:
            return await client.chat.completions.create(model=model, messages=messages)

        history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "where do I work? acme"}]
        reply = asyncio.run(chat(messages=history))
        sent = server.chat_requests()[-1]["messages"]
    assert reply.choices[0].message.content == "echo: where do I work? acme"
    assert [m["role"] for m in sent] == ["system", "system", "user"]
    assert sent[1]["content"].startswith("[Context Block]\n") and "Acme" in sent[1]["content"]
    assert history[1] == {"role": "user", "content": "where do I work? acme"}  # the caller's list untouched
    assert pipe.focus.get_recent()[-1].content == "echo: where do I work? acme"


def test_a_chat_function_that_raises_stores_nothing(db):
    pipe = HCEPipeline(session_id="s")

    @pipe.wrap_chat
    def chat(prompt: str) -> str:
        raise RuntimeError("model down")

    with OpenAICompatibleServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)

        @pipe.wrap_chat
        def failing(prompt: str) -> str:
            return client.chat.completions.create(model=server.failing_model,
                                                  messages=[{"role": "user", "content": prompt}])

        with pytest.raises(openai.InternalServerError):
            failing("hello there")
    with pytest.raises(RuntimeError, match="model down"):
        chat("hello")
    assert pipe.focus.size == 0 and HCEInteraction.query.filter(session_id="s").count() == 0


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("query, error", [("", ValidationError), ("   ", ValidationError), (None, ArgumentTypeError),
                                          (42, ArgumentTypeError), (["hi"], ArgumentTypeError)])
def test_bad_queries_are_refused(db, query, error):
    pipe = HCEPipeline(session_id="s")
    with pytest.raises(error):
        pipe.retrieve_context(query)
    with pytest.raises(error):
        pipe.update(query, "reply")
    with pytest.raises(ValidationError):
        pipe.build_prompt(query)
    assert pipe.focus.size == 0


def test_bad_replies_and_settings_are_refused(db):
    with pytest.raises(ArgumentTypeError):
        HCEPipeline(session_id="s").update("hi", None)
    with pytest.raises(ValidationError):
        HCEPipeline(session_id="s", context_budget=0)
    with pytest.raises(ValidationError):
        HCEPipeline(session_id="")
    with pytest.raises(ArgumentTypeError):
        HCEPipeline(session_id="s").wrap_chat("not callable")
    for sharpness in (0, -1, "8", float("nan")):
        with pytest.raises(ValidationError):
            HCEPipeline(session_id="s", utility_sharpness=sharpness)


# -- save / load -----------------------------------------------------------------------------------
def contents(client: Any, keys: set[str]) -> dict[str, Any]:
    """Every key's type and content."""
    out = {}
    for key in keys:
        kind = client.type(key).decode()
        read = {"hash": client.hgetall, "list": lambda k: client.lrange(k, 0, -1), "string": client.get,
                "zset": lambda k: client.zrange(k, 0, -1, withscores=True), "set": client.smembers}[kind]
        out[key] = (kind, read(key))
    return out


def session_state(client: Any, session: str) -> dict[str, Any]:
    keys = {k for k in all_keys(client) if f"{{{session}}}" in k}
    return {k.replace(f"{{{session}}}", "{S}"): v for k, v in contents(client, keys).items()}


def test_save_and_load_round_trip_exactly(any_db, tmp_path):
    pipe = HCEPipeline(session_id="user-42")
    for q, a in FILLER + [fact for fact, _ in FACTS]:
        pipe.update(q, a)
    before = session_state(any_db, "user-42")
    path = pipe.save(tmp_path / "export")
    assert json.loads(path.read_text())["version"] == 1
    copy = HCEPipeline(session_id="user-42-copy")
    copy.load(tmp_path / "export")
    after = session_state(any_db, "user-42-copy")
    records = [value for key, (_, value) in before.items() if ":r:" in key]
    assert records and not [r for r in records if b"session_id" in r]  # the session is in the key name only
    assert without_epochs(after) == without_epochs(before)  # a load starts new cache epochs, nothing else differs
    assert session_state(any_db, "user-42") != {} and copy.retrieve_context("acme") == pipe.retrieve_context("acme")
    copy.save(tmp_path / "again")
    first, second = (json.loads((tmp_path / d / FILE_NAME).read_text()) for d in ("export", "again"))
    for payload in (first, second):
        del payload["sha256"], payload["session_id"]
        for entry in payload["keys"]:
            if entry["key"].endswith((":ver", ":v")):
                entry["value"] = [pair for pair in entry["value"] if pair[0] != "epoch"]
    assert second == first


def without_epochs(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with the cache epochs of its version hashes left out."""
    return {key: (kind, {f: v for f, v in value.items() if f != b"epoch"} if key.endswith((":ver", ":v")) else value)
            for key, (kind, value) in state.items()}


def test_load_replaces_the_session_and_bad_exports_change_nothing(db, tmp_path):
    pipe = HCEPipeline(session_id="a")
    pipe.update("I moved to Lisbon.", "Nice.")
    pipe.save(tmp_path / "good")
    other = HCEPipeline(session_id="b")
    other.update("Totally different.", "Indeed.")
    other.update("Another one.", "Sure.")
    state = session_state(db, "b")
    export = tmp_path / "good" / FILE_NAME
    payload = json.loads(export.read_text())
    cases = {
        "missing": None,
        "not json": "{not json",
        "foreign": json.dumps({**payload, "format": "something.else"}),
        "future": json.dumps({**payload, "version": 99}),
        "tampered": json.dumps({**payload, "keys": payload["keys"][:-1]}),
    }
    unknown_key = [*payload["keys"], {"model": "HCEInteraction", "key": "zz", "type": "hash", "value": [["a", "b"]]}]
    cases["unknown key"] = json.dumps({**payload, "keys": unknown_key, "sha256": _sha(unknown_key)})
    for name, text in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        if text is not None:
            (folder / FILE_NAME).write_text(text)
        with pytest.raises(ExportError):
            other.load(folder)
        assert session_state(db, "b") == state, name
    other.load(tmp_path / "good")
    assert HCEInteraction.query.filter(session_id="b").count() == 1
    assert [e.content for e in other.focus.get_recent()] == ["I moved to Lisbon.", "Nice."]
    assert HCETopic.query.filter(session_id="b").count() == 1
    shutil.rmtree(tmp_path / "good")


def test_clear_forgets_one_session_only(any_db):
    kept, gone = HCEPipeline(session_id="kept"), HCEPipeline(session_id="gone")
    for pipe in (kept, gone):
        pipe.update("I moved to Lisbon and started at Acme.", "Congratulations!")
    before = session_state(any_db, "kept")
    assert gone.clear() > 5
    assert session_state(any_db, "gone") == {} and session_state(any_db, "kept") == before
    assert gone.retrieve_context("acme Lisbon") == "" and gone.clear() == 0


def _sha(keys: list[Any]) -> str:
    from redmem.recipes.hce._export import _checksum

    return _checksum(keys)


# -- concurrency -----------------------------------------------------------------------------------
def _url(request: Any, client: Any) -> str:
    return request.getfixturevalue("cluster_url" if is_cluster(client) else "redis_url")


def _update_many(url: str, prefix: str, worker: int, start: Any) -> None:
    """Worker process: its own connection, then 10 updates of one session once every worker is up."""
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)
    pipe = HCEPipeline(session_id="shared", max_focus=100)
    start.wait()
    for i in range(10):
        pipe.update(f"Worker{worker} note {i} about Acme", f"reply {worker}-{i}")


def test_concurrent_updates_from_four_processes_lose_nothing(any_db, request):
    forked = multiprocessing.get_context("fork")
    start = forked.Barrier(4)
    args = (_url(request, any_db), redmem.store.settings().key_prefix)
    procs = [forked.Process(target=_update_many, args=(*args, w, start)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 4
    pipe = HCEPipeline(session_id="shared", max_focus=100)
    stored = HCEInteraction.query.filter(session_id="shared").all()
    assert sorted(r.user for r in stored) == sorted(f"Worker{w} note {i} about Acme" for w in range(4) for i in range(10))
    assert len(pipe.focus.get_recent()) == 80
    linked = pipe.graph.linked("acme", limit=100)
    assert {n for n, _, _ in linked} >= {r.interaction_id for r in stored}
    assert {r.topic_id for r in stored} <= {t.topic_id for t in HCETopic.query.filter(session_id="shared").all()}


def _edited(payload: dict[str, Any], key: str, edit: Any) -> str:
    """``payload`` with the value of its entry ``key`` of HCEInteraction changed by ``edit``, its
    checksum recomputed (an export is editable: the checksum only catches accidents)."""
    keys = json.loads(json.dumps(payload["keys"]))
    entry = next(e for e in keys if e["model"] == "HCEInteraction" and e["key"] == key)
    entry["value"] = edit(entry["value"])
    try:
        sha = _sha(keys)
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 to hash: any checksum will do
        sha = "0" * 64
    return json.dumps({**payload, "keys": keys, "sha256": sha})


def _nan_vector(value: dict[str, str]) -> dict[str, str]:
    """A stored vector (base64) with its scale (int8) or first number made NaN."""
    raw = bytearray(base64.b64decode(value["base64"]))
    raw[-4:] = struct.pack("<f", float("nan")) if raw[0] == 1 else raw[-4:]
    if raw[0] == 3:
        raw[9:13] = struct.pack("<f", float("nan"))
    elif raw[0] == 2:
        raw[-2:] = struct.pack("<e", float("nan"))
    return {"base64": base64.b64encode(bytes(raw)).decode()}


def _record_key(payload: dict[str, Any]) -> str:
    return next(e["key"] for e in payload["keys"] if e["model"] == "HCEInteraction" and e["key"].startswith("r:"))


def test_an_edited_export_is_checked_entry_by_entry_and_a_failed_load_changes_no_byte(db, tmp_path):
    source = HCEPipeline(session_id="src")
    source.update("I moved to Lisbon and started at Acme.", "Congratulations!")
    source.update("My sister Ana lives in Porto.", "Nice.")
    payload = json.loads(source.save(tmp_path / "good").read_text())
    target = HCEPipeline(session_id="dst")
    for q, a in [("Totally different.", "Indeed."), ("Another one.", "Sure."), ("A third.", "Yes.")]:
        target.update(q, a)
    record = _record_key(payload)
    nan_score = _edited(payload, "co:graph:adj", lambda v: [[v[0][0], 0.0], *v[1:]]).replace("0.0]", "NaN]", 1)
    cases = {
        "NaN score": nan_score,
        "string score": _edited(payload, "all", lambda v: [[v[0][0], "x"], *v[1:]]),
        "non-JSON focus": _edited(payload, "fb", lambda v: [*v, "not json"]),
        "too many focus entries": _edited(payload, "fb", lambda v: v * 6000),
        "lone surrogate": _edited(payload, "fb", lambda v: [v[0].replace("Lisbon", "Lisb\udcff")]),
        "record of garbage": _edited(payload, record, lambda v: [[f, "not a number" if f == "timestamp" else x] for f, x in v]),
        "record list not JSON": _edited(payload, record, lambda v: [[f, "[oops" if f == "entities" else x] for f, x in v]),
        "member without topic": _edited(payload, "tm", lambda v: ["lonely"]),
        "entity type not JSON": _edited(payload, "et", lambda v: [[v[0][0], "{"]]),
        "graph weight": _edited(payload, "co:graph:w", lambda v: [[v[0][0], "heavy"], *v[1:]]),
        "hash entry not a pair": _edited(payload, "et", lambda v: [["only one"]]),
        "bad base64": _edited(payload, "bf:entities_seen", lambda v: {"base64": "***"}),
        "vector of garbage": _edited(payload, "v:embedding", lambda v: [[v[0][0], "not a vector"], *v[1:]]),
        "vector with NaN": _edited(payload, "v:embedding", lambda v: [[v[0][0], _nan_vector(v[0][1])], *v[1:]]),
    }
    before = {key: db.dump(key) for key in all_keys(db)}
    for name, text in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / FILE_NAME).write_text(text, encoding="utf-8")
        with pytest.raises(ExportError, match="not finite" if name == "vector with NaN" else None):
            target.load(folder)
        assert {key: db.dump(key) for key in all_keys(db)} == before, name
    target.load(tmp_path / "good")
    assert HCEInteraction.query.filter(session_id="dst").count() == 2
    assert "Lisbon" in target.retrieve_context("Lisbon Acme")


def test_seeded_lists_are_built_from_the_first_round_trip_and_fused(db):
    from redmem.context._retrieval import Fusion, Retrieval, SeededLists, keyword_hits, retrieve
    from redmem.fields.search_protocol import Mapped
    from redmem.recipes.hce._models import HCEInteraction
    from redmem.recipes.hce._pipeline import _interaction_hits

    pipe = HCEPipeline(session_id="s")
    zorblat, tea = pipe.update("I work for Zorblat Industries.", "Nice."), pipe.update("I like green tea.", "Ok.")
    seen = []

    def graph_from_entities(lists, riders):
        seen.append((sorted(lists), len(riders)))
        return {"graph": Mapped(pipe.graph.searcher(["zorblat industries"]), _interaction_hits)}

    space = pipe.graph.space
    found = retrieve(pipe.client, Retrieval(space, {"keyword": keyword_hits(HCEInteraction.text_bm25, space, "tea", 10)},
                                            Fusion("convex", {"graph": 1.0}, 10, 10), riders=[pipe.focus.reader()],
                                            seeded=SeededLists(graph_from_entities)))
    assert seen == [(["keyword"], 1)]  # built once, from the first round trip's lists and riders
    signals = {c.key.record_id: c.signals for c in found.candidates}
    assert "bm25" in signals[tea] and "graph" in signals[zorblat] and "graph" in found.lists
