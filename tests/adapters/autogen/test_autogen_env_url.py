"""The repository README: the AutoGen memory, given no client or URL, takes its server
from ``A2M_URL``, as every client does."""

from __future__ import annotations

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType

from a2m import A2MClient
from a2m_autogen import A2MMemory

pytestmark = pytest.mark.anyio


async def test_the_memory_takes_the_server_from_a2m_url(
    a2m_http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2M_URL", a2m_http_url)
    memory = A2MMemory(namespace="travel/prefs")
    await memory.add(
        MemoryContent(content="Ada wants a window seat", mime_type=MemoryMimeType.TEXT)
    )
    results = (await memory.query("window seat")).results
    assert [r.content for r in results] == ["Ada wants a window seat"]
    await memory.close()
    with A2MClient(a2m_http_url) as client:
        assert [r.content for r in client.timeline().records] == ["Ada wants a window seat"]
