"""``af_memory_remember`` as an Agno ``Function`` (docs/observations.md §8), run the way an
Agno agent runs a model's tool call (``FunctionCall.execute`` / ``aexecute``) against a real
server: the seed's parameters, dedup, the adapter's provenance, and refused input reported
to the model with nothing written."""

from __future__ import annotations

import pytest
from agno.tools.function import FunctionCall

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_agno import remember_tool

FACT = "Background jobs must be idempotent: they may run twice."


def test_the_tool_offers_the_seed_parameters(client: A2MClient) -> None:
    function = remember_tool(A2MAdapter(client, "agno/agent", source_framework="agno"))
    function.process_entrypoint()
    assert function.name == "af_memory_remember"
    assert set(function.parameters["properties"]) == {
        "content",
        "classification",
        "filePath",
        "tags",
        "weight",
    }
    assert function.parameters["required"] == ["content"]


def test_a_tool_call_remembers_once_per_fact(client: A2MClient) -> None:
    function = remember_tool(A2MAdapter(client, "agno/agent", source_framework="agno"))
    function.process_entrypoint()
    arguments = {"content": FACT, "classification": "pattern", "filePath": "jobs/base.py"}
    for _ in range(2):
        call = FunctionCall(function=function, arguments=arguments)
        assert call.execute().status == "success"
    refused = FunctionCall(function=function, arguments={"content": "   "})
    refused.execute()
    assert str(refused.result).startswith("Not remembered")
    (observation,) = client.list_observations().observations
    assert (observation.content, observation.weight) == (FACT, 2.0)
    assert observation.file_path == "jobs/base.py"
    (record,) = client.timeline(where={"observation": True}).records
    assert record.metadata is not None
    assert record.metadata["source_framework"] == "agno"


@pytest.mark.anyio
async def test_an_async_tool_call_remembers(async_client: AsyncA2MClient) -> None:
    adapter = AsyncA2MAdapter(async_client, "agno/agent", source_framework="agno")
    function = remember_tool(adapter)
    function.process_entrypoint()
    call = FunctionCall(function=function, arguments={"content": FACT, "weight": 3.0})
    assert (await call.aexecute()).status == "success"
    assert str(call.result).startswith("Remembered as ")
    (observation,) = (await async_client.list_observations()).observations
    assert observation.weight == 3.0
