"""Ranking (§5): lexical relevance and vector similarity blended with salience and recency
into one score in [0, 1], in descending order.

Relevance decides; salience and recency only reorder records of similar relevance:

    score = relevance * (RELEVANCE_SHARE + RECENCY_SHARE * recency + SALIENCE_SHARE * s)

where ``recency`` halves every tier half-life and ``s = 1 - exp(-salience)``. Relevance
is BM25 over the best BM25 among the candidates for a text query, the vector similarity
for a vector query, and for both at once a weighted sum of the two, each normalised over
the candidates (the hybrid):

    relevance = LEXICAL_WEIGHT * bm25 / best bm25
              + (1 - LEXICAL_WEIGHT) * (similarity - worst) / (best - worst)

a record absent from one list adding nothing for it. Unlike reciprocal rank fusion,
which measured below both of its parts on the memory-QA set, it keeps how far apart the
scores are, not only their order; the weight was learned on the set's tuning half
(``tests/benchmarks/recall_quality/fusion.py``, ``docs/ranking.md``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

__all__ = ["Candidate", "Ranked", "asked_first", "blend", "by_recency", "recency_score"]

# Weights of the blend, tuned on the tuning half of the memory-QA set
# (tests/benchmarks/recall_quality/tune.py).
RELEVANCE_SHARE = 0.9
RECENCY_SHARE = 0.05
SALIENCE_SHARE = 0.05
# The hybrid's share of lexical relevance (the rest is vector similarity), learned on the
# tuning half of the memory-QA set with the wordllama embedder
# (tests/benchmarks/recall_quality/fusion.py).
LEXICAL_WEIGHT = 0.7
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
    guessed: bool = False
    """Found only through the typo correction of a query word: ranked after every
    candidate found by what was asked."""


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
    # Guesses (typo corrections) rank after the rest and never set the scale of theirs.
    asked = [c for c in candidates if not c.guessed] or candidates
    best_lexical = max((c.lexical or 0.0 for c in asked), default=0.0)
    similarities = [c.similarity for c in candidates if c.similarity is not None]
    if use_lexical and use_vector:
        # A query whose words match nothing ranks as a vector query, and one the vectors
        # cannot answer (nothing stored has one) as a text query.
        use_lexical, use_vector = best_lexical > 0 or not similarities, bool(similarities)
    fused = use_lexical and use_vector
    worst_similarity = min(similarities, default=0.0)
    similarity_range = max(similarities, default=0.0) - worst_similarity

    def relevance(c: Candidate) -> float:
        if fused:
            lexical = (c.lexical or 0.0) / best_lexical
            vector = 0.0
            if c.similarity is not None:
                # all equally near: all as near as the nearest
                vector = (
                    (c.similarity - worst_similarity) / similarity_range
                    if similarity_range > 0
                    else 1.0
                )
            return LEXICAL_WEIGHT * lexical + (1.0 - LEXICAL_WEIGHT) * vector
        if use_lexical:
            return (c.lexical or 0.0) / best_lexical if best_lexical > 0 else 0.0
        return c.similarity or 0.0

    relevance_share, recency_share, salience_share = (
        RELEVANCE_SHARE,
        RECENCY_SHARE,
        SALIENCE_SHARE,
    )

    def score(c: Candidate) -> float:
        recency = recency_score(c.created_at, now, half_lives.get(c.tier))
        modifier = (
            relevance_share + recency_share * recency + salience_share * _salience_score(c.salience)
        )
        return min(max(relevance(c) * modifier, 0.0), 1.0)

    ordered = asked_first([(c, round(score(c), 6), c.guessed) for c in candidates])
    return [(c, s) for c, s, _ in ordered]


class Ranked(Protocol):
    """What :func:`asked_first` orders by: a candidate or a stored record."""

    @property
    def id(self) -> str: ...

    @property
    def created_at(self) -> int: ...


_R = TypeVar("_R", bound=Ranked)


def asked_first(scored: Iterable[tuple[_R, float, bool]]) -> list[tuple[_R, float, bool]]:
    """(item, score, guessed) triples best first: what the query's words found as given
    before a typo's guesses, then by score, newer first, then by id. A guess scores no
    higher than the last item found by what was asked, so scores still fall throughout."""
    ordered = sorted(scored, key=lambda t: (t[2], -t[1], -t[0].created_at, t[0].id))
    floor = min((s for _, s, guessed in ordered if not guessed), default=None)
    if floor is None:
        return ordered
    return [(item, min(s, floor) if guessed else s, guessed) for item, s, guessed in ordered]


def by_recency(created_at: Sequence[int], now: int) -> list[float]:
    """Scores for an empty query: pure recency, so newest-first order is also
    descending-score order."""
    return [round(recency_score(c, now, DEFAULT_HALF_LIFE_S), 6) for c in created_at]
