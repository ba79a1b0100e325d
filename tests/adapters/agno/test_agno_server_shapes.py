"""The Agno databases on every kind of conformant A2M server, not only the bundled one's
defaults: a plain 0.1 server (no timeline cursor, no ``where`` operators, no event log),
one declaring no ``max_recall_limit``, one with a small ``max_recall_limit`` (with and
without a cursor), one with a small ``max_records_per_call``, and ones lacking an
optional capability. Each answers as on the default server, or says why it cannot (a
listing a server without cursor cannot give whole raises ``IncompleteListingError``, an
``a2m.IncompleteListing``; a missing capability the adapter needs is refused at the first
call, naming it). The server refuses a read past its ``max_recall_limit`` and a batch
past its ``max_records_per_call``, so a scenario that completes asked for neither."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.schemas.memory import UserMemory
from agno.filters import GT
from agno.knowledge.document import Document
from agno.knowledge.knowledge import Knowledge
from agno_fake_embedder import FakeEmbedder
from agno_fake_model import FakeModel

from a2m import (
    A2MClient,
    AsyncA2MClient,
    CapabilityNotSupported,
    IncompleteListing,
    QuotaExceeded,
)
from a2m_agno import A2MDb, A2MVectorDb, AsyncA2MDb, IncompleteListingError
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.shapes import (
    EVERY_CAPABILITY,
    SERVER_SHAPES,
    SMALL_RECALL,
    SMALL_RECALL_NO_CURSOR,
    lacking,
)

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

SHAPES = {**SERVER_SHAPES, **lacking("tiers", "sessions", "scopes", "prompt")}

RUST = "Rust has a borrow checker that prevents data races at compile time."
CATS = "Cats purr when they are content and knead soft blankets."
TEA = "Green tea is steeped briefly in water below boiling."


@contextmanager
def clients_of(**config: Any) -> Iterator[tuple[A2MClient, AsyncA2MClient]]:
    """A sync and an async client of one in-process server shaped ``config``."""
    with A2MServer(ServerConfig(**config)) as server, A2MClient.in_process(server) as client:
        async_client = AsyncA2MClient.in_process(server)
        try:
            yield client, async_client
        finally:
            asyncio.run(async_client.aclose())


def _memories() -> list[UserMemory]:
    return [
        UserMemory(
            memory_id=f"m{i}",
            memory=f"ada likes subject {i}",
            user_id="ada",
            topics=[f"topic {i % 2}"],
        )
        for i in range(5)
    ]


def scenario(client: A2MClient, async_client: AsyncA2MClient) -> dict[str, Any]:
    """Every database member Agno calls, an agent run on the fake model and Knowledge on
    the vector database; what each answered."""
    seen: dict[str, Any] = {}
    db = A2MDb(client)
    agent = Agent(model=FakeModel(), db=db, update_memory_on_run=True)
    agent.run("remember: Ada's favourite language is Rust #languages", user_id="ada")
    seen["upserted"] = [m.memory_id for m in db.upsert_memories(_memories())]  # type: ignore[union-attr]
    db.upsert_user_memory(UserMemory(memory_id="b", memory="bob walks", user_id="bob"))
    seen["got"] = db.get_user_memory("m1").memory  # type: ignore[union-attr]
    seen["listed"] = sorted(m.memory for m in db.get_user_memories(user_id="ada"))  # type: ignore[union-attr]
    page = db.get_user_memories(limit=2, page=2, sort_by="memory", sort_order="asc")
    seen["page"] = [m.memory_id for m in page]  # type: ignore[union-attr]
    seen["searched"] = sorted(m.memory_id for m in db.get_user_memories(search_content="subject"))  # type: ignore[union-attr]
    seen["topics"] = sorted(db.get_all_memory_topics())
    stats, total = db.get_user_memory_stats()
    # (ordered by the second each user last wrote in: the same one, or not)
    seen["stats"] = (sorted((s["user_id"], s["total_memories"]) for s in stats), total)
    db.delete_user_memories(["m0", "m1"])
    seen["left"] = sorted(m.memory for m in db.get_user_memories(user_id="ada"))  # type: ignore[union-attr]

    async def the_async_db() -> list[Any]:
        adb = AsyncA2MDb(async_client, namespace="agno/async")
        await adb.upsert_memories(_memories())
        listed = await adb.get_user_memories(user_id="ada", sort_by="memory", sort_order="desc")
        await adb.clear_memories()
        return [[m.memory_id for m in listed], len(await adb.get_user_memories())]  # type: ignore[union-attr]

    seen["async"] = asyncio.run(the_async_db())
    db.clear_memories()
    seen["cleared"] = db.get_user_memories()

    vectors = A2MVectorDb(client, embedder=FakeEmbedder())
    knowledge = Knowledge(vector_db=vectors)
    for year, (name, text) in enumerate((("rust", RUST), ("cats", CATS), ("tea", TEA))):
        knowledge.insert(name=name, text_content=text, metadata={"kind": name, "year": year})
    seen["best"] = [
        knowledge.search(query)[0].name for query in ("borrow checker", "cats purr", "green tea")
    ]
    seen["filtered"] = [d.name for d in vectors.search("soft", limit=2, filters={"kind": "cats"})]
    # Run by the server where it declares operators, else here on its candidates.
    later = vectors.search("tea cats rust", limit=2, filters=[GT("year", 0)])
    seen["by operator"] = sorted(d.name for d in later)
    seen["exists"] = (vectors.name_exists("cats"), vectors.name_exists("dogs"))

    async def the_async_search() -> list[str | None]:
        reader = A2MVectorDb(async_client=async_client, embedder=FakeEmbedder())
        return [d.name for d in await reader.async_search("borrow checker", limit=5)]

    seen["async search"] = asyncio.run(the_async_search())
    seen["deleted"] = (vectors.delete_by_name("tea"), vectors.delete_by_metadata({"kind": "cats"}))
    seen["kept"] = [d.name for d in vectors.search("borrow checker cats tea", limit=2)]
    vectors.drop()
    seen["dropped"] = vectors.search("borrow checker", limit=2)
    return seen


@pytest.fixture(scope="module")
def on_the_default_server() -> dict[str, Any]:
    with clients_of() as clients:
        return scenario(*clients)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_member_answers_as_on_the_default_server(
    shape: str, on_the_default_server: dict[str, Any]
) -> None:
    with clients_of(**SHAPES[shape]) as clients:
        assert scenario(*clients) == on_the_default_server


def test_a_small_recall_limit_bounds_every_read_the_adapter_makes() -> None:
    """``max_recall_limit`` 3 with a cursor: a knowledge search asking for 5 chunks gets
    the 3 the server allows, and a memory search by content looks at other frameworks'
    records within it; each was refused with QUOTA_EXCEEDED. Listings page past 3."""
    with clients_of(**SMALL_RECALL) as (client, async_client):
        client.remember([{"content": f"a subject other frameworks know {i}"} for i in range(4)])
        db = A2MDb(client)
        db.upsert_memories(_memories())
        assert len(db.get_user_memories(user_id="ada")) == 5
        found = db.get_user_memories(search_content="subject")
        assert {m.memory_id for m in found} >= {f"m{i}" for i in range(5)}  # type: ignore[union-attr]

        async def searched() -> int:
            return len(await AsyncA2MDb(async_client).get_user_memories(search_content="subject"))

        assert asyncio.run(searched()) == len(found)
        vectors = A2MVectorDb(client, embedder=FakeEmbedder())
        vectors.insert("h", [knowledge_chunk(f"tea fact {i}") for i in range(5)])
        assert len(vectors.search("tea fact", limit=5)) == 3


def knowledge_chunk(text: str) -> Document:
    return Document(content=text, name=text)


def test_a_server_without_cursor_refuses_a_listing_it_cannot_give_whole() -> None:
    """``max_recall_limit`` 3 and no cursor: two memories list exactly; five raise
    IncompleteListingError (an ``a2m.IncompleteListing``) rather than answer with three."""
    with clients_of(**SMALL_RECALL_NO_CURSOR) as (client, _):
        db = A2MDb(client)
        db.upsert_memories(_memories()[:2])
        listed = db.get_user_memories()
        assert sorted(str(m.memory_id) for m in listed) == ["m0", "m1"]  # type: ignore[union-attr]
        db.upsert_memories(_memories())
        with pytest.raises(IncompleteListingError) as raised:
            db.get_user_memories()
        assert isinstance(raised.value, IncompleteListing)


@pytest.mark.parametrize("capability", ["keys", "embeddings"])
def test_a_server_lacking_what_the_databases_need_is_refused_at_the_first_call(
    capability: str,
) -> None:
    """Memories and chunks are addressed by key, and an embedder's chunks carry vectors:
    without ``keys`` the first call of either database is refused naming it; without
    ``embeddings`` the memory database works and the first insert of embedded chunks is
    refused naming it, storing nothing."""
    with clients_of(capabilities=EVERY_CAPABILITY - {capability}) as (client, _):
        vectors = A2MVectorDb(client, embedder=FakeEmbedder())
        with pytest.raises(CapabilityNotSupported, match=f"'{capability}'"):
            vectors.insert("h", [knowledge_chunk("tea fact")])
        db = A2MDb(client)
        if capability == "keys":
            with pytest.raises(CapabilityNotSupported, match="'keys'"):
                db.upsert_memories(_memories())
        else:
            db.upsert_memories(_memories())
            assert len(db.get_user_memories()) == 5
            assert not vectors.name_exists("tea fact")


def test_a_refused_batch_leaves_the_memories_as_they_were() -> None:
    """``max_records_per_call`` 2, and a fifth memory longer than the server stores: the
    first two calls were taken, the third refused. Upserting five memories was all or
    nothing on the default server, and stays so here: the memory replaced is back as it
    was, the new ones are gone, on the sync and the async database alike."""
    config = {"limits": LimitsConfig(max_records_per_call=2, max_content_length=40)}
    before = UserMemory(memory_id="m0", memory="old", user_id="ada", created_at=5, updated_at=9)
    batch = [*_memories()[:4], UserMemory(memory_id="m9", memory="x" * 41, user_id="ada")]
    with clients_of(**config) as (client, async_client):
        db = A2MDb(client)
        db.upsert_memories([before], preserve_updated_at=True)
        kept = db.get_user_memories(deserialize=False)
        with pytest.raises(QuotaExceeded, match="max_content_length"):
            db.upsert_memories(batch)
        assert db.get_user_memories(deserialize=False) == kept

        async def in_the_async_database() -> Any:
            adb = AsyncA2MDb(async_client)
            with pytest.raises(QuotaExceeded, match="max_content_length"):
                await adb.upsert_memories(batch)
            return await adb.get_user_memories(deserialize=False)

        assert asyncio.run(in_the_async_database()) == kept


def test_a_knowledge_insert_refused_after_earlier_calls_writes_nothing() -> None:
    """Two chunks a call and a fifth chunk longer than the server stores: the first two
    calls were taken, the third refused. Nothing of the insert is left, sync or async,
    as a database's one transaction would leave it."""
    config = {"limits": LimitsConfig(max_records_per_call=2, max_content_length=60)}
    chunks = [*(knowledge_chunk(f"tea fact {i}") for i in range(4)), knowledge_chunk("x" * 61)]
    with clients_of(**config) as (client, async_client):
        vectors = A2MVectorDb(client, embedder=FakeEmbedder())
        with pytest.raises(QuotaExceeded, match="max_content_length"):
            vectors.insert("h", chunks)
        assert client.timeline().records == []

        async def in_the_async_database() -> Any:
            reader = A2MVectorDb(async_client=async_client, embedder=FakeEmbedder())
            with pytest.raises(QuotaExceeded, match="max_content_length"):
                await reader.async_insert("h", chunks)
            return (await async_client.timeline()).records

        assert asyncio.run(in_the_async_database()) == []
