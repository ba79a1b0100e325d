"""``af_memory_remember`` as a LangChain ``StructuredTool`` (docs/observations.md §8), invoked
as an agent invokes a tool call, sync and async, against a real server: the seed's
parameters, dedup, the adapter's provenance, and refused input answered as text."""

from __future__ import annotations

import asyncio

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_langchain import remember_tool
from a2m_server import A2MServer

FACT = "Tests never sleep: they wait on an event with a deadline."


def test_the_tool_offers_the_seed_parameters_and_remembers_once_per_fact() -> None:
    with A2MServer() as server:
        client = A2MClient.in_process(server)
        tool = remember_tool(A2MAdapter(client, "langchain/agent", source_framework="langchain"))
        assert tool.name == "af_memory_remember"
        assert set(tool.args) == {"content", "classification", "filePath", "tags", "weight"}
        call = {"name": tool.name, "args": {"content": FACT, "filePath": "tests/"}, "id": "1"}
        first = tool.invoke({**call, "type": "tool_call"})
        second = tool.invoke({"content": FACT.lower(), "weight": 2.0})
        refused = tool.invoke({"content": ""})
        assert first.content.startswith("Remembered as ")
        assert second.startswith("Already remembered as ")
        assert refused.startswith("Not remembered")
        (observation,) = client.list_observations().observations
        assert (observation.weight, observation.file_path) == (3.0, "tests/")
        client.close()


def test_the_async_tool_writes_through_an_async_adapter() -> None:
    with A2MServer() as server:

        async def run() -> str:
            async with AsyncA2MClient.in_process(server) as client:
                adapter = AsyncA2MAdapter(client, "langchain/agent", source_framework="langchain")
                return str(await remember_tool(adapter).ainvoke({"content": FACT}))

        assert asyncio.run(run()).startswith("Remembered as ")
        records = server.connect().call("memory/timeline", {"where": {"observation": True}})
        assert records["records"][0]["metadata"]["source_framework"] == "langchain"
