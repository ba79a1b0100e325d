"""An update that moves a record to another scope never loses it: the new state is written
before the old record goes, so a refused write or a server that goes away in between
leaves the record readable, and retrying converges on one record in the new scope."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from crew_support import embed_one
from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
from crewai.memory.types import MemoryRecord

from a2m import A2MClient, A2MError
from a2m_crewai import A2MStorage
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.plugin import HTTPServerFactory
from a2m_testing.servers import serve_http

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


class _Outage(httpx.BaseTransport):
    """Real HTTP, except that the server is unreachable for the calls of ``method`` once
    ``down`` is set: a server going away in the middle of an update."""

    def __init__(self, method: str) -> None:
        self._inner = httpx.HTTPTransport()
        self.method = method
        self.down = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.down and json.loads(request.content or b"{}").get("method") == self.method:
            raise httpx.ConnectError("connection refused", request=request)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def _record(content: str = "the deploy key rotates every ninety days") -> MemoryRecord:
    return MemoryRecord(
        content=content,
        scope="/crew/research",
        categories=["ops"],
        embedding=embed_one(content),
    )


@pytest.fixture
def outage_storage(a2m_http_url: str) -> Iterator[tuple[A2MStorage, _Outage]]:
    outage = _Outage("memory/remember")
    with (
        httpx.Client(transport=outage) as http,
        A2MClient(a2m_http_url, http_client=http, max_retries=0) as client,
    ):
        yield A2MStorage(client), outage


def _own_records(storage: A2MStorage) -> list[Any]:
    return storage.client.timeline(where={"source_framework": "crewai"}).records


@pytest.mark.parametrize("failing", ["memory/remember", "memory/forget"])
def test_a_move_interrupted_by_an_outage_keeps_the_record(
    outage_storage: tuple[A2MStorage, _Outage], failing: str
) -> None:
    storage, outage = outage_storage
    original = _record()
    storage.save([original])
    moved = original.model_copy(
        update={"scope": "/crew/ops", "content": "the deploy key rotates every thirty days"}
    )
    outage.method, outage.down = failing, True
    with pytest.raises(A2MError):
        storage.update(moved)
    outage.down = False
    survived = storage.get_record(original.id)
    assert survived is not None
    if failing == "memory/remember":  # nothing was written, nothing removed
        assert (survived.scope, survived.content) == (original.scope, original.content)
        assert len(_own_records(storage)) == 1
    storage.update(moved)  # the retry converges: one record, in the new scope
    after = storage.get_record(original.id)
    assert after is not None
    assert (after.id, after.scope, after.content) == (moved.id, moved.scope, moved.content)
    assert [r.id for r in storage.list_records("/crew/ops")] == [original.id]
    assert storage.list_records("/crew/research") == []
    assert len(_own_records(storage)) == 1


@pytest.mark.parametrize("authenticated", [False, True], ids=["local", "authenticated"])
@pytest.mark.parametrize("retried_to", ["/crew/ops", "/crew/archive"])
def test_any_later_update_of_a_move_interrupted_before_the_old_record_went_leaves_one_record(
    authenticated: bool, retried_to: str
) -> None:
    """The server is gone when the old record is to be removed, so a copy is left in
    each scope; the next update, to the same scope or another, on a server with owners
    (authenticated, ``scopes``) or without, leaves the one record, where it moved it."""
    tokens = {"token-a": "alice"} if authenticated else None
    outage = _Outage("memory/forget")
    with (
        A2MServer() as server,
        serve_http(server, tokens=tokens) as url,
        httpx.Client(transport=outage) as http,
        A2MClient(url, http_client=http, max_retries=0, token="token-a") as client,
    ):
        storage = A2MStorage(client)
        original = _record()
        storage.save([original])
        outage.down = True
        with pytest.raises(A2MError):
            storage.update(original.model_copy(update={"scope": "/crew/ops"}))
        outage.down = False
        assert len(_own_records(storage)) == 2
        # Until then every read shows the record once, as it was before the failed update.
        for reader in (storage, A2MStorage(client)):
            found = reader.get_record(original.id)
            assert found is not None
            assert found.scope == original.scope
            assert [(r.id, r.scope) for r in reader.list_records("/crew")] == [
                (original.id, original.scope)
            ]
            assert reader.count("/crew") == 1
            hits = reader.search(embed_one(original.content), limit=5)
            assert [(r.id, r.scope) for r, _ in hits] == [(original.id, original.scope)]
        final = original.model_copy(update={"scope": retried_to, "content": "rotates weekly"})
        storage.update(final)
        assert len(_own_records(storage)) == 1
        found = storage.get_record(original.id)
        assert found is not None
        assert (found.id, found.scope, found.content) == (original.id, retried_to, final.content)
        assert [r.id for r in storage.list_records("/crew")] == [original.id]


def test_a_move_refused_for_its_vector_width_keeps_the_record(
    outage_storage: tuple[A2MStorage, _Outage],
) -> None:
    storage, _ = outage_storage
    original = _record()
    storage.save([original])
    wider = original.model_copy(update={"scope": "/crew/ops", "embedding": [0.5] * 7})
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.update(wider)
    kept = storage.get_record(original.id)
    assert kept is not None
    assert (kept.scope, kept.content, kept.embedding) == (
        original.scope,
        original.content,
        original.embedding,
    )


def test_a_move_refused_for_its_length_keeps_the_record(
    a2m_http_server_factory: HTTPServerFactory,
) -> None:
    url = a2m_http_server_factory(config=ServerConfig(limits=LimitsConfig(max_content_length=80)))
    with A2MClient(url) as client:
        storage = A2MStorage(client)
        original = _record()
        storage.save([original])
        longer = original.model_copy(update={"scope": "/crew/ops", "content": "x" * 200})
        with pytest.raises(A2MError):
            storage.update(longer)
        kept = storage.get_record(original.id)
        assert kept is not None
        assert (kept.scope, kept.content) == (original.scope, original.content)


def test_a_moved_record_keeps_its_id_for_every_later_call(storage_factory: Any) -> None:
    storage: A2MStorage = storage_factory()
    original = _record()
    storage.save([original])
    first = original.model_copy(update={"scope": "/crew/ops"})
    storage.update(first)
    second = first.model_copy(update={"scope": "/crew/sales", "content": "moved twice"})
    storage.update(second)
    storage.update(second.model_copy(update={"importance": 0.9}))  # in place, moved before
    found = storage.get_record(original.id)
    assert found is not None
    assert (found.id, found.scope, found.content, found.importance) == (
        original.id,
        "/crew/sales",
        "moved twice",
        0.9,
    )
    hits = storage.search(embed_one("moved twice"), scope_prefix="/crew/sales", limit=3)
    assert [record.id for record, _ in hits] == [original.id]
    assert storage.delete(record_ids=[original.id]) == 1
    assert storage.get_record(original.id) is None
    assert storage.count() == 0


@pytest.mark.parametrize("deleting", ["sync", "async"])
@pytest.mark.parametrize(
    "criteria",
    [
        {"categories": ["ops"]},
        {"metadata_filter": {"team": "blue"}},
        {"older_than": "in an hour"},
        {"categories": ["ops"], "scope_prefix": "/crew/ops"},
    ],
    ids=["categories", "metadata", "age", "categories-in-scope"],
)
def test_a_delete_by_what_a_moved_record_holds_removes_it_and_only_it(
    storage_factory: Any, criteria: dict[str, Any], deleting: str
) -> None:
    """A record an update moved has an A2M id of its own: a delete by categories,
    metadata or age, which lists and picks records here, forgets that id, not the
    CrewAI id (which no record holds any more, or another record does)."""
    import asyncio
    from datetime import datetime, timedelta

    if criteria.get("older_than"):
        criteria = {"older_than": datetime.now() + timedelta(hours=1)}
    storage: A2MStorage = storage_factory()
    moved = _record().model_copy(update={"metadata": {"team": "blue"}})
    storage.save([moved])
    storage.update(moved.model_copy(update={"scope": "/crew/ops"}))
    kept = _record("the wiki moves to the new host").model_copy(
        update={
            "categories": ["sales"],
            "metadata": {"team": "red"},
            "created_at": datetime.now() + timedelta(days=1),
        }
    )
    storage.save([kept])
    if deleting == "sync":
        assert storage.delete(**criteria) == 1
    else:

        async def delete() -> int:
            try:
                return await storage.adelete(**criteria)
            finally:
                await storage.aclose()

        assert asyncio.run(delete()) == 1
    reader: A2MStorage = storage_factory()
    assert reader.get_record(moved.id) is None
    assert reader.get_record(kept.id) is not None
    assert [r.id for r in reader.list_records()] == [kept.id]
