"""Values AutoGen accepts in a ``MemoryContent`` (metadata, a dict content) or a message
but A2M cannot carry exactly are refused with ``a2m.adapter.UnstorableValue`` (an
``A2MError`` and a ``ValueError``) naming where they are, before anything is written."""

from __future__ import annotations

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import UserMessage

from a2m import A2MError, AsyncA2MClient
from a2m.adapter import UnstorableValue
from a2m_autogen import A2MChatCompletionContext, A2MMemory
from a2m_testing.hostile import HOSTILE_VALUES

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]


async def _count(client: AsyncA2MClient) -> int:
    return len((await client.timeline(limit=1000)).records)


@pytest.mark.parametrize("label", list(HOSTILE_VALUES))
async def test_content_a2m_cannot_carry_is_refused_unwritten(
    client: AsyncA2MClient, label: str
) -> None:
    memory = A2MMemory(client, namespace="app/hostile")
    fine = MemoryContent(content="fine", mime_type=MemoryMimeType.TEXT)
    bad = MemoryContent(
        content="bad", mime_type=MemoryMimeType.TEXT, metadata={"k": HOSTILE_VALUES[label]}
    )
    with pytest.raises(UnstorableValue, match="metadata") as caught:
        await memory.add_many([fine, bad])
    assert isinstance(caught.value, A2MError)
    structured = MemoryContent(content={"k": HOSTILE_VALUES[label]}, mime_type=MemoryMimeType.JSON)
    with pytest.raises(UnstorableValue, match="content"):
        await memory.add(structured)
    assert await _count(client) == 0


async def test_a_message_with_a_lone_surrogate_is_refused(client: AsyncA2MClient) -> None:
    context = A2MChatCompletionContext(client, session="hostile")
    with pytest.raises(UnstorableValue, match="message"):
        await context.add_message(UserMessage(content="half a pair \ud83d", source="user"))
    assert await _count(client) == 0
