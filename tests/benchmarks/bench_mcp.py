"""MCP server benchmark: tool calls per second of ``a2m-mcp`` over stdio and streamable
HTTP, and its knowledge-graph tools against the upstream ``@modelcontextprotocol/server-memory``
JSON-file store. Prints figures; it is not a pass/fail test.

    python tests/benchmarks/bench_mcp.py [--calls 300] [--entities 10000] [--lookups 50]
                                         [--upstream PATH/dist/index.js]

It needs ``a2m-mcp`` installed, which cannot share the workspace environment (CrewAI pins
``mcp<2``); ``uv run nox -s bench`` runs it in an environment of its own.

1. ``remember`` then ``recall`` tool calls, ``--calls`` of each, one at a time through the
   real MCP client, over stdio and over HTTP, each ``a2m-mcp`` on an embedded SQLite store
   in its own process. The baseline is the same ``remember``/``recall`` through a bare
   ``AsyncA2MClient`` on an embedded store in this process: the ratio is what MCP (the
   process hop, JSON-RPC framing, schema validation, result rendering) costs.
2. The graph: ``--entities`` entities (three observations each, and a relation from each
   to the next) created 500 per call, then ``--lookups`` calls each of ``search_nodes``,
   ``open_nodes`` and ``add_observations``, ``read_graph`` (the first read after the writes
   apart), and ``search_nodes`` right after a write (that search alone timed); against upstream too
   when Node and its entry point are found (``--upstream``, else
   ``./node_modules/@modelcontextprotocol/server-memory/dist/index.js``)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream
from mcp import Client, StdioServerParameters

from a2m import AsyncA2MClient
from a2m_server.server import A2MServer

WORDS = [
    "deploy",
    "key",
    "rotates",
    "cache",
    "warms",
    "queue",
    "drains",
    "invoice",
    "ships",
    "build",
    "passes",
    "tests",
    "bind",
]
BATCH = 500


def sentence(i: int) -> str:
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6)]
    return f"fact {i}: " + " ".join(words)


def a2m_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "a2m_mcp.cli", *args]


def stdio(argv: list[str], env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **(env or {})})


@asynccontextmanager
async def http(db: str) -> AsyncIterator[str]:
    argv = a2m_mcp("--db", db, "--transport", "http", "--port", "0")
    async with await anyio.open_process(argv, stdout=subprocess.DEVNULL) as process:
        try:
            assert process.stderr is not None
            seen = ""
            found = None
            with anyio.fail_after(60):
                async for chunk in TextReceiveStream(process.stderr):
                    seen += chunk
                    found = re.search(r"serving MCP at (\S+)\n", seen)
                    if found:
                        break
            assert found is not None, seen
            yield found.group(1)
        finally:
            process.terminate()
            await process.wait()


async def rate(count: int, call: Callable[[int], Awaitable[Any]]) -> float:
    """Calls per second of ``count`` sequential calls."""
    start = time.perf_counter()
    for i in range(count):
        await call(i)
    return count / (time.perf_counter() - start)


async def tool_rates(client: Client, calls: int) -> tuple[float, float]:
    async def remember(i: int) -> None:
        result = await client.call_tool("remember", {"content": sentence(i)})
        assert not result.is_error

    async def recall(i: int) -> None:
        result = await client.call_tool("recall", {"query": WORDS[i % len(WORDS)], "limit": 5})
        assert not result.is_error

    return await rate(calls, remember), await rate(calls, recall)


async def baseline_rates(calls: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        server = A2MServer(db=str(Path(folder) / "base.db"))
        client = AsyncA2MClient.in_process(server)
        try:
            remember = await rate(calls, lambda i: client.remember(sentence(i)))
            recall = await rate(calls, lambda i: client.recall(WORDS[i % len(WORDS)], limit=5))
        finally:
            await client.aclose()
            server.close()
    return remember, recall


async def graph_rates(client: Client, entities: int, lookups: int) -> dict[str, float]:
    async def ok(name: str, arguments: dict[str, Any]) -> Any:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result.content
        return result.structured_content

    figures: dict[str, float] = {}
    start = time.perf_counter()
    for first in range(0, entities, BATCH):
        batch = [
            {
                "name": f"entity-{i}",
                "entityType": "service" if i % 2 else "team",
                "observations": [sentence(i), sentence(i + 1), f"owner {i % 97}"],
            }
            for i in range(first, min(entities, first + BATCH))
        ]
        await ok("create_entities", {"entities": batch})
        relations = [
            {"from": f"entity-{i}", "to": f"entity-{i + 1}", "relationType": "calls"}
            for i in range(first, min(entities - 1, first + BATCH))
        ]
        await ok("create_relations", {"relations": relations})
    figures["create (entities/s)"] = entities / (time.perf_counter() - start)
    step = max(1, entities // max(1, lookups))

    async def search(i: int) -> None:
        await ok("search_nodes", {"query": f"OWNER {i % 97}"})

    async def open_(i: int) -> None:
        await ok("open_nodes", {"names": [f"entity-{(i * step) % entities}"]})

    async def add(i: int) -> None:
        name = f"entity-{(i * step) % entities}"
        await ok(
            "add_observations", {"observations": [{"entityName": name, "contents": [f"seen {i}"]}]}
        )

    async def write_then_search(i: int) -> None:
        name = f"entity-{(i * 7) % entities}"
        await ok(
            "add_observations", {"observations": [{"entityName": name, "contents": [f"w {i}"]}]}
        )
        start = time.perf_counter()
        await search(i)
        searched.append(time.perf_counter() - start)

    searched: list[float] = []

    async def read(_: int) -> None:
        graph = await ok("read_graph", {})
        assert len(graph["entities"]) == entities

    # The first read after writes reads the store whole; a2m-mcp keeps it while the store's
    # event log shows no change, upstream reads its file on every call.
    figures["read_graph, first (calls/s)"] = await rate(1, read)
    figures["read_graph, again (calls/s)"] = await rate(3, read)
    figures["search_nodes (calls/s)"] = await rate(lookups, search)
    figures["open_nodes (calls/s)"] = await rate(lookups, open_)
    figures["add_observations (calls/s)"] = await rate(lookups, add)
    for i in range(3):
        await write_then_search(i)
    figures["search after a write (calls/s)"] = len(searched) / sum(searched)
    return figures


def upstream_entry(given: str | None) -> str | None:
    path = given or str(
        Path.cwd() / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    )
    if shutil.which("node") is None or not Path(path).is_file():
        return None
    return path


async def main(args: argparse.Namespace) -> None:
    print(f"a2m-mcp benchmark: {args.calls} calls per tool, {args.entities} graph entities")
    base_remember, base_recall = await baseline_rates(args.calls)
    print(f"\n{'remember/recall':<34}{'remember/s':>12}{'recall/s':>12}{'vs bare client':>22}")
    print(
        f"{'bare AsyncA2MClient (in process)':<34}{base_remember:>12.0f}{base_recall:>12.0f}{'1.00 / 1.00':>22}"
    )
    with tempfile.TemporaryDirectory() as folder:
        async with Client(stdio(a2m_mcp("--db", str(Path(folder) / "stdio.db")))) as client:
            remember, recall = await tool_rates(client, args.calls)
        ratio = f"{remember / base_remember:.2f} / {recall / base_recall:.2f}"
        print(f"{'a2m-mcp over stdio':<34}{remember:>12.0f}{recall:>12.0f}{ratio:>22}")
        async with http(str(Path(folder) / "http.db")) as url, Client(url) as client:
            remember, recall = await tool_rates(client, args.calls)
        ratio = f"{remember / base_remember:.2f} / {recall / base_recall:.2f}"
        print(f"{'a2m-mcp over streamable HTTP':<34}{remember:>12.0f}{recall:>12.0f}{ratio:>22}")

        async with Client(stdio(a2m_mcp("--db", str(Path(folder) / "graph.db")))) as client:
            ours = await graph_rates(client, args.entities, args.lookups)
        entry = upstream_entry(args.upstream)
        theirs: dict[str, float] | None = None
        if entry is not None:
            env = {"MEMORY_FILE_PATH": str(Path(folder) / "memory.jsonl")}
            async with Client(stdio(["node", entry], env)) as client:
                theirs = await graph_rates(client, args.entities, args.lookups)
    print(f"\nknowledge graph at {args.entities} entities (stdio)")
    print(f"{'':<32}{'a2m-mcp':>12}{'upstream':>12}{'a2m/upstream':>14}")
    for name, value in ours.items():
        if theirs is None:
            print(f"{name:<32}{value:>12.2f}{'-':>12}{'-':>14}")
        else:
            print(f"{name:<32}{value:>12.2f}{theirs[name]:>12.2f}{value / theirs[name]:>14.2f}")
    if theirs is None:
        print(
            "(upstream not measured: needs node and `npm install @modelcontextprotocol/server-memory`)"
        )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--lookups", type=int, default=50)
    parser.add_argument("--upstream", default=None, help="upstream server-memory's dist/index.js")
    anyio.run(main, parser.parse_args())
