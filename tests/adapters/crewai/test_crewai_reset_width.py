"""After a reset empties the store, a new embedder's vectors of another width are taken
(spec §3.7: the width is null until a vector fixes it); while any vector remains, CrewAI's
own dimension error says so."""

from __future__ import annotations

from typing import Any

import pytest
from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
from crewai.memory.types import MemoryRecord

from a2m_crewai import A2MStorage

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


def _record(text: str, vector: list[float]) -> MemoryRecord:
    return MemoryRecord(content=text, scope="/crew", embedding=vector)


def test_a_reset_store_takes_a_new_embedders_width(storage_factory: Any) -> None:
    storage: A2MStorage = storage_factory()
    storage.save([_record("old embedder", [1.0, 0.0, 0.0, 0.0])])
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.save([_record("new embedder", [0.0, 1.0, 0.0])])
    storage.reset()
    assert storage.client.describe().embeddings.dimensions is None
    fresh = _record("new embedder", [0.0, 1.0, 0.0])
    storage.save([fresh])
    hits = storage.search([0.0, 1.0, 0.0], limit=3)
    assert [record.id for record, _ in hits] == [fresh.id]
    assert storage.client.describe().embeddings.dimensions == 3
