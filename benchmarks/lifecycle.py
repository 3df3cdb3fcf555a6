"""Fact lifecycle: current and past values of changing facts, stale facts per context, duplicates, write cost.

    .venv/bin/python benchmarks/lifecycle.py                                  # 1k and 10k memories
    .venv/bin/python benchmarks/lifecycle.py --sizes 1000 --entities 100 --out ''   # a smoke run

The generator (written from this spec before any threshold or lexicon was tuned):

- ``--entities`` people (500, at most one per 5 memories of the tenant) with names drawn so that about a third have a near namesake (the
  same surname, a first name one letter apart: Mara / Maria Quint), each with two of five
  attributes: where they live, where they work, the tool they code with, how many bikes they
  own, what they drink. Each person changes 2-6 times in all over their attributes, one change
  every 1-30 days (epoch seconds from 2024-01-01), each statement drawn from several paraphrase
  templates ("X lives in V", "X relocated to V last month", "X is now based in V", ...).
- After a statement, with probability 0.3, a restatement of the same value later: half the
  time the very same sentence, half a paraphrase (a near duplicate that must not be stored anew).
- Filler memories (``common.synthetic_texts``) bring the tenant to the size measured.

Every statement is written through ``Model.save`` one by one, in time order, to a lifecycle
model (``LifecycleMixin``, defaults) and, as the baseline, to the same model with merge and
supersede off. Questions, one per person and attribute, asked through ``ContextAssembler``
(hybrid BM25 + vectors, 5 items):

- current value top-1: the first record states the attribute's current value for that person
  (end to end: a miss may be retrieval ranking another attribute or a namesake first);
- current value first: among the records of the context stating any value of the asked fact,
  the first states the current one (what the lifecycle decides: stale versions out of the way);
- as-of top-1 / as-of first: the same at a time between two changes, ``where={"as_of": t}``,
  against the value valid then (the baseline has no time: its answer is its top record);
- stale facts per context: records in the 5 that state a superseded value of the asked person's
  asked attribute;
- duplicates stored: restatements that became a record of their own, over all restatements;
- write cost: p50/p95 wall ms, client CPU ms and round trips per ``save()`` of a new statement,
  lifecycle vs the baseline, the two models written in lockstep (alternating which goes first)
  on the statements written after the filler (a tenant of the given size);
- the merge threshold's calibration (:func:`calibrate`): paraphrased restatements against
  changed values, merged by cosine alone and by cosine with the restatement rule.

Embeddings: ``HashingEmbeddings(384)`` (deterministic, no model download). Results in
``results/lifecycle.json`` and ``results/lifecycle.md``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

import redmem
from common import CommandCounter, machine, summary, synthetic_texts, write_results
from redmem import AutoKeyField, BM25Field, EmbeddingField, HashingEmbeddings, KeyField, Model, StringField
from redmem.lifecycle import Lifecycle, LifecycleMixin
from redmem.lifecycle._detect import restates
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._embedded import EmbeddedServer

SEED = 31
AGENT = "agent-1"
START = 1_704_067_200.0  # 2024-01-01
DAY = 86_400.0
RESTATE = 0.3
ITEMS = 5

FIRST = ["Mara", "Maria", "Jon", "John", "Lena", "Lina", "Ivo", "Ivan", "Tess", "Tessa", "Omar", "Omer", "Kai",
         "Kay", "Rosa", "Rose", "Nils", "Niels", "Ada", "Ida", "Ben", "Bea", "Cleo", "Chloe", "Dev", "Dan"]
LAST = ["Quint", "Moreau", "Okafor", "Lindqvist", "Haddad", "Brandt", "Castell", "Novak", "Sato", "Ferreira",
        "Kowalski", "Abbott", "Mendes", "Varga", "Holm", "Reyes", "Duval", "Acheson", "Petrov", "Ibsen"]
VALUES = {
    "residence": ["Berlin", "Lisbon", "Oslo", "Porto", "Madrid", "Vienna", "Prague", "Dublin", "Zurich", "Krakow",
                  "Seville", "Ghent", "Turin", "Bergen", "Leeds", "Lyon"],
    "employer": ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark Labs", "Wayne Tech", "Soylent",
                 "Cyberdyne", "Tyrell", "Massive Dynamic"],
    "tool": ["Vim", "Emacs", "VSCode", "PyCharm", "Neovim", "Zed", "Sublime", "IntelliJ", "Helix", "Xcode"],
    "bikes": [str(n) for n in range(1, 10)],
    "drink": ["tea", "coffee", "matcha", "espresso", "cocoa", "lemonade", "kombucha", "chai"],
}
TEMPLATES = {
    "residence": ["{e} lives in {v}.", "{e} moved to {v}.", "{e} relocated to {v} last month.",
                  "{e} is now based in {v}.", "{e} has settled in {v}."],
    "employer": ["{e} works at {v}.", "{e} joined {v}.", "{e} took a job at {v}.", "{e} is now employed by {v}.",
                 "{e} started a new role at {v}."],
    "tool": ["{e} uses {v} for coding.", "{e} switched to {v}.", "{e} writes code in {v} these days.",
             "{e} now codes with {v}."],
    "bikes": ["{e} owns {v} bikes.", "{e} has {v} bikes now.", "{e} now has {v} bicycles."],
    "drink": ["{e} prefers {v}.", "{e} likes {v} best.", "{e}'s favourite drink is {v}.",
              "{e} now drinks {v} every morning."],
}
QUESTIONS = {
    "residence": "Where does {e} live?", "employer": "Where does {e} work?", "tool": "What does {e} code with?",
    "bikes": "How many bikes does {e} own?", "drink": "What does {e} drink?",
}


@dataclass
class Statement:
    person: str
    attribute: str
    value: str
    text: str
    at: float
    restatement: bool = False


@dataclass
class World:
    """The generated timeline: statements in time order and each fact's true values over time."""

    statements: list[Statement] = field(default_factory=list)
    truth: dict[tuple[str, str], list[tuple[float, str]]] = field(default_factory=dict)


