"""Over an authenticated connection two principals may each hold one ``memory_id`` (keys
are unique per owner, spec §3.6): each reads its own memory, lists each id once, and
deletes only its own copy, on the sync and the async database alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agno.db.schemas.memory import UserMemory

from a2m import A2MClient, AsyncA2MClient
from a2m_agno import A2MDb, AsyncA2MDb
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

TOKENS = {"token-a": "alice", "token-b": "bob"}


@pytest.fixture
def url(a2m_server: A2MServer) -> Iterator[str]:
    with serve_http(a2m_server, tokens=TOKENS) as served:
        yield served


def _memory(memory_id: str, text: str) -> UserMemory:
    return UserMemory(memory_id=memory_id, memory=text, user_id="ada")


def _listed(db: A2MDb) -> list[tuple[str | None, str | None]]:
    return sorted((m.memory_id, m.memory) for m in db.get_user_memories())  # type: ignore[union-attr]


def test_each_principal_reads_its_own_memory_at_a_shared_id(url: str) -> None:
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        alices, bobs = A2MDb(alice), A2MDb(bob)
        alices.upsert_user_memory(_memory("m1", "alice takes her coffee black"))
        alices.upsert_user_memory(_memory("m2", "alice hikes on sundays"))
        bobs.upsert_user_memory(_memory("m1", "bob takes his tea green"))
        # a fresh database, which has learnt nothing of who it is, reads the same
        for reader in (alices, A2MDb(alice)):
            mine = reader.get_user_memory("m1")
            assert mine is not None
            assert mine.memory == "alice takes her coffee black"
            assert _listed(reader) == [
                ("m1", "alice takes her coffee black"),
                ("m2", "alice hikes on sundays"),
            ]
        for reader in (bobs, A2MDb(bob)):
            theirs = reader.get_user_memory("m1")
            assert theirs is not None
            assert theirs.memory == "bob takes his tea green"
            assert _listed(reader) == [
                ("m1", "bob takes his tea green"),
                ("m2", "alice hikes on sundays"),
            ]
        A2MDb(alice).delete_user_memory("m1")  # alice's copy only
        left = bobs.get_user_memory("m1")
        assert left is not None
        assert left.memory == "bob takes his tea green"


@pytest.mark.anyio
async def test_the_async_database_reads_its_own_memory_too(url: str) -> None:
    alice, bob = AsyncA2MClient(url, token="token-a"), AsyncA2MClient(url, token="token-b")
    try:
        await AsyncA2MDb(alice).upsert_user_memory(_memory("m1", "alice's"))
        await AsyncA2MDb(bob).upsert_user_memory(_memory("m1", "bob's"))
        for client, text in ((alice, "alice's"), (bob, "bob's")):
            db = AsyncA2MDb(client)
            found = await db.get_user_memory("m1")
            assert found is not None
            assert found.memory == text  # type: ignore[union-attr]
            listed = await db.get_user_memories()
            assert [(m.memory_id, m.memory) for m in listed] == [("m1", text)]  # type: ignore[union-attr]
    finally:
        await alice.aclose()
        await bob.aclose()
