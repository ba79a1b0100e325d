"""Adapter-foundations benchmark: batched writes, complete listing by cursor, and filters
pushed down to SQL. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_foundations.py [--writes 1000] [--listing 10000]
                                                        [--page 100] [--filtered 100000]
                                                        [--rounds 15]

1. ``A2MAdapter.write_many`` of ``--writes`` entries against as many ``A2MAdapter.write``
   calls, in process and over HTTP: A2M calls made (counted at the transport) and wall time,
   on a fresh server each.
2. Listing ``--listing`` entries over HTTP with ``A2MAdapter.list(limit=--page, cursor=…)``
   page after page: the total, and the median time of the first and of the last five pages
   (keyset paging: the last page should cost what the first does).
3. On ``--filtered`` records, a ``$gte`` filter on a numeric metadata key that matches 1% of
   them: p50 over ``--rounds`` of ``memory/timeline`` with the filter pushed down (SQL),
   against fetching every record by cursor and filtering with ``a2m.filters.matches`` (what
   a client must do against a server without operators), in process.

HTTP is the bundled server under uvicorn on a loopback port, in a thread of this process;
both sides of each comparison share that setup. Figures are wall-clock on a shared machine:
read the ratios."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from a2m import A2MClient, filters
from a2m.adapter import A2MAdapter
from a2m.transports import HTTPTransport, InProcessTransport, Transport
from a2m_server import A2MServer
from a2m_testing.servers import serve_http


class Counting(Transport):
    """A transport that counts the A2M calls it carries."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.calls = 0

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        self.calls += 1
        return self.inner.handle_request(request, timeout=timeout)

    def close(self) -> None:
        self.inner.close()


@contextlib.contextmanager
def binding(kind: str) -> Iterator[tuple[A2MClient, Counting]]:
    """A client on a fresh server, in process or over HTTP, and its call counter."""
    with A2MServer() as server:
        if kind == "in-process":
            counting = Counting(InProcessTransport(server))
            with A2MClient(transport=counting) as client:
                yield client, counting
        else:
            with serve_http(server) as url:
                counting = Counting(HTTPTransport(url))
                with A2MClient(transport=counting) as client:
                    yield client, counting


def entries(count: int, prefix: str = "k") -> list[dict[str, Any]]:
    return [
        {
            "key": f"{prefix}/{n:06d}",
            "type": "semantic",
            "value": {"n": n, "note": f"entry number {n}"},
            "meta": {"score": n, "tags": ["bench"]},
        }
        for n in range(count)
    ]


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def _write_many(kind: str, batch: list[dict[str, Any]]) -> tuple[int, float]:
    with binding(kind) as (client, counter):
        adapter = A2MAdapter(client, "bench/writes", source_framework="bench")
        client.describe()
        counter.calls = 0
        seconds, _ = timed(lambda: adapter.write_many(batch))
        return counter.calls, seconds


def _write_each(kind: str, batch: list[dict[str, Any]]) -> tuple[int, float]:
    with binding(kind) as (client, counter):
        adapter = A2MAdapter(client, "bench/writes", source_framework="bench")
        client.describe()
        counter.calls = 0

        def one_by_one() -> None:
            for entry in batch:
                adapter.write(**entry)

        seconds, _ = timed(one_by_one)
        return counter.calls, seconds


def bench_writes(count: int) -> None:
    print(f"\n1. {count} entries: write_many against {count} x write")
    for kind in ("in-process", "http"):
        batch = entries(count)
        many_calls, many_s = _write_many(kind, batch)
        single_calls, single_s = _write_each(kind, batch)
        print(
            f"   {kind:10}  write_many: {many_calls:5d} calls {many_s * 1000:9.1f} ms   "
            f"write x{count}: {single_calls:5d} calls {single_s * 1000:9.1f} ms   "
            f"-> {single_s / many_s:6.1f}x faster, {single_calls / many_calls:6.0f}x fewer calls"
        )


def bench_listing(count: int, page: int) -> None:
    print(f"\n2. listing {count} entries over HTTP, pages of {page}, by cursor")
    with binding("http") as (client, counter):
        adapter = A2MAdapter(client, "bench/list", source_framework="bench")
        for start in range(0, count, 1000):
            adapter.write_many(entries(min(1000, count - start), prefix=f"p{start:06d}"))
        counter.calls = 0
        times: list[float] = []
        listed = 0
        cursor: str | None = ""
        begin = time.perf_counter()
        while cursor is not None:
            seconds, result = timed(lambda c=cursor: adapter.list(limit=page, cursor=c))
            times.append(seconds)
            listed += len(result.entries)
            cursor = result.next_cursor
        total = time.perf_counter() - begin
    first = statistics.median(times[:5]) * 1000
    last = statistics.median(times[-5:]) * 1000
    print(
        f"   {listed} entries in {len(times)} pages ({counter.calls} calls): {total:.2f} s total; "
        f"first pages {first:.2f} ms, last pages {last:.2f} ms (last/first {last / first:.2f})"
    )


def bench_filter(count: int, rounds: int) -> None:
    threshold = count - count // 100
    where = {"score": {"$gte": threshold}}
    print(f"\n3. {count} records, where score >= {threshold} (1%), in process, p50 of {rounds}")
    with A2MServer() as server, A2MClient.in_process(server) as client:
        for start in range(0, count, 1000):
            client.remember(
                [
                    {"content": f"record {n}", "metadata": {"score": n, "kind": "bench"}}
                    for n in range(start, min(start + 1000, count))
                ]
            )

        def pushed_down() -> int:
            found = 0
            cursor: str | None = ""
            while cursor is not None:
                result = client.timeline(where=where, limit=1000, cursor=cursor)
                found += len(result.records)
                cursor = result.next_cursor
            return found

        def client_side() -> int:
            found = 0
            cursor: str | None = ""
            while cursor is not None:
                result = client.timeline(limit=1000, cursor=cursor)
                found += sum(filters.matches(where, r.to_wire()) for r in result.records)
                cursor = result.next_cursor
            return found

        down: list[float] = []
        side: list[float] = []
        for _ in range(rounds):  # interleaved, so drift on the machine hits both alike
            seconds, found_down = timed(pushed_down)
            down.append(seconds)
            seconds, found_side = timed(client_side)
            side.append(seconds)
        assert found_down == found_side == count // 100, (found_down, found_side)
    p50_down, p50_side = statistics.median(down) * 1000, statistics.median(side) * 1000
    print(
        f"   pushed down: p50 {p50_down:8.1f} ms   fetched and filtered here: "
        f"p50 {p50_side:8.1f} ms   -> {p50_side / p50_down:.1f}x faster ({found_down} matches)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--listing", type=int, default=10_000)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--filtered", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args()
    bench_writes(options.writes)
    bench_listing(options.listing, options.page)
    bench_filter(options.filtered, options.rounds)


if __name__ == "__main__":
    main()
