"""Vector search on PostgreSQL (issue 15): exact by default; through HNSW with
``vector_index="hnsw"`` / ``--vector-index hnsw``, which finds what the exact scan finds
on well-separated data and still fills a filtered page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import psycopg
import pytest

from a2m_server import A2MServer
from a2m_server.store import _pg_read, open_store
from store_backends import PostgresServer


def _clustered(count: int, width: int = 16, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((8, width)) * 5
    return centres[rng.integers(0, 8, count)] + rng.standard_normal((count, width)) * 0.3


def _fill(url: str, vectors: np.ndarray) -> None:
    with A2MServer(db=url) as server:
        peer = server.connect()
        records = [
            {
                "content": f"v{i}",
                "embedding": v.tolist(),
                "metadata": {"half": i % 2, "tenth": i % 10},
            }
            for i, v in enumerate(vectors)
        ]
        # Two owners, so that an owner's scope admits a small or a large part of it.
        peer.call("memory/remember", {"records": records[:100], "owner": "few"})
        peer.call("memory/remember", {"records": records[100:], "owner": "many"})


def _nearest(server: A2MServer, probe: np.ndarray, **params: object) -> list[str]:
    found = server.connect().call(
        "memory/recall", {"embedding": probe.tolist(), "limit": 10, **params}
    )
    return [r["content"] for r in found["records"]]


def test_hnsw_finds_what_the_exact_scan_finds_and_fills_filtered_pages(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Filters admitting more than this many rows search the graph, fewer are ranked
    # exactly: lowered so that both happen over a small store.
    monkeypatch.setattr(_pg_read, "_PREFILTER_ROWS", 100)
    url = postgres_server.fresh_url()
    vectors = _clustered(600)
    _fill(url, vectors)
    probes = _clustered(20, seed=11)
    with A2MServer(db=url) as exact, A2MServer(db=url, vector_index="hnsw") as hnsw:
        plain = url.replace("schema=", "options=-csearch_path%3D")
        with psycopg.connect(plain) as conn:
            indexes = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'record_vectors_hnsw'"
            ).fetchall()
        assert indexes
        assert "hnsw" in indexes[0][0]
        agree = 0
        for probe in probes:
            truth = _nearest(exact, probe)
            agree += len(set(truth) & set(_nearest(hnsw, probe)))
            half = _nearest(hnsw, probe, where={"half": 1})
            assert len(half) == 10  # a filter does not leave the page short
            assert all(int(content[1:]) % 2 == 1 for content in half)
            # A filter admitting few rows ranks them exactly: what the exact scan finds.
            tenth = {"where": {"tenth": 3}}
            assert _nearest(hnsw, probe, **tenth) == _nearest(exact, probe, **tenth)
            # So does a small owner's scope; a large one's is searched through the
            # graph, with a beam widened for the share of the store it admits.
            assert _nearest(hnsw, probe, owner="few") == _nearest(exact, probe, owner="few")
            many = _nearest(hnsw, probe, owner="many")
            assert len(many) == 10
            assert all(int(content[1:]) >= 100 for content in many)
            agree += len(set(many) & set(_nearest(exact, probe, owner="many")))
    assert agree / (20 * len(probes)) >= 0.95


def test_the_exact_scan_ranks_as_sqlite_does(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    vectors = _clustered(300, seed=5)
    url = postgres_server.fresh_url()
    _fill(url, vectors)
    sqlite_store = open_store(str(tmp_path / "same.db"))
    try:
        with A2MServer(store=sqlite_store) as sqlite:
            peer = sqlite.connect()
            records = [
                {"content": f"v{i}", "embedding": v.tolist(), "metadata": {"half": i % 2}}
                for i, v in enumerate(vectors)
            ]
            peer.call("memory/remember", {"records": records})
            with A2MServer(db=url) as postgres:
                for probe in _clustered(10, seed=9):
                    # Both compare float32 copies; only near-ties may swap places.
                    ours, theirs = _nearest(postgres, probe), _nearest(sqlite, probe)
                    assert ours[0] == theirs[0]
                    assert len(set(ours) & set(theirs)) >= 9
    finally:
        sqlite_store.close()


def test_hnsw_on_sqlite_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "a2m_server",
            "stdio",
            "--db",
            str(tmp_path / "x.db"),
            "--vector-index",
            "hnsw",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--vector-index hnsw needs a PostgreSQL store" in done.stderr


@pytest.fixture(autouse=True)
def _postgres_only(store_backend: str) -> None:
    assert store_backend == "postgres"
