"""Ranking (§5): lexical relevance and vector similarity blended with salience and recency
into one score in [0, 1], in descending order.

Relevance decides; salience and recency only reorder records of similar relevance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Candidate", "blend", "by_recency", "recency_score"]

# Weights of the blend: relevance carries 80% of the score, recency and salience 10% each.
_RELEVANCE_SHARE = 0.8
_RECENCY_SHARE = 0.1
_SALIENCE_SHARE = 0.1
# When a query has both words and a vector, each counts half.
_LEXICAL_WEIGHT = 0.5
# Recency of records in tiers without a half-life, and of empty-query results.
DEFAULT_HALF_LIFE_S = 30 * 86400.0


@dataclass
class Candidate:
    """One record up for ranking, with whatever relevance signals it has."""

    id: str
    created_at: int
    salience: float
    tier: str | None
    lexical: float | None = None
    """Raw lexical relevance (positive, larger is better)."""
    similarity: float | None = None
    """Vector similarity already in [0, 1]."""


def recency_score(created_at: int, now: int, half_life_s: float | None) -> float:
    """1 for a record written now, halving every ``half_life_s`` seconds."""
    age_s = max(now - created_at, 0) / 1000.0
    half_life = half_life_s or DEFAULT_HALF_LIFE_S
    return math.pow(0.5, age_s / half_life)


def _salience_score(salience: float) -> float:
    return 1.0 - math.exp(-max(salience, 0.0))


def blend(
    candidates: Sequence[Candidate],
    *,
    now: int,
    half_lives: Mapping[str | None, float | None],
    use_lexical: bool,
    use_vector: bool,
) -> list[tuple[Candidate, float]]:
    """Score every candidate and sort best first (ties: newer first)."""
    best_lexical = max((c.lexical or 0.0 for c in candidates), default=0.0)

    def relevance(c: Candidate) -> float:
        lexical = (c.lexical or 0.0) / best_lexical if best_lexical > 0 else 0.0
        vector = c.similarity or 0.0
        if use_lexical and use_vector:
            return _LEXICAL_WEIGHT * lexical + (1 - _LEXICAL_WEIGHT) * vector
        return lexical if use_lexical else vector

    def score(c: Candidate) -> float:
        recency = recency_score(c.created_at, now, half_lives.get(c.tier))
        modifier = (
            _RELEVANCE_SHARE
            + _RECENCY_SHARE * recency
            + _SALIENCE_SHARE * _salience_score(c.salience)
        )
        return min(max(relevance(c) * modifier, 0.0), 1.0)

    scored = [(c, round(score(c), 6)) for c in candidates]
    scored.sort(key=_order_key)
    return scored


def _order_key(item: tuple[Candidate, float]) -> tuple[float, int, str]:
    candidate, score = item
    return (-score, -candidate.created_at, candidate.id)


def by_recency(created_at: Sequence[int], now: int) -> list[float]:
    """Scores for an empty query: pure recency, so newest-first order is also
    descending-score order."""
    return [round(recency_score(c, now, DEFAULT_HALF_LIFE_S), 6) for c in created_at]
