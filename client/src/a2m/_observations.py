"""The ``observations`` extension's verbs (``docs/observations.md``), shared by the sync and
async clients as mixins: remember an observation (deduplicated by the server, which raises
the stored weight instead of adding a copy), list, recall, update, delete, and read the audit
log. Each verb is one call; a server not declaring the extension is refused unsent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

from a2m_types import WireModel, format_timestamp
from a2m_types.observations import (
    OBSERVATION_METHODS,
    ObservationAuditResult,
    ObservationDeleteResult,
    ObservationListResult,
    ObservationRecallResult,
    ObservationRememberResult,
    ObservationUpdateResult,
)

from . import _core as core
from ._types import NOT_GIVEN, NotGiven

__all__ = ["AsyncObservationMethods", "ObservationMethods"]

R = TypeVar("R", bound=WireModel)


def _method(name: str, result: type[R]) -> core.Method[R]:
    spec = OBSERVATION_METHODS[name]
    if spec.result is not result:
        raise TypeError(f"{name} returns {spec.result.__name__}, not {result.__name__}")
    return core.Method(spec, result)


REMEMBER = _method("memory/observations/remember", ObservationRememberResult)
LIST = _method("memory/observations/list", ObservationListResult)
RECALL = _method("memory/observations/recall", ObservationRecallResult)
UPDATE = _method("memory/observations/update", ObservationUpdateResult)
DELETE = _method("memory/observations/delete", ObservationDeleteResult)
AUDIT = _method("memory/observations/audit", ObservationAuditResult)

Timeout = float | NotGiven | None


def _listed(value: Any) -> Any:
    """Tags, ids and classifications as the JSON list the params want."""
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
        return list(value)
    return value


def _when(value: Any) -> Any:
    return format_timestamp(value) if isinstance(value, datetime) else value


def remember_call(
    content: str,
    classification: str | NotGiven | None,
    file_path: str | NotGiven | None,
    tags: Iterable[str] | NotGiven | None,
    weight: float | NotGiven | None,
    type: str | NotGiven | None,
    source: str | NotGiven,
    ingest: str | NotGiven | None,
    origin: str | NotGiven | None,
    metadata: Mapping[str, Any] | NotGiven | None,
    owner: str | NotGiven | None,
    embedding: Iterable[float] | NotGiven | None = NOT_GIVEN,
) -> core.Call[ObservationRememberResult]:
    """The prepared ``memory/observations/remember`` call (shared by both clients)."""
    values = {
        "content": content,
        "classification": classification,
        "file_path": file_path,
        "tags": _listed(tags),
        "weight": weight,
        "type": type,
        "source": source,
        "ingest": ingest,
        "origin": origin,
        "metadata": dict(metadata) if isinstance(metadata, Mapping) else metadata,
        "owner": owner,
        "embedding": embedding,
    }
    return core.prepare(REMEMBER, values)


def _list_call(values: dict[str, Any]) -> core.Call[ObservationListResult]:
    for name in ("classifications", "tags", "types"):
        values[name] = _listed(values[name])
    return core.prepare(LIST, values)


def _recall_call(values: dict[str, Any]) -> core.Call[ObservationRecallResult]:
    for name in ("classifications", "tags"):
        values[name] = _listed(values[name])
    return core.prepare(RECALL, values)


def _update_call(values: dict[str, Any]) -> core.Call[ObservationUpdateResult]:
    values["tags"] = _listed(values["tags"])
    return core.prepare(UPDATE, values)


def _audit_call(values: dict[str, Any]) -> core.Call[ObservationAuditResult]:
    values["since"] = _when(values["since"])
    values["until"] = _when(values["until"])
    return core.prepare(AUDIT, values)


class _SyncCaller(Protocol):
    def _call(self, call: core.Call[R], timeout: Timeout) -> R: ...


class _AsyncCaller(Protocol):
    async def _call(self, call: core.Call[R], timeout: Timeout) -> R: ...


class ObservationMethods:
    """The observation verbs of :class:`~a2m.A2MClient`."""

    def remember_observation(
        self: _SyncCaller,
        content: str,
        *,
        classification: str | NotGiven | None = NOT_GIVEN,
        file_path: str | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        weight: float | NotGiven | None = 1.0,
        type: str | NotGiven | None = NOT_GIVEN,
        source: Literal["explicit", "auto"] | NotGiven = NOT_GIVEN,
        ingest: Literal["session", "pr", "batch"] | NotGiven | None = NOT_GIVEN,
        origin: str | NotGiven | None = NOT_GIVEN,
        metadata: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        embedding: Iterable[float] | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationRememberResult:
        """Remember one durable fact for this agent; an identical one already stored has its
        weight raised by ``weight`` instead (``result.deduplicated``); ``weight=None``
        takes the server's default for ``source`` (an ``auto`` ingest's base confidence).
        The tenant is the caller's principal; ``owner`` names the agent on a local
        transport only. Never retried after it may have reached the server: a retry would
        count twice."""
        call = remember_call(
            content, classification, file_path, tags, weight, type, source, ingest, origin,
            metadata, owner, embedding,
        )  # fmt: skip
        return self._call(call, timeout)

    def list_observations(
        self: _SyncCaller,
        *,
        agent: str | NotGiven | None = NOT_GIVEN,
        classifications: Iterable[str] | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        types: Iterable[str] | NotGiven | None = NOT_GIVEN,
        source: Literal["explicit", "auto"] | NotGiven | None = NOT_GIVEN,
        include_transferred: bool | NotGiven = NOT_GIVEN,
        order: Literal["recent", "weight"] | NotGiven = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationListResult:
        """One page of this agent's observations (and granted transfers), newest first or
        heaviest first; ``next_cursor`` pages on."""
        values = {
            "agent": agent, "classifications": classifications, "tags": tags, "types": types,
            "source": source, "include_transferred": include_transferred, "order": order,
            "limit": limit, "cursor": cursor, "owner": owner,
        }  # fmt: skip
        return self._call(_list_call(values), timeout)

    def recall_observations(
        self: _SyncCaller,
        query: str | NotGiven | None = NOT_GIVEN,
        *,
        embedding: Iterable[float] | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        classifications: Iterable[str] | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        include_transferred: bool | NotGiven = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationRecallResult:
        """Observations ranked by relevance scaled by weight, best first."""
        values = {
            "query": query, "embedding": embedding, "limit": limit,
            "classifications": classifications, "tags": tags,
            "include_transferred": include_transferred, "owner": owner,
        }  # fmt: skip
        return self._call(_recall_call(values), timeout)

    def update_observation(
        self: _SyncCaller,
        id: str,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        type: str | NotGiven | None = NOT_GIVEN,
        classification: str | NotGiven | None = NOT_GIVEN,
        weight: float | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        file_path: str | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationUpdateResult:
        """Edit one observation (audited); lowering its weight is the soft delete, and
        ``file_path=None`` clears the path. A transferred observation raises
        :class:`~a2m.errors.ReadOnly`."""
        values = {
            "id": id, "content": content, "type": type, "classification": classification,
            "weight": weight, "tags": tags, "file_path": file_path, "owner": owner,
        }  # fmt: skip
        return self._call(_update_call(values), timeout)

    def delete_observations(
        self: _SyncCaller,
        ids: Iterable[str],
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationDeleteResult:
        """Delete observations for good (audited); all or none."""
        values = {"ids": _listed(ids), "owner": owner}
        return self._call(core.prepare(DELETE, values), timeout)

    def observation_audit(
        self: _SyncCaller,
        *,
        agent: str | NotGiven | None = NOT_GIVEN,
        observation_id: str | NotGiven | None = NOT_GIVEN,
        since: datetime | str | NotGiven | None = NOT_GIVEN,
        until: datetime | str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationAuditResult:
        """The audit log, newest first: who changed what, when, before and after."""
        values = {
            "agent": agent, "observation_id": observation_id, "since": since, "until": until,
            "limit": limit, "cursor": cursor, "owner": owner,
        }  # fmt: skip
        return self._call(_audit_call(values), timeout)


class AsyncObservationMethods:
    """The observation verbs of :class:`~a2m.AsyncA2MClient`, the twins of
    :class:`ObservationMethods`."""

    async def remember_observation(
        self: _AsyncCaller,
        content: str,
        *,
        classification: str | NotGiven | None = NOT_GIVEN,
        file_path: str | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        weight: float | NotGiven | None = 1.0,
        type: str | NotGiven | None = NOT_GIVEN,
        source: Literal["explicit", "auto"] | NotGiven = NOT_GIVEN,
        ingest: Literal["session", "pr", "batch"] | NotGiven | None = NOT_GIVEN,
        origin: str | NotGiven | None = NOT_GIVEN,
        metadata: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        embedding: Iterable[float] | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationRememberResult:
        """See :meth:`ObservationMethods.remember_observation`."""
        call = remember_call(
            content, classification, file_path, tags, weight, type, source, ingest, origin,
            metadata, owner, embedding,
        )  # fmt: skip
        return await self._call(call, timeout)

    async def list_observations(
        self: _AsyncCaller,
        *,
        agent: str | NotGiven | None = NOT_GIVEN,
        classifications: Iterable[str] | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        types: Iterable[str] | NotGiven | None = NOT_GIVEN,
        source: Literal["explicit", "auto"] | NotGiven | None = NOT_GIVEN,
        include_transferred: bool | NotGiven = NOT_GIVEN,
        order: Literal["recent", "weight"] | NotGiven = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationListResult:
        """See :meth:`ObservationMethods.list_observations`."""
        values = {
            "agent": agent, "classifications": classifications, "tags": tags, "types": types,
            "source": source, "include_transferred": include_transferred, "order": order,
            "limit": limit, "cursor": cursor, "owner": owner,
        }  # fmt: skip
        return await self._call(_list_call(values), timeout)

    async def recall_observations(
        self: _AsyncCaller,
        query: str | NotGiven | None = NOT_GIVEN,
        *,
        embedding: Iterable[float] | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        classifications: Iterable[str] | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        include_transferred: bool | NotGiven = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationRecallResult:
        """See :meth:`ObservationMethods.recall_observations`."""
        values = {
            "query": query, "embedding": embedding, "limit": limit,
            "classifications": classifications, "tags": tags,
            "include_transferred": include_transferred, "owner": owner,
        }  # fmt: skip
        return await self._call(_recall_call(values), timeout)

    async def update_observation(
        self: _AsyncCaller,
        id: str,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        type: str | NotGiven | None = NOT_GIVEN,
        classification: str | NotGiven | None = NOT_GIVEN,
        weight: float | NotGiven | None = NOT_GIVEN,
        tags: Iterable[str] | NotGiven | None = NOT_GIVEN,
        file_path: str | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationUpdateResult:
        """See :meth:`ObservationMethods.update_observation`."""
        values = {
            "id": id, "content": content, "type": type, "classification": classification,
            "weight": weight, "tags": tags, "file_path": file_path, "owner": owner,
        }  # fmt: skip
        return await self._call(_update_call(values), timeout)

    async def delete_observations(
        self: _AsyncCaller,
        ids: Iterable[str],
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationDeleteResult:
        """See :meth:`ObservationMethods.delete_observations`."""
        values = {"ids": _listed(ids), "owner": owner}
        return await self._call(core.prepare(DELETE, values), timeout)

    async def observation_audit(
        self: _AsyncCaller,
        *,
        agent: str | NotGiven | None = NOT_GIVEN,
        observation_id: str | NotGiven | None = NOT_GIVEN,
        since: datetime | str | NotGiven | None = NOT_GIVEN,
        until: datetime | str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: Timeout = NOT_GIVEN,
    ) -> ObservationAuditResult:
        """See :meth:`ObservationMethods.observation_audit`."""
        values = {
            "agent": agent, "observation_id": observation_id, "since": since, "until": until,
            "limit": limit, "cursor": cursor, "owner": owner,
        }  # fmt: skip
        return await self._call(_audit_call(values), timeout)


def adapter_provenance(
    namespace: str,
    source_framework: str | None,
    agent: str | None,
    session: str | None,
    capabilities: frozenset[str],
) -> dict[str, Any]:
    """The ``metadata`` and ``owner`` an adapter's observation carries: its provenance, and
    the agent as owner where the server declares ``scopes`` (as for its entries)."""
    metadata = {
        "source_framework": source_framework,
        "source_agent": agent,
        "source_namespace": namespace,
        "session": session,
    }
    extra: dict[str, Any] = {"metadata": {k: v for k, v in metadata.items() if v is not None}}
    if agent is not None and "scopes" in capabilities:
        extra["owner"] = agent
    return extra
