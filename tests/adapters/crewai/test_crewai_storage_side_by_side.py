"""Every StorageBackend member, on A2M over HTTP and on CrewAI's default LanceDB storage,
doing the same operations on the same records: the same answers."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from crew_support import embed_one
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.storage.lancedb_storage import LanceDBStorage
from storage_support import BASE, ids, records, without_vectors

from a2m_crewai import A2MStorage


@pytest.fixture
def pair(storage_factory: Callable[..., A2MStorage], tmp_path: Path) -> tuple[Any, Any]:
    a2m = storage_factory()
    lance = LanceDBStorage(path=tmp_path / "lance", compact_every=0)
    a2m.save(records())
    lance.save(records())
    return a2m, lance


def both(pair: tuple[Any, Any], call: Callable[[Any], Any]) -> Any:
    """Run ``call`` on both backends, assert the answers agree, return A2M's."""
    a2m, lance = pair
    mine, theirs = call(a2m), call(lance)
    assert mine == theirs
    return mine


def test_both_are_storage_backends(pair: tuple[Any, Any]) -> None:
    assert all(isinstance(backend, StorageBackend) for backend in pair)


def test_counts(pair: tuple[Any, Any]) -> None:
    assert both(pair, lambda s: s.count()) == 5
    assert both(pair, lambda s: s.count("/crew")) == 4
    assert both(pair, lambda s: s.count("/crew/research")) == 2
    assert both(pair, lambda s: s.count("/nowhere")) == 0


def test_get_record(pair: tuple[Any, Any]) -> None:
    for original in records():
        got = both(pair, lambda s, i=original.id: without_vectors(s.get_record(i)))
        assert got == original.model_dump()
    assert both(pair, lambda s: s.get_record("missing")) is None
    # A2M keeps the vector verbatim; LanceDB only to float32.
    assert pair[0].get_record("rec-0").embedding == records()[0].embedding


def test_search_orders_alike(pair: tuple[Any, Any]) -> None:
    query = embed_one("how often does the deploy key rotate")
    found = both(pair, lambda s: ids(s.search(query, limit=3)))
    assert found[0] == "rec-0"
    scores = [score for _, score in pair[0].search(query, limit=5)]
    assert scores == sorted(scores, reverse=True)


def test_search_filters(pair: tuple[Any, Any]) -> None:
    query = embed_one("the deploy")
    assert both(pair, lambda s: ids(s.search(query, scope_prefix="/crew/research"))) == [
        "rec-0",
        "rec-1",
    ]
    assert set(both(pair, lambda s: ids(s.search(query, categories=["market"])))) == {
        "rec-2",
        "rec-4",
    }
    blue = both(pair, lambda s: ids(s.search(query, metadata_filter={"team": "blue"})))
    assert set(blue) == {"rec-0", "rec-2", "rec-4"}
    both(pair, lambda s: ids(s.search(query, metadata_filter={"year": 2026})))
    mixed = both(
        pair,
        lambda s: ids(
            s.search(
                query, scope_prefix="/crew", categories=["ops"], metadata_filter={"team": "red"}
            )
        ),
    )
    assert mixed == ["rec-1"]
    assert both(pair, lambda s: len(s.search(query, limit=2))) == 2


def test_min_score_cuts_below_it(pair: tuple[Any, Any]) -> None:
    a2m, _ = pair
    query = embed_one("the deploy key rotates every ninety days")
    scored = a2m.search(query, limit=5)
    cut = (scored[0][1] + scored[1][1]) / 2
    assert ids(a2m.search(query, limit=5, min_score=cut)) == [scored[0][0].id]


def test_list_records_newest_first_and_paged(pair: tuple[Any, Any]) -> None:
    assert both(pair, lambda s: [r.id for r in s.list_records()]) == [
        "rec-4",
        "rec-3",
        "rec-2",
        "rec-1",
        "rec-0",
    ]
    assert both(pair, lambda s: [r.id for r in s.list_records("/crew", limit=2, offset=1)]) == [
        "rec-2",
        "rec-1",
    ]
    assert both(pair, lambda s: s.list_records(limit=0)) == []


def test_a_stamp_with_a_time_zone_lists_among_naive_ones(pair: tuple[Any, Any]) -> None:
    """A record saved with an aware ``created_at`` (CrewAI's own are naive UTC) lists in
    its place by time, as LanceDB lists it, and the scope's oldest and newest hold it."""
    from datetime import timezone

    aware = records()[0].model_copy(
        update={
            "id": "rec-aware",
            "created_at": (BASE + timedelta(days=1, hours=12)).replace(tzinfo=timezone.utc),
        }
    )
    for storage in pair:
        storage.save([aware])
    assert both(pair, lambda s: [r.id for r in s.list_records()]) == [
        "rec-4", "rec-3", "rec-2", "rec-aware", "rec-1", "rec-0",
    ]  # fmt: skip
    info = pair[0].get_scope_info("/")
    assert (info.oldest_record, info.newest_record) == (BASE, BASE + timedelta(days=4))


