"""Records per tier from the counts PostgreSQL's triggers keep (schema v2), as the SQLite
store reads its own: exact, and in time independent of the store's size.

The triggers run in the writing transaction, under the store's write lock, so the counts
are exact with any number of server processes writing; a reader's snapshot sees counts
and records as of the same commit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._pg_filter import Sql, add_scope
from .base import RecordFilter

__all__ = ["answers", "kept_counts"]

Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

_COUNTED_FILTER = RecordFilter()


def answers(where: RecordFilter) -> bool:
    """Whether ``where`` conditions on nothing but one tier and an owner scope, which the
    kept counts answer."""
    return where.with_(tier=None, scope=None) == _COUNTED_FILTER


def kept_counts(rows: Rows, where: RecordFilter, now: int) -> dict[str, int]:
    """Records per tier under ``where`` (see :func:`answers`), less those expired but not
    yet purged (found through the expiry index), in one round trip."""
    kept = Sql()
    if where.tier is not None:
        kept.add("r.tier = %s", where.tier)
    if where.scope is not None:
        add_scope(kept, where.scope, owner_column="r.owner", tier_column="r.tier")
    expired = Sql()
    expired.add("r.expires_at IS NOT NULL AND r.expires_at <= %s AND r.tier IS NOT NULL", now)
    expired.clauses += kept.clauses
    expired.params += kept.params
    counts: dict[str, int] = {}
    for tier, n in rows(
        f"SELECT r.tier, sum(r.n) FROM record_counts AS r WHERE {kept.text()} GROUP BY r.tier "
        "UNION ALL "
        f"SELECT r.tier, -count(*) FROM records AS r WHERE {expired.text()} GROUP BY r.tier",
        [*kept.params, *expired.params],
    ):
        counts[tier] = counts.get(tier, 0) + int(n)
    return {tier: n for tier, n in counts.items() if n > 0}
