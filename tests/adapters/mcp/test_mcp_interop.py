"""An MCP client and a framework adapter share one store: what a tool call writes, the
adapter contract every framework adapter (LangGraph's store, CrewAI's storage…) is built
on reads back, and the reverse. CrewAI itself is not installed here: it pins ``mcp<2``."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_kit import text

from a2m import AsyncA2MClient
from a2m.adapter import AsyncA2MAdapter

pytestmark = pytest.mark.anyio


@pytest.fixture
def langgraph(a2m: AsyncA2MClient) -> AsyncA2MAdapter:
    """The contract as LangGraph's store adapter holds it: its own namespace, its
    provenance."""
    return AsyncA2MAdapter(a2m, "langgraph/users", source_framework="langgraph", agent="planner")


async def test_an_mcp_write_reads_back_through_the_adapter(
    mcp: Client, langgraph: AsyncA2MAdapter
) -> None:
    result = await mcp.call_tool(
        "remember", {"content": "the user lives in Lisbon", "key": "user-city", "tags": ["profile"]}
    )
    assert not result.is_error, text(result)
    entry = await langgraph.read("user-city", namespace="mcp")
    assert entry is not None
    assert entry.value == "the user lives in Lisbon"
    assert entry.meta.source_framework == "mcp"
    assert entry.meta.source_agent == "coder"
    found = await langgraph.query(text="where does the user live?", top_k=1)
    assert [hit.entry.value for hit in found] == ["the user lives in Lisbon"]


async def test_an_mcp_graph_entity_is_found_by_the_adapter(
    mcp: Client, langgraph: AsyncA2MAdapter
) -> None:
    entity = {"name": "Alice", "entityType": "person", "observations": ["prefers dark mode"]}
    assert not (await mcp.call_tool("create_entities", {"entities": [entity]})).is_error
    found = await langgraph.query(text="which theme does Alice prefer?", top_k=1)
    assert [hit.entry.value for hit in found] == ["Alice: prefers dark mode"]


async def test_an_adapter_write_reads_back_through_mcp(
    mcp: Client, langgraph: AsyncA2MAdapter
) -> None:
    await langgraph.write("theme", "semantic", "the user prefers the dark theme")
    found = await mcp.call_tool("recall", {"query": "which theme does the user like?", "limit": 1})
    assert not found.is_error, text(found)
    (memory,) = found.structured_content["memories"]
    assert memory["content"] == "the user prefers the dark theme"
    assert memory["metadata"]["source_framework"] == "langgraph"
    # The adapter's key, read as given: reads are not fenced to this server's namespace.
    fetched = await mcp.call_tool("fetch", {"key": "langgraph/users/theme"})
    assert fetched.structured_content["memory"]["id"] == memory["id"]
    listed = await mcp.call_tool("timeline", {"limit": 5})
    assert "the user prefers the dark theme" in text(listed)


async def test_mcp_cannot_delete_what_the_adapter_wrote(
    mcp: Client, langgraph: AsyncA2MAdapter
) -> None:
    stored = await langgraph.write("theme", "semantic", "the user prefers the dark theme")
    result = await mcp.call_tool("forget", {"ids": [stored.id]})
    assert result.structured_content["forgotten"] == 0
    assert await langgraph.read("theme") is not None
