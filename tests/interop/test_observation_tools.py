"""A framework agent remembers an observation through its ``af_memory_remember`` tool and
another framework's adapter reads it as an ordinary record (docs/observations.md, issue 25):
a real LangGraph agent (``langchain.agents.create_agent``) driven by a scripted fake model
calls the LangChain tool over authenticated HTTP; AutoGen's ``A2MMemory`` then finds it.
The model's attempt to name another tenant is ignored: the tenant is the token's."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_autogen import A2MMemory
from a2m_langchain import remember_tool
from a2m_server import A2MServer
from a2m_testing.servers import serve_http

TOKENS = {"agent-token": "acme/billing/coder"}
FACT = "All date/time values in this service use ISO 8601 UTC strings, never Unix timestamps."


class ToolCallingFakeModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts tools (none of LangChain's fakes does)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
        return self


def _remember_call(call_id: str, **extra: Any) -> AIMessage:
    args = {
        "content": FACT,
        "classification": "convention",
        "filePath": "services/billing/src/utils/dates.ts",
        "weight": 2.0,
        "tags": ["datetime", "billing"],
        **extra,
    }
    return AIMessage(
        content="", tool_calls=[{"name": "af_memory_remember", "args": args, "id": call_id}]
    )


def test_a_langgraph_agent_remembers_and_autogen_reads_it() -> None:
    with A2MServer() as server, serve_http(server, tokens=TOKENS) as url:
        client = A2MClient(url, token="agent-token")
        adapter = A2MAdapter(client, "langgraph/coder", source_framework="langgraph")
        turns = iter(
            [
                # The model tries to pick another tenant; the tool's schema has no such field.
                _remember_call("c1", project="other", owner="acme/billing/admin", org="evil"),
                _remember_call("c2"),
                "Noted.",
            ]
        )
        agent = create_agent(ToolCallingFakeModel(messages=turns), [remember_tool(adapter)])
        state = agent.invoke({"messages": [HumanMessage("Remember how we store dates.")]})
        answers = [m.content for m in state["messages"] if m.type == "tool"]
        assert answers[0].startswith("Remembered as ")
        assert answers[1].startswith("Already remembered as ")
        assert "weight is now 4" in answers[1]
        client.close()

        async def read() -> list[Any]:
            memory = A2MMemory(url=url, token="agent-token", namespace="autogen/reader")
            try:
                return list((await memory.query("ISO 8601 dates")).results)
            finally:
                await memory.close()

        (found,) = asyncio.run(read())
        assert found.content == FACT
        meta = found.metadata or {}
        assert meta["observation_classification"] == "convention"
        assert meta["observation_file_path"] == "services/billing/src/utils/dates.ts"
        assert meta["source_framework"] == "langgraph"
        assert (meta["observation_org"], meta["observation_project"]) == ("acme", "billing")
        assert meta["observation_agent"] == "coder"
        assert meta["a2m"]["owner"] == "acme/billing/coder"


def test_the_async_tool_writes_through_an_async_adapter() -> None:
    with A2MServer() as server, serve_http(server, tokens=TOKENS) as url:

        async def run() -> list[str]:
            client = AsyncA2MClient(url, token="agent-token")
            adapter = AsyncA2MAdapter(client, "langgraph/coder", source_framework="langgraph")
            turns = iter([_remember_call("c1", weight=-3.0), _remember_call("c2"), "Done."])
            agent = create_agent(ToolCallingFakeModel(messages=turns), [remember_tool(adapter)])
            try:
                state = await agent.ainvoke({"messages": [HumanMessage("Remember dates.")]})
            finally:
                await client.aclose()
            return [str(m.content) for m in state["messages"] if m.type == "tool"]

        refused, remembered = asyncio.run(run())
        # A weight the server refuses comes back to the model as text; nothing was written.
        assert refused.startswith("Not remembered")
        assert remembered.startswith("Remembered as ")
        listed = server.connect(principal="acme/billing/coder").call("memory/observations/list")
        (only,) = listed["observations"]
        assert only["weight"] == 2.0