def _people(count: int, rng: random.Random) -> list[str]:
    names: list[str] = []
    while len(names) < count:
        first, last = rng.randrange(0, len(FIRST), 2), rng.choice(LAST)
        names.append(f"{FIRST[first]} {last}")
        if rng.random() < 0.33 and len(names) < count:
            names.append(f"{FIRST[first + 1]} {last}")  # a near namesake
    return list(dict.fromkeys(names)) + [f"{rng.choice(FIRST)} {rng.choice(LAST)}-{i}" for i in range(count)]


def generate(entities: int, seed: int = SEED) -> World:
    """The spec's timeline of ``entities`` people (see the module docstring)."""
    rng = random.Random(seed)
    world = World()
    for person in _people(entities, rng)[:entities]:
        attributes = rng.sample(sorted(TEMPLATES), 2)
        at = START + rng.uniform(0, 30) * DAY
        values: dict[str, str | None] = dict.fromkeys(attributes)
        for _ in range(rng.randint(2, 6)):
            attribute = rng.choice(attributes)
            value = rng.choice([v for v in VALUES[attribute] if v != values[attribute]])
            values[attribute] = value
            text = rng.choice(TEMPLATES[attribute]).format(e=person, v=value)
            world.statements.append(Statement(person, attribute, value, text, at))
            world.truth.setdefault((person, attribute), []).append((at, value))
            if rng.random() < RESTATE:
                again = text if rng.random() < 0.5 else rng.choice(TEMPLATES[attribute]).format(e=person, v=value)
                world.statements.append(Statement(person, attribute, value, again, at + DAY / 2, restatement=True))
            at += rng.uniform(1, 30) * DAY
    world.statements.sort(key=lambda s: s.at)
    return world


def value_at(timeline: list[tuple[float, str]], at: float) -> str | None:
    found = None
    for start, value in timeline:
        if start <= at:
            found = value
    return found


def models(tag: str) -> tuple[type, type]:
    """The lifecycle model and its baseline (merge and supersede off), under fresh names."""
    provider = HashingEmbeddings(384)

    def fields() -> dict[str, Any]:
        return {"note_id": AutoKeyField(), "agent_id": KeyField(), "content": StringField(),
                "content_bm25": BM25Field(source="content"),
                "embedding": EmbeddingField(source="content", provider=provider),
                "Meta": type("Meta", (), {"partition_by": "agent_id"})}

    lifecycle = type(f"LifecycleBench{tag}", (LifecycleMixin, Model), fields())
    baseline = type(f"LifecycleBaseline{tag}", (LifecycleMixin, Model),
                    {**fields(), "lifecycle": Lifecycle(merge=False, supersede=False)})
    return lifecycle, baseline


def fill(model: type, count: int) -> None:
    """``count`` filler memories, current since before the timeline, saved in bulk."""
    records = [model(agent_id=AGENT, content=text, valid_from=START - DAY) for text in synthetic_texts(count)]
    model.save_many(records)


