"""Hybrid ranking on the memory-QA set with the server-side ``wordllama`` embedder: lexical
only, vector only, reciprocal rank fusion (k = 60, the ranking before this one) and the
server's hybrid, R@1 / R@5 / MRR on both halves; then what the embedder costs in write
throughput and recall latency.

    uv run python tests/benchmarks/recall_quality/fusion.py [--tune] [--speed 10000,100000]

Every ranking comes from the same store, written through ``memory/remember`` with no
vectors (the server embeds them), aged as ``evaluate.py`` ages it:

- lexical: recall by ``query`` on the same file opened without an embedder;
- vector: recall by the question's ``embedding`` alone (the same model);
- hybrid: recall by ``query`` with the embedder on (the server embeds the question);
- RRF: the hybrid's own candidates (captured from ``ranking.blend``) fused by reciprocal
  rank, through the same blend of salience and recency.

``--tune`` prints the hybrid's lexical weight against R@1 / R@5 / MRR on the tuning half
(the weight is chosen there, never on the held-out half)."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import BATCH, TOP_K, _age, load, scores

from a2m_server import A2MServer, ServerConfig, ranking
from a2m_server.embedders import load_embedder

Blend = Callable[..., list[tuple[ranking.Candidate, float]]]
Captured = list[tuple[list[ranking.Candidate], dict[str, Any]]]
EMBEDDER = "wordllama"
WEIGHTS = [0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9]


def build_store(records: Sequence[dict[str, Any]], db: Path) -> float:
    """Write ``records`` with the embedder on (vectors made by the server); records/s."""
    config = ServerConfig(embedder=EMBEDDER)
    with A2MServer(config, db=db) as server:
        peer = server.connect()
        started = time.perf_counter()
        for offset in range(0, len(records), BATCH):
            chunk = [
                {
                    "id": r["id"],
                    "content": r["content"],
                    "tier": "episodic",
                    "salience": r["salience"],
                }
                for r in records[offset : offset + BATCH]
            ]
            peer.call("memory/remember", {"records": chunk})
        elapsed = time.perf_counter() - started
    _age(db, records)
    return len(records) / elapsed


@contextmanager
def capturing_blend() -> Iterator[Captured]:
    """Every call of ``ranking.blend`` inside, with its candidates and arguments."""
    captured: Captured = []
    original: Blend = ranking.blend

    def spy(candidates: Sequence[ranking.Candidate], **kwargs: Any) -> Any:
        captured.append((list(candidates), kwargs))
        return original(candidates, **kwargs)

    ranking.blend = spy
    try:
        yield captured
    finally:
        ranking.blend = original


def _ids(result: dict[str, Any]) -> list[str]:
    records = result["records"]
    values = [r["score"] for r in records]
    assert all(0 <= s <= 1 for s in values)
    assert values == sorted(values, reverse=True)
    return [r["id"] for r in records]


def rankings(
    questions: Sequence[dict[str, Any]], db: Path
) -> tuple[dict[str, list[list[str]]], Captured, dict[str, list[float]]]:
    """Ranked ids per question for lexical, vector and hybrid recall, the hybrid's
    captured candidates, and recall latencies (ms) with the embedder off and on."""
    embedder = load_embedder(EMBEDDER)
    vectors = embedder.embed([q["question"] for q in questions])
    out: dict[str, list[list[str]]] = {"lexical": [], "vector": [], "hybrid": []}
    latency: dict[str, list[float]] = {"off": [], "on": []}
    with A2MServer(db=db) as server:
        peer = server.connect()
        for question, vector in zip(questions, vectors, strict=True):
            started = time.perf_counter()
            found = peer.call("memory/recall", {"query": question["question"], "limit": TOP_K})
            latency["off"].append((time.perf_counter() - started) * 1e3)
            out["lexical"].append(_ids(found))
            found = peer.call("memory/recall", {"embedding": vector, "limit": TOP_K})
            out["vector"].append(_ids(found))
    with A2MServer(ServerConfig(embedder=EMBEDDER), db=db) as server:
        peer = server.connect()
        peer.call("memory/recall", {"query": "warm the model up", "limit": 1})
        with capturing_blend() as captured:
            for question in questions:
                started = time.perf_counter()
                found = peer.call("memory/recall", {"query": question["question"], "limit": TOP_K})
                latency["on"].append((time.perf_counter() - started) * 1e3)
                out["hybrid"].append(_ids(found))
    return out, captured, latency


def rrf_blend(candidates: Sequence[ranking.Candidate], **kwargs: Any) -> list[str]:
    """The fusion before this one: sum of 1 / (60 + rank) over both lists, over its
    largest value, times the same salience and recency blend."""
    ranks: dict[str, list[int]] = {}
    for signal in ("lexical", "similarity"):
        present = sorted(
            (c for c in candidates if getattr(c, signal) is not None),
            key=lambda c: -float(getattr(c, signal)),
        )
        previous, rank = None, 0
        for position, c in enumerate(present, start=1):
            if getattr(c, signal) != previous:
                rank, previous = position, getattr(c, signal)
            ranks.setdefault(c.id, []).append(rank)
    now, half_lives = kwargs["now"], kwargs["half_lives"]

    def score(c: ranking.Candidate) -> float:
        relevance = sum(1 / (60 + r) for r in ranks.get(c.id, [])) / (2 / 61)
        recency = ranking.recency_score(c.created_at, now, half_lives.get(c.tier))
        salience = 1 - math.exp(-max(c.salience, 0.0))
        return round(relevance * (0.9 + 0.05 * recency + 0.05 * salience), 6)

    ordered = sorted(candidates, key=lambda c: (-score(c), -c.created_at, c.id))
    return [c.id for c in ordered[:TOP_K]]


def weighted(
    candidates: Sequence[ranking.Candidate], weight: float, lexical_norm: str, vector_norm: str
) -> dict[str, float]:
    """A weighted sum of the two relevances under one normalisation each: lexical over
    its maximum (``max``) or min-max; similarity min-max, ``raw`` or as a cosine
    (``cos``: 2 * similarity - 1, cosine metric only)."""
    lexical = [c.lexical for c in candidates if c.lexical is not None]
    similar = [c.similarity for c in candidates if c.similarity is not None]
    low_l, high_l = min(lexical, default=0.0), max(lexical, default=1.0)
    low_v, high_v = min(similar, default=0.0), max(similar, default=1.0)
    out = {}
    for c in candidates:
        lex = vec = 0.0
        if c.lexical is not None:
            lex = (
                c.lexical / high_l
                if lexical_norm == "max"
                else (c.lexical - low_l) / ((high_l - low_l) or 1)
            )
        if c.similarity is not None:
            if vector_norm == "minmax":
                vec = (c.similarity - low_v) / ((high_v - low_v) or 1)
            elif vector_norm == "raw":
                vec = c.similarity
            else:
                vec = max(2 * c.similarity - 1, 0.0)
        out[c.id] = weight * lex + (1 - weight) * vec
    return out


def with_relevance(
    candidates: Sequence[ranking.Candidate], relevance: dict[str, float], **kwargs: Any
) -> list[str]:
    """Top ids by ``relevance`` times the server's salience and recency blend."""
    now, half_lives = kwargs["now"], kwargs["half_lives"]

    def score(c: ranking.Candidate) -> float:
        recency = ranking.recency_score(c.created_at, now, half_lives.get(c.tier))
        salience = 1 - math.exp(-max(c.salience, 0.0))
        return round(relevance[c.id] * (0.9 + 0.05 * recency + 0.05 * salience), 6)

    ordered = sorted(candidates, key=lambda c: (-score(c), -c.created_at, c.id))
    return [c.id for c in ordered[:TOP_K]]


