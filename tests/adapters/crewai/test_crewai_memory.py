"""``A2MMemory`` on its own: recall carries the query's words and the asking source down,
and a listing that reaches the server's cap says so."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from crew_support import ScriptedLLM, embed, embed_one
from crewai.memory.types import MemoryRecord

from a2m import A2MClient
from a2m_crewai import A2MMemory, A2MStorage, ListingCapped, a2m_memory
from a2m_server.config import LimitsConfig, ServerConfig


@pytest.mark.parametrize("depth", ["shallow", "deep"])
def test_recall_finds_records_without_vectors(
    storage_factory: Callable[..., A2MStorage], a2m_http_url: str, depth: str
) -> None:
    storage = storage_factory()
    storage.save(
        [MemoryRecord(content="lunch is at noon", scope="/team", embedding=embed_one("lunch"))]
    )
    with A2MClient(a2m_http_url) as client:
        client.remember({"content": "the backup window opens at two in the morning"})
    memory = a2m_memory(storage, llm=ScriptedLLM(), embedder=embed)
    assert isinstance(memory, A2MMemory)
    found = memory.recall("when does the backup window open", limit=2, depth=depth)  # type: ignore[arg-type]
    # Found by its words alone. (Its place is the server's: fused ranking ties the top of
    # the word list with the top of the vector list, and salience breaks the tie.)
    backup = [m.record for m in found if m.record.content.startswith("the backup window")]
    assert [record.scope for record in backup] == ["/"]


@pytest.mark.parametrize("depth", ["shallow", "deep"])
def test_private_records_stay_with_their_source(
    storage_factory: Callable[..., A2MStorage], depth: str
) -> None:
    memory = a2m_memory(storage_factory(), llm=ScriptedLLM(), embedder=embed)
    text = "the launch is on the ninth"
    secrets = [
        MemoryRecord(content=f"{text} {i}", embedding=embed_one(text), private=True, source="alice")
        for i in range(6)
    ]
    public = MemoryRecord(content="the launch moved", embedding=embed_one("the launch moved"))
    memory._storage.save([*secrets, public])

    def seen(source: str | None) -> list[str]:
        matches = memory.recall(text, limit=3, depth=depth, source=source)  # type: ignore[arg-type]
        return [m.record.id for m in matches]

    assert seen("bob") == [public.id]
    assert seen(None) == [public.id]
    assert set(seen("alice")) <= {r.id for r in secrets}
    assert len(seen("alice")) == 3


def test_a_listing_at_the_cap_warns(a2m_http_server_factory: object) -> None:
    # A server that cannot page: one timeline, at most max_recall_limit records.
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=5), timeline_cursor=False)
    url = a2m_http_server_factory(config=config)  # type: ignore[operator]
    storage = A2MStorage(url)
    storage.save([MemoryRecord(content=f"fact {i}") for i in range(4)])
    assert storage.count() == 4
    storage.save([MemoryRecord(content="one more")])
    with pytest.warns(ListingCapped, match="max_recall_limit"):
        assert len(storage.list_records()) == 5
    storage.close()


def test_copies_of_a_storage_are_the_storage(storage_factory: Callable[..., A2MStorage]) -> None:
    # A handle on a shared server. (CrewAI 1.15's Memory.__deepcopy__ itself fails on
    # Python 3.11: it passes threading.Lock, a function there, to isinstance.)
    storage = storage_factory()
    assert copy.deepcopy(storage) is storage
    assert copy.copy(storage) is storage
