"""Tier policy (§4.6, §4.7, §4.8, §4.10, §4.11): capacity and spilling, promotion, salience,
and sessions settling through the stack when they close.

Every move takes whole groups (§3.4): a record never leaves its group behind."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from a2m_server.config import TierConfig
from a2m_server.errors import ProtocolError
from a2m_server.store import RecordFilter, StoredRecord, StoreWriter
from a2m_types import (
    ConsolidateParams,
    PromoteParams,
    ReinforceParams,
    SessionCloseParams,
    SessionListParams,
)

from .context import CallContext
from .core import Protocol, now_ms
from .observations import is_observation, prune_observations, reweigh
from .wire import timestamp

__all__ = [
    "close_session",
    "consolidate",
    "enforce_capacity",
    "list_sessions",
    "promote",
    "reinforce",
]


@dataclass
class Reorganisation:
    """What one pass of tier policy did, in the counts of §4.7, and whose records each
    change touched, so that a caller is told only of records it can read (§6)."""

    moved: int = 0
    promoted: int = 0
    dropped: int = 0
    summarized: int = 0
    touched: set[str] = field(default_factory=set)
    changes: list[tuple[str, str | None, str, str | None, int]] = field(default_factory=list)
    """(kind, owner, from tier, to tier or None when dropped, records) of each change."""

    @property
    def changed(self) -> bool:
        return bool(self.moved or self.promoted or self.dropped or self.summarized)

    def note(self, kind: str, owners: Sequence[str | None], source: str, to: str | None) -> None:
        """Count records of ``owners`` (one entry per record) that left ``source``."""
        per_owner: dict[str | None, int] = {}
        for owner in owners:
            per_owner[owner] = per_owner.get(owner, 0) + 1
        for owner, n in per_owner.items():
            self.changes.append((kind, owner, source, to, n))

    def counts(self) -> dict[str, int]:
        return {
            "moved": self.moved,
            "promoted": self.promoted,
            "dropped": self.dropped,
            "summarized": self.summarized,
        }

    def counts_for(self, owner: str | None, shared: Iterable[str]) -> dict[str, int]:
        """:meth:`counts` of the records ``owner`` can read (all of them for ``None``):
        its own and unowned ones, and another's only where it stayed in shared tiers."""
        if owner is None:
            return self.counts()
        shared_tiers = set(shared)
        out = dict.fromkeys(("moved", "promoted", "dropped", "summarized"), 0)
        for kind, record_owner, source, to, n in self.changes:
            mine = record_owner is None or record_owner == owner
            public = source in shared_tiers and (to is None or to in shared_tiers)
            if mine or public:
                out[kind] += n
        return out

    def owners(self) -> list[str | None]:
        """The owners whose records changed, unowned (None) first."""
        found = {record_owner for _, record_owner, _, _, _ in self.changes}
        return sorted(found, key=lambda o: (o is not None, o or ""))


def append_consolidated(writer: StoreWriter, plan: Reorganisation) -> None:
    """The ``consolidated`` event(s) of ``plan`` (§4.12): one per owner whose records
    changed, counting that owner's alone, so a reader of the log learns nothing of
    records it cannot read; a pass that changed nothing is one event of zeros."""
    owners = plan.owners()
    if not owners:
        writer.append_event("consolidated", now_ms(), plan.counts(), None, None)
        return
    at = now_ms()
    for owner in owners:
        counts = dict.fromkeys(("moved", "promoted", "dropped", "summarized"), 0)
        for kind, record_owner, _, _, n in plan.changes:
            if record_owner == owner:
                counts[kind] += n
        writer.append_event("consolidated", at, counts, owner, None)


def with_group_members(
    writer: StoreWriter, records: Sequence[StoredRecord], *, tier: str | None
) -> list[StoredRecord]:
    """``records`` plus every other member of their groups (in ``tier``, when given)."""
    groups = {(r.owner, r.group) for r in records if r.group is not None}
    if not groups:
        return list(records)
    members = writer.select(RecordFilter(groups=sorted(groups, key=str), tier=tier))
    by_id = {r.id: r for r in records}
    for member in members:
        by_id.setdefault(member.id, member)
    return list(by_id.values())


def _with_group_member_ids(
    writer: StoreWriter, records: Sequence[tuple[str, str | None, str | None]], *, tier: str
) -> dict[str, str | None]:
    """:func:`with_group_members` of ``(id, owner, group)`` rows, as ids and owners."""
    out = {record_id: owner for record_id, owner, _ in records}
    groups = {(owner, group) for _, owner, group in records if group is not None}
    if not groups:
        return out
    members = writer.select(RecordFilter(groups=sorted(groups, key=str), tier=tier))
    for member in members:
        out.setdefault(member.id, member.owner)
    return out


