"""The same memory, context and transcript behaviour over every binding the client speaks
(in-process, stdio, HTTP, REST)."""

from __future__ import annotations

from typing import Any

import pytest
from autogen_agentchat.messages import TextMessage
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage

from a2m import AsyncA2MClient
from a2m_autogen import PROVENANCE_KEY, A2MChatCompletionContext, A2MMemory
from a2m_autogen.agentchat import A2MTranscript

pytestmark = pytest.mark.anyio


async def test_memory_round_trip(a2m_async_client: AsyncA2MClient) -> None:
    memory = A2MMemory(a2m_async_client, namespace="app/prefs", source_agent="planner")
    await memory.add(MemoryContent(content="The user likes green tea", mime_type="text/plain"))
    await memory.add(
        MemoryContent(content={"tea": "sencha"}, mime_type=MemoryMimeType.JSON, metadata={"n": 1})
    )
    results = (await memory.query("tea", k=5)).results
    assert sorted(str(r.content) for r in results) == sorted(
        ["The user likes green tea", str({"tea": "sencha"})]
    )
    for result in results:
        assert result.metadata is not None
        assert result.metadata[PROVENANCE_KEY]["source_agent"] == "planner"
    context = UnboundedChatCompletionContext([UserMessage(content="green tea?", source="user")])
    updated = await memory.update_context(context)
    assert updated.memories.results
    assert isinstance((await context.get_messages())[-1], SystemMessage)
    await memory.clear()
    assert (await memory.query("tea")).results == []


async def test_context_and_transcript_round_trip(a2m_async_client: AsyncA2MClient) -> None:
    context = A2MChatCompletionContext(a2m_async_client, session="s1")
    said: list[LLMMessage] = [
        UserMessage(content="hi", source="user"),
        AssistantMessage(content="yo", source="a"),
    ]
    for message in said:
        await context.add_message(message)
    again = A2MChatCompletionContext(a2m_async_client, session="s1")
    assert await again.get_messages() == said

    transcript = A2MTranscript(a2m_async_client, session="s1")
    messages = [TextMessage(content=f"m{i}", source="user" if i % 2 else "a") for i in range(4)]
    assert await transcript.record(messages) == 4
    assert [m.to_text() for m in await transcript.messages()] == ["m0", "m1", "m2", "m3"]


@pytest.mark.parametrize("capabilities", [["core"], ["core", "keys"]], ids=["core", "keys"])
async def test_a_server_with_few_capabilities_serves_it_all(
    a2m_async_client_factory: Any, capabilities: list[str]
) -> None:
    client = a2m_async_client_factory("http", capabilities=capabilities)
    memory = A2MMemory(client, namespace="app/prefs")
    neighbour = A2MMemory(client, namespace="app/other")
    await memory.add(MemoryContent(content="The user likes green tea", mime_type="text/plain"))
    await neighbour.add(MemoryContent(content="The neighbour likes tea", mime_type="text/plain"))
    assert len((await memory.query("tea")).results) == 2
    only = (await memory.query("tea", namespace="app/prefs")).results
    assert [r.content for r in only] == ["The user likes green tea"]
    context = UnboundedChatCompletionContext([UserMessage(content="tea?", source="user")])
    assert (await memory.update_context(context)).memories.results
    await memory.clear()
    assert [r.content for r in (await memory.query("tea")).results] == ["The neighbour likes tea"]

    stored = A2MChatCompletionContext(client, session="s1")
    await stored.add_message(UserMessage(content="hi", source="user"))
    assert await A2MChatCompletionContext(client, session="s1").get_messages() == [
        UserMessage(content="hi", source="user")
    ]
    assert await A2MChatCompletionContext(client, session="s2").get_messages() == []

    transcript = A2MTranscript(client, session="s1")
    said = [TextMessage(content="one", source="user"), TextMessage(content="two", source="a")]
    await transcript.record(said)
    await transcript.record(said)  # once, by id, even without keys
    assert [m.to_text() for m in await transcript.messages()] == ["one", "two"]
