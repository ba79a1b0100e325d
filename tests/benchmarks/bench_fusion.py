"""The hybrid-ranking table of issue 31, where ``uv run nox -s bench`` finds it: lexical,
vector, RRF (k = 60) and the server's hybrid — R@1 / R@5 / MRR on both halves of the
memory-QA set with the offline ``wordllama`` embedder — then the embedder's cost in
writes/s and recall p50. Prints figures; not a pass/fail test.

    uv run python tests/benchmarks/bench_fusion.py [--tune] [--speed 10000,100000]

The work is ``recall_quality/fusion.py``'s, beside the data set and the other quality
scripts; this file only runs it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "recall_quality"))

from fusion import main

if __name__ == "__main__":
    main()
