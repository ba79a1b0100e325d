"""``af_memory_remember`` as a CrewAI tool (docs/observations.md §8), run the way a CrewAI
agent runs a tool (``BaseTool.run`` with the model's arguments) against a real server: the
seed's parameters, dedup, the adapter's provenance, the tenant the model cannot change."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2m import A2MClient
from a2m.adapter import A2MAdapter
from a2m_crewai import A2MRememberTool, remember_tool
from a2m_server import A2MServer
from a2m_testing.servers import serve_http

FACT = "Migrations are written to be reversible."


@pytest.fixture
def client() -> Iterator[A2MClient]:
    with A2MServer() as server, serve_http(server, tokens={"t": "acme/shop/crew"}) as url:
        opened = A2MClient(url, token="t")
        try:
            yield opened
        finally:
            opened.close()


def test_the_tool_offers_the_seed_parameters(client: A2MClient) -> None:
    tool = remember_tool(A2MAdapter(client, "crewai/agent", source_framework="crewai"))
    assert isinstance(tool, A2MRememberTool)
    assert tool.name == "af_memory_remember"
    assert set(tool.args_schema.model_json_schema()["properties"]) == {
        "content",
        "classification",
        "filePath",
        "tags",
        "weight",
    }


def test_a_tool_run_remembers_once_per_fact_for_the_authenticated_tenant(
    client: A2MClient,
) -> None:
    tool = remember_tool(A2MAdapter(client, "crewai/agent", source_framework="crewai"))
    first = tool.run(content=FACT, classification="convention", tags=["db"], project="other")
    again = tool.run(content=FACT.upper(), weight=0.5)
    assert first.startswith("Remembered as ")
    assert again.startswith("Already remembered as ")
    (observation,) = client.list_observations().observations
    assert observation.weight == 1.5
    assert (observation.org, observation.project, observation.agent) == ("acme", "shop", "crew")
    refused = tool.run(content="x", weight=5000.0)
    assert refused.startswith("Not remembered")
    assert len(client.list_observations().observations) == 1
