"""The repository README: the CrewAI storage (and ``a2m_memory``), given no client or URL,
takes its server from ``A2M_URL``, as every client does."""

from __future__ import annotations

import pytest
from crew_support import ScriptedLLM, embed, embed_one
from crewai.memory.types import MemoryRecord

from a2m import A2MClient
from a2m_crewai import A2MStorage, a2m_memory


def test_the_storage_and_the_memory_take_the_server_from_a2m_url(
    a2m_http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2M_URL", a2m_http_url)
    storage = A2MStorage()
    storage.save([MemoryRecord(content="the deploy key rotates", embedding=embed_one("deploy"))])
    memory = a2m_memory(llm=ScriptedLLM(), embedder=embed)
    memory.remember("lunch is at noon", scope="/team")
    with A2MClient(a2m_http_url) as client:
        contents = sorted(record.content for record in client.timeline().records)
    assert contents == ["lunch is at noon", "the deploy key rotates"]
    memory.close()
    storage.close()


def test_without_a2m_url_the_storage_says_where_to_point_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("A2M_URL", raising=False)
    with pytest.raises(ValueError, match="A2M_URL"):
        A2MStorage()
