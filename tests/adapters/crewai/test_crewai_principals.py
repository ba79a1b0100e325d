"""Over an authenticated connection a principal may hold its own copy of a record another
wrote (keys are unique per owner, spec §3.6): each reads its own, and every listing and
search holds each record id once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from crew_support import embed_one
from crewai.memory.types import MemoryRecord

from a2m import A2MClient
from a2m_crewai import A2MStorage
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


@pytest.fixture
def url(a2m_server: A2MServer) -> Iterator[str]:
    with serve_http(a2m_server, tokens={"token-a": "alice", "token-b": "bob"}) as served:
        yield served


def test_each_principal_reads_its_own_copy_once(url: str) -> None:
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        record = MemoryRecord(
            content="the office closes at six", scope="/crew", embedding=embed_one("office")
        )
        A2MStorage(alice).save([record])
        A2MStorage(bob).update(record.model_copy(update={"content": "the office closes at five"}))
        for client, text in (
            (alice, "the office closes at six"),
            (bob, "the office closes at five"),
        ):
            storage = A2MStorage(client)  # fresh: it has learnt nothing of who it is
            found = storage.get_record(record.id)
            assert found is not None
            assert found.content == text
            assert [(r.id, r.content) for r in storage.list_records()] == [(record.id, text)]
            hits = storage.search(embed_one("office"), limit=5)
            assert [(r.id, r.content) for r, _ in hits] == [(record.id, text)]
            assert storage.count("/crew") == 1
