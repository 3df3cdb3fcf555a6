"""The optional judge: asked through the openai SDK only when configured, about what the rules left open."""

from __future__ import annotations

import openai

from openai_server import OpenAICompatibleServer
from redmem import AutoKeyField, EmbeddingField, HashingEmbeddings, KeyField, Model, StringField
from redmem.lifecycle import JUDGE_PROMPT, Lifecycle, LifecycleMixin, OpenAIJudge, remember


class LifecycleJudgedNote(LifecycleMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(64))

    class Meta:
        partition_by = "agent_id"


def test_the_judge_decides_what_no_rule_did(db, monkeypatch):
    with OpenAICompatibleServer(chat_reply=lambda messages: "Supersedes.") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        judge = OpenAIJudge(client, model="judge")
        monkeypatch.setattr(LifecycleJudgedNote, "lifecycle", Lifecycle(judge=judge, judge_threshold=0.0))
        first = LifecycleJudgedNote(agent_id="a", content="The office is on floor 3.", valid_from=1.0)
        first.save()
        assert server.chat_requests() == []  # nothing near: no question asked
        outcome = remember(LifecycleJudgedNote(agent_id="a", content="We relocated the office to floor 5.",
                                               valid_from=2.0))
        (request,) = server.chat_requests()
    assert outcome.action == "superseded" and outcome.older.note_id == first.note_id
    assert request["model"] == "judge" and request["messages"][0] == {"role": "system", "content": JUDGE_PROMPT}
    assert "OLD: The office is on floor 3." in request["messages"][1]["content"]


def test_no_judge_no_call_and_an_odd_answer_decides_nothing(db, monkeypatch):
    with OpenAICompatibleServer(chat_reply=lambda messages: "maybe?") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        assert OpenAIJudge(client)("a", "b") == "unrelated"
        LifecycleJudgedNote(agent_id="a", content="The office is on floor 3.", valid_from=1.0).save()
        outcome = remember(LifecycleJudgedNote(agent_id="a", content="We relocated the office to floor 5.",
                                               valid_from=2.0))
        assert outcome.action == "created" and len(server.chat_requests()) == 1
