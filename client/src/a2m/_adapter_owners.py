"""Which record an adapter reads where several owners hold one key (spec §3.6: keys are
unique per owner, so over an authenticated connection alice and bob may each hold
``agno/m1``, and a shared tier shows both to each of them).

Over an authenticated connection an adapter reads the caller's own record, as
``memory/fetch`` does (§4.9, §6: the address is the principal's), then an unowned one,
then the most recently written one. Who the caller is is learnt: from
``memory/describe`` where the server says whom the connection acts as (its ``owner``, an
extension of the bundled server), from the records the adapter wrote (the server made the
principal their owner), or from the record ``memory/fetch`` picks at a shared key; until
then each key several owners hold costs one ``memory/fetch``. An adapter given an
``agent`` (a local connection, where each agent states its owner) reads across agents, the
most recently written record of a key, as its ``read`` does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from a2m_types import DescribeResult, Record

from ._adapter_steps import Flow, call

__all__ = ["Caller", "best_per_key", "choose", "one_per_key"]


def _updated(record: Record) -> str:
    stamp = (record.model_extra or {}).get("updated_at")
    return stamp if isinstance(stamp, str) else ""


def _rank(record: Record) -> tuple[bool, str]:
    return (record.owner is None, _updated(record))


def _anyones(held: Sequence[Record]) -> Record:
    """The record ``memory/fetch`` picks for a caller with no record of its own: the
    unowned one, else the most recently written (later in ``held`` on a tie)."""
    best = held[0]
    for record in held[1:]:
        if _rank(record) >= _rank(best):
            best = record
    return best


class Caller:
    """Whom an adapter's connection acts as, where owners share keys: ``owner`` is ``None``
    until known (and stays so on a server without owners). ``across=True`` (an adapter
    with an ``agent``) never learns: it reads the most recent record of every owner."""

    __slots__ = ("across", "owner")

    def __init__(self, *, across: bool = False) -> None:
        self.owner: str | None = None
        self.across = across

    def pick(self, held: Sequence[Record]) -> Record:
        """The record of ``held`` (all at one key) this caller reads."""
        if self.owner is not None:
            for record in held:
                if record.owner == self.owner:
                    return record
        return _anyones(held)

    def described(self, description: DescribeResult) -> None:
        """Learn the caller from ``memory/describe``'s ``owner``, where the server declares
        ``scopes`` and says whom the connection acts as."""
        if self.owner is None and not self.across and "scopes" in description.capabilities:
            self.owner = description.owner

    def wrote(self, records: Iterable[Record]) -> None:
        """Learn the caller from records it has just written: the server set their owner."""
        if self.owner is None and not self.across:
            self.owner = next((r.owner for r in records if r.owner is not None), None)

    def fetched(self, held: Sequence[Record], record: Record) -> None:
        """Learn the caller from ``memory/fetch``'s pick among ``held``: an owned record
        picked over the one anyone would be given is the caller's own."""
        if self.across or self.owner is not None or record.owner is None:
            return
        if record.id != _anyones(held).id:
            self.owner = record.owner


def choose(
    caller: Caller, records: Iterable[Record], extra: Mapping[str, Any]
) -> Flow[dict[str, Record]]:
    """Each key's record among ``records``, as the caller reads it: no call where a key
    holds one record or the caller is known, else one ``memory/fetch`` per shared key
    (``extra``: its read options, e.g. ``embeddings``)."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        if record.key is not None:
            groups.setdefault(record.key, []).append(record)
    chosen: dict[str, Record] = {}
    for key, held in groups.items():
        if len(held) > 1 and caller.owner is None and not caller.across:
            fetched = (yield call("fetch", key, **extra)).record
            if fetched is not None:
                caller.fetched(held, fetched)
                chosen[key] = next((r for r in held if r.id == fetched.id), fetched)
                continue
        chosen[key] = caller.pick(held)
    return chosen


def one_per_key(
    caller: Caller, records: Sequence[Record], extra: Mapping[str, Any], seen: set[str]
) -> Flow[list[Record]]:
    """``records`` in their order with one record per key, the one the caller reads; keys
    in ``seen`` (listed on an earlier page) are left out, and this page's are added."""
    chosen = yield from choose(caller, (r for r in records if r.key not in seen), extra)
    kept = [r for r in records if r.key is None or (r.key in chosen and chosen[r.key].id == r.id)]
    seen.update(chosen)
    return kept


def best_per_key(
    caller: Caller, records: Sequence[Record], extra: Mapping[str, Any]
) -> Flow[list[Record]]:
    """Ranked ``records`` with one record per key, at the rank of the key's best: the one
    the caller reads (:func:`choose`: no call unless a key is shared and the caller not
    yet known, then one ``memory/fetch`` per shared key)."""
    chosen = yield from choose(caller, records, extra)
    kept: list[Record] = []
    placed: set[str] = set()
    for record in records:
        if record.key is None:
            kept.append(record)
        elif record.key not in placed:
            placed.add(record.key)
            pick = chosen[record.key]
            # the pick's own score, when it is among the ranked; else the best one's
            kept.append(next((r for r in records if r.id == pick.id), record))
    return kept
