"""Listings are complete against a server declaring neither a timeline cursor nor a
``max_recall_limit`` (spec §4.4: a timeline without ``limit`` carries every record)."""

from __future__ import annotations

import pytest
from crewai.memory.types import MemoryRecord

from a2m import A2MClient
from a2m_crewai import A2MStorage
from a2m_server.config import ServerConfig
from a2m_testing.plugin import HTTPServerFactory

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

UNDECLARED = ServerConfig(timeline_cursor=False, declare_recall_limit=False)


def test_every_record_is_listed_without_cursor_or_declared_limit(
    a2m_http_server_factory: HTTPServerFactory,
) -> None:
    with A2MClient(a2m_http_server_factory(config=UNDECLARED)) as client:
        storage = A2MStorage(client)
        saved = [MemoryRecord(content=f"fact {i}", scope="/crew") for i in range(1205)]
        storage.save(saved)
        assert storage.count("/crew") == 1205
        listed = storage.list_records("/crew", limit=2000)
        assert sorted(r.id for r in listed) == sorted(r.id for r in saved)
        assert storage.delete(scope_prefix="/crew", categories=[]) == 1205
