"""What ``redmem doctor`` reports: which server redmem talks to and how fast."""

from __future__ import annotations

import statistics
import time
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.utils import HIREDIS_AVAILABLE

from ._connection import embedded_server, server_address, server_errors
from ._scripts import run_script

__all__ = ["server_report"]


def _round_trip_ms(client: Any, samples: int) -> list[float]:
    timings = []
    for _ in range(samples):
        start = time.perf_counter()
        client.ping()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def server_report(client: Any, samples: int = 200) -> dict[str, Any]:
    """Server identity, mode, Lua support and PING round-trip latency (p50/p95 in ms)."""
    with server_errors(client):
        info = client.info("server")
        if isinstance(client, RedisCluster):
            info = next(iter(info.values())) if all(isinstance(v, dict) for v in info.values()) else info
        lua_ok = run_script("ping", ["redmem:doctor:{probe}"], [], client) == b"pong"
        timings = sorted(_round_trip_ms(client, samples))
    server = embedded_server()
    cluster = isinstance(client, RedisCluster)
    return {
        "address": server_address(client),
        "server": info.get("server_name", "redis"),
        "version": info.get("valkey_version", info.get("redis_version")),
        "redis_version": info.get("redis_version"),
        "mode": f"cluster ({len(client.get_primaries())} primaries)" if cluster else "standalone",
        "embedded": server.binary if server is not None and server.url in _urls(client) else None,
        "lua": lua_ok,
        "client": f"redis-py {redis.__version__}" + (" + hiredis" if HIREDIS_AVAILABLE else ""),
        "rtt_p50_ms": statistics.median(timings),
        "rtt_p95_ms": timings[int(0.95 * (len(timings) - 1))],
        "samples": samples,
    }


def _urls(client: Any) -> set[str]:
    if isinstance(client, RedisCluster):
        return set()
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return {f"unix://{kwargs['path']}"}
    return {f"redis://{kwargs.get('host')}:{kwargs.get('port')}"}