def write(models: dict[str, type], world: World) -> dict[str, dict[str, Any]]:
    """Save every statement in order to each model in turn (their order alternating, so a change of
    the shared machine's load reaches both alike): per model the wall and client CPU time and
    round trips per save, and the records stored per statement."""
    CommandCounter.install()
    names = list(models)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    trips: dict[str, list[int]] = {n: [] for n in names}
    stored, duplicates = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
    for i, statement in enumerate(world.statements):
        for name in names if i % 2 == 0 else names[::-1]:
            record = models[name](agent_id=AGENT, content=statement.text, valid_from=statement.at)
            before, started, used = CommandCounter.snapshot(), time.perf_counter(), time.process_time()
            record.save()
            wall[name].append((time.perf_counter() - started) * 1000)
            cpu[name].append((time.process_time() - used) * 1000)
            trips[name].append(CommandCounter.since(before)[0])
            new = record.seen_count == 1
            stored[name] += new
            duplicates[name] += new and statement.restatement
    restatements = sum(s.restatement for s in world.statements)
    return {name: {"ms": summary(wall[name]), "cpu_ms": summary(cpu[name]),
                   "round_trips_p50": sorted(trips[name])[len(trips[name]) // 2], "records": stored[name],
                   "duplicates_stored": duplicates[name], "restatements": restatements,
                   "duplicate_rate": duplicates[name] / restatements if restatements else 0.0} for name in names}


def ask(model: type, world: World, rng: random.Random, lifecycle: bool) -> dict[str, Any]:
    """Current and as-of questions through the assembler; top-1 accuracy and stale facts per context."""
    assembler = ContextAssembler(model, max_items=ITEMS, max_tokens=2000)
    current_hits = current_first = asof_hits = asof_first = asof_asked = stale = contexts = 0
    for (person, attribute), timeline in world.truth.items():
        question = QUESTIONS[attribute].format(e=person)
        records = assembler.assemble(question, agent_id=AGENT).records
        values = {v for _, v in timeline}
        now_value = timeline[-1][1]
        current_hits += bool(records) and _states(records[0].content, person, now_value)
        current_first += _first_value(records, person, values) == now_value
        stale += sum(any(_states(r.content, person, v) for v in values - {now_value}) for r in records)
        contexts += 1
        if len(timeline) > 1:
            i = rng.randrange(len(timeline) - 1)
            at = rng.uniform(timeline[i][0], timeline[i + 1][0])
            where = {"as_of": at} if lifecycle else None
            past = assembler.assemble(question, agent_id=AGENT, where=where).records
            then = value_at(timeline, at) or ""
            asof_hits += bool(past) and _states(past[0].content, person, then)
            asof_first += _first_value(past, person, values) == then
            asof_asked += 1
    return {"current_top1": current_hits / contexts, "current_first": current_first / contexts,
            "as_of_top1": asof_hits / asof_asked if asof_asked else None,
            "as_of_first": asof_first / asof_asked if asof_asked else None,
            "stale_per_context": stale / contexts, "questions": contexts, "as_of_questions": asof_asked}


def _first_value(records: list[Any], person: str, values: set[str]) -> str | None:
    """The value of the asked fact that the first record stating one of its values gives."""
    for record in records:
        for value in values:
            if _states(record.content, person, value):
                return value
    return None


def _states(text: str, person: str, value: str) -> bool:
    """Whether ``text`` is about ``person`` (not a namesake) and names ``value``."""
    return text.startswith(person) and not text[len(person):len(person) + 1].isalnum() and f" {value}" in text


def measure(size: int, entities: int, tag: str) -> dict[str, Any]:
    entities = min(entities, size // 5)  # the timeline fits the tenant: about 5 statements a person
    world = generate(entities)
    filler = max(0, size - len(world.statements))
    results: dict[str, Any] = {"entities": entities, "statements": len(world.statements), "filler": filler,
                               "facts": len(world.truth)}
    lifecycle_model, baseline_model = models(tag)
    both = {"lifecycle": lifecycle_model, "baseline": baseline_model}
    for model in both.values():
        fill(model, filler)
    written = write(both, world)
    for name, model in both.items():
        results[name] = {"write": written[name], **ask(model, world, random.Random(SEED), name == "lifecycle")}
    for measure_name in ("ms", "cpu_ms"):
        base = written["baseline"][measure_name]["p50"]
        ratio = written["lifecycle"][measure_name]["p50"] / base if base else None
        results[f"write_cost_ratio_{measure_name}_p50"] = ratio
    return results


THRESHOLDS = (0.6, 0.7, 0.8, 0.85, 0.9, 0.95)


def calibrate(pairs: int = 150, seed: int = SEED) -> list[dict[str, float]]:
    """The merge threshold's sweep: per attribute ``pairs`` paraphrased restatements (one person,
    one value, two templates) and ``pairs`` changed values (one template, two values); the share
    of each merged as near duplicates (cosine >= threshold and ``restates``) and by cosine alone."""
    rng = random.Random(seed)
    provider = HashingEmbeddings(384)
    same, changed = [], []
    for attribute, templates in TEMPLATES.items():
        for _ in range(pairs):
            person = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            value, other = rng.sample(VALUES[attribute], 2)
            one, two = rng.choice(templates), rng.choice(templates)
            same.append((one.format(e=person, v=value), two.format(e=person, v=value)))
            changed.append((one.format(e=person, v=value), one.format(e=person, v=other)))

    def cosines(texts: list[tuple[str, str]]) -> np.ndarray:
        a, b = provider.embed([x for x, _ in texts]), provider.embed([y for _, y in texts])
        return np.asarray((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))

    same_cos, changed_cos = cosines(same), cosines(changed)
    same_rule = np.array([restates(x, y) for x, y in same])
    changed_rule = np.array([restates(x, y) for x, y in changed])
    return [{"threshold": t,
             "restatements_merged": float(((same_cos >= t) & same_rule).mean()),
             "restatements_merged_cosine_only": float((same_cos >= t).mean()),
             "changed_values_merged": float(((changed_cos >= t) & changed_rule).mean()),
             "changed_values_merged_cosine_only": float((changed_cos >= t).mean())} for t in THRESHOLDS]


def table(payload: dict[str, Any]) -> str:
    lines = [
        "# Fact lifecycle", "",
        "`benchmarks/lifecycle.py` (spec in its docstring): people whose home, job, tool, bike count and drink",
        "change over time, paraphrased and restated, near namesakes; questions through `ContextAssembler`",
        "(hybrid, 5 items). Baseline: the same model with merge and supersede off.", "",
        f"Command: `{payload['command']}`", "",
        "| memories | model | current first | current top-1 | as-of first | as-of top-1 | stale per context | "
        "duplicates stored | records | write p50 ms | write p95 ms | client CPU p50 ms | round trips | "
        "cost vs plain save (wall p50 / CPU p50) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size, result in payload["results"].items():
        for name in ("lifecycle", "baseline"):
            r = result[name]
            w = r["write"]
            asof = (f"{r['as_of_first']:.3f} | {r['as_of_top1']:.3f}" if name == "lifecycle"
                    else f"({r['as_of_first']:.3f}, no time) | ({r['as_of_top1']:.3f}, no time)")
            ratio = (f"{result['write_cost_ratio_ms_p50']:.2f}x / {result['write_cost_ratio_cpu_ms_p50']:.2f}x"
                     if name == "lifecycle" else "1.00x")
            lines.append(
                f"| {size} | {name} | {r['current_first']:.3f} | {r['current_top1']:.3f} | {asof} | {r['stale_per_context']:.3f} | "
                f"{w['duplicate_rate']:.1%} ({w['duplicates_stored']}/{w['restatements']}) | {w['records']} | "
                f"{w['ms']['p50']:.2f} | {w['ms']['p95']:.2f} | {w['cpu_ms']['p50']:.2f} | {w['round_trips_p50']} | "
                f"{ratio} |")
    lines += ["", "Merge threshold sweep (near-duplicate rule alone, before the same-slot rule; "
              "`HashingEmbeddings(384)`):", "",
              "| threshold | restatements merged | by cosine alone | changed values merged | by cosine alone |",
              "|---|---|---|---|---|"]
    lines += [f"| {row['threshold']} | {row['restatements_merged']:.1%} | {row['restatements_merged_cosine_only']:.1%} | "
              f"{row['changed_values_merged']:.1%} | {row['changed_values_merged_cosine_only']:.1%} |"
              for row in payload["calibration"]]
    lines += ["", f"Machine: {payload['machine']['cpu']}, {payload['machine']['cores']} cores, load "
              f"{payload['machine']['load_average']}; {payload['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--entities", type=int, default=500)
    parser.add_argument("--out", default="lifecycle", help="results/<out>.json and .md ('' none)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=120)
            results[str(size)] = measure(size, args.entities, str(size))
            print(size, results[str(size)], flush=True)
    payload = {"benchmark": "lifecycle", "command": "python benchmarks/lifecycle.py " + " ".join(argv or sys.argv[1:]),
               "entities": args.entities, "results": results, "calibration": calibrate(), "machine": machine(),
               "seconds": time.perf_counter() - started}
    if args.out:
        write_results(args.out, payload, table(payload))
    return payload


if __name__ == "__main__":
    main()
