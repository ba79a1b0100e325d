"""Recall quality on the memory-QA set (``dataset.json``): R@1, R@5 and MRR@10, side by side
for the ranking of an earlier release, exact BM25 over SQLite FTS5 (default and porter
tokenizers) and this server's ranking; plus each one's recall p50/p99.

    uv run python tests/benchmarks/recall_quality/evaluate.py [--split heldout|tune|all]
                                                             [--baseline-ref 6d4fa91]

The earlier release runs from ``git archive`` of ``--baseline-ref`` in a subprocess, so
its figures come from its own code on the same data in the same run. Records are
written through ``memory/remember`` into the ``episodic`` tier with their salience; their
ages (0-365 days) are then set in the file, so recency plays its part as in a store that
has lived a year."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASET = HERE / "dataset.json"
REPO = HERE.parents[2]
TOP_K = 10
BATCH = 500


def load(split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    questions = [q for q in data["questions"] if split == "all" or q["split"] == split]
    return data["records"], questions


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


def scores(
    questions: Sequence[dict[str, Any]], ranked: Sequence[Sequence[str]]
) -> dict[str, float]:
    r1 = r5 = rr = 0.0
    for question, ids in zip(questions, ranked, strict=True):
        top = list(ids[:TOP_K])
        if top[:1] == [question["fact"]]:
            r1 += 1
        if question["fact"] in top[:5]:
            r5 += 1
        if question["fact"] in top:
            rr += 1 / (top.index(question["fact"]) + 1)
    n = len(questions) or 1
    return {"R@1": r1 / n, "R@5": r5 / n, "MRR": rr / n}


# --- this server (or an earlier release of it, in a subprocess) --------------------------


def server_rankings(
    records: Sequence[dict[str, Any]],
    questions: Sequence[dict[str, Any]],
    workdir: Path,
    config: Any = None,
) -> tuple[list[list[str]], list[float]]:
    """Ranked record ids per question and per-call latencies (ms) from ``a2m_server`` as
    importable here, through JSON text in and out (``Connection.handle``)."""
    from a2m_server import A2MServer

    db = workdir / f"server-{os.getpid()}-{time.monotonic_ns()}.db"
    server = A2MServer(config, db=db) if config is not None else A2MServer(db=db)
    peer = server.connect()
    for offset in range(0, len(records), BATCH):
        chunk = [
            {"id": r["id"], "content": r["content"], "tier": "episodic", "salience": r["salience"]}
            for r in records[offset : offset + BATCH]
        ]
        answer = peer.handle(_rpc("memory/remember", {"records": chunk}))
        assert answer is not None
        assert '"error"' not in answer[:40], answer
    server.close()
    _age(db, records)
    server = A2MServer(config, db=db) if config is not None else A2MServer(db=db)
    peer = server.connect()
    ranked, latencies = [], []
    try:
        for question in questions:
            body = _rpc("memory/recall", {"query": question["question"], "limit": TOP_K})
            started = time.perf_counter()
            answer = peer.handle(body)
            latencies.append((time.perf_counter() - started) * 1e3)
            assert answer is not None
            result = json.loads(answer)["result"]["records"]
            ranked.append([r["id"] for r in result])
            scored = [r["score"] for r in result]
            assert all(0 <= s <= 1 for s in scored)
            assert scored == sorted(scored, reverse=True)
    finally:
        server.close()
    return ranked, latencies


def _rpc(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def _age(db: Path, records: Sequence[dict[str, Any]]) -> None:
    """Give every record its age: the store as it would be after a year of use."""
    now = time.time_ns() // 1_000_000
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "UPDATE records SET created_at = ?, updated_at = ? WHERE id = ?",
            [
                (
                    now - int(r["age_days"] * 86_400_000),
                    now - int(r["age_days"] * 86_400_000),
                    r["id"],
                )
                for r in records
            ],
        )
    conn.close()


def baseline_rankings(
    ref: str, split: str, workdir: Path
) -> tuple[list[list[str]], list[float]] | None:
    """The same, from the release at git ``ref``; None when it cannot be checked out."""
    tree = workdir / f"ref-{ref}"
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "packages/server/src", "packages/types/src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        print(f"(no baseline: git archive {ref} failed: {archive.stderr.decode().strip()})")
        return None
    tree.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    out = workdir / f"ref-{ref}.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree / "packages/server/src"), str(tree / "packages/types/src")]
    )
    subprocess.run(
        [sys.executable, __file__, "--worker", str(out), "--split", split],
        env=env,
        check=True,
    )
    result = json.loads(out.read_text())
    return result["ranked"], result["latencies"]


# --- exact BM25 over FTS5, straight from sqlite3 ------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)


def bm25_rankings(
    records: Sequence[dict[str, Any]], questions: Sequence[dict[str, Any]], tokenizer: str
) -> tuple[list[list[str]], list[float]]:
    """Exact BM25 over every match: the question's words OR-ed, FTS5's own tokenizer."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        f"CREATE VIRTUAL TABLE docs USING fts5 (id UNINDEXED, body, tokenize = '{tokenizer}')"
    )
    conn.executemany(
        "INSERT INTO docs (id, body) VALUES (?, ?)", [(r["id"], r["content"]) for r in records]
    )
    ranked, latencies = [], []
    for question in questions:
        words = _WORD.findall(question["question"])
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or '""'
        started = time.perf_counter()
        rows = conn.execute(
            "SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, TOP_K)
        ).fetchall()
        latencies.append((time.perf_counter() - started) * 1e3)
        ranked.append([row[0] for row in rows])
    conn.close()
    return ranked, latencies


