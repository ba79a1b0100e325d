"""What A2MStorage does beyond what LanceDB shows: exact round trips, segment-wise scopes,
one call per batch, typed refusals that write nothing, other frameworks' records read but
never changed, and privacy honoured before the limit."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from crew_support import embed_one
from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
from crewai.memory.types import MemoryRecord
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_support import records

from a2m import A2MClient
from a2m.adapter import A2MAdapter
from a2m_crewai import A2MStorage, ForeignRecordError
from a2m_crewai._plan import RecallContext, current_recall

Factory = Callable[..., A2MStorage]


def _calls(monkeypatch: pytest.MonkeyPatch, client: A2MClient) -> list[str]:
    """Record the name of every A2M method the storage calls through ``client``."""
    seen: list[str] = []
    for name in ("remember", "recall", "timeline", "forget", "fetch"):
        original = getattr(client, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            seen.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(client, name, counted)
    return seen


def test_save_is_one_remember_per_batch(
    storage_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = storage_factory()
    storage.count()  # negotiate first, so only the save's own calls are counted
    seen = _calls(monkeypatch, storage.client)
    batch = [MemoryRecord(content=f"fact {i}", embedding=embed_one(f"fact {i}")) for i in range(50)]
    storage.save(batch)
    assert seen == ["remember"]
    seen.clear()
    storage.search(embed_one("fact 3"), scope_prefix="/", limit=5)
    storage.delete(record_ids=[batch[0].id])
    storage.list_records()
    # by id: a second forget takes the records an update moved (their A2M id is new)
    assert seen == ["recall", "forget", "forget", "timeline"]
    assert storage.count() == 49


_scopes = st.lists(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="/"), min_size=1),
    max_size=3,
).map(lambda parts: "/" + "/".join(parts))
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    scope=_scopes,
    categories=st.lists(st.text(max_size=8), max_size=3),
    metadata=st.dictionaries(st.text(max_size=10), _json, max_size=4),
    importance=st.floats(0, 1),
    created=_moments,
    source=st.none() | st.text(max_size=8),
    private=st.booleans(),
    vector=st.none() | st.just([]) | st.lists(st.floats(-1e6, 1e6), min_size=8, max_size=8),
)
def test_a_record_round_trips_exactly(
    storage_factory: Factory,
    scope: str,
    categories: list[str],
    metadata: dict[str, Any],
    importance: float,
    created: datetime,
    source: str | None,
    private: bool,
    vector: list[float] | None,
) -> None:
    storage = storage_factory()
    record = MemoryRecord(
        content="something worth keeping",
        scope=scope,
        categories=categories,
        metadata=metadata,
        importance=importance,
        created_at=created,
        last_accessed=created + timedelta(seconds=1),
        embedding=vector,
        source=source,
        private=private,
    )
    storage.save([record])
    got = storage.get_record(record.id)
    assert got is not None
    assert got.model_dump() == record.model_dump()
    assert got.embedding == record.embedding
    assert record.id in [r.id for r in storage.list_records(scope, limit=1000)]


def test_reserved_metadata_names_and_aware_times_round_trip(storage_factory: Factory) -> None:
    storage = storage_factory()
    record = MemoryRecord(
        content="x",
        metadata={"tags": "mine", "crewai": 1, "type": "note", "role": "user"},
        created_at=datetime(2026, 3, 1, 8, 0, tzinfo=timezone(timedelta(hours=2))),
    )
    storage.save([record])
    assert storage.get_record(record.id) == record
    assert storage.search([], metadata_filter={"role": "user"}) == []  # no vector, no text


def test_scope_prefix_matches_by_segment(storage_factory: Factory) -> None:
    storage = storage_factory()
    near = MemoryRecord(content="a", scope="/crew/a", embedding=embed_one("a"))
    far = MemoryRecord(content="a", scope="/crew/ab", embedding=embed_one("a"))
    storage.save([near, far])
    assert [r.id for r, _ in storage.search(embed_one("a"), scope_prefix="/crew/a")] == [near.id]
    assert storage.count("/crew/a") == 1
    assert storage.list_scopes("/crew") == ["/crew/a", "/crew/ab"]


def test_a_bad_batch_writes_nothing(storage_factory: Factory) -> None:
    storage = storage_factory()
    good = MemoryRecord(content="fine", embedding=[1.0, 0.0])
    for bad in (
        MemoryRecord(content="nan", embedding=[math.nan, 0.0]),
        MemoryRecord(content="odd", metadata={"when": datetime(2026, 1, 1)}),
    ):
        with pytest.raises(ValueError, match=r"record"):
            storage.save([good, bad])
        assert storage.count() == 0
    storage.save([good])
    with pytest.raises(EmbeddingDimensionMismatchError) as caught:
        storage.save([MemoryRecord(content="wide", embedding=[1.0, 0.0, 0.0])])
    assert (caught.value.stored_dim, caught.value.new_dim) == (2, 3)
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.search([1.0, 0.0, 0.0])
    assert storage.count() == 1


def test_saving_a_stored_id_keeps_the_stored_record(storage_factory: Factory) -> None:
    storage = storage_factory()
    first = records()[0]
    storage.save([first])
    storage.save([first.model_copy(update={"content": "changed"})])
    got = storage.get_record(first.id)
    assert got is not None
    assert got.content == first.content
    assert storage.count() == 1


@pytest.fixture
def foreign(a2m_http_url: str) -> A2MClient:
    """Another framework's and a raw client's records, none with a vector."""
    with A2MClient(a2m_http_url) as client:
        client.remember({"content": "the office closes at six on fridays", "role": "user"})
        with A2MAdapter(client, "shared/ops", source_framework="langchain") as adapter:
            adapter.write("deploy/rotation", "semantic", "deploy keys rotate every quarter")
    return A2MClient(a2m_http_url)


def test_other_frameworks_records_are_read(storage_factory: Factory, foreign: A2MClient) -> None:
    storage = storage_factory()
    storage.save([MemoryRecord(content="crew fact", scope="/crew", embedding=embed_one("crew"))])
    assert storage.count() == 3
    assert storage.list_scopes("/") == ["/crew", "/shared"]
    entry = storage.list_records("/shared/ops")[0]
    assert (entry.content, entry.scope) == (
        "deploy keys rotate every quarter",
        "/shared/ops/deploy",
    )
    assert entry.metadata["source_framework"] == "langchain"
    # A vector alone cannot reach records that have none; their words can.
    query = embed_one("when do deploy keys rotate")
    assert "deploy keys rotate every quarter" not in [r.content for r, _ in storage.search(query)]
    storage.query_texts.note(query, "when do deploy keys rotate")
    # (Fused ranking ties the top of the word list with the top of the vector list.)
    found = [r.content for r, _ in storage.search(query, limit=2)]
    assert "deploy keys rotate every quarter" in found
    assert "the office closes at six on fridays" not in found
    token = current_recall().set(RecallContext("office closes", None, False))
    try:
        found = [r.content for r, _ in storage.search(embed_one("unrelated"), limit=2)]
        assert "the office closes at six on fridays" in found
    finally:
        current_recall().reset(token)
    foreign.close()


def test_other_frameworks_records_are_never_changed(
    storage_factory: Factory, foreign: A2MClient
) -> None:
    storage = storage_factory()
    storage.save(records())
    theirs = storage.list_records("/shared")[0]
    with pytest.raises(ForeignRecordError):
        storage.update(theirs.model_copy(update={"content": "overwritten"}))
    assert storage.delete(record_ids=[theirs.id]) == 0
    assert storage.delete(scope_prefix="/shared") == 0
    storage.reset()
    assert [r.content for r in storage.list_records()] == [
        "deploy keys rotate every quarter",
        "the office closes at six on fridays",
    ]
    foreign.close()


def test_private_records_take_no_place_for_other_sources(storage_factory: Factory) -> None:
    storage = storage_factory()
    query = embed_one("the launch date")
    secret = [
        MemoryRecord(content=f"the launch date {i}", embedding=query, private=True, source="alice")
        for i in range(4)
    ]
    public = MemoryRecord(content="launch", embedding=embed_one("the launch"))
    storage.save([*secret, public])

    def seen_by(source: str | None, include_private: bool = False) -> list[str]:
        token = current_recall().set(RecallContext("the launch date", source, include_private))
        try:
            return [r.id for r, _ in storage.search(query, limit=2)]
        finally:
            current_recall().reset(token)

    assert seen_by("bob") == [public.id]
    assert seen_by(None) == [public.id]
    assert set(seen_by("alice")) <= {r.id for r in secret}
    assert len(seen_by("bob", include_private=True)) == 2
    assert storage.get_record(secret[0].id).private  # type: ignore[union-attr]