_ALL = object()


def _spill(writer: StoreWriter, tier: TierConfig, plan: Reorganisation) -> bool:
    """Bring ``tier`` back under capacity, oldest first; returns whether anything moved."""
    if tier.capacity <= 0:
        return False
    buckets: list[tuple[Any, int]]
    if tier.per_session:
        per_session = writer.count_by_session(RecordFilter(tier=tier.name))
        buckets = [(session, count) for session, count in per_session.items()]
    else:
        buckets = [(_ALL, writer.count(RecordFilter(tier=tier.name)))]
    changed = False
    for session, count in buckets:
        excess = count - tier.capacity
        if excess <= 0:
            continue
        where = RecordFilter(tier=tier.name)
        if session is not _ALL:
            where = where.with_(session=session)
        # Only who they are: a spill moves every record a write pushes out of the tier.
        oldest = writer.select_ids(where, order="created_asc", limit=excess)
        owners = _with_group_member_ids(writer, oldest, tier=tier.name)
        ids = list(owners)
        if tier.spill_to is not None:
            plan.moved += writer.set_tier(ids, tier.spill_to)
            plan.note("moved", list(owners.values()), tier.name, tier.spill_to)
            plan.touched.add(tier.spill_to)
        else:
            plan.dropped += writer.delete(ids)
            plan.note("dropped", list(owners.values()), tier.name, None)
        changed = True
    return changed


def enforce_capacity(
    proto: Protocol, writer: StoreWriter, tiers: Iterable[str], plan: Reorganisation | None = None
) -> Reorganisation:
    """Spill every over-full tier among ``tiers``, following spill chains; a spill that
    happens outside consolidate is still one ``consolidated`` event (§4.12)."""
    own_plan = plan is None
    plan = plan or Reorganisation()
    pending = [t for t in proto.config.tiers if t.name in set(tiers)]
    # Each spill can only push records further down a finite, acyclic chain.
    for _ in range(len(proto.config.tiers) + 1):
        if not pending:
            break
        plan.touched.clear()
        for tier in pending:
            _spill(writer, tier, plan)
        pending = [t for t in proto.config.tiers if t.name in plan.touched]
    if own_plan and plan.changed:
        append_consolidated(writer, plan)
    return plan


def _promote_due(proto: Protocol, writer: StoreWriter, plan: Reorganisation) -> None:
    """Move records that earned it: recalled (or reinforced) ``promote_after`` times."""
    for tier in proto.config.tiers:
        if tier.promote_to is None or not tier.promote_after:
            continue
        due = writer.select(RecordFilter(tier=tier.name, earned_at_least=float(tier.promote_after)))
        # Observations stay in their tier: promotion could carry them into a shared one.
        due = [r for r in due if (r.metadata or {}).get("observation") is not True]
        if not due:
            continue
        moving = with_group_members(writer, due, tier=tier.name)
        plan.promoted += writer.set_tier([r.id for r in moving], tier.promote_to)
        plan.note("promoted", [r.owner for r in moving], tier.name, tier.promote_to)
        plan.touched.add(tier.promote_to)


def _tier_counts(proto: Protocol, writer: StoreWriter, owner: str | None) -> dict[str, int]:
    """Records per tier that ``owner`` can read (every record for ``None``), as
    ``memory/describe`` counts them."""
    counts = writer.count_by_tier(RecordFilter(scope=proto.read_scope(owner)))
    return {tier.name: counts.get(tier.name, 0) for tier in proto.config.tiers}


def _reorganise(proto: Protocol, writer: StoreWriter) -> Reorganisation:
    """Promote first, then spill (§4.7), as one ``consolidated`` event."""
    plan = Reorganisation()
    _promote_due(proto, writer, plan)
    enforce_capacity(proto, writer, [t.name for t in proto.config.tiers], plan)
    evicted = prune_observations(proto, writer)
    plan.dropped += len(evicted)
    for tier in sorted({r.tier or "" for r in evicted}):
        plan.note("dropped", [r.owner for r in evicted if (r.tier or "") == tier], tier, None)
    append_consolidated(writer, plan)
    return plan


def consolidate(proto: Protocol, ctx: CallContext, params: ConsolidateParams) -> dict[str, Any]:
    """§4.7: reorganise the whole store; the answer counts only what the caller can read
    (with auth, another principal's private tiers are not even counted, §6)."""
    proto.ensure_writable("memory/consolidate")
    owner = proto.acting_owner(ctx, None)
    with proto.transaction() as writer:
        plan = _reorganise(proto, writer)
        counts = _tier_counts(proto, writer, owner)
    return {**plan.counts_for(owner, proto.shared_tiers), "counts": counts}


