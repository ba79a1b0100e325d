"""A real Agents SDK ``Runner`` with a scripted model and ``session=A2MSession(...)``: the
second turn's model input holds the first turn's items, a tool call and its output
survive a new client, and the memory tools recall what another framework wrote."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from oai_fake_model import ScriptedModel, calls, said

from a2m import A2MClient, AsyncA2MClient
from a2m_openai_agents import A2MSession, memory_tools

pytestmark = pytest.mark.anyio


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    return f"Sunny in {city}"


def _texts(items: list[Any]) -> list[str]:
    found = []
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found += [part["text"] for part in content if "text" in part]
        elif isinstance(item, dict) and item.get("type") == "function_call_output":
            found.append(item["output"])
    return found


async def test_a_second_turn_sees_the_first_and_survives_a_new_client(a2m_http_url: str) -> None:
    model = ScriptedModel(
        [
            [calls("get_weather", '{"city": "Lyon"}', call_id="c1")],
            [said("It is sunny in Lyon.", index=1)],
            [said("You asked about Lyon.", index=2)],
        ]
    )
    agent = Agent(name="forecaster", instructions="Be brief.", model=model, tools=[get_weather])
    session = A2MSession("trip-1", url=a2m_http_url, agent="forecaster")
    try:
        first = await Runner.run(agent, "Weather in Lyon?", session=session)
        assert first.final_output == "It is sunny in Lyon."
    finally:
        await session.aclose()

    again = A2MSession("trip-1", url=a2m_http_url, agent="forecaster")  # a new client
    try:
        stored = await again.get_items()
        kinds = [item.get("type", "message") for item in stored]
        assert kinds == ["message", "function_call", "function_call_output", "message"]
        assert stored[1]["name"] == "get_weather"
        assert stored[2]["output"] == "Sunny in Lyon"
        second = await Runner.run(agent, "What did I ask?", session=again)
        assert second.final_output == "You asked about Lyon."
    finally:
        await again.aclose()
    seen = _texts(model.inputs[2])
    assert seen[:4] == [
        "Weather in Lyon?",
        "Sunny in Lyon",
        "It is sunny in Lyon.",
        "What did I ask?",
    ]


async def test_the_memory_tools_recall_what_another_writer_stored(a2m_http_url: str) -> None:
    async with AsyncA2MClient(a2m_http_url) as client:
        await client.remember(
            {
                "content": "Ada prefers a window seat",
                "metadata": {"source_framework": "crewai", "source_agent": "planner"},
            }
        )
        model = ScriptedModel(
            [
                [calls("recall_memory", '{"query": "window seat", "limit": 3}', call_id="r1")],
                [
                    calls(
                        "remember",
                        '{"content": "Ada flies on Friday", "tags": ["travel"]}',
                        call_id="w1",
                    )
                ],
                [said("Booked a window seat for Friday.")],
            ]
        )
        tools = memory_tools(client, agent="concierge")
        agent = Agent(name="concierge", model=model, tools=tools)
        result = await Runner.run(agent, "Book Ada's flight")
        assert result.final_output == "Booked a window seat for Friday."
        recalled = model.inputs[1][-1]
        assert recalled["type"] == "function_call_output"
        assert "[crewai/planner] Ada prefers a window seat" in recalled["output"]
        found = (await client.recall("Friday")).records
        assert [r.content for r in found] == ["Ada flies on Friday"]
        metadata = found[0].metadata or {}
        assert metadata["source_framework"] == "openai-agents"
        assert metadata["source_agent"] == "concierge"
        assert metadata["tags"] == ["travel"]


async def test_the_seed_remember_tool_writes_an_observation_others_read(a2m_http_url: str) -> None:
    from a2m.adapter import AsyncA2MAdapter
    from a2m_openai_agents import remember_tool

    model = ScriptedModel(
        [
            [
                calls(
                    "af_memory_remember",
                    '{"content": "Dates are ISO 8601 UTC", "classification": "convention", '
                    '"tags": ["dates"], "weight": 2.0, "org": "forged", "agent": "intruder"}',
                    call_id="o1",
                )
            ],
            [said("Noted.")],
        ]
    )
    async with AsyncA2MClient(a2m_http_url) as client:
        adapter = AsyncA2MAdapter(client, "openai-agents", source_framework="openai-agents")
        agent = Agent(name="coder", model=model, tools=[remember_tool(adapter)])
        result = await Runner.run(agent, "Remember our date convention")
        assert result.final_output == "Noted."
        answer = model.inputs[1][-1]
        assert answer["type"] == "function_call_output"
        assert answer["output"].startswith("Remembered as ")
        (observation,) = (await client.list_observations()).observations
        assert observation.content == "Dates are ISO 8601 UTC"
        assert observation.classification == "convention"
        assert observation.weight == 2.0
        assert "forged" not in str(observation.model_dump())
    # another framework's adapter reads it as an ordinary record
    with A2MClient(a2m_http_url) as reader:
        from a2m_langchain import A2MRetriever

        documents = A2MRetriever(client=reader, k=3).invoke("ISO 8601 dates")
    assert [d.page_content for d in documents] == ["Dates are ISO 8601 UTC"]
