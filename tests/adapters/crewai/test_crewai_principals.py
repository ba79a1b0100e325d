"""Over an authenticated connection a principal may hold its own copy of a record another
wrote (keys are unique per owner, spec §3.6): each reads its own, and every listing and
search holds each record id once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from crew_support import embed_one
from crewai.memory.types import MemoryRecord

from a2m import A2MClient, AsyncA2MClient
from a2m_crewai import A2MStorage
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


@pytest.fixture
def url(a2m_server: A2MServer) -> Iterator[str]:
    with serve_http(
        a2m_server, tokens={"token-a": "alice", "token-b": "bob", "token-c": "carol"}
    ) as served:
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


def _reads(storage: A2MStorage, record_id: str) -> list[tuple[str, str]]:
    """What ``storage`` shows of the record in every read, each as (scope, content)."""
    found = storage.get_record(record_id)
    assert found is not None
    shown = [(found.scope, found.content)]
    shown += [(r.scope, r.content) for r in storage.list_records() if r.id == record_id]
    hits = storage.search(embed_one("office"), limit=5)
    shown += [(r.scope, r.content) for r, _ in hits if r.id == record_id]
    assert storage.count() == 1
    return shown


def test_a_copy_another_principal_moved_to_another_scope_never_hides_the_callers_own(
    url: str,
) -> None:
    """Bob updates alice's record into another scope: his copy sits at another key, so
    keys no longer pair the copies; each principal still reads its own, once, and a third
    reads the original's writer's."""
    with (
        A2MClient(url, token="token-a") as alice,
        A2MClient(url, token="token-b") as bob,
        A2MClient(url, token="token-c") as carol,
    ):
        record = MemoryRecord(
            content="the office closes at six", scope="/crew", embedding=embed_one("office")
        )
        A2MStorage(alice).save([record])
        moved = record.model_copy(update={"content": "closes at five", "scope": "/bob"})
        A2MStorage(bob).update(moved)
        assert _reads(A2MStorage(alice), record.id) == [("/crew", "the office closes at six")] * 3
        assert _reads(A2MStorage(bob), record.id) == [("/bob", "closes at five")] * 3
        assert _reads(A2MStorage(carol), record.id) == [("/crew", "the office closes at six")] * 3
        assert asyncio.run(_asearched(url, "token-a")) == [("/crew", "the office closes at six")]
        assert asyncio.run(_asearched(url, "token-b")) == [("/bob", "closes at five")]
        # Bob's next update of his copy moves it back beside alice's: his alone changes.
        A2MStorage(bob).update(moved.model_copy(update={"scope": "/crew", "content": "at 4"}))
        assert _reads(A2MStorage(bob), record.id) == [("/crew", "at 4")] * 3
        assert _reads(A2MStorage(alice), record.id) == [("/crew", "the office closes at six")] * 3
        stored = bob.timeline(where={"source_framework": "crewai"}).records
        assert sorted((r.owner, r.content) for r in stored) == [
            ("alice", "the office closes at six"),
            ("bob", "at 4"),
        ]


async def _asearched(url: str, token: str) -> list[tuple[str, str]]:
    async with AsyncA2MClient(url, token=token) as client:
        with A2MClient(url, token=token) as sync_client:
            storage = A2MStorage(sync_client, async_client=client)
            hits = await storage.asearch(embed_one("office"), limit=5)
    return [(r.scope, r.content) for r, _ in hits]


class _Unreported(httpx.BaseTransport):
    """Real HTTP to a server whose ``memory/describe`` does not say whom the caller acts
    as: another conformant server."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if json.loads(request.content or b"{}").get("method") != "memory/describe":
            return response
        answer = json.loads(response.read())
        answer["result"].pop("owner", None)
        return httpx.Response(response.status_code, json=answer)

    def close(self) -> None:
        self._inner.close()


def test_where_the_server_does_not_say_who_the_caller_is_each_id_still_reads_once(
    url: str,
) -> None:
    """Without describe's ``owner`` a copy at another key cannot be told for the caller's:
    every principal reads the copy of the original's writer, once (docs: the CrewAI
    README, "Several principals")."""
    with (
        A2MClient(url, token="token-a") as alice,
        A2MClient(url, token="token-b") as bob,
    ):
        record = MemoryRecord(
            content="the office closes at six", scope="/crew", embedding=embed_one("office")
        )
        A2MStorage(alice).save([record])
        A2MStorage(bob).update(record.model_copy(update={"content": "five", "scope": "/bob"}))
        for token in ("token-a", "token-b"):
            with (
                httpx.Client(transport=_Unreported()) as http,
                A2MClient(url, token=token, http_client=http) as client,
            ):
                assert client.describe().owner is None
                shown = _reads(A2MStorage(client), record.id)
                assert shown == [("/crew", "the office closes at six")] * 3
