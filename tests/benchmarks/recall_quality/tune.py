"""Tunes the lexical ranking's knobs on the tuning half of the memory-QA set (never on the
held-out half): typo correction, and the share of the
score that relevance keeps against recency and salience. Prints one line per setting.

    uv run python tests/benchmarks/recall_quality/tune.py"""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import load, scores, server_rankings

from a2m_server import ranking
from a2m_server.store import _fts

TYPO_MIN = [4, 5, 99]
RELEVANCE_SHARE = [0.6, 0.8, 0.9, 1.0]


def main() -> None:
    records, questions = load("tune")
    with tempfile.TemporaryDirectory(prefix="a2m-tune-") as tmp:
        grid(records, questions, Path(tmp))


def grid(
    records: list[dict[str, object]], questions: list[dict[str, object]], workdir: Path
) -> None:
    print(f"{'typo_min':>8} {'relevance':>9} {'R@1':>6} {'R@5':>6} {'MRR':>6}")
    for typo_min, share in itertools.product(TYPO_MIN, RELEVANCE_SHARE):
        _fts.TYPO_MIN = typo_min
        ranking.RELEVANCE_SHARE = share
        ranking.RECENCY_SHARE = ranking.SALIENCE_SHARE = (1 - share) / 2
        ranked, _ = server_rankings(records, questions, workdir)
        s = scores(questions, ranked)
        print(
            f"{typo_min:>8} {share:>9.2f} {s['R@1']:6.3f} {s['R@5']:6.3f} {s['MRR']:6.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
