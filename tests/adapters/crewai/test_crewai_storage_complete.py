"""Listings past the server's ``max_recall_limit`` (complete by keyset cursor, stable while
another storage writes; capped and warned without cursors), filters the server runs when
it declares the operators (and the same answers when it does not), and ``last_accessed``
refreshed by recall."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from crew_support import embed_one
from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.types import MemoryRecord
from storage_support import BASE

from a2m import A2MClient
from a2m_crewai import A2MStorage, ListingCapped
from a2m_server.config import LimitsConfig, ServerConfig

CAP = 7
PLAIN = {"timeline_cursor": False, "where_operators": False}
"""A server answering as a plain A2M 0.1 one: no cursor, no operators."""


@pytest.fixture
def served(a2m_http_server_factory: Any) -> Iterator[Callable[..., A2MStorage]]:
    """``A2MStorage`` objects on one fresh server per ``cap`` (its ``max_recall_limit``)
    and ``options``; all closed after."""
    made: list[A2MStorage] = []
    urls: dict[tuple[Any, ...], str] = {}

    def build(cap: int = CAP, **options: bool) -> A2MStorage:
        key = (cap, *sorted(options.items()))
        if key not in urls:
            config = ServerConfig(limits=LimitsConfig(max_recall_limit=cap), **options)
            urls[key] = a2m_http_server_factory(config=config)
        storage = A2MStorage(urls[key])
        made.append(storage)
        return storage

    yield build
    for storage in made:
        storage.close()


def _record(index: int) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{index:03d}",
        content=f"fact number {index}",
        scope=f"/crew/{'ab'[index % 2]}/{index % 3}",
        categories=[f"c{index % 3}"],
        created_at=BASE + timedelta(minutes=index),
        last_accessed=BASE + timedelta(minutes=index),
        embedding=embed_one(f"fact number {index}"),
    )


def _sent(monkeypatch: pytest.MonkeyPatch, client: A2MClient, method: str) -> list[dict[str, Any]]:
    """The keyword arguments of every ``client.<method>`` call from now on."""
    calls: list[dict[str, Any]] = []
    original = getattr(client, method)

    def recorded(*args: Any, **params: Any) -> Any:
        calls.append(params)
        return original(*args, **params)

    monkeypatch.setattr(client, method, recorded)
    return calls


def test_listings_are_complete_past_the_cap_while_another_writes(
    served: Callable[..., A2MStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, writer = served(), served()
    first = [_record(i) for i in range(40)]
    storage.save(first)
    storage.count()
    pages: list[int] = []
    original = storage.client.timeline

    def paging_while_writing(**params: Any) -> Any:
        result = original(**params)
        pages.append(len(result.records))
        if len(pages) <= 20:  # another process's crew, writing between our pages
            writer.save([MemoryRecord(content=f"late {len(pages)}", scope="/crew/a/late")])
        return result

    monkeypatch.setattr(storage.client, "timeline", paging_while_writing)
    listed = storage.list_records(limit=1000)
    seen = [r.id for r in listed]
    assert len(seen) == len(set(seen)), "no record twice"
    assert {r.id for r in first} <= set(seen), "every record present throughout"
    assert len(pages) > 40 // CAP
    assert max(pages) <= CAP
    # newest first by CrewAI's created_at, as LanceDB lists
    assert [r.created_at for r in listed] == sorted((r.created_at for r in listed), reverse=True)
    monkeypatch.setattr(storage.client, "timeline", original)

    late = min(len(pages), 20)  # the writer's records, the last written after the listing
    assert len(seen) in (40 + late - 1, 40 + late)
    assert storage.count() == 40 + late
    assert storage.count("/crew/b") == 20
    assert storage.list_categories("/crew/b") == {"c0": 7, "c1": 7, "c2": 6}
    assert storage.list_scopes("/crew/a") == ["/crew/a/0", "/crew/a/1", "/crew/a/2", "/crew/a/late"]
    info = storage.get_scope_info("/crew/b")
    assert (info.record_count, info.oldest_record) == (20, BASE + timedelta(minutes=1))
    assert info.newest_record == BASE + timedelta(minutes=39)
    assert storage.list_records("/crew/b", limit=3, offset=18) == [
        storage.get_record("r003"),
        storage.get_record("r001"),
    ]

    assert storage.delete(categories=["c0"]) == 14
    assert storage.delete(older_than=BASE + timedelta(minutes=20)) == 13
    assert storage.count("/crew/b") == 6
    storage.reset("/crew/b")
    assert storage.count("/crew/b") == 0
    storage.reset()
    assert storage.count() == 0


@pytest.mark.anyio
async def test_async_deletes_page_past_the_cap(served: Callable[..., A2MStorage]) -> None:
    storage = served()
    storage.save([_record(i) for i in range(30)])
    assert await storage.adelete(categories=["c1"]) == 10
    assert await storage.adelete(metadata_filter={}, older_than=BASE + timedelta(days=1)) == 20
    assert storage.count() == 0
    await storage.aclose()


def test_without_cursors_a_listing_is_capped_and_says_so(
    served: Callable[..., A2MStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = served(**PLAIN)
    storage.save([_record(i) for i in range(CAP - 1)])
    assert storage.count() == CAP - 1
    storage.save([_record(CAP - 1), _record(CAP)])
    sent = _sent(monkeypatch, storage.client, "timeline")
    with pytest.warns(ListingCapped, match="max_recall_limit"):
        assert len(storage.list_records()) == CAP
    assert len(sent) == 1
    assert "cursor" not in sent[0]


# --- filters -------------------------------------------------------------------------

# Metadata values that Python's == (CrewAI's filter) tells apart, or does not.
VALUES: list[Any] = [1, 1.0, True, "1", None, [1], 2, False, 0, {"a": 1}]


def _valued() -> list[MemoryRecord]:
    made = [
        MemoryRecord(
            id=f"v{index}",
            content=f"value {value!r}",
            metadata={"n": value, "k": "x"},
            created_at=BASE + timedelta(days=index),
            embedding=embed_one(f"value {value!r}"),
        )
        for index, value in enumerate(VALUES)
    ]
    absent = MemoryRecord(id="absent", content="no value", metadata={"k": "x"})
    return [*made, absent.model_copy(update={"embedding": embed_one("no value")})]


FILTERS: list[Any] = [1, True, 0, False, None, 2, 2.0, "1", [1], {"a": 1}, 1.5]


@pytest.mark.parametrize("options", [{}, PLAIN], ids=["operators", "plain"])
def test_metadata_filters_mean_python_equality(
    served: Callable[..., A2MStorage], tmp_path: Path, options: dict[str, bool]
) -> None:
    storage = served(1000, **options)
    lance = LanceDBStorage(path=tmp_path / "lance", compact_every=0)
    storage.save(_valued())
    lance.save(_valued())
    query = embed_one("value")
    for value in FILTERS:
        wanted = {r.id for r in _valued() if r.metadata.get("n") == value}
        for backend in (storage, lance):
            found = backend.search(query, metadata_filter={"n": value}, limit=20)
            assert {r.id for r, _ in found} == wanted, (backend, value)
    for value in FILTERS:
        expected = lance.delete(metadata_filter={"n": value})
        assert storage.delete(metadata_filter={"n": value}) == expected, value
    assert storage.count() == lance.count()


def test_filters_go_to_a_server_declaring_operators(
    served: Callable[..., A2MStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = served(1000)
    storage.save(_valued())
    recalls = _sent(monkeypatch, storage.client, "recall")
    listings = _sent(monkeypatch, storage.client, "timeline")
    found = storage.search(embed_one("value"), metadata_filter={"n": True, "k": "x"}, limit=20)
    assert {r.id for r, _ in found} == {"v0", "v1", "v2"}
    assert recalls[-1]["where"] == {"n": {"$in": [True, 1]}, "k": "x"}
    assert storage.delete(older_than=BASE + timedelta(days=1), metadata_filter={"n": 1}) == 1
    where = listings[-1]["where"]
    assert where["n"] == {"$in": [1, True]}
    assert where["metadata.crewai.created_utc"] == {"$lt": "2026-01-02T12:00:00.000000"}
    assert listings[-1]["cursor"] == ""
    # a container is matched here only; categories always (a where cannot test arrays)
    storage.delete(metadata_filter={"n": [1]}, categories=["none"])
    assert "n" not in listings[-1]["where"]


def test_a_plain_server_is_sent_only_what_it_honours(
    served: Callable[..., A2MStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = served(1000, **PLAIN)
    storage.save(_valued())
    recalls = _sent(monkeypatch, storage.client, "recall")
    listings = _sent(monkeypatch, storage.client, "timeline")
    found = storage.search(embed_one("value"), metadata_filter={"n": True, "k": "x"}, limit=20)
    assert {r.id for r, _ in found} == {"v0", "v1", "v2"}
    assert recalls[-1]["where"] == {"k": "x"}
    assert storage.delete(older_than=BASE + timedelta(days=1), metadata_filter={"n": 1}) == 1
    assert listings[-1]["where"] == {"source_framework": "crewai"}
    assert "cursor" not in listings[-1]


# --- last_accessed -------------------------------------------------------------------


def test_a_recall_refreshes_last_accessed(served: Callable[..., A2MStorage]) -> None:
    storage = served()
    saved = _record(1)
    storage.save([saved, _record(2)])
    assert storage.get_record(saved.id) == saved
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    found = storage.search(saved.embedding or [], limit=1)
    assert [r.id for r, _ in found] == [saved.id]
    storage.touch_records([saved.id])
    touched = storage.get_record(saved.id)
    assert touched is not None
    assert touched.last_accessed >= before - timedelta(seconds=1)
    assert touched.model_copy(update={"last_accessed": saved.last_accessed}) == saved
    untouched = storage.get_record("r002")
    assert untouched is not None
    assert untouched.last_accessed == _record(2).last_accessed


@pytest.mark.parametrize("options", [{}, PLAIN], ids=["operators", "plain"])
def test_metadata_named_like_the_mappings_own_filters_alike(
    served: Callable[..., A2MStorage], tmp_path: Path, options: dict[str, bool]
) -> None:
    storage = served(1000, **options)
    lance = LanceDBStorage(path=tmp_path / "lance", compact_every=0)
    colliding = MemoryRecord(
        id="c", content="a note", metadata={"type": "note", "team": "blue", "n": 2}
    )
    plain = MemoryRecord(id="p", content="a fact", metadata={"team": "blue", "n": 2})
    for backend in (storage, lance):
        backend.save(
            [r.model_copy(update={"embedding": embed_one(r.content)}) for r in (colliding, plain)]
        )
    query = embed_one("a note")
    for metadata_filter in ({"team": "blue"}, {"type": "note"}, {"n": 2}, {"type": "semantic"}):
        found = [
            {r.id for r, _ in b.search(query, metadata_filter=metadata_filter)}
            for b in (storage, lance)
        ]
        assert found[0] == found[1], metadata_filter
    stored = storage.get_record("c")
    assert stored is not None
    assert stored.metadata == colliding.metadata
    assert storage.delete(metadata_filter={"team": "blue", "n": 2}) == 2
