"""Agent Framework adapter benchmark: ``A2MHistoryProvider`` over HTTP beside the
framework's own ``InMemoryHistoryProvider`` and ``FileHistoryProvider``, and
``A2MContextProvider.before_run``, in one run. Prints figures; not a pass/fail test.

    .nox/tests-agent-framework/bin/python tests/benchmarks/bench_agent_framework.py \
        [--messages 10000] [--batch 2] [--reads 100]

(Agent Framework is not in the workspace environment; ``uv run nox -s bench`` uses the
``tests-agent-framework`` one when it exists.)

1. ``save_messages`` of ``--messages`` messages, ``--batch`` at a time (a turn: the
   input and the answer): ops/s, p50/p99 per call.
2. ``get_messages`` of the whole session ``--reads`` times (10k messages: ten timeline
   pages on the bundled server).
3. ``before_run`` of the context provider (one recall over the 10k records).

The server is ``python -m a2m_server serve`` in its own process on a temporary SQLite
file. Each provider's ratio of medians against ``InMemoryHistoryProvider`` is printed."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_framework import (
    AgentSession,
    FileHistoryProvider,
    InMemoryHistoryProvider,
    Message,
    SessionContext,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ServerProcess, load_average, p50, p99

from a2m import AsyncA2MClient
from a2m_agent_framework import A2MContextProvider, A2MHistoryProvider

warnings.simplefilter("ignore")  # FileHistoryProvider is experimental, and says so


def _turn(n: int) -> list[Message]:
    return [
        Message(role="user", contents=[f"question {n}: when is launch window {n % 97}?"]),
        Message(role="assistant", contents=[f"answer {n}: day {n % 31}"], author_name="bench"),
    ]


async def _timed(calls: int, call: Callable[[int], Awaitable[object]]) -> list[float]:
    samples = []
    for n in range(calls):
        start = time.perf_counter()
        await call(n)
        samples.append(time.perf_counter() - start)
    return samples


def _line(phase: str, name: str, samples: list[float], base: float | None) -> str:
    ratio = f"  {p50(samples) / base:6.2f}x in-memory p50" if base else ""
    return (
        f"{phase:<16} {name:<24} {len(samples) / sum(samples):9.0f} ops/s"
        f"  p50 {p50(samples) * 1e3:8.3f} ms  p99 {p99(samples) * 1e3:8.3f} ms{ratio}"
    )


async def main(arguments: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-maf-"))
    server = ServerProcess(folder / "a2m.db")
    server.wait_ready()
    client = AsyncA2MClient(server.url)
    state: dict[str, Any] = {}
    providers: dict[str, Any] = {
        "InMemoryHistoryProvider": InMemoryHistoryProvider(),
        "FileHistoryProvider": FileHistoryProvider(folder / "history"),
        "A2MHistoryProvider (HTTP)": A2MHistoryProvider(client),
    }
    turns = arguments.messages // arguments.batch
    print(f"load {load_average()}; {arguments.messages} messages, {arguments.batch} per save")
    try:
        for phase, calls, run in (
            (
                "save_messages",
                turns,
                lambda p: (
                    lambda n: p.save_messages("bench", _turn(n)[: arguments.batch], state=state)
                ),
            ),
            (
                "get_messages",
                arguments.reads,
                lambda p: lambda n: p.get_messages("bench", state=state),
            ),
        ):
            base = None
            for name, provider in providers.items():
                samples = await _timed(calls, run(provider))
                base = base or p50(samples)
                print(_line(phase, name, samples, None if name.startswith("InMemory") else base))
        memory = A2MContextProvider(client, store_turns=False)
        session = AgentSession(session_id="other")

        async def before_run(n: int) -> None:
            context = SessionContext(
                session_id="other",
                input_messages=[Message(role="user", contents=[f"launch window {n % 97}"])],
            )
            await memory.before_run(agent=None, session=session, context=context, state={})

        print(
            _line(
                "before_run", "A2MContextProvider", await _timed(arguments.reads, before_run), None
            )
        )
    finally:
        await client.aclose()
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--reads", type=int, default=100)
    asyncio.run(main(parser.parse_args()))
