"""Records per tier from the counts PostgreSQL's triggers keep (schema v2), as the SQLite
store reads its own: exact, and in time independent of the store's size.

The triggers run in the writing transaction, under the store's write lock, so the counts
are exact with any number of server processes writing; a reader's snapshot sees counts
and records as of the same commit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._agents import pg_agent, pg_framework
from ._pg_filter import Sql, add_scope
from .base import AgentCount, RecordFilter, Scope

__all__ = ["agent_counts", "answers", "kept_counts"]

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


def agent_counts(rows: Rows, scope: Scope | None, now: int) -> list[AgentCount]:
    """Records per (agent, framework, tier) that ``scope`` may read, from the counts the
    triggers keep (schema v5), less those expired but not yet purged, in one round trip."""
    kept = Sql()
    if scope is not None:
        add_scope(kept, scope, owner_column="c.owner", tier_column="c.tier")
    expired = Sql()
    expired.add("c.expires_at IS NOT NULL AND c.expires_at <= %s", now)
    expired.clauses += kept.clauses
    expired.params += kept.params
    counts: dict[tuple[str, str, str | None], int] = {}
    for agent, framework, tier, n in rows(
        "SELECT c.agent, c.framework, c.tier, sum(c.n) FROM agent_counts AS c "
        f"WHERE {kept.text()} GROUP BY c.agent, c.framework, c.tier_key, c.tier "
        "UNION ALL "
        f"SELECT {pg_agent('c')}, {pg_framework('c')}, c.tier, -count(*) FROM records AS c "
        f"WHERE {expired.text()} GROUP BY 1, 2, 3",
        [*kept.params, *expired.params],
    ):
        place = (agent, framework, tier)
        counts[place] = counts.get(place, 0) + int(n)
    return [AgentCount(*place, n) for place, n in counts.items() if n > 0]
