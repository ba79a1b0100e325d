"""OpenAI Agents SDK adapter benchmark: ``A2MSession`` over HTTP beside the SDK's own
``SQLiteSession`` and ``AdvancedSQLiteSession`` (both on a file), in one run. Prints
figures; it is not a pass/fail test.

    .nox/tests-openai-agents/bin/python tests/benchmarks/bench_openai_agents.py \
        [--items 10000] [--batch 2] [--reads 200] [--limit 50]

(the Agents SDK needs openai>=3, so it runs in the ``tests-openai-agents`` environment;
``uv run nox -s bench`` uses that one when it exists.)

1. ``add_items`` of ``--items`` items, ``--batch`` at a time (a turn adds a user message
   and an answer): ops/s and p50/p99 per call.
2. ``get_items(limit=--limit)`` ``--reads`` times on the full session: ops/s, p50/p99.
3. ``pop_item`` then ``add_items`` of it back, ``--reads`` times.

The server is ``python -m a2m_server serve`` in its own process on a temporary SQLite
file. The sessions take turns phase by phase, so load on the machine falls on all; the
A2M/SQLite ratio of medians is printed per phase."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import SQLiteSession
from agents.extensions.memory import AdvancedSQLiteSession

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ServerProcess, load_average, p50, p99

from a2m import AsyncA2MClient
from a2m_openai_agents import A2MSession


def _turn(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"question {n}: what about the launch window {n % 97}?"},
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"answer {n}", "annotations": []}],
        },
    ]


async def _timed(calls: int, call: Callable[[int], Awaitable[object]]) -> list[float]:
    samples = []
    for n in range(calls):
        start = time.perf_counter()
        await call(n)
        samples.append(time.perf_counter() - start)
    return samples


def _line(name: str, phase: str, samples: list[float], base: float | None) -> str:
    rate = len(samples) / sum(samples)
    ratio = f"  {p50(samples) / base:5.2f}x SQLite p50" if base else ""
    return (
        f"{phase:<22} {name:<22} {rate:9.0f} ops/s  p50 {p50(samples) * 1e3:7.3f} ms"
        f"  p99 {p99(samples) * 1e3:7.3f} ms{ratio}"
    )


async def main(arguments: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-oai-"))
    server = ServerProcess(folder / "a2m.db")
    server.wait_ready()
    client = AsyncA2MClient(server.url)
    sessions: dict[str, Any] = {
        "SQLiteSession": SQLiteSession("bench", folder / "sqlite.db"),
        "AdvancedSQLiteSession": AdvancedSQLiteSession(
            session_id="bench", db_path=folder / "advanced.db", create_tables=True
        ),
        "A2MSession (HTTP)": A2MSession("bench", client),
    }
    batch, turns = arguments.batch, arguments.items // arguments.batch
    print(f"load {load_average()}; {arguments.items} items, {batch} per add_items")
    try:
        for phase, calls, run in (
            ("add_items", turns, lambda s: lambda n: s.add_items(_turn(n)[:batch])),
            (
                f"get_items(limit={arguments.limit})",
                arguments.reads,
                lambda s: lambda n: s.get_items(limit=arguments.limit),
            ),
            ("pop_item + add back", arguments.reads, lambda s: lambda n: _pop_and_back(s)),
        ):
            base = None
            for name, session in sessions.items():
                samples = await _timed(calls, run(session))
                if base is None:
                    base = p50(samples)
                print(_line(name, phase, samples, None if name == "SQLiteSession" else base))
    finally:
        await client.aclose()
        server.stop()
        for session in sessions.values():
            close = getattr(session, "close", None)
            if close is not None and not asyncio.iscoroutinefunction(close):
                close()


async def _pop_and_back(session: Any) -> None:
    item = await session.pop_item()
    if item is not None:
        await session.add_items([item])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--limit", type=int, default=50)
    asyncio.run(main(parser.parse_args()))
