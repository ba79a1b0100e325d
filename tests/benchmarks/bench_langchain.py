"""LangChain adapter benchmark: A2MChatMessageHistory and A2MVectorStore over JSON-RPC HTTP,
side by side in one run with LangChain's InMemoryChatMessageHistory and InMemoryVectorStore.
Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_langchain.py [--messages 100] [--texts 1000]
                                                      [--queries 50] [--rounds 5]

1. Chat history: ``add_messages`` of ``--messages`` messages in one call, the same messages
   one ``add_message`` at a time, and reading the conversation back (``messages``).
2. Vector store: ``add_texts`` of ``--texts`` texts, then ``--queries`` ``similarity_search``
   calls (k=4): the p50 and p95 of one search.

The server is ``python -m a2m_server serve`` in its own process (so its CPU never shares
this process's GIL), on a temporary SQLite file. Both sides use the same deterministic
embedding (a hash of the words, 64 dimensions), so neither pays for a model. Round trips
are the HTTP requests the client sent, counted with an httpx event hook, after the
client's one ``memory/describe``. Figures are medians over ``--rounds`` rounds, each on a
fresh conversation or namespace; the ratio is A2M over in-memory."""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import httpx
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore

from a2m import A2MClient
from a2m_langchain import A2MChatMessageHistory, A2MVectorStore

DIMS = 64


class HashEmbeddings(Embeddings):
    """Deterministic, model-free: each word adds to the dimension its hash picks."""

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * DIMS
        for word in text.lower().split():
            vector[int(hashlib.blake2b(word.encode(), digest_size=2).hexdigest(), 16) % DIMS] += 1
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


WORDS = [
    "deploy",
    "key",
    "rotates",
    "every",
    "days",
    "pipeline",
    "merge",
    "approvals",
    "office",
    "coffee",
    "machine",
    "floor",
    "tea",
    "city",
    "river",
    "bridge",
    "train",
    "ticket",
    "report",
    "budget",
    "quarter",
    "sales",
    "team",
    "meeting",
    "notes",
    "cat",
    "dog",
    "garden",
    "window",
    "summer",
    "winter",
    "music",
    "guitar",
    "piano",
    "song",
    "book",
    "chapter",
    "page",
]


def text(n: int) -> str:
    return " ".join(WORDS[(n * 7 + i * 13) % len(WORDS)] for i in range(8))


def conversation(size: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"question {n}: {text(n)}") if n % 2 == 0 else AIMessage(f"answer {text(n)}")
        for n in range(size)
    ]


