"""The same chunks in Agno's LanceDb and in A2MVectorDb (over HTTP), both searching by the
same embedder's vectors: searches, filters, existence checks and deletes answer alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from agno.knowledge.document import Document
from agno.vectordb.base import VectorDb
from agno_fake_embedder import FakeEmbedder

from a2m import A2MClient
from a2m_agno import A2MVectorDb

lancedb = pytest.importorskip("agno.vectordb.lancedb")

TEXTS = {
    "cats": ("cats nap in the warm sun", {"kind": "pets", "year": 2020}),
    "dogs": ("dogs chase cats around the yard", {"kind": "pets", "year": 2022}),
    "rust": ("rust borrow checker stops data races", {"kind": "code", "year": 2021}),
    "python": ("python code reads like plain english", {"kind": "code", "year": 2024}),
    "bread": ("bread needs flour water salt and time", {"kind": "food", "year": 2023}),
    "tea": ("green tea in the warm afternoon sun", {"kind": "food", "year": 2019}),
}
# Queries whose six similarities all differ: a tie would let either store order it freely.
QUERIES = [
    "cats in the sun",
    "borrow checker code",
    "warm tea",
    "dogs in the yard",
    "salt and time",
]


def documents() -> list[Document]:
    return [
        Document(content=text, name=name, meta_data=dict(meta))
        for name, (text, meta) in TEXTS.items()
    ]


@pytest.fixture
def pair(client: A2MClient, tmp_path: Path) -> dict[str, VectorDb]:
    lance = lancedb.LanceDb(
        uri=str(tmp_path / "lance"),
        table_name="chunks",
        embedder=FakeEmbedder(),
        search_type=lancedb.SearchType.vector,
    )
    both: dict[str, VectorDb] = {
        "lance": lance,
        "a2m": A2MVectorDb(client, embedder=FakeEmbedder(), search_type="vector"),
    }
    for db in both.values():
        db.create()
        db.insert("hash-1", documents()[:4])
        db.insert("hash-2", documents()[4:])
    return both


def names(
    db: VectorDb, query: str, limit: int, filters: dict[str, object] | None = None
) -> list[str]:
    return [d.name or "" for d in db.search(query, limit=limit, filters=filters)]


@pytest.mark.parametrize("query", QUERIES)
def test_searches_rank_alike(pair: dict[str, VectorDb], query: str) -> None:
    for limit in (1, 3, 6):
        assert names(pair["a2m"], query, limit) == names(pair["lance"], query, limit)
    for filters in ({"kind": "pets"}, {"kind": "code"}, {"year": 2023}, {"kind": "none"}):
        # LanceDb filters the `limit` nearest; with every chunk in reach both see all.
        assert names(pair["a2m"], query, 6, filters) == names(pair["lance"], query, 6, filters)


def test_checks_and_deletes_answer_alike(pair: dict[str, VectorDb]) -> None:
    for db in pair.values():
        assert db.content_hash_exists("hash-1")
        assert not db.content_hash_exists("hash-9")
        assert db.name_exists("bread")
        assert not db.name_exists("cake")
        assert db.delete_by_name("bread")
        assert db.delete_by_metadata({"kind": "code"})
        db.upsert(
            "hash-1",
            [Document(content="cats sleep all day", name="cats", meta_data={"kind": "pets"})],
        )
    for query in QUERIES:
        assert sorted(names(pair["a2m"], query, 6)) == sorted(names(pair["lance"], query, 6))
    assert sorted(names(pair["a2m"], "cats", 6)) == ["cats", "tea"]  # the upsert replaced dogs