def test_a_search_limit_below_one_is_refused_as_lancedb_refuses_it(
    pair: tuple[Any, Any],
) -> None:
    query = embed_one("deploy key")
    for limit in (0, -1):
        for storage in pair:
            with pytest.raises(ValueError, match=r"[Ll]imit"):
                storage.search(query, limit=limit)


def test_scope_info_and_scopes(pair: tuple[Any, Any]) -> None:
    info = both(pair, lambda s: s.get_scope_info("/crew"))
    assert info.record_count == 4
    assert info.child_scopes == ["/crew/ops", "/crew/research", "/crew/sales"]
    assert info.oldest_record == BASE
    assert info.newest_record == BASE + timedelta(days=3)
    assert both(pair, lambda s: s.get_scope_info("/nowhere").record_count) == 0
    assert both(pair, lambda s: s.list_scopes("/")) == ["/crew", "/finance"]
    assert both(pair, lambda s: s.list_scopes("/crew/research")) == ["/crew/research/agent"]


def test_list_categories(pair: tuple[Any, Any]) -> None:
    assert both(pair, lambda s: s.list_categories()) == {
        "ops": 3,
        "security": 1,
        "market": 2,
        "numbers": 1,
    }
    assert both(pair, lambda s: s.list_categories("/crew/research")) == {"ops": 2, "security": 1}


def test_update(pair: tuple[Any, Any]) -> None:
    changed = records()[0].model_copy(
        update={"content": "the deploy key rotates every thirty days", "importance": 0.9}
    )
    changed.embedding = embed_one(changed.content)
    both(pair, lambda s: s.update(changed))
    assert both(pair, lambda s: without_vectors(s.get_record("rec-0"))) == changed.model_dump()
    assert both(pair, lambda s: s.count()) == 5
    moved = records()[3].model_copy(update={"scope": "/crew/research/ops"})
    both(pair, lambda s: s.update(moved))
    assert both(pair, lambda s: s.count("/crew/research")) == 3
    assert both(pair, lambda s: s.get_record("rec-3").scope) == "/crew/research/ops"


def test_delete_by_each_criterion(pair: tuple[Any, Any]) -> None:
    assert both(pair, lambda s: s.delete(record_ids=["rec-0", "missing"])) == 1
    assert both(pair, lambda s: s.delete(categories=["market"])) == 2
    assert both(pair, lambda s: s.delete(older_than=BASE + timedelta(days=2))) == 1
    assert both(pair, lambda s: s.delete(metadata_filter={"team": "green"})) == 1
    assert both(pair, lambda s: s.count()) == 0


def test_delete_by_scope_and_everything(pair: tuple[Any, Any]) -> None:
    assert both(pair, lambda s: s.delete(scope_prefix="/finance")) == 1
    assert both(pair, lambda s: s.delete(scope_prefix="/crew", categories=["security"])) == 1
    assert both(pair, lambda s: s.delete()) == 3
    assert both(pair, lambda s: s.count()) == 0


def test_reset(pair: tuple[Any, Any]) -> None:
    both(pair, lambda s: s.reset("/crew/research"))
    assert both(pair, lambda s: s.count()) == 3
    both(pair, lambda s: s.reset())
    assert both(pair, lambda s: s.count()) == 0
    assert both(pair, lambda s: s.list_scopes("/")) == []


@pytest.mark.anyio
async def test_async_members_alike(
    storage_factory: Callable[..., A2MStorage], tmp_path: Path
) -> None:
    a2m = storage_factory()
    lance = LanceDBStorage(path=tmp_path / "lance-async", compact_every=0)
    try:
        for backend in (a2m, lance):
            await backend.asave(records())
        query = embed_one("the deploy")
        for options in ({}, {"scope_prefix": "/crew"}, {"categories": ["ops"], "limit": 2}):
            assert ids(await a2m.asearch(query, **options)) == ids(  # type: ignore[arg-type]
                await lance.asearch(query, **options)  # type: ignore[arg-type]
            )
        for criteria in (
            {"record_ids": ["rec-0"]},
            {"metadata_filter": {"team": "blue"}},
            {"older_than": BASE + timedelta(days=2)},
            {},
        ):
            assert await a2m.adelete(**criteria) == await lance.adelete(**criteria)  # type: ignore[arg-type]
    finally:
        await a2m.aclose()
