"""Observations another project granted reach an MCP client's context: the relevant
memories prompt lists them apart, marked with their project, and the agent's observations
resource marks them as transferred, at their discounted weight."""

from __future__ import annotations

import pytest
from mcp import Client

from a2m import AsyncA2MClient
from a2m_mcp import MemoryConfig, build_server
from a2m_server.server import A2MServer
from a2m_testing.transfers import GRANTED_FACT, granted_config, seed_granted_project

pytestmark = pytest.mark.anyio

PLANNER = MemoryConfig(namespace="mcp", agent="planner", org="acme", project="web", local=True)


@pytest.mark.parametrize("grant", [True, False], ids=["granted", "no-grant"])
async def test_the_prompt_and_the_resource_mark_what_was_transferred(grant: bool) -> None:
    with A2MServer(granted_config(grant=grant)) as server:
        seed_granted_project(server)
        server.connect(principal="acme/web/planner").call(
            "memory/observations/remember", {"content": "the web service pins fastapi too"}
        )
        async with (
            AsyncA2MClient.in_process(server) as a2m,
            Client(build_server(a2m, PLANNER)) as mcp,
        ):
            prompt = await mcp.get_prompt("relevant_memories", {"topic": "fastapi version"})
            said = prompt.messages[0].content.text
            listed = (await mcp.read_resource("a2m://observations/planner")).contents[0].text
    marked = f"- [acme/api, agent planner] {GRANTED_FACT}"
    assert (marked in said) is grant
    assert ("Observations transferred from other projects (read-only):" in said) is grant
    assert "- [note, weight 1] the web service pins fastapi too" in listed
    # weight 2 written, 0.5 the transfer multiplier
    assert (f"- [note, weight 1, transferred from acme/api] {GRANTED_FACT}" in listed) is grant
