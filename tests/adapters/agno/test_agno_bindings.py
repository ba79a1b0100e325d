"""A2MDb over every binding the testing kit offers (in-process, stdio, HTTP, REST): the
adapter translates to A2M calls, so the transport is the client's business."""

from __future__ import annotations

from agno.db.schemas.memory import UserMemory

from a2m import A2MClient
from a2m_agno import A2MDb


def test_memories_round_trip_on_every_binding(a2m_client: A2MClient) -> None:
    db = A2MDb(a2m_client)
    memories = [
        UserMemory(
            memory=f"fact {i}",
            memory_id=f"m-{i}",
            user_id="ada",
            topics=["t"],
            created_at=i,
            updated_at=i,
        )
        for i in range(1, 4)
    ]
    db.upsert_memories(memories, preserve_updated_at=True)
    assert db.get_user_memories(user_id="ada", sort_by="created_at", sort_order="asc") == memories
    assert db.get_user_memory("m-2") == memories[1]
    db.delete_user_memories(["m-1"], user_id="ada")
    assert [m.memory_id for m in db.get_user_memories()] == ["m-2", "m-3"]
    assert db.get_all_memory_topics() == ["t"]
    db.clear_memories()
    assert db.get_user_memories() == []
