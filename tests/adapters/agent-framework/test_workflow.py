"""A sequential workflow of two Agent Framework agents on one A2M store: the second agent's
model reads, through A2MContextProvider, the fact the first agent marked — and a LangGraph
store reads it too."""

from __future__ import annotations

import pytest
from agent_framework import Agent
from agent_framework.orchestrations import SequentialBuilder
from maf_fake_client import ScriptedChatClient, calls, said

from a2m import A2MClient, AsyncA2MClient
from a2m_agent_framework import A2MContextProvider
from a2m_langchain.langgraph import A2MStore

pytestmark = pytest.mark.anyio


async def test_agents_of_a_workflow_share_one_store(a2m_http_url: str) -> None:
    researcher_model = ScriptedChatClient(
        [
            calls("remember_fact", {"fact": "The launch window opens on 12 March"}, call_id="f1"),
            said("Found it."),
        ]
    )
    writer_model = ScriptedChatClient([said("Launch: 12 March.")])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        researcher = Agent(
            client=researcher_model,
            name="researcher",
            context_providers=[A2MContextProvider(a2m, remember_tool=True, store_turns=False)],
        )
        writer = Agent(
            client=writer_model,
            name="writer",
            context_providers=[A2MContextProvider(a2m, store_turns=False)],
        )
        workflow = SequentialBuilder(participants=[researcher, writer]).build()
        await workflow.run("When does the launch window open?")
    seen = "\n".join(m.text for m in writer_model.inputs[0])
    assert "[agent-framework/researcher] The launch window opens on 12 March" in seen
    with A2MClient(a2m_http_url) as sync_client:
        found = A2MStore(sync_client).search((), query="launch window")
    assert any("12 March" in str(item.value) for item in found)
