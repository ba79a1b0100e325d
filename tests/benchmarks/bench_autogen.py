"""AutoGen adapter benchmark: ``A2MMemory`` over HTTP against AutoGen's in-process
``ListMemory``, in one run. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_autogen.py [--contents 1000] [--queries 200]
                                                    [--concurrency 16] [--k 5]

1. ``add`` of ``--contents`` text contents, gathered ``--concurrency`` at a time (and, for
   reference, the same contents through one ``add_many``).
2. ``query`` of ``--queries`` questions, gathered the same way.
3. ``update_context`` on as many fresh model contexts (one user message each).

Each phase also runs the bare ``AsyncA2MClient`` call the memory makes (``remember`` of
the text, ``recall`` with ``limit=k``, the same with ``prompt``), so the memory's own cost
shows as the ratio of the two medians.

The server is ``python -m a2m_server serve`` in its own process on a temporary SQLite
file, so its CPU never shares this process's GIL. Each operation's latency is timed on
its own; a round of ``--concurrency`` starts when the previous one ends, and the variants
take turns round by round (in rotating order), so other load on the machine falls on all. Round trips are
the HTTP requests the memory's client sent (counted by an httpx event hook), divided by
the operations; the one-time ``memory/describe`` is counted in the first phase. The
contents and questions are seeded. ``ListMemory`` does no I/O and puts every memory in
the prompt, so the prompt size each adds is printed beside the timings."""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from autogen_core.memory import ListMemory, Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ServerProcess, percentile

from a2m import AsyncA2MClient
from a2m_autogen import A2MMemory

WORDS = [
    "launch",
    "window",
    "rocket",
    "fuel",
    "orbit",
    "crew",
    "cabin",
    "telemetry",
    "booster",
    "payload",
    "engine",
    "valve",
    "pressure",
    "weather",
    "delay",
    "pad",
    "tower",
    "countdown",
    "abort",
    "guidance",
    "thermal",
    "shield",
    "docking",
    "station",
    "antenna",
    "battery",
    "solar",
    "panel",
    "radio",
    "signal",
    "capsule",
    "parachute",
    "recovery",
    "ocean",
    "ship",
    "landing",
    "drone",
    "camera",
    "sensor",
    "checklist",
    "review",
    "budget",
    "supplier",
    "contract",
    "invoice",
]


@dataclass
class Phase:
    """One phase's figures for one memory."""

    name: str
    ops: int
    wall: float
    latencies: list[float]
    trips: int

    def row(self, memory: str, extra: str = "") -> str:
        p50 = statistics.median(self.latencies) * 1000
        p99 = percentile(self.latencies, 0.99) * 1000
        return (
            f"  {self.name:<15} {memory:<11} {self.ops / self.wall:>10.0f} "
            f"{p50:>9.3f} {p99:>9.3f} {self.trips / self.ops:>7.2f}  {extra}"
        )


Calls = Sequence[Callable[[], Awaitable[Any]]]


async def interleaved(
    name: str, variants: dict[str, tuple[Calls, list[int]]], concurrency: int
) -> list[tuple[str, Phase]]:
    """Run each variant's calls ``concurrency`` at a time, the variants taking turns round
    by round (their order rotating), so load from elsewhere on the machine falls on all of
    them alike. A variant's wall time and round trips are summed over its own rounds."""
    labels = list(variants)
    latencies: dict[str, list[float]] = {label: [] for label in labels}
    wall = dict.fromkeys(labels, 0.0)
    trips = dict.fromkeys(labels, 0)

    async def timed(label: str, call: Callable[[], Awaitable[Any]]) -> None:
        started = time.perf_counter()
        await call()
        latencies[label].append(time.perf_counter() - started)

    rounds = max(len(calls) for calls, _ in variants.values())
    for index, offset in enumerate(range(0, rounds, concurrency)):
        shift = index % len(labels)
        for label in labels[shift:] + labels[:shift]:
            calls, counter = variants[label]
            before, started = counter[0], time.perf_counter()
            await asyncio.gather(*(timed(label, c) for c in calls[offset : offset + concurrency]))
            wall[label] += time.perf_counter() - started
            trips[label] += counter[0] - before
    return [
        (label, Phase(name, len(variants[label][0]), wall[label], latencies[label], trips[label]))
        for label in labels
    ]


def sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(length))


async def prompt_chars(memory: Memory, question: str) -> int:
    context = UnboundedChatCompletionContext([UserMessage(content=question, source="user")])
    await memory.update_context(context)
    return sum(len(m.content) for m in await context.get_messages() if isinstance(m, SystemMessage))


