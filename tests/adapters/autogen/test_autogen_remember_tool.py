"""``af_memory_remember`` as an AutoGen ``FunctionTool`` (docs/observations.md §8), called by
a real ``AssistantAgent`` whose replayed model asks for it: the observation lands once per
fact, with the adapter's provenance and tenant, whatever the model adds to the call."""

from __future__ import annotations

import json

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from a2m import AsyncA2MClient
from a2m.adapter import AsyncA2MAdapter
from a2m_autogen import remember_tool

pytestmark = pytest.mark.anyio

FACT = "Feature flags are read once at startup, never per request."


def _call(call_id: str, **extra: object) -> CreateResult:
    arguments = {"content": FACT, "classification": "decision", "weight": 1.5, **extra}
    return CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id=call_id, arguments=json.dumps(arguments), name="af_memory_remember")
        ],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


async def test_an_assistant_agent_remembers_through_the_tool(client: AsyncA2MClient) -> None:
    adapter = AsyncA2MAdapter(client, "autogen/planner", source_framework="autogen")
    model = ReplayChatCompletionClient(
        [_call("1"), _call("2", tags=["flags"]), "Remembered."],
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": ModelFamily.UNKNOWN,
            "structured_output": False,
        },
    )
    agent = AssistantAgent(
        "planner", model_client=model, tools=[remember_tool(adapter)], max_tool_iterations=3
    )
    result = await agent.run(task="Remember how feature flags are read.")
    outputs = [
        executed.content
        for message in result.messages
        if isinstance(message, ToolCallExecutionEvent)
        for executed in message.content
    ]
    assert outputs[0].startswith("Remembered as ")
    assert outputs[-1].startswith("Already remembered as ")
    listed = await client.list_observations()
    (observation,) = listed.observations
    assert observation.content == FACT
    assert observation.classification == "decision"
    assert observation.weight == 3.0
    assert observation.tags == ["flags"]
    timeline = await client.timeline(where={"observation": True})
    assert timeline.records[0].metadata is not None
    assert timeline.records[0].metadata["source_framework"] == "autogen"
