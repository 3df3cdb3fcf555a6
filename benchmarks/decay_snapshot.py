"""Server time of the inspector's decay sort over one agent of N memories: the exact order at one
time (:func:`redmem.fields._decay_snapshot.exact_decay_page`), built and then reused, against the
threshold selection (:meth:`DecayingSortedField.ranked`) that pages below 2,000 memories.

The decay field's sorted sets (last-updated time, base score, confidence) and the record
registry are written directly, as N saved ChatMemory turns would leave them (times spread over a
year, importance 0.2-3, confidence 0.1-0.9), so the measure needs no ingest of texts and vectors.
Each timing is a first page (limit 50) and a deep page (offset N/2).

    python benchmarks/decay_snapshot.py --n 100000 --repeats 10

Writes results/decay_snapshot.{json,md}. Timing targets are the inspector's: p50 <= 300 ms per page.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

import redmem
from common import RESULTS, machine, summary, write_json
from redmem.cli_commands._memory import ChatMemory
from redmem.fields._decay_snapshot import exact_decay_page
from redmem.model._persistence import ALL_RECORDS
from redmem.store._embedded import EmbeddedServer
from redmem.ui._inventory import space_of

AGENT = "agent-1"
DAY = 86400.0
CHUNK = 10_000
#: The threshold selection is timed up to this size (it takes seconds per page beyond).
THRESHOLD_UP_TO = 10_000


def plant(client: Any, n: int, now: float) -> None:
    """The sorted sets of ``n`` memories of AGENT."""
    space = space_of(AGENT)
    decay = ChatMemory._meta.fields["relevance"]
    keys, confidence = decay.keys_in(space), ChatMemory._meta.fields["confidence"].index_key(space)
    rng = random.Random(7)
    for low in range(0, n, CHUNK):
        ids = [f"m{i:07d}" for i in range(low, min(n, low + CHUNK))]
        with client.pipeline(transaction=False) as pipe:
            pipe.zadd(space.key(ALL_RECORDS), dict.fromkeys(ids, 0))
            pipe.zadd(keys.updated, {i: now - rng.uniform(0, 365) * DAY for i in ids})
            pipe.zadd(keys.base, {i: rng.uniform(0.2, 3.0) for i in ids})
            pipe.zadd(confidence, {i: rng.uniform(0.1, 0.9) for i in ids})
            pipe.execute()


def timed(call: Callable[[], Any], repeats: int) -> dict[str, float]:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return summary(times)


def measure(client: Any, n: int, repeats: int, now: float) -> dict[str, dict[str, float]]:
    space, decay = space_of(AGENT), ChatMemory._meta.fields["relevance"]
    stamps = iter(range(10**9))

    def fresh(offset: int) -> Callable[[], Any]:  # every call past the reuse window: a full build
        return lambda: exact_decay_page(decay, space, offset, 50, now + 3600 * (1 + next(stamps)))

    results = {"exact order, built, first page": timed(fresh(0), repeats),
               "exact order, built, page at N/2": timed(fresh(n // 2), repeats)}
    at = now + 3600 * (1 + next(stamps))
    exact_decay_page(decay, space, 0, 50, at)
    results["exact order, reused, first page"] = timed(lambda: exact_decay_page(decay, space, 0, 50, at), repeats)
    results["exact order, reused, page at N/2"] = timed(lambda: exact_decay_page(decay, space, n // 2, 50, at),
                                                        repeats)
    if n <= THRESHOLD_UP_TO:
        results["threshold selection, first page"] = timed(lambda: decay.ranked(space, at, 50), repeats)
        results["threshold selection, page at N/2"] = timed(lambda: decay.ranked(space, at, n // 2 + 50), repeats)
    return results


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# Inspector decay sort at {payload['n']:,} memories", "",
             f"Client-side time per page (one process, private embedded server), {payload['repeats']} loads each; "
             f"target p50 <= 300 ms. `python benchmarks/decay_snapshot.py --n {payload['n']} "
             f"--repeats {payload['repeats']}`", "", "| page | p50 ms | p95 ms |", "|---|---:|---:|"]
    lines += [f"| {name} | {row['p50']:.1f} | {row['p95']:.1f} |" for name, row in payload["pages"].items()]
    info = payload["machine"]
    lines += ["", f"Machine: {info['cpu']}, {info['cores']} cores, load average {info['load_average']}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--name", default="decay_snapshot", help="results/<name>.{json,md}")
    args = parser.parse_args()
    now = time.time()
    with EmbeddedServer() as server:
        client = server.client()
        redmem.configure(client=client, key_prefix="decaybench")
        plant(client, args.n, now)
        payload = {"n": args.n, "repeats": args.repeats, "pages": measure(client, args.n, args.repeats, now),
                   "machine": machine()}
    write_json(args.name, payload)
    (RESULTS / f"{args.name}.md").write_text(markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()
