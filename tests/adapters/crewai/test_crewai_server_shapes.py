"""A2MStorage and CrewAI's ``Memory`` on it on every kind of conformant A2M server, not
only the bundled one's defaults: a plain 0.1 server (no timeline cursor, no ``where``
operators, no event log), one declaring no ``max_recall_limit``, one with a small
``max_recall_limit`` (with and without a cursor), one with a small
``max_records_per_call``, and ones lacking an optional capability. Each answers as the
default server does, or says why it cannot (a capped listing warns, a missing capability
the adapter needs is refused at the first call naming it). The server refuses a read past
its ``max_recall_limit`` and a batch past its ``max_records_per_call``, so a scenario that
completes asked for neither."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest
from crew_support import ScriptedLLM, embed, embed_one
from crewai.memory.types import MemoryRecord
from storage_support import records

from a2m import A2MClient, AsyncA2MClient, CapabilityNotSupported, QuotaExceeded
from a2m_crewai import A2MStorage, ListingCapped, a2m_memory
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

SHAPES = {**SERVER_SHAPES, **lacking("tiers", "sessions", "scopes")}

# Each query's best match holds words no other record holds: the top of a search is the
# same on every server, whatever order it gives records that match nothing.
QUERIES = {
    "the deploy key rotates": "rec-0",
    "staging database restored nightly": "rec-1",
    "annual plan customers": "rec-2",
    "quarterly revenue grew": "rec-4",
}


@contextmanager
def storage_on(**config: Any) -> Iterator[A2MStorage]:
    """An A2MStorage (sync and async clients) on an in-process server shaped ``config``."""
    with A2MServer(ServerConfig(**config)) as server, A2MClient.in_process(server) as client:
        async_client = AsyncA2MClient.in_process(server)
        try:
            yield A2MStorage(client, async_client=async_client, agent="analyst")
        finally:
            asyncio.run(async_client.aclose())


def _best(storage: A2MStorage, query: str) -> str:
    found = storage.search(embed_one(query), limit=2)
    return found[0][0].id


def scenario(storage: A2MStorage) -> dict[str, Any]:
    """Every StorageBackend member CrewAI calls, and Memory.recall through CrewAI, on the
    test records; what each answered."""
    seen: dict[str, Any] = {}
    storage.save(records())
    seen["count"] = storage.count("/crew")
    seen["listed"] = [r.id for r in storage.list_records("/crew")]
    seen["page"] = [r.id for r in storage.list_records(None, limit=2, offset=1)]
    seen["scopes"] = storage.list_scopes("/crew")
    seen["categories"] = storage.list_categories()
    info = storage.get_scope_info("/crew")
    seen["info"] = (info.record_count, sorted(info.categories), info.child_scopes)
    seen["best"] = {query: _best(storage, query) for query in QUERIES}
    # (last_accessed: the instant the server stamped at the searches above)
    got = storage.get_record("rec-0")
    seen["got"] = got.model_dump(exclude={"last_accessed"}) if got else None
    moved = records()[1].model_copy(update={"scope": "/moved", "content": "moved on"})
    storage.update(moved)
    found = storage.get_record("rec-1")
    seen["moved"] = (found.scope, found.content) if found else None
    memory = a2m_memory(storage, llm=ScriptedLLM(), embedder=embed)
    seen["recalled"] = [
        m.record.id for m in memory.recall("quarterly revenue grew", limit=1, depth="shallow")
    ]
    seen["deleted by metadata"] = storage.delete(metadata_filter={"team": "green"})
    seen["deleted by age"] = storage.delete(older_than=datetime(2026, 1, 1, 13))
    seen["deleted by category"] = storage.delete(categories=["numbers"])
    seen["deleted by id"] = storage.delete(record_ids=["rec-1"])
    seen["left"] = sorted(r.id for r in storage.list_records())

    async def the_async_half() -> list[Any]:
        await storage.asave([MemoryRecord(id="late", content="late tea", scope="/crew/tea")])
        hits = await storage.asearch(embed_one("late tea"), limit=1)
        gone = await storage.adelete(scope_prefix="/crew/tea", categories=[])
        return [[r.id for r, _ in hits], gone]

    seen["async"] = asyncio.run(the_async_half())
    return seen


@pytest.fixture(scope="module")
def on_the_default_server() -> dict[str, Any]:
    with storage_on() as storage:
        return scenario(storage)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_member_answers_as_on_the_default_server(
    shape: str, on_the_default_server: dict[str, Any]
) -> None:
    with storage_on(**SHAPES[shape]) as storage:
        assert scenario(storage) == on_the_default_server


def test_a_small_recall_limit_bounds_every_read_the_adapter_makes() -> None:
    """``max_recall_limit`` 3 with a cursor: a search asking for 10 gets the 3 the server
    allows; Memory.recall's default limit (10) answers; a record an update moved is found
    again (its lookup asked for 10 and was refused with QUOTA_EXCEEDED); listings page
    past 3 completely."""
    with storage_on(**SMALL_RECALL) as storage:
        storage.save(records())
        assert len(storage.search(embed_one("the deploy key"), limit=10)) == 3
        memory = a2m_memory(storage, llm=ScriptedLLM(), embedder=embed)
        assert 1 <= len(memory.recall("the deploy key", depth="shallow")) <= 3
        storage.update(records()[0].model_copy(update={"scope": "/elsewhere"}))
        assert storage.get_record("rec-0").scope == "/elsewhere"  # type: ignore[union-attr]
        assert storage.count() == 5


def test_a_capped_server_without_cursor_answers_what_it_can_and_warns_where_short() -> None:
    """``max_recall_limit`` 3 and no cursor: listings of more than 3 records warn
    ListingCapped and give the newest 3; lookups, updates and searches answer as usual."""
    with storage_on(**SMALL_RECALL_NO_CURSOR) as storage:
        storage.save(records())
        with pytest.warns(ListingCapped, match="max_recall_limit"):
            assert storage.count() == 3
        with pytest.warns(ListingCapped):
            assert [r.id for r in storage.list_records()] == ["rec-4", "rec-3", "rec-2"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert storage.count("/crew/sales") == 1
            storage.update(records()[1].model_copy(update={"scope": "/moved"}))
            assert storage.get_record("rec-1").scope == "/moved"  # type: ignore[union-attr]
            assert len(storage.search(embed_one("the deploy key"), limit=10)) == 3


@pytest.mark.parametrize("capability", ["keys", "embeddings"])
def test_a_server_lacking_what_the_storage_needs_is_refused_at_the_first_write(
    capability: str,
) -> None:
    """Scopes are key prefixes and CrewAI records carry vectors: without ``keys`` or
    ``embeddings`` the first save is refused, naming the capability, and nothing is kept."""
    with storage_on(capabilities=EVERY_CAPABILITY - {capability}) as storage:
        with pytest.raises(CapabilityNotSupported, match=f"'{capability}'"):
            storage.save(records())
        assert storage.list_categories() == {}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_save_refused_after_earlier_calls_took_part_keeps_nothing_it_created(
    mode: str,
) -> None:
    """Two records a call and a fifth record longer than the server stores: the first two
    calls were taken, the third refused. What they created is removed again; ``kept``,
    saved before and saved again in the batch, stays as it was (an id already stored is
    left as it is). Saving the batch without the long record then stores all four."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=60)
    kept = MemoryRecord(id="kept", content="kept tea", scope="/crew", embedding=embed_one("tea"))
    fresh = [
        MemoryRecord(id=f"new-{n}", content=f"new tea {n}", scope="/crew", embedding=embed_one("x"))
        for n in range(2)
    ]
    too_long = MemoryRecord(id="long", content="tea " * 20, scope="/crew")
    batch = [kept, *fresh, MemoryRecord(id="new-2", content="new tea 2", scope="/crew"), too_long]
    with storage_on(limits=limits) as storage:
        storage.save([kept])
        before = storage.client.timeline(embeddings=True).records
        save = storage.save if mode == "sync" else lambda b: asyncio.run(storage.asave(b))
        with pytest.raises(QuotaExceeded, match="max_content_length"):
            save(batch)
        assert storage.client.timeline(embeddings=True).records == before
        storage.save(batch[:-1])
        assert sorted(r.id for r in storage.list_records()) == ["kept", "new-0", "new-1", "new-2"]
