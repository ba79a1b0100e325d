"""The SQLite store's vector search under a filter, checked against brute force: a filter
admitting few rows ranks exactly those; one admitting many over-fetches from the whole
index, fetching more while too few winners pass, and scans the allowed rows exactly when
even that fails. Every path must return the same records as ranking them all by hand."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from a2m import A2MClient
from a2m_server.server import A2MServer
from a2m_server.store.base import RecordFilter

DIMS = 16


def _vectors(count: int, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.uniform(-1, 1) for _ in range(DIMS)] for _ in range(count)]


def _expected(
    vectors: dict[str, list[float]], query: list[float], limit: int
) -> list[tuple[str, float]]:
    q = np.asarray(query)
    scored = []
    for key, vector in vectors.items():
        v = np.asarray(vector)
        scored.append((key, (float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q))) + 1) / 2))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]


def _nearest(server: A2MServer, where: RecordFilter, query: list[float], limit: int) -> Any:
    with server.store.reading() as reader:
        hits = reader.nearest(where, query, limit)
        records = {r.id: r.key for r in reader.get([record_id for record_id, _ in hits])}
    return [(records[record_id], score) for record_id, score in hits]


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [key for key, _ in got] == [key for key, _ in want]
    # The index ranks in float32: scores agree to about 1e-7.
    for (_, score), (_, wanted) in zip(got, want, strict=True):
        assert score == pytest.approx(wanted, abs=1e-6)


@pytest.fixture(scope="module")
def filled() -> Any:
    """3,000 records: 10 namespaces of 20 (``small/…``), and 2,800 beneath ``big/`` with
    one in 100 tagged ``rare``."""
    vectors = _vectors(3000, seed=7)
    keys = [f"small/{i % 10}/item-{i}" for i in range(200)] + [
        f"big/item-{i}" for i in range(200, 3000)
    ]
    with A2MServer() as server, A2MClient.in_process(server) as client:
        records = [
            {
                "content": f"item {i}",
                "key": key,
                "embedding": vectors[i],
                "metadata": {"rare": i % 100 == 0},
            }
            for i, key in enumerate(keys)
        ]
        for start in range(0, len(records), 500):
            client.remember(records[start : start + 500])
        yield server, dict(zip(keys, vectors, strict=True))


def test_a_small_filter_ranks_exactly_its_rows(filled: Any) -> None:
    server, vectors = filled
    for seed in range(5):
        [query] = _vectors(1, seed=100 + seed)
        space = {k: v for k, v in vectors.items() if k.startswith(f"small/{seed}/")}
        got = _nearest(server, RecordFilter(key_prefix=f"small/{seed}"), query, 50)
        assert len(got) == len(space) == 20
        _same(got, _expected(space, query, 50))


def test_no_filter_ranks_the_whole_index(filled: Any) -> None:
    server, vectors = filled
    [query] = _vectors(1, seed=200)
    _same(_nearest(server, RecordFilter(), query, 25), _expected(vectors, query, 25))


def test_a_wide_filter_over_fetches_from_the_whole_index(filled: Any) -> None:
    server, vectors = filled
    [query] = _vectors(1, seed=300)
    space = {k: v for k, v in vectors.items() if k.startswith("big/")}
    _same(_nearest(server, RecordFilter(key_prefix="big"), query, 30), _expected(space, query, 30))


def test_a_wide_filter_with_rare_winners_still_finds_them_all(filled: Any) -> None:
    server, vectors = filled
    rare = {k: v for k, v in vectors.items() if int(k.rsplit("-", 1)[1]) % 100 == 0}
    assert len(rare) == 30
    for seed in range(3):
        [query] = _vectors(1, seed=400 + seed)
        for limit in (5, 30, 40):
            where = RecordFilter(where={"rare": True})
            _same(_nearest(server, where, query, limit), _expected(rare, query, limit))


@pytest.mark.parametrize("near", [500, 4200])
def test_a_wide_filter_whose_rows_rank_last_still_finds_them(near: int) -> None:
    """2,100 allowed rows (past the pre-filter), every one ranked below ``near`` refused
    ones: 500 make the fetch grow before enough pass, 4,200 outlast its ceiling and force
    the exact scan of the allowed rows."""
    rng = random.Random(near)

    def around(sign: float) -> list[float]:
        return [sign] + [rng.uniform(-0.3, 0.3) for _ in range(DIMS - 1)]

    allowed = {f"far/item-{i}": around(-1.0) for i in range(2100)}
    refused = {f"near/item-{i}": around(1.0) for i in range(near)}
    query = [1.0] + [0.0] * (DIMS - 1)
    with A2MServer() as server, A2MClient.in_process(server) as client:
        records = [
            {"content": key, "key": key, "embedding": vector}
            for key, vector in {**allowed, **refused}.items()
        ]
        for start in range(0, len(records), 1000):
            client.remember(records[start : start + 1000])
        for limit in (3, 40):
            got = _nearest(server, RecordFilter(key_prefix="far"), query, limit)
            _same(got, _expected(allowed, query, limit))