def promote(proto: Protocol, ctx: CallContext, params: PromoteParams) -> dict[str, Any]:
    """§4.6: move records (and their groups) to a tier; unknown or arrived ids don't count."""
    proto.ensure_writable("memory/promote")
    target = proto.tier(ctx, params.tier).name
    owner = proto.acting_owner(ctx, params.owner)
    with proto.transaction() as writer:
        chosen = writer.select(RecordFilter(ids=params.ids, scope=proto.write_scope(owner)))
        chosen_all = [
            r
            for r in with_group_members(writer, chosen, tier=None)
            if r.tier != target and (owner is None or r.owner == owner)
        ]
        # An observation stays in its tier (docs/observations.md §1: never promoted out,
        # so it never reaches a shared tier); a promotion's salience still weighs it.
        moving = [r for r in chosen_all if not is_observation(r)]
        ids = [r.id for r in moving]
        promoted = writer.set_tier(ids, target)
        if params.salience and "salience" in ctx.capabilities:
            _check_salience(chosen_all, params.salience, "salience")
            reweigh(proto, writer, chosen_all, params.salience, owner or ctx.principal or "local")
        # One event per owner whose records moved, filed under that owner, so a reader
        # learns only of records it could recall (§4.12), as consolidated events are.
        by_owner: dict[str | None, list[str]] = {}
        for record in moving:
            by_owner.setdefault(record.owner, []).append(record.id)
        at = now_ms()
        for event_owner, moved in by_owner.items() or [(owner, [])]:
            writer.append_event("promoted", at, {"ids": moved, "tier": target}, event_owner, target)
        enforce_capacity(proto, writer, [target])
    return {"promoted": promoted}


def _check_salience(records: Sequence[StoredRecord], amount: float, name: str) -> None:
    """Refuse an addition that would push a salience past what a double can hold."""
    if any(not math.isfinite(r.salience + amount) for r in records):
        raise ProtocolError.invalid_params(
            f"{name} {amount!r} would take a record's salience out of range", field=name
        )


def reinforce(proto: Protocol, ctx: CallContext, params: ReinforceParams) -> dict[str, Any]:
    """§4.8: raise salience of records that proved useful (default: the configured amount)."""
    proto.ensure_writable("memory/reinforce")
    owner = proto.acting_owner(ctx, params.owner)
    amount = proto.config.reinforce_amount if params.amount is None else params.amount
    with proto.transaction() as writer:
        found = writer.select(RecordFilter(ids=params.ids, scope=proto.write_scope(owner)))
        _check_salience(found, amount, "amount")
        reinforced = reweigh(proto, writer, found, amount, owner or ctx.principal or "local")
    return {"reinforced": reinforced}


def list_sessions(proto: Protocol, ctx: CallContext, params: SessionListParams) -> dict[str, Any]:
    """§4.10: every named session with its size per tier and its span."""
    owner = proto.acting_owner(ctx, params.owner)
    with proto.store.reading() as reader:
        stats = reader.sessions(RecordFilter(scope=proto.read_scope(owner)))
    sessions = []
    for entry in stats:
        item: dict[str, Any] = {"session": entry.session, "records": entry.records}
        if "tiers" in ctx.capabilities:
            item["tiers"] = entry.tiers
        if entry.opened_at is not None:
            item["opened_at"] = timestamp(entry.opened_at)
        if entry.touched_at is not None:
            item["touched_at"] = timestamp(entry.touched_at)
        sessions.append(item)
    return {"sessions": sessions}


def close_session(proto: Protocol, ctx: CallContext, params: SessionCloseParams) -> dict[str, Any]:
    """§4.11: the session's records leave every per-session tier at once, then each tier
    below applies its own rules. Nothing is deleted by closing itself; an unknown
    session is a no-op."""
    proto.ensure_writable("memory/session/close")
    owner = proto.acting_owner(ctx, params.owner)
    flushed = 0
    with proto.transaction() as writer:
        if "tiers" in ctx.capabilities:
            for tier in proto.config.tiers:
                if not tier.per_session or tier.spill_to is None:
                    continue
                records = writer.select(
                    RecordFilter(
                        tier=tier.name, session=params.session, scope=proto.write_scope(owner)
                    )
                )
                leaving = with_group_members(writer, records, tier=tier.name)
                flushed += writer.set_tier([r.id for r in leaving], tier.spill_to)
            plan = _reorganise(proto, writer)
            counts = _tier_counts(proto, writer, owner)
        else:
            plan, counts = Reorganisation(), {}
            append_consolidated(writer, plan)
        writer.append_event("session_closed", now_ms(), {"session": params.session}, owner, None)
    visible = plan.counts_for(owner, proto.shared_tiers)
    return {**visible, "counts": counts, "closed": params.session, "flushed": flushed}