def reblend(captured: Captured, weight: float) -> list[list[str]]:
    """The server's hybrid over the captured candidates with another lexical weight."""
    saved = ranking.LEXICAL_WEIGHT
    ranking.LEXICAL_WEIGHT = weight
    try:
        return [[c.id for c, _ in ranking.blend(cands, **kw)[:TOP_K]] for cands, kw in captured]
    finally:
        ranking.LEXICAL_WEIGHT = saved


def split_scores(
    questions: Sequence[dict[str, Any]], ranked: Sequence[list[str]], split: str
) -> dict[str, float]:
    pairs = [(q, r) for q, r in zip(questions, ranked, strict=True) if q["split"] == split]
    return scores([q for q, _ in pairs], [r for _, r in pairs])


def quality(workdir: Path, tune: bool) -> None:
    records, questions = load("all")
    db = workdir / "fusion.db"
    build_store(records, db)
    out, captured, _ = rankings(questions, db)
    out["RRF k=60 (before)"] = [rrf_blend(cands, **kw) for cands, kw in captured]
    print(f"\nmemory-QA set, {len(records)} records, embedder {EMBEDDER}")
    print(f"{'ranking':<20} {'half':<8} {'R@1':>6} {'R@5':>6} {'MRR':>6}")
    for label in ("lexical", "vector", "RRF k=60 (before)", "hybrid"):
        for split in ("tune", "heldout"):
            s = split_scores(questions, out[label], split)
            print(f"{label:<20} {split:<8} {s['R@1']:6.3f} {s['R@5']:6.3f} {s['MRR']:6.3f}")
    if tune:
        print("\nnormalisations (lexical, vector) and weights, tuning half: R@1 R@5 MRR")
        for lexical_norm in ("max", "minmax"):
            for vector_norm in ("minmax", "raw", "cos"):
                cells = []
                for weight in (0.3, 0.5, 0.7):
                    ranked = [
                        with_relevance(c, weighted(c, weight, lexical_norm, vector_norm), **kw)
                        for c, kw in captured
                    ]
                    s = split_scores(questions, ranked, "tune")
                    cells.append(f"{weight}: {s['R@1']:.3f} {s['R@5']:.3f} {s['MRR']:.3f}")
                print(f"{lexical_norm:<7} {vector_norm:<7} " + "   ".join(cells))
        print(f"\nlexical weight, tuning half (server: {ranking.LEXICAL_WEIGHT})")
        for weight in WEIGHTS:
            s = split_scores(questions, reblend(captured, weight), "tune")
            print(f"{weight:<8} {s['R@1']:6.3f} {s['R@5']:6.3f} {s['MRR']:6.3f}")


