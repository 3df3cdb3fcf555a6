"""A deterministic corpus of an agent's memory blocks in plain English, and questions about them.

The frames benchmark needs up to 100,000 blocks per agent and natural-language questions that
ask about a block without quoting it, so that a real embedding model (MiniLM) gives the query
the spread of cosines it would meet in use (a query made of words copied from one block has one
near-1 neighbour and is easier for an exact top-k's pre-scan than a real question).

- :func:`blocks` — ``n`` distinct blocks (``{"text", "tags", "category"}``): facts about people,
  projects and tools (``knowledge``), events (``observation``, the seed's ephemeral tier), and
  40 first-person self blocks among the first 1,000 (6 tagged ``self/constitutional``, 12
  ``self/value``, 12 ``self/goal``, 10 ``self/constraint``: the SELF frame's material, as many
  at every N, as an agent's identity does not grow with what it learns). ``blocks(n)`` is a prefix of ``blocks(m)``
  for ``n < m``.
- :func:`questions` — questions about random knowledge / observation blocks, worded apart from
  them (``"What does Maya rely on for work that runs in the background?"`` for ``"Maya uses
  Celery for background jobs on the Atlas project."``).
- :func:`edges` / :func:`contradictions` — a sparse random graph (degree <= 5, the cap of
  elfmem's default config) and a few contradiction pairs over block indexes.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["blocks", "questions", "edges", "contradictions"]

SEED = 20261124


def _words(text: str) -> list[str]:
    return text.split()


PEOPLE = _words("""Maya Liam Noah Olivia Emma Ava Lucas Mia Ethan Zoe Arjun Priya Mateo Sofia Kenji Yuki Omar Layla
Hugo Chloe Ivan Nadia Felix Clara Diego Elena Tariq Amira Jonas Freya Luca Greta Samir Leila Oscar Ines Rafael
Hana Marcus Julia Theo Alice Bruno Nora Pablo Lena Victor Sara Kofi Ama Dmitri Anya Ravi Meera Tomas Eva
Andre Lucia Wei Mei Jamal Aisha Emil Ida Kai Lea Nikolai Vera Sven Astrid Malik Zara Ben Ruth Cyrus Dalia""")
PROJECTS = _words("""Atlas Borealis Cascade Delta Ember Fjord Granite Harbor Iris Juniper Kestrel Lumen Meridian
Nimbus Onyx Pioneer Quartz Raven Sierra Tundra Umbra Vertex Willow Xenon Yarrow Zephyr Aurora Beacon Comet
Drift Echo Falcon Glacier Horizon Indigo Jade Kodiak Lotus Mosaic Nova Orbit Prism Quill Ridge Summit Tidal
Vega Wren""")
TOOLS = _words("""Celery Redis Postgres Kafka RabbitMQ Airflow Kubernetes Terraform Ansible Docker Nginx Grafana
Prometheus Sentry Elasticsearch MongoDB SQLite DuckDB Spark Flink Dask Ray FastAPI Django Flask React Vue
Svelte Webpack Vite pytest Playwright Cypress Jenkins CircleCI GitLab Vault Consul Envoy Istio Traefik Caddy
Memcached Cassandra ClickHouse Snowflake BigQuery dbt Pandas Polars NumPy PyTorch Jupyter Streamlit Supabase
Firebase Stripe Twilio SendGrid Auth0 Okta Datadog Loki Tempo Jaeger MinIO Ceph Helm ArgoCD""")
#: (how a block says it, how a question asks about it)
PURPOSES = [
    ("background jobs", "work that runs in the background"),
    ("caching user sessions", "keeping logins fast"),
    ("rate limiting the public API", "throttling outside callers"),
    ("nightly data exports", "the dumps that run every night"),
    ("sending password reset emails", "mail for people who forgot their login"),
    ("storing uploaded images", "keeping the pictures users upload"),
    ("full-text search of invoices", "finding bills by their words"),
    ("deploying the staging cluster", "shipping to the test environment"),
    ("collecting application metrics", "measuring how the app behaves"),
    ("tracing slow requests", "finding out why calls take long"),
    ("scheduling monthly reports", "the reports produced each month"),
    ("streaming click events", "the flow of user clicks"),
    ("training the ranking model", "teaching the model that orders results"),
    ("end-to-end browser tests", "testing the site like a real visitor"),
    ("managing secrets", "keeping passwords and keys safe"),
    ("load balancing web traffic", "spreading visitors across servers"),
    ("feature flags", "turning features on for some users"),
    ("billing customers", "charging people for the service"),
    ("sending SMS alerts", "text messages when something is wrong"),
    ("backing up the database", "keeping copies of the data"),
    ("deduplicating customer records", "merging people entered twice"),
    ("geocoding addresses", "turning street addresses into coordinates"),
    ("resizing video thumbnails", "making small previews of clips"),
    ("translating the help pages", "offering the docs in other languages"),
    ("fraud detection", "spotting suspicious payments"),
    ("A/B testing the checkout", "trying two versions of the payment page"),
    ("archiving old logs", "storing logs nobody reads any more"),
    ("single sign-on", "logging in once for every app"),
    ("queueing webhook deliveries", "calls we send to partner systems"),
    ("computing daily dashboards", "the charts refreshed each day"),
]
CITIES = _words("""Lisbon Porto Madrid Berlin Hamburg Vienna Prague Krakow Oslo Stockholm Helsinki Tallinn Dublin Leeds
Glasgow Lyon Marseille Milan Turin Zurich Geneva Athens Istanbul Cairo Nairobi Lagos Accra Toronto Montreal
Denver Austin Seattle Portland Chicago Boston Atlanta Lima Bogota Santiago Osaka Kyoto Seoul Taipei Hanoi
Bangkok Jakarta Manila Pune Chennai Melbourne Perth Auckland""")
#: (how a block says it, how a question asks about it)
HOBBIES = [
    ("climbing at the bouldering gym", "going up walls indoors"), ("baking sourdough bread", "making loaves at home"),
    ("restoring old bicycles", "fixing up vintage bikes"), ("playing the cello", "practising a string instrument"),
    ("growing tomatoes on the balcony", "gardening"), ("running trail half-marathons", "long runs in the hills"),
    ("painting watercolour landscapes", "making pictures of scenery"), ("learning Japanese", "studying a language"),
    ("birdwatching by the river", "looking for birds"), ("building mechanical keyboards", "making custom keyboards"),
    ("sailing small dinghies", "going out on boats"), ("brewing kombucha", "fermenting drinks"),
    ("photographing street markets", "taking pictures in town"), ("coaching a kids' football team", "helping children play sport"),
]
MONTHS = _words("January February March April May June July August September October November December")
FEATURES = [
    ("offline mode", "working without a connection"), ("dark theme", "a darker look"),
    ("CSV import", "loading spreadsheets"), ("two-factor login", "a second step when signing in"),
    ("team workspaces", "shared spaces for groups"), ("audit trail", "a record of who changed what"),
    ("usage-based pricing", "paying by how much is used"), ("mobile push notifications", "alerts on phones"),
]
#: First-person self blocks: (tag, sentence) pieces combined with a context.
SELF = {
    "self/constitutional": ["I never invent a source I have not read", "I say plainly when I do not know",
                            "I do not run destructive commands without asking", "I keep what users tell me private"],
    "self/value": ["I explain my reasoning before I recommend anything", "I prefer small reversible changes",
                   "I favour boring, proven tools", "I write the test before the fix"],
    "self/goal": ["I want to finish the migration guide", "I aim to cut the median build time",
                  "I plan to learn how the billing service works", "I want every alert to be actionable"],
    "self/constraint": ["I must answer within the token budget", "I cannot reach the production database",
                        "I only deploy during working hours", "I must keep personal data out of logs"],
}
#: The self blocks' tags in order: block i * SELF_EVERY is the i-th self block.
SELF_TAGS = [tag for tag, count in (("self/constitutional", 6), ("self/value", 12), ("self/goal", 12),
                                    ("self/constraint", 10)) for _ in range(count)]
SELF_EVERY = 25
SELF_CONTEXTS = ["when working on {project}", "when {person} asks for help", "for anything about {purpose}",
                 "in every code review", "when the {project} team is on call", "whatever {person} prefers"]


def _fact(rng: random.Random) -> tuple[str, str, dict[str, Any]]:
    """(text, category, slots) of one random fact or event."""
    person, person2 = rng.sample(PEOPLE, 2)
    project, tool, tool2 = rng.choice(PROJECTS), *rng.sample(TOOLS, 2)
    purpose, city, hobby = rng.randrange(len(PURPOSES)), rng.choice(CITIES), rng.randrange(len(HOBBIES))
    month, feature, minutes = rng.choice(MONTHS), rng.randrange(len(FEATURES)), rng.choice([5, 10, 15, 30, 45, 90])
    kind = rng.randrange(8)
    said = PURPOSES[purpose][0]
    texts = [
        f"{person} uses {tool} for {said} on the {project} project.",
        f"In {month} the {project} team moved {said} from {tool} to {tool2}.",
        f"{person} prefers {tool} over {tool2} when it comes to {said}.",
        f"{person} lives in {city} and works on {project} remotely.",
        f"{person} spends weekends {HOBBIES[hobby][0]} near {city}.",
        f"During the {month} outage, {tool} stopped handling {said} for {project}.",
        f"The {project} release that adds {FEATURES[feature][0]} is due at the end of {month}.",
        f"{person} and {person2} agreed to give {said} a {minutes}-minute timeout on {project}.",
    ]
    category = "observation" if kind in (5, 7) else "knowledge"
    return texts[kind], category, {"kind": kind, "person": person, "person2": person2, "project": project,
                                   "tool": tool, "purpose": purpose, "city": city, "hobby": hobby, "month": month,
                                   "feature": feature}


def _self_block(rng: random.Random, tag: str) -> str:
    context = rng.choice(SELF_CONTEXTS).format(project=rng.choice(PROJECTS), person=rng.choice(PEOPLE),
                                               purpose=rng.choice(PURPOSES)[0])
    return f"{rng.choice(SELF[tag])} {context}."


def _generate(n: int, seed: int) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    rng, seen, out = random.Random(seed), set(), []
    while len(out) < n:
        if len(out) % SELF_EVERY == 0 and len(out) // SELF_EVERY < len(SELF_TAGS):
            tag = SELF_TAGS[len(out) // SELF_EVERY]
            text = _self_block(rng, tag)
            block, slots = {"text": text, "tags": [tag], "category": "knowledge"}, None
        else:
            text, category, slots = _fact(rng)
            block = {"text": text, "tags": [], "category": category}
        if text not in seen:
            seen.add(text)
            out.append((block, slots))
    return out


def blocks(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` distinct blocks ``{"text", "tags", "category"}`` (deterministic; a prefix of any larger n)."""
    return [block for block, _ in _generate(n, seed)]


