"""CJK as docs/postgres.md and docs/ranking.md state it for both stores: stored text is
indexed as every character and every overlapping bigram, so ``東京タワー`` is found by the
bigram ``東京`` and by the lone character ``京``; a query of several characters asks for
its bigrams."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from a2m_server import A2MServer
from a2m_server.text import index_text, query_terms


@pytest.fixture
def connection(store_backend: str) -> Iterator[Any]:
    with A2MServer() as server:
        yield server.connect()


def test_the_analyser_indexes_characters_and_bigrams() -> None:
    characters = ["東", "京", "タ", "ワ", "ー"]
    bigrams = ["東京", "京タ", "タワ", "ワー"]
    assert sorted(index_text("東京タワー").split()) == sorted(characters + bigrams)
    assert query_terms("東京") == ["東京"]
    assert query_terms("京") == ["京"]


@pytest.mark.parametrize("query", ["東京", "京", "タワー", "京タ"])
def test_a_bigram_or_a_lone_character_finds_the_text(connection: Any, query: str) -> None:
    ids = connection.call(
        "memory/remember",
        {"records": [{"content": "東京タワー"}, {"content": "大阪城"}]},
    )["ids"]
    found = connection.call("memory/recall", {"query": query, "limit": 5})["records"]
    assert [record["id"] for record in found] == [ids[0]]
