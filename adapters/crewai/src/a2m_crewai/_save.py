"""``save`` as one flow for the sync and async storage: the records go in calls of at most
``max_records_per_call``, all or nothing. Where a later call is refused (content over
the server's limit, another vector width, a server gone), the records the earlier calls
created are removed again; a record whose id was already stored was left as it was by
its write (A2M ids make writes idempotent) and is never removed."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from a2m import A2MError, CapabilityNotSupported
from a2m._adapter_steps import Flow, call

from ._mapping import Layout

__all__ = ["save_flow"]

log = logging.getLogger("a2m_crewai")


def save_flow(layout: Layout, inputs: Sequence[Mapping[str, Any]]) -> Flow[None]:
    """Remember ``inputs``: one ``memory/remember`` per ``max_records_per_call``. A save
    of several calls first reads which of its ids are stored (one ``memory/timeline`` per
    ``max_recall_limit`` ids), and takes back what it created when a later call fails
    (one ``memory/forget``), raising that call's error."""
    size = max(layout.max_records_per_call, 1)
    batches = [list(inputs[start : start + size]) for start in range(0, len(inputs), size)]
    stored_before: set[str] | None = set()
    if len(batches) > 1:
        stored_before = yield from _stored(layout, [str(i["id"]) for i in inputs if "id" in i])
    written: list[str] = []
    for batch in batches:
        try:
            written += (yield call("remember", batch)).ids
        except A2MError:
            if written and stored_before is not None:
                yield from _take_back([i for i in written if i not in stored_before])
            raise


def _stored(layout: Layout, ids: list[str]) -> Flow[set[str] | None]:
    """Which of ``ids`` the store holds; ``None`` on a binding that cannot select by id
    (each call then stays atomic on its own, as the server makes it)."""
    found: set[str] = set()
    step = max(layout.max_recall_limit, 1)
    try:
        for start in range(0, len(ids), step):
            part = ids[start : start + step]
            result = yield call("timeline", where={"id": part}, limit=len(part))
            found.update(record.id for record in result.records)
    except CapabilityNotSupported:
        return None
    return found


def _take_back(created: list[str]) -> Flow[None]:
    if not created:
        return
    try:
        yield call("forget", ids=created)
    except A2MError:
        log.exception("could not take back %d records of a failed save", len(created))