def speed(workdir: Path, size: int) -> None:
    """Records/s writing ``size`` records, and recall p50, with the embedder off and on."""
    records, questions = load("heldout")
    grown = [
        {
            **records[i % len(records)],
            "id": f"r{i}",
            "content": f"{records[i % len(records)]['content']} #{i}",
        }
        for i in range(size)
    ]
    print(f"\n{size} records: {'embedder':<10} {'records/s':>10} {'recall p50 ms':>14}")
    for label, config in (("off", ServerConfig()), ("on", ServerConfig(embedder=EMBEDDER))):
        db = workdir / f"speed-{size}-{label}.db"
        with A2MServer(config, db=db) as server:
            peer = server.connect()
            peer.call("memory/recall", {"query": "warm up", "limit": 1})
            started = time.perf_counter()
            for offset in range(0, size, BATCH):
                chunk = [
                    {"id": r["id"], "content": r["content"], "tier": "episodic"}
                    for r in grown[offset : offset + BATCH]
                ]
                peer.call("memory/remember", {"records": chunk})
            rate = size / (time.perf_counter() - started)
            latencies = []
            for question in questions:
                started = time.perf_counter()
                peer.call("memory/recall", {"query": question["question"], "limit": TOP_K})
                latencies.append((time.perf_counter() - started) * 1e3)
        print(
            f"{'':<{len(str(size)) + 10}} {label:<10} {rate:10.0f} {statistics.median(latencies):14.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="print the lexical weight grid")
    parser.add_argument(
        "--speed", default="10000", help="store sizes for the speed table ('' skips)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="a2m-fusion-") as tmp:
        quality(Path(tmp), args.tune)
        for size in [int(s) for s in args.speed.split(",") if s.strip()]:
            speed(Path(tmp), size)


if __name__ == "__main__":
    main()
