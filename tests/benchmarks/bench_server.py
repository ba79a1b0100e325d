"""Server benchmark: remember throughput, recall latency at 1k/10k/100k records (lexical and
384-d vectors), and peak RSS. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_server.py [--sizes 1000,10000,100000]

Every call goes through the in-process binding (JSON text in, JSON text out), so the
figures include JSON-RPC parsing, validation, ranking and serialisation. Vector recall
is compared with a numpy brute-force scan of the same vectors, run in the same process."""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import percentile

from a2m_server import A2MServer, Connection

BATCH = 256
DIMENSIONS = 384
QUERIES = 300
TOP_K = 10


class Corpus:
    """Synthetic text with a Zipf word distribution, like natural language, seeded."""

    def __init__(self, seed: int = 7, vocabulary: int = 20_000) -> None:
        self.random = random.Random(seed)
        self.words = [self._word(i) for i in range(vocabulary)]
        weights = [1.0 / (rank + 1) for rank in range(vocabulary)]
        total = sum(weights)
        self.cumulative = list(np.cumsum([w / total for w in weights]))

    def _word(self, index: int) -> str:
        letters = "abcdefghijklmnopqrstuvwxyz"
        n, out = index + 1, []
        while n:
            n, r = divmod(n, 26)
            out.append(letters[r])
        return "".join(out) + "e"

    def words_like(self, count: int) -> list[str]:
        return self.random.choices(self.words, cum_weights=self.cumulative, k=count)

    def sentence(self) -> str:
        return " ".join(self.words_like(self.random.randint(10, 20)))

    def query(self) -> str:
        return " ".join(self.words_like(3))


def vectors(seed: int, count: int) -> np.ndarray:
    """``count`` deterministic 384-d vectors (the same seed gives the same vectors)."""
    return np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float64)


def rpc(connection: Connection, method: str, params: dict[str, object]) -> dict[str, object]:
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    answer = connection.handle(text)
    assert answer is not None
    response = json.loads(answer)
    if "error" in response:
        raise RuntimeError(f"{method}: {response['error']}")
    return response["result"]  # type: ignore[no-any-return]


def latency(call: Callable[[], object], runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), percentile(samples, 0.99)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fill(connection: Connection, corpus: Corpus, start: int, stop: int, seed: int | None) -> float:
    """Write records ``start``..``stop`` in batches of 256; returns seconds spent in calls."""
    spent = 0.0
    for offset in range(start, stop, BATCH):
        size = min(BATCH, stop - offset)
        records: list[dict[str, object]] = [
            {"content": corpus.sentence(), "tier": "episodic"} for _ in range(size)
        ]
        if seed is not None:
            for record, vector in zip(records, vectors(seed + offset, size), strict=True):
                record["embedding"] = vector.tolist()
        text = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "memory/remember", "params": {"records": records}}
        )
        started = time.perf_counter()
        answer = connection.handle(text)
        spent += time.perf_counter() - started
        assert answer is not None
        assert '"error"' not in answer[:40], answer[:300]
    return spent


def all_vectors(seed: int, total: int) -> Iterator[np.ndarray]:
    for offset in range(0, total, BATCH):
        yield vectors(seed + offset, min(BATCH, total - offset))


def numpy_scan(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The baseline: cosine top-k over a normalised float32 matrix, best first."""
    query = query / np.linalg.norm(query)
    scores = matrix @ query
    top = np.argpartition(-scores, TOP_K)[:TOP_K]
    return top[np.argsort(-scores[top])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    corpus = Corpus()
    workdir = Path(tempfile.mkdtemp(prefix="a2m-bench-"))
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, sqlite file store")

    print("\n== lexical (text only) ==")
    server = A2MServer(db=workdir / "lexical.db")
    connection = server.connect()
    written, spent = 0, 0.0
    for size in sizes:
        spent += fill(connection, corpus, written, size, seed=None)
        written = size
        queries = iter([corpus.query() for _ in range(QUERIES)])
        p50, p99 = latency(
            lambda q=queries: rpc(connection, "memory/recall", {"query": next(q), "limit": TOP_K}),
            QUERIES,
        )
        print(f"{size:>7} records: recall p50 {p50:6.2f} ms  p99 {p99:6.2f} ms")
    print(f"remember throughput: {written / spent:,.0f} records/s (batches of {BATCH})")
    server.close()

    print("\n== vectors (384-d, cosine) ==")
    seed = 1000
    server = A2MServer(db=workdir / "vectors.db")
    connection = server.connect()
    written, spent = 0, 0.0
    rng = np.random.default_rng(99)
    results: list[tuple[int, float, float]] = []
    for size in sizes:
        spent += fill(connection, corpus, written, size, seed=seed)
        written = size
        probes = rng.standard_normal((QUERIES, DIMENSIONS)).tolist()
        rpc(connection, "memory/recall", {"embedding": probes[0], "limit": TOP_K})  # load index
        vectors_in = iter(probes)
        p50, p99 = latency(
            lambda v=vectors_in: rpc(
                connection, "memory/recall", {"embedding": next(v), "limit": TOP_K}
            ),
            QUERIES,
        )
        results.append((size, p50, p99))
    print(f"remember throughput with vectors: {written / spent:,.0f} records/s")
    rss_after_store = peak_rss_mb()
    server.close()

    # The baseline: the same vectors as one normalised float32 matrix, scanned by numpy.
    for size, p50, p99 in results:
        matrix = np.concatenate(list(all_vectors(seed, size))).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        probes_in = iter(rng.standard_normal((QUERIES, DIMENSIONS)).astype(np.float32))
        base50, base99 = latency(lambda m=matrix, q=probes_in: numpy_scan(m, next(q)), QUERIES)
        print(
            f"{size:>7} records: recall p50 {p50:6.2f} ms  p99 {p99:6.2f} ms | numpy scan p50 "
            f"{base50:6.2f} ms  p99 {base99:6.2f} ms | ratio p50 {p50 / base50:4.2f}x"
        )
        del matrix
    print(f"\npeak RSS after the {sizes[-1]:,}-record vector store: {rss_after_store:,.0f} MB")


if __name__ == "__main__":
    main()