async def run(args: argparse.Namespace, url: str) -> None:
    rng = random.Random(7)
    contents = [
        MemoryContent(content=sentence(rng, 12), mime_type=MemoryMimeType.TEXT)
        for _ in range(args.contents)
    ]
    questions = [sentence(rng, 3) for _ in range(args.queries)]
    requests = [0]

    async def count(_: httpx.Request) -> None:
        requests[0] += 1

    limits = httpx.Limits(max_connections=64, max_keepalive_connections=args.concurrency)
    http = httpx.AsyncClient(event_hooks={"request": [count]}, limits=limits, timeout=30)
    quiet = [0]
    async with http, AsyncA2MClient(url, http_client=http) as client:
        shared = A2MMemory(client, namespace="bench/autogen", k=args.k)
        listed = ListMemory(name="bench")
        memories: list[tuple[str, Memory]] = [("ListMemory", listed), ("A2MMemory", shared)]
        phases: dict[str, list[tuple[str, Phase]]] = {}

        def update(memory: Memory, question: str) -> Awaitable[Any]:
            context = UnboundedChatCompletionContext([UserMessage(content=question, source="user")])
            return memory.update_context(context)

        phases["add"] = await interleaved(
            "add",
            {
                "ListMemory": ([lambda c=c: listed.add(c) for c in contents], quiet),  # type: ignore[misc]
                "A2MMemory": ([lambda c=c: shared.add(c) for c in contents], requests),  # type: ignore[misc]
                "raw client": (
                    [lambda c=c: client.remember(str(c.content)) for c in contents],  # type: ignore[misc]
                    requests,
                ),
            },
            args.concurrency,
        )
        batch = A2MMemory(client, namespace="bench/batch")
        before = requests[0]
        started = time.perf_counter()
        await batch.add_many(contents)
        add_many_wall, add_many_trips = time.perf_counter() - started, requests[0] - before

        phases["query"] = await interleaved(
            "query",
            {
                "ListMemory": ([lambda q=q: listed.query(q) for q in questions], quiet),  # type: ignore[misc]
                "A2MMemory": ([lambda q=q: shared.query(q) for q in questions], requests),  # type: ignore[misc]
                "raw client": (
                    [lambda q=q: client.recall(q, limit=args.k) for q in questions],  # type: ignore[misc]
                    requests,
                ),
            },
            args.concurrency,
        )
        phases["update_context"] = await interleaved(
            "update_context",
            {
                "ListMemory": ([lambda q=q: update(listed, q) for q in questions], quiet),  # type: ignore[misc]
                "A2MMemory": ([lambda q=q: update(shared, q) for q in questions], requests),  # type: ignore[misc]
                "raw client": (
                    [
                        lambda q=q: client.recall(q, limit=args.k, prompt={"style": "facts"})  # type: ignore[misc]
                        for q in questions
                    ],
                    requests,
                ),
            },
            args.concurrency,
        )
        sizes = {label: await prompt_chars(memory, questions[0]) for label, memory in memories}

    print(
        f"A2MMemory over HTTP (a2m-server in its own process) vs ListMemory: "
        f"{args.contents} contents, {args.queries} queries, gathered {args.concurrency} at a "
        f"time, k={args.k}"
    )
    print(f"  {'phase':<15} {'memory':<11} {'ops/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'trips':>7}")
    for name, rows in phases.items():
        for label, phase in rows:
            extra = ""
            if name == "update_context" and label in sizes:
                extra = f"prompt {sizes[label]} chars"
            print(phase.row(label, extra))
        (_, base), (_, ours), (_, raw) = rows
        slower = (base.ops / base.wall) / (ours.ops / ours.wall)
        overhead = statistics.median(ours.latencies) / statistics.median(raw.latencies)
        print(
            f"  {'':<15} throughput ListMemory/A2MMemory {slower:.0f}x; "
            f"p50 A2MMemory/raw client {overhead:.2f}x"
        )
    print(
        f"  add_many        A2MMemory   {args.contents / add_many_wall:>10.0f} "
        f"{'':>9} {'':>9} {add_many_trips / args.contents:>7.3f}  "
        f"({add_many_trips} round trips for {args.contents} contents)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contents", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = ServerProcess(Path(folder) / "bench.db")
        try:
            server.wait_ready()
            asyncio.run(run(args, server.url))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
