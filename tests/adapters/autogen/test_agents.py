"""A2MMemory inside real AutoGen agents driven by a replayed model, and side by side with
AutoGen's own ListMemory."""

from __future__ import annotations

from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import ListMemory, Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from a2m import AsyncA2MClient
from a2m_autogen import MEMORY_HEADER, A2MMemory

pytestmark = pytest.mark.anyio

TEXT = MemoryMimeType.TEXT
FACTS = [
    "The user prefers window seats on flights",
    "The user flies with a vegetarian meal",
    "The user collects miles on every flight",
]


def system_texts(messages: Any) -> list[str]:
    return [m.content for m in messages if isinstance(m, SystemMessage)]


async def test_the_model_sees_the_recalled_memory(client: AsyncA2MClient) -> None:
    memory = A2MMemory(client, namespace="travel/prefs")
    for fact in FACTS:
        await memory.add(MemoryContent(content=fact, mime_type=TEXT))
    await client.remember("the quarterly report is due on friday")  # not about flights
    model = ReplayChatCompletionClient(["Booked 14A, vegetarian meal."])
    agent = AssistantAgent("travel_agent", model_client=model, memory=[memory])

    result = await agent.run(task="Book my Lisbon flights with my usual window seats")

    (call,) = model.create_calls
    memory_blocks = [t for t in system_texts(call["messages"]) if t.startswith(MEMORY_HEADER)]
    assert len(memory_blocks) == 1
    assert "The user prefers window seats on flights" in memory_blocks[0]
    assert "quarterly report" not in memory_blocks[0]
    # The memory block comes after the user's message: recalled for it.
    kinds = [type(m).__name__ for m in call["messages"]]
    assert kinds.index("UserMessage") < kinds.index("SystemMessage", 1)
    (event,) = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert "The user prefers window seats on flights" in [c.content for c in event.content]
    assert result.messages[-1].to_text() == "Booked 14A, vegetarian meal."


async def test_plain_formatting_when_the_server_has_no_prompt_rendering(
    a2m_http_server_factory: Any,
) -> None:
    url = a2m_http_server_factory(capabilities=["core", "keys", "tiers", "sessions"])
    async with AsyncA2MClient(url) as client:
        memory = A2MMemory(client, namespace="travel/prefs")
        for fact in FACTS:
            await memory.add(MemoryContent(content=fact, mime_type=TEXT))
        context = UnboundedChatCompletionContext()
        await context.add_message(UserMessage(content="what does the user want?", source="user"))
        result = await memory.update_context(context)
        (block,) = system_texts(await context.get_messages())
        lines = block.removeprefix(MEMORY_HEADER).strip().splitlines()
        assert lines == [f"{i}. {c.content!s}" for i, c in enumerate(result.memories.results, 1)]
        assert len(lines) == 3


async def test_the_server_rendering_is_used_when_declared_and_honours_the_budget(
    client: AsyncA2MClient,
) -> None:
    memory = A2MMemory(client, namespace="travel/prefs", prompt_budget=45)
    for fact in FACTS:
        await memory.add(MemoryContent(content=fact, mime_type=TEXT))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="what does the user want?", source="user"))
    result = await memory.update_context(context)
    (block,) = system_texts(await context.get_messages())
    shown = [c.content for c in result.memories.results]
    # Only what survived the budget is reported, and it is what the block holds.
    assert 1 <= len(shown) < 3
    for text in shown:
        assert str(text) in block
    for text in set(FACTS) - {str(t) for t in shown}:
        assert text not in block


async def test_nothing_is_added_when_nothing_is_recalled(client: AsyncA2MClient) -> None:
    memory = A2MMemory(client, namespace="travel/prefs")
    await memory.add(MemoryContent(content="The user likes tea", mime_type=TEXT))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="zebra xylophone", source="user"))
    result = await memory.update_context(context)
    assert result.memories.results == []
    assert len(await context.get_messages()) == 1


async def effect(memory: Memory, question: str) -> tuple[list[str], list[Any], str]:
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content=question, source="user"))
    result = await memory.update_context(context)
    messages = await context.get_messages()
    kinds = [type(m).__name__ for m in messages]
    (block,) = system_texts(messages)
    return kinds, [c.content for c in result.memories.results], block


async def test_side_by_side_with_list_memory_the_same_update_context_effect(
    client: AsyncA2MClient,
) -> None:
    listed = ListMemory(name="prefs")
    shared = A2MMemory(client, namespace="travel/prefs", k=10)
    for fact in FACTS:
        content = MemoryContent(content=fact, mime_type=TEXT, metadata={"origin": "profile"})
        await listed.add(content)
        await shared.add(content)

    question = "what does the user like on a flight?"
    list_kinds, list_contents, list_block = await effect(listed, question)
    a2m_kinds, a2m_contents, a2m_block = await effect(shared, question)

    # One SystemMessage appended after the user's message, holding the same memories.
    assert list_kinds == a2m_kinds == ["UserMessage", "SystemMessage"]
    assert sorted(map(str, list_contents)) == sorted(map(str, a2m_contents))
    for fact in FACTS:
        assert fact in list_block
        assert fact in a2m_block
    # The query results agree too, metadata included.
    list_results = (await listed.query(question)).results
    a2m_results = (await shared.query(question)).results
    assert sorted(str(r.content) for r in list_results) == sorted(
        str(r.content) for r in a2m_results
    )
    for result in a2m_results:
        assert result.mime_type == TEXT
        assert result.metadata is not None
        assert result.metadata["origin"] == "profile"