# --- the table ----------------------------------------------------------------------------


def breakdown(questions: Sequence[dict[str, Any]], ranked: Sequence[Sequence[str]]) -> str:
    """R@5 per question kind and language group, to see where a ranking wins or loses."""
    groups: dict[str, list[int]] = {}
    for question, ids in zip(questions, ranked, strict=True):
        group = question["kind"] if question["lang"] == "en" else question["lang"]
        groups.setdefault(group, []).append(question["fact"] in list(ids[:5]))
    return "  ".join(f"{g} {sum(v) / len(v):.2f}" for g, v in sorted(groups.items()))


def report(
    questions: Sequence[dict[str, Any]],
    rows: Sequence[tuple[str, list[list[str]], list[float]]],
) -> None:
    print(f"\n{'ranking':<34} {'R@1':>6} {'R@5':>6} {'MRR':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for label, ranked, latencies in rows:
        s = scores(questions, ranked)
        print(
            f"{label:<34} {s['R@1']:6.3f} {s['R@5']:6.3f} {s['MRR']:6.3f} "
            f"{statistics.median(latencies):8.3f} {percentile(latencies, 0.99):8.3f}"
        )
    print("\nR@5 by question kind (English) and language:")
    for label, ranked, _ in rows:
        print(f"  {label:<32} {breakdown(questions, ranked)}")


def quality_rows(
    split: str, baseline_ref: str | None, workdir: Path
) -> tuple[list[dict[str, Any]], list[tuple[str, list[list[str]], list[float]]]]:
    records, questions = load(split)
    rows: list[tuple[str, list[list[str]], list[float]]] = []
    if baseline_ref:
        baseline = baseline_rankings(baseline_ref, split, workdir)
        if baseline is not None:
            rows.append((f"release {baseline_ref} (before)", *baseline))
    rows.append(("exact BM25, unicode61", *bm25_rankings(records, questions, "unicode61")))
    rows.append(
        (
            "exact BM25, porter",
            *bm25_rankings(records, questions, "porter unicode61 remove_diacritics 2"),
        )
    )
    rows.append(("this server", *server_rankings(records, questions, workdir)))
    return questions, rows


def main(argv: Sequence[str] | None = None, *, extra: Callable[[], None] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="heldout", choices=["heldout", "tune", "all"])
    parser.add_argument("--baseline-ref", default="6d4fa91")
    parser.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="a2m-recall-quality-") as tmp:
        _run(args, Path(tmp))


def _run(args: argparse.Namespace, workdir: Path) -> None:
    if args.worker:
        records, questions = load(args.split)
        ranked, latencies = server_rankings(records, questions, workdir)
        Path(args.worker).write_text(json.dumps({"ranked": ranked, "latencies": latencies}))
        return
    records, questions = load(args.split)
    print(
        f"memory-QA set: {sum(1 for r in records if r['id'].startswith('fact'))} facts, "
        f"{sum(1 for r in records if not r['id'].startswith('fact'))} distractors; "
        f"{len(questions)} questions in the {args.split} split"
    )
    report(*quality_rows(args.split, args.baseline_ref, workdir))


if __name__ == "__main__":
    main()
