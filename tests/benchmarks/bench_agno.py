"""Agno adapter benchmark: A2MDb over HTTP against Agno's own SqliteDb, in one run, on the
same memories. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_agno.py [--memories 1000] [--rounds 5]
                                                  [--pages 200] [--lookups 200]

1. ``upsert_memories`` of ``--memories`` fresh memories, ``--rounds`` times (each round a
   new batch): memories per second and p50/p99 of one whole call.
2. ``get_user_memories(user_id=…, limit=20, page=k, sort_by="updated_at")``, ``--pages``
   calls over a store holding one batch of ``--memories`` (ten users): calls per second,
   p50/p99.
3. ``get_user_memories(search_content=…)``, ``--lookups`` calls with seeded words:
   calls per second, p50/p99.

The A2M server runs as ``python -m a2m_server serve`` in its own process on a loopback
port (its CPU never shares this process's GIL); SqliteDb runs in this process, as Agno
uses it. The variants alternate call by call, so machine noise falls on both alike; the
ratio is A2M time over SqliteDb time (above 1: A2M is slower)."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["AGNO_TELEMETRY"] = "false"

from agno.db.base import BaseDb
from agno.db.schemas.memory import UserMemory
from agno.db.sqlite import SqliteDb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ServerProcess, percentile

from a2m import A2MClient
from a2m_agno import A2MDb

WORDS = [
    "tea",
    "coffee",
    "hiking",
    "rust",
    "python",
    "lisbon",
    "porto",
    "jazz",
    "chess",
    "cats",
    "bread",
    "running",
]
USERS = [f"user-{i}" for i in range(10)]
# Agno's SqliteDb filters a JSON column with ILIKE, which SQLAlchemy 2.1 deprecates.
warnings.filterwarnings("ignore", module="sqlalchemy")


def batch(count: int, round_: int, chooser: random.Random) -> list[UserMemory]:
    return [
        UserMemory(
            memory=f"{' '.join(chooser.sample(WORDS, 3))} note {round_}-{i}",
            memory_id=f"r{round_}-{i:05d}",
            topics=chooser.sample(WORDS, 2),
            user_id=chooser.choice(USERS),
            input="benchmark",
            agent_id="bench",
        )
        for i in range(count)
    ]


def timed(dbs: dict[str, BaseDb], calls: list[Callable[[BaseDb], Any]]) -> dict[str, list[float]]:
    """Each call on each db, alternating which goes first; seconds per call."""
    spent: dict[str, list[float]] = {name: [] for name in dbs}
    order = list(dbs)
    for index, call in enumerate(calls):
        for name in order if index % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            call(dbs[name])
            spent[name].append(time.perf_counter() - start)
    return spent


def report(title: str, spent: dict[str, list[float]], per_call: int = 1) -> None:
    print(f"\n== {title} ==")
    print(f"{'db':<10}{'ops/s':>12}{'p50 ms':>10}{'p99 ms':>10}")
    for name, samples in spent.items():
        rate = per_call * len(samples) / sum(samples)
        p50, p99 = percentile(samples, 0.5) * 1e3, percentile(samples, 0.99) * 1e3
        print(f"{name:<10}{rate:>12.1f}{p50:>10.2f}{p99:>10.2f}")
    ratio = statistics.median(spent["a2m"]) / statistics.median(spent["sqlite"])
    print(f"a2m / sqlite (median time): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--lookups", type=int, default=200)
    args = parser.parse_args()
    chooser = random.Random(42)
    with tempfile.TemporaryDirectory() as folder:
        server = ServerProcess(Path(folder) / "a2m.db")
        try:
            server.wait_ready()
            with A2MClient(server.url) as client:
                sqlite = SqliteDb(db_file=str(Path(folder) / "agno.db"))
                dbs: dict[str, BaseDb] = {"a2m": A2MDb(client, namespace="bench"), "sqlite": sqlite}
                for db in dbs.values():  # connect, create the table, negotiate: not timed
                    db.upsert_memories(batch(1, -1, random.Random(0)))
                print(f"A2M server: {server.url} (own process); SqliteDb: in process")
                rounds = [batch(args.memories, r, chooser) for r in range(args.rounds)]
                spent = timed(
                    dbs,
                    [
                        lambda db, memories=memories: db.upsert_memories(
                            [UserMemory(**vars(m)) for m in memories]
                        )
                        for memories in rounds
                    ],
                )
                report(
                    f"upsert_memories of {args.memories} (x{args.rounds}); ops = memories",
                    spent,
                    per_call=args.memories,
                )
                # The reads run over one batch of --memories, as a user's store would hold.
                for db in dbs.values():
                    db.clear_memories()
                    db.upsert_memories(batch(args.memories, 99, random.Random(1)))
                held = args.memories
                pages = max(1, held // len(USERS) // 20)
                queries = [
                    (chooser.choice(USERS), 1 + chooser.randrange(pages)) for _ in range(args.pages)
                ]
                spent = timed(
                    dbs,
                    [
                        lambda db, user=user, page=page: db.get_user_memories(
                            user_id=user, limit=20, page=page, sort_by="updated_at"
                        )
                        for user, page in queries
                    ],
                )
                report(f"get_user_memories pages of 20 ({held} memories held)", spent)
                words = [chooser.choice(WORDS) for _ in range(args.lookups)]
                spent = timed(
                    dbs,
                    [
                        lambda db, word=word: db.get_user_memories(search_content=word, limit=50)
                        for word in words
                    ],
                )
                report(f"{args.lookups} search_content lookups", spent)
                sqlite.db_engine.dispose()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
