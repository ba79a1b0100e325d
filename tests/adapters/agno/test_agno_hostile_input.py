"""Values Agno accepts in a ``UserMemory`` (``feedback``, ``input``, topics) or a
knowledge document's ``meta_data`` but A2M cannot carry exactly are refused with
``a2m.adapter.UnstorableValue`` (an ``A2MError`` and a ``ValueError``) naming where they
are, before anything is written."""

from __future__ import annotations

import pytest
from agno.db.schemas.memory import UserMemory
from agno.knowledge.document import Document
from agno_fake_embedder import FakeEmbedder

from a2m import A2MClient, A2MError
from a2m.adapter import UnstorableValue
from a2m_agno import A2MDb, A2MVectorDb
from a2m_testing.hostile import HOSTILE_VALUES

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


@pytest.mark.parametrize("label", list(HOSTILE_VALUES))
def test_a_memory_a2m_cannot_carry_is_refused_unwritten(client: A2MClient, label: str) -> None:
    db = A2MDb(client)
    memories = [
        UserMemory(memory_id="fine", memory="fine", user_id="ada"),
        UserMemory(memory_id="bad", memory="bad", user_id="ada", feedback=HOSTILE_VALUES[label]),
    ]
    with pytest.raises(UnstorableValue) as caught:
        db.upsert_memories(memories)
    assert isinstance(caught.value, A2MError)
    assert db.get_user_memories() == []


def test_memory_text_with_a_lone_surrogate_is_refused(client: A2MClient) -> None:
    db = A2MDb(client)
    with pytest.raises(UnstorableValue):
        db.upsert_user_memory(UserMemory(memory="half a pair \ud83d", user_id="ada"))
    assert db.get_user_memories() == []


@pytest.mark.parametrize("label", ["nan", "set", "tuple", "ten thousand levels"])
def test_a_chunk_a2m_cannot_carry_is_refused_unwritten(client: A2MClient, label: str) -> None:
    vectors = A2MVectorDb(client, embedder=FakeEmbedder())
    documents = [
        Document(content="fine chunk", name="doc"),
        Document(content="bad chunk", name="doc", meta_data={"k": HOSTILE_VALUES[label]}),
    ]
    with pytest.raises(UnstorableValue):
        vectors.insert("hash-1", documents)
    assert not vectors.content_hash_exists("hash-1")
