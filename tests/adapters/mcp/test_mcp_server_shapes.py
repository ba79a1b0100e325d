"""The MCP server on every kind of conformant A2M server, not only the bundled one's
defaults: a plain 0.1 server (no timeline cursor, no ``where`` operators, no event log),
one with a small ``max_recall_limit``, one with a small ``max_records_per_call``. The
knowledge-graph tools answer upstream's recorded sequence as upstream did, and read a
graph whole or say they cannot, never silently in part; the memory tools, resources and
prompt ask for no more records than the server returns in one call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from graph_sequence import replay, same_as_recorded
from mcp import Client
from mcp_kit import CONFIG, text

from a2m import AsyncA2MClient
from a2m_mcp import build_server
from a2m_server.config import LimitsConfig, ObservationsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import MethodLog
from a2m_testing.shapes import SERVER_SHAPES

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]


@asynccontextmanager
async def graph_server(**config: Any) -> AsyncIterator[tuple[Client, MethodLog]]:
    """The MCP server over an in-process A2M server configured as ``config``; yields the
    MCP client and the log of the A2M methods it called."""
    with A2MServer(ServerConfig(**config)) as server:
        log = MethodLog(server)
        a2m = AsyncA2MClient.in_process(log)
        try:
            async with Client(build_server(a2m, CONFIG)) as mcp:
                yield mcp, log
        finally:
            await a2m.aclose()


@pytest.mark.parametrize("shape", list(SERVER_SHAPES))
async def test_upstreams_sequence_gives_upstreams_results_on_every_server_shape(
    shape: str,
) -> None:
    async with graph_server(**SERVER_SHAPES[shape]) as (mcp, _):
        same_as_recorded(await replay(mcp))


def _people(count: int) -> list[dict[str, Any]]:
    return [
        {"name": f"person {n}", "entityType": "person", "observations": [f"likes {n}", "walks"]}
        for n in range(count)
    ]


async def _graph(mcp: Client) -> dict[str, Any]:
    result = await mcp.call_tool("read_graph", {})
    assert not result.is_error, text(result)
    graph: dict[str, Any] = json.loads(text(result))
    return graph


async def test_writes_go_in_batches_the_server_accepts() -> None:
    """90 records (30 entities, two observations each) on a server taking 20 a call: five
    ``memory/remember`` calls, and every fact is there."""
    async with graph_server(limits=LimitsConfig(max_records_per_call=20)) as (mcp, log):
        created = await mcp.call_tool("create_entities", {"entities": _people(30)})
        assert not created.is_error, text(created)
        assert log.count("memory/remember") == 5
        graph = await _graph(mcp)
    assert [e["name"] for e in graph["entities"]] == [f"person {n}" for n in range(30)]
    assert all(
        e["observations"] == [f"likes {n}", "walks"] for n, e in enumerate(graph["entities"])
    )


async def test_a_server_declaring_no_limit_gives_the_whole_graph_in_one_call() -> None:
    """1,205 entities, more than a client's default listing cap: all read back, in one
    ``memory/timeline`` (§4.4: no ``limit``, every record)."""
    people = [{"name": f"p{n}", "entityType": "person", "observations": []} for n in range(1205)]
    async with graph_server(timeline_cursor=False, declare_recall_limit=False) as (mcp, log):
        created = await mcp.call_tool("create_entities", {"entities": people})
        assert not created.is_error, text(created)
        before = log.count("memory/timeline")
        graph = await _graph(mcp)
        assert log.count("memory/timeline") == before + 1
    assert [e["name"] for e in graph["entities"]] == [p["name"] for p in people]


async def test_a_graph_a_server_cannot_page_is_refused_not_cut_short() -> None:
    """No cursor and ``max_recall_limit`` 20: a graph of 12 records reads whole; at 21,
    the MCP server that read it before keeps it whole from the event log, and a fresh one
    says the graph cannot be read whole, and names what would."""
    config = ServerConfig(timeline_cursor=False, limits=LimitsConfig(max_recall_limit=20))
    with A2MServer(config) as server:
        async with _mcp(server) as first:
            assert not (await first.call_tool("create_entities", {"entities": _people(4)})).is_error
            assert len((await _graph(first))["entities"]) == 4
            more = [{"name": f"x{n}", "entityType": "thing", "observations": []} for n in range(9)]
            assert not (await first.call_tool("create_entities", {"entities": more})).is_error
            assert len((await _graph(first))["entities"]) == 13
        async with _mcp(server) as fresh:
            for tool, arguments in (
                ("read_graph", {}),
                ("search_nodes", {"query": "person"}),
                ("open_nodes", {"names": ["person 1"]}),
            ):
                result = await fresh.call_tool(tool, arguments)
                assert result.is_error, tool
                assert "more than the 20 records" in text(result)
                assert "timeline.cursor" in text(result)


@asynccontextmanager
async def _mcp(server: A2MServer) -> AsyncIterator[Client]:
    a2m = AsyncA2MClient.in_process(server)
    try:
        async with Client(build_server(a2m, CONFIG)) as mcp:
            yield mcp
    finally:
        await a2m.aclose()


async def test_reads_ask_for_no_more_than_the_server_returns_in_one_call() -> None:
    """``max_recall_limit`` 3: the tools' defaults (timeline 20, a tag filter's wider
    recall), the resources (20 and 100 records) and the prompt (8) each answer, with at
    most three memories, where each used to be refused with QUOTA_EXCEEDED."""
    config = ServerConfig(
        limits=LimitsConfig(max_recall_limit=3),
        observations=ObservationsConfig(org="acme", project="billing"),
    )
    with A2MServer(config) as server:
        async with _mcp(server) as mcp:
            for n in range(6):
                written = await mcp.call_tool(
                    "remember", {"content": f"tea fact {n}", "tags": ["t"]}
                )
                assert not written.is_error, text(written)
            noted = await mcp.call_tool("remember_observation", {"content": "tea is green"})
            assert not noted.is_error, text(noted)
            for tool, arguments in (
                ("recall", {"query": "tea", "limit": 2, "filters": {"tags": "t"}}),
                ("timeline", {}),
                ("forget", {"query": "tea"}),
            ):
                result = await mcp.call_tool(tool, arguments)
                assert not result.is_error, (tool, text(result))
                assert result.structured_content is not None
                listed = (
                    result.structured_content.get("memories")
                    or result.structured_content["candidates"]
                )
                assert 1 <= len(listed) <= 3, tool
            recent = (await mcp.read_resource("a2m://memories/recent")).contents[0]
            numbered = [line for line in recent.text.splitlines() if line[:1].isdigit()]  # type: ignore[union-attr]
            assert len(numbered) == 3
            observed = (await mcp.read_resource("a2m://observations/coder")).contents[0]
            assert "tea is green" in observed.text  # type: ignore[union-attr]
            prompt = await mcp.get_prompt("relevant_memories", {"topic": "tea"})
            lines = str(prompt.messages[0].content.text).splitlines()  # type: ignore[union-attr]
            assert len([line for line in lines if line.startswith("- ")]) == 3


async def test_a_write_refused_after_earlier_calls_took_part_leaves_the_graph_as_it_was() -> None:
    """30 people on a server taking 20 records a call, the last with an observation longer
    than it stores: the tool fails, naming the limit, and the graph is as it was, as
    upstream's one file write leaves it; the same people without it are all added."""
    people = _people(30)
    people[-1]["observations"].append("x" * 300)
    config = {"limits": LimitsConfig(max_records_per_call=20, max_content_length=200)}
    async with graph_server(**config) as (mcp, log):
        assert not (await mcp.call_tool("create_entities", {"entities": _people(1)})).is_error
        before = await _graph(mcp)
        refused = await mcp.call_tool("create_entities", {"entities": people})
        assert refused.is_error
        assert "max_content_length" in text(refused)
        assert log.count("memory/forget") == 1
        assert await _graph(mcp) == before
        created = await mcp.call_tool("create_entities", {"entities": _people(30)})
        assert not created.is_error, text(created)
        assert len((await _graph(mcp))["entities"]) == 30