@contextmanager
def server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as workdir:
        command = [sys.executable, "-m", "a2m_server", "serve", "--port", str(port)]
        command += ["--db", os.path.join(workdir, "bench.db"), "--log-level", "warning"]
        process = subprocess.Popen(command)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(url + ".well-known/a2m-server.json", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError("the benchmark server did not start") from None
                    time.sleep(0.1)
            yield url
        finally:
            process.terminate()
            process.wait(30)


class Counted:
    """An A2MClient whose HTTP requests are counted."""

    def __init__(self, url: str) -> None:
        self.requests = 0
        self.http = httpx.Client(event_hooks={"request": [self._count]}, timeout=30)
        self.client = A2MClient(url, http_client=self.http)
        self.client.describe()
        self.requests = 0

    def _count(self, request: httpx.Request) -> None:
        self.requests += 1

    def trips(self, work: Callable[[], Any]) -> tuple[float, int, Any]:
        before = self.requests
        start = time.perf_counter()
        result = work()
        return time.perf_counter() - start, self.requests - before, result

    def close(self) -> None:
        self.client.close()
        self.http.close()


def timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def in_memory_history() -> Any:
    from langchain_core.chat_history import InMemoryChatMessageHistory

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in langchain-core 1.x, still the baseline
        return InMemoryChatMessageHistory()


def row(name: str, ours: list[float], theirs: list[float], trips: int | str) -> None:
    a2m, memory = statistics.median(ours), statistics.median(theirs)
    ratio = a2m / memory if memory else float("inf")
    print(f"{name:<34} {a2m * 1e3:>10.2f} {memory * 1e3:>12.3f} {ratio:>9.0f}x {trips!s:>8}")


def bench_history(counted: Counted, messages: int, rounds: int) -> None:
    batch: dict[str, list[float]] = {"ours": [], "theirs": []}
    single: dict[str, list[float]] = {"ours": [], "theirs": []}
    read: dict[str, list[float]] = {"ours": [], "theirs": []}
    trips: dict[str, int] = {}
    turn = conversation(messages)
    for n in range(rounds):
        ours = A2MChatMessageHistory(f"bench-{n}", counted.client)
        theirs = in_memory_history()
        seconds, trips["batch"], _ = counted.trips(partial(ours.add_messages, turn))
        batch["ours"].append(seconds)
        batch["theirs"].append(timed(partial(theirs.add_messages, turn)))
        seconds, trips["read"], got = counted.trips(partial(getattr, ours, "messages"))
        assert len(got) == messages
        read["ours"].append(seconds)
        read["theirs"].append(timed(partial(getattr, theirs, "messages")))
        ours = A2MChatMessageHistory(f"bench-single-{n}", counted.client)
        theirs = in_memory_history()

        def one_by_one(history: Any) -> None:
            for message in turn:
                history.add_message(message)

        seconds, trips["single"], _ = counted.trips(partial(one_by_one, ours))
        single["ours"].append(seconds)
        single["theirs"].append(timed(partial(one_by_one, theirs)))
    print(f"\nChat history, {messages} messages, median of {rounds} rounds")
    print(f"{'operation':<34} {'A2M ms':>10} {'in-memory ms':>12} {'ratio':>10} {'trips':>8}")
    row(f"add_messages({messages}) in one call", batch["ours"], batch["theirs"], trips["batch"])
    row(f"add_message x {messages}", single["ours"], single["theirs"], trips["single"])
    row(f"messages (read {messages} back)", read["ours"], read["theirs"], trips["read"])


def bench_vectors(counted: Counted, texts: int, queries: int, rounds: int) -> None:
    embeddings = HashEmbeddings()
    corpus = [text(n) + f" item{n}" for n in range(texts)]
    questions = [text(n * 31 + 5) for n in range(queries)]
    add: dict[str, list[float]] = {"ours": [], "theirs": []}
    search: dict[str, list[float]] = {"ours": [], "theirs": []}
    trips: dict[str, int] = {}
    for n in range(rounds):
        ours = A2MVectorStore(embeddings, counted.client, namespace=f"bench/round-{n}")
        theirs = InMemoryVectorStore(embeddings)
        seconds, trips["add"], ids = counted.trips(partial(ours.add_texts, corpus))
        assert len(ids) == texts
        add["ours"].append(seconds)
        add["theirs"].append(timed(partial(theirs.add_texts, corpus)))
        for question in questions:
            seconds, trips["search"], hits = counted.trips(
                partial(ours.similarity_search, question, k=4)
            )
            assert len(hits) == 4
            search["ours"].append(seconds)
            search["theirs"].append(timed(partial(theirs.similarity_search, question, k=4)))
    print(f"\nVector store, {texts} texts, {queries} searches (k=4) x {rounds} rounds")
    print(f"{'operation':<34} {'A2M ms':>10} {'in-memory ms':>12} {'ratio':>10} {'trips':>8}")
    row(f"add_texts({texts})", add["ours"], add["theirs"], trips["add"])
    row("similarity_search p50", search["ours"], search["theirs"], trips["search"])
    p95 = [statistics.quantiles(side, n=20)[18] for side in (search["ours"], search["theirs"])]
    print(f"{'similarity_search p95':<34} {p95[0] * 1e3:>10.2f} {p95[1] * 1e3:>12.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with server() as url:
        counted = Counted(url)
        try:
            bench_history(counted, options.messages, options.rounds)
            bench_vectors(counted, options.texts, options.queries, options.rounds)
        finally:
            counted.close()


if __name__ == "__main__":
    main()
