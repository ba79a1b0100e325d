"""Values CrewAI accepts in a ``MemoryRecord`` but A2M cannot carry exactly are refused
with ``a2m.adapter.UnstorableValue`` (an ``A2MError`` and a ``ValueError``) naming where
they are, before anything is written: never a bare ``RecursionError`` or
``UnicodeEncodeError``, never a silent change."""

from __future__ import annotations

from typing import Any

import pytest
from crewai.memory.types import MemoryRecord

from a2m import A2MError
from a2m.adapter import UnstorableValue
from a2m_crewai import A2MStorage
from a2m_testing.hostile import HOSTILE_VALUES

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


@pytest.mark.parametrize("label", list(HOSTILE_VALUES))
def test_a_value_a2m_cannot_carry_is_refused_before_anything_is_written(
    storage_factory: Any, label: str
) -> None:
    storage: A2MStorage = storage_factory()
    fine = MemoryRecord(content="a fine record", scope="/crew")
    hostile = MemoryRecord(
        content="a hostile one", scope="/crew", metadata={"k": HOSTILE_VALUES[label]}
    )
    with pytest.raises(UnstorableValue, match="metadata of record") as caught:
        storage.save([fine, hostile])
    assert isinstance(caught.value, A2MError)
    assert storage.count() == 0, "the batch wrote nothing"
    storage.save([fine])
    with pytest.raises(UnstorableValue):
        storage.update(fine.model_copy(update={"metadata": {"k": HOSTILE_VALUES[label]}}))
    kept = storage.get_record(fine.id)
    assert kept is not None
    assert kept.metadata == {}


def test_text_with_a_lone_surrogate_is_refused(storage_factory: Any) -> None:
    storage: A2MStorage = storage_factory()
    with pytest.raises(UnstorableValue, match="content of record"):
        storage.save([MemoryRecord(content="half a pair \ud83d", scope="/crew")])
    assert storage.count() == 0
