"""The hybrid ranking beats both of its parts (issue 31): on the held-out half of the
memory-QA set, with the server embedding records and questions with ``wordllama``, R@5
and MRR at least 3 points above the better of lexical-only and vector-only recall (the
weight was learned on the other half). The figures and the fusion before this one:
``tests/benchmarks/recall_quality/fusion.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks" / "recall_quality"))

from evaluate import load
from fusion import build_store, rankings, split_scores

MARGIN = 0.03


def test_hybrid_beats_lexical_and_vector_on_the_held_out_half(tmp_path: Path) -> None:
    records, questions = load("all")
    held_out = [q for q in questions if q["split"] == "heldout"]
    db = tmp_path / "qa.db"
    build_store(records, db)
    ranked, _, _ = rankings(held_out, db)
    got = {label: split_scores(held_out, ranked[label], "heldout") for label in ranked}
    for metric in ("R@5", "MRR"):
        best_part = max(got["lexical"][metric], got["vector"][metric])
        assert got["hybrid"][metric] >= best_part + MARGIN, (metric, got)
