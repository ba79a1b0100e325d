"""Agno's listings are exact against a server declaring neither a timeline cursor nor a
``max_recall_limit`` (spec §4.4: a timeline without ``limit`` carries every record)."""

from __future__ import annotations

import pytest
from agno.db.schemas.memory import UserMemory

from a2m import A2MClient
from a2m_agno import A2MDb
from a2m_server.config import ServerConfig
from a2m_testing.plugin import HTTPServerFactory

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

UNDECLARED = ServerConfig(timeline_cursor=False, declare_recall_limit=False)


def test_every_memory_is_listed_without_cursor_or_declared_limit(
    a2m_http_server_factory: HTTPServerFactory,
) -> None:
    with A2MClient(a2m_http_server_factory(config=UNDECLARED)) as client:
        db = A2MDb(client)
        memories = [UserMemory(memory=f"fact {i}", user_id="ada") for i in range(1205)]
        db.upsert_memories(memories)
        listed = db.get_user_memories(user_id="ada")
        assert len(listed) == 1205
        assert {m.memory_id for m in listed} == {m.memory_id for m in memories}  # type: ignore[union-attr]