def _question(slots: dict[str, Any]) -> str:
    purpose = PURPOSES[slots["purpose"]][1]
    person, project, month = slots["person"], slots["project"], slots["month"]
    return [
        f"What does {person} rely on for {purpose}?",
        f"What did the {project} team change about {purpose} this {month}?",
        f"Which tool does {person} like better for {purpose}?",
        f"Where is {person} based these days?",
        f"What does {person} do on days off?",
        f"What broke on {project} during {month}?",
        f"When will {project} ship {FEATURES[slots['feature']][1]}?",
        f"How long may {purpose} take on {project}?",
    ][slots["kind"]]


def questions(n_blocks: int, count: int, seed: int = SEED + 1) -> list[tuple[str, int]]:
    """``count`` (question, index of the block it asks about) over the first ``n_blocks`` blocks."""
    generated = _generate(n_blocks, SEED)
    facts = [i for i, (_, slots) in enumerate(generated) if slots is not None]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        index = rng.choice(facts)
        slots = generated[index][1]
        assert slots is not None
        out.append((_question(slots), index))
    return out


def edges(n: int, seed: int = SEED + 2, per_block: float = 0.5, max_degree: int = 5) -> list[tuple[int, int, float]]:
    """About ``n * per_block`` undirected edges (i, j, weight in [0.2, 0.8]) between distinct blocks,
    no block in more than ``max_degree`` of them."""
    rng, degree, seen, out = random.Random(seed), [0] * n, set(), []
    for _ in range(int(n * per_block)):
        a, b = rng.randrange(n), rng.randrange(n)
        pair = (min(a, b), max(a, b))
        if a == b or pair in seen or degree[a] >= max_degree or degree[b] >= max_degree:
            continue
        seen.add(pair)
        degree[a] += 1
        degree[b] += 1
        out.append((pair[0], pair[1], round(rng.uniform(0.2, 0.8), 2)))
    return out


def contradictions(n: int, seed: int = SEED + 3, share: float = 0.002) -> list[tuple[int, int]]:
    """About ``n * share`` pairs (i, j) of distinct blocks recorded as contradicting each other."""
    rng = random.Random(seed)
    pairs = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(max(1, int(n * share)))}
    return sorted((a, b) for a, b in pairs)
