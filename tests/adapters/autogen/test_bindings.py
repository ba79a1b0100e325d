"""The same memory, context and transcript behaviour over every binding the client speaks
(in-process, stdio, HTTP, REST)."""

from __future__ import annotations

import pytest
from autogen_agentchat.messages import TextMessage
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage

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
    said = [UserMessage(content="hi", source="user"), AssistantMessage(content="yo", source="a")]
    for message in said:
        await context.add_message(message)
    again = A2MChatCompletionContext(a2m_async_client, session="s1")
    assert await again.get_messages() == said

    transcript = A2MTranscript(a2m_async_client, session="s1")
    messages = [TextMessage(content=f"m{i}", source="user" if i % 2 else "a") for i in range(4)]
    assert await transcript.record(messages) == 4
    assert [m.to_text() for m in await transcript.messages()] == ["m0", "m1", "m2", "m3"]
