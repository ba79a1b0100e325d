"""What the lexical posting budget costs in relevance: the top 10 of the budgeted ranking
against the exact ranking (every match scored by BM25), as overlap@10 and nDCG@10 with
the exact ranking as the reference, and what each costs in time.

    uv run python tests/benchmarks/bench_quality.py [--quality-sizes 20000,100000]

Three corpora: the HTTP benchmark's (12 words of a 70-word vocabulary, so every query
word is common), one with natural word frequencies (Zipf over 20,000 words, 10-20 words
a record, queries of three words drawn the same way), and the memory-QA set with its own
questions. Both rankings run in one process on the same file, one store each: the
default ``posting_budget`` and ``posting_budget=None``."""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from itertools import accumulate
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_client import p50, p99

from a2m_server import A2MServer
from a2m_server.store import SQLiteStore
from a2m_server.store._fts import POSTING_BUDGET

TOP_K = 10
QUERIES = 150
BATCH = 500


def workload_corpus(size: int) -> tuple[list[str], list[str]]:
    from bench_http import query_text, record_text

    rng = random.Random(size)
    records = [record_text(rng, i) for i in range(size)]
    return records, [query_text(rng) for _ in range(QUERIES)]


def zipf_corpus(size: int) -> tuple[list[str], list[str]]:
    rng = random.Random(17)
    letters = "bcdfghjklmnpqrstvwxz"
    vowels = "aeiou"
    words = []
    for i in range(20_000):
        n, word = i + 1, ""
        while n:
            n, r = divmod(n, 20)
            word += letters[r] + vowels[(i + len(word)) % 5]
        words.append(word)
    weights = list(accumulate(1.0 / (rank + 1) for rank in range(len(words))))

    def draw(count: int) -> list[str]:
        return rng.choices(words, cum_weights=weights, k=count)

    records = [" ".join(draw(rng.randint(10, 20))) for _ in range(size)]
    return records, [" ".join(draw(3)) for _ in range(QUERIES)]


def qa_corpus(_: int) -> tuple[list[str], list[str]]:
    data = json.loads((Path(__file__).parent / "recall_quality" / "dataset.json").read_text())
    return [r["content"] for r in data["records"]], [q["question"] for q in data["questions"]]


CORPORA: dict[str, Callable[[int], tuple[list[str], list[str]]]] = {
    "workload (70 words)": workload_corpus,
    "natural (Zipf, 20k words)": zipf_corpus,
    "memory-QA set": qa_corpus,
}


def rankings(
    db: Path, budget: int | None, queries: Sequence[str]
) -> tuple[list[list[tuple[str, float]]], list[float]]:
    store = SQLiteStore(db, posting_budget=budget)
    out, latencies = [], []
    with A2MServer(store=store, config=None) as server:
        peer = server.connect()
        for query in queries[:20]:  # warm the caches the same way for both
            peer.handle(_recall(query))
        for query in queries:
            body = _recall(query)
            started = time.perf_counter()
            answer = peer.handle(body)
            latencies.append((time.perf_counter() - started) * 1e3)
            assert answer is not None
            records = json.loads(answer)["result"]["records"]
            out.append([(r["id"], r["score"]) for r in records])
    store.close()
    return out, latencies


def _recall(query: str) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory/recall",
            "params": {"query": query, "limit": TOP_K},
        }
    )


def overlap(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]]) -> float:
    if not b:
        return 1.0
    return len({i for i, _ in a} & {i for i, _ in b}) / len(b)


def ndcg(ranked: Sequence[tuple[str, float]], reference: Sequence[tuple[str, float]]) -> float:
    """nDCG@10 with the exact ranking's scores as graded relevance."""
    gain = dict(reference)
    ideal = sum(s / math.log2(i + 2) for i, (_, s) in enumerate(reference))
    if ideal <= 0:
        return 1.0
    return sum(gain.get(d, 0.0) / math.log2(i + 2) for i, (d, _) in enumerate(ranked)) / ideal


def quality_section(args: argparse.Namespace, workdir: Path) -> None:
    sizes = [int(s) for s in args.quality_sizes.split(",")]
    print(f"\n== ranking quality: posting budget {POSTING_BUDGET} against exact BM25 ==")
    print(
        f"{'corpus':<27} {'records':>9} {'overlap@10':>10} {'min':>5} {'nDCG@10':>8} "
        f"{'budget p50/p99 ms':>18} {'exact p50/p99 ms':>17}"
    )
    for name, build in CORPORA.items():
        for size in sizes if name != "memory-QA set" else [0]:
            records, queries = build(size)
            db = workdir / f"quality-{abs(hash(name))}-{size}.db"
            with A2MServer(db=db) as server:
                peer = server.connect()
                for offset in range(0, len(records), BATCH):
                    chunk = [{"content": c} for c in records[offset : offset + BATCH]]
                    peer.call("memory/remember", {"records": chunk})
            budgeted, budget_ms = rankings(db, POSTING_BUDGET, queries)
            exact, exact_ms = rankings(db, None, queries)
            overlaps = [overlap(a, b) for a, b in zip(budgeted, exact, strict=True)]
            gains = [ndcg(a, b) for a, b in zip(budgeted, exact, strict=True)]
            print(
                f"{name:<27} {len(records):>9,} {statistics.mean(overlaps):10.3f} "
                f"{min(overlaps):5.2f} {statistics.mean(gains):8.3f} "
                f"{p50(budget_ms):8.2f}/{p99(budget_ms):<9.2f} {p50(exact_ms):7.2f}/{p99(exact_ms):.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality-sizes", default="20000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="a2m-bench-quality-") as tmp:
        quality_section(args, Path(tmp))


if __name__ == "__main__":
    main()
