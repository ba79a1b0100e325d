"""What an observation is: the tenant (org, project, agent) a call acts for and the key and
content hash that make one fact one record, the checks its fields pass, how a record
reads as an observation, and which observations a tenant may read (its own, and granted
projects') or change (its own only)."""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a2m_server.errors import ProtocolError
from a2m_server.protocol.context import CallContext
from a2m_server.protocol.core import Protocol
from a2m_server.protocol.wire import timestamp
from a2m_server.store import NewRecord, RecordFilter, StoredRecord
from a2m_server.store._audit import AuditRow
from a2m_types import ErrorCode
from a2m_types.observations import TENANT_FIELDS

__all__ = [
    "DEFAULT_AUTO_WEIGHT",
    "MAX_TAGS",
    "OBSERVATION_KEYS",
    "OBSERVATION_KEY_PREFIX",
    "SERVER_ACTOR",
    "Tenant",
    "access_of",
    "audit_row",
    "check_content",
    "check_weight",
    "checked_agent",
    "classification_of",
    "clean_tags",
    "content_hash",
    "editable",
    "is_observation",
    "normalise",
    "operator_of",
    "operator_reach",
    "project_of",
    "readable_filter",
    "scope_denied",
    "snapshot",
    "tenant_of",
    "to_observation",
    "weight_factor",
]

OBSERVATION_KEY_PREFIX = "observation/"
"""Every observation's key starts so; core ``memory/remember`` may not write under it."""
OBSERVATION_KEYS = OBSERVATION_KEY_PREFIX.rstrip("/")
"""Observations live at keys strictly beneath this (``RecordFilter.key_under``), where only
the extension writes: every read and prune selects there, never by metadata alone, which
any core write may carry."""
SERVER_ACTOR = "a2m-server"
"""The actor of changes no caller asked for (evictions)."""
DEFAULT_AUTO_WEIGHT = {"session": 0.30, "pr": 0.55, "batch": 0.30, None: 0.30}
"""The seed's base confidence of each automatic ingest path, the weight it writes."""


def normalise(content: str) -> str:
    """What two observations must share to be the same: NFKC, case folded, whitespace
    collapsed."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def content_hash(content: str) -> str:
    """``sha256:<hex>`` of the normalised content (comparable across tenants)."""
    return "sha256:" + hashlib.sha256(normalise(content).encode("utf-8")).hexdigest()


def weight_factor(weight: float) -> float:
    """How much an observation's effective weight lets its relevance count:
    ``w / (w + 1)``, 0 at weight 0, ½ at 1, tending to 1 (``docs/observations.md`` §4)."""
    weight = max(weight, 0.0)
    return weight / (weight + 1.0)


@dataclass(frozen=True)
class Tenant:
    """Who an observation call acts for."""

    org: str
    project: str
    agent: str | None
    owner: str | None
    """The record owner: the principal, or the local caller's ``owner``."""
    actor: str
    """Who the audit log names."""
    operator: bool
    """May act on every agent of the project."""

    @property
    def project_path(self) -> str:
        return f"{self.org}/{self.project}"

    def key(self, content: str) -> str:
        """The record key of ``content`` for this tenant: one address per fact."""
        raw = "\x1f".join((self.org, self.project, self.agent or "", normalise(content)))
        return OBSERVATION_KEY_PREFIX + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def scope_denied(message: str, **data: Any) -> ProtocolError:
    """A SCOPE_DENIED error: the caller may not act as, or read, what it named."""
    return ProtocolError(ErrorCode.SCOPE_DENIED, message, data or None)


def tenant_of(proto: Protocol, ctx: CallContext, params: Any) -> Tenant:
    """The caller's tenant; SCOPE_DENIED for a tenant field or an owner it may not be."""
    forged = sorted(TENANT_FIELDS & set(params.model_extra or {}))
    if forged:
        raise scope_denied(
            f"{', '.join(forged)} cannot be set by the caller: the tenant comes from the "
            "authenticated principal and the server configuration",
            fields=forged,
        )
    config = proto.config.observations
    owner: str | None = params.owner
    if ctx.principal is not None:
        if owner is not None and owner != ctx.principal:
            raise scope_denied(
                f"authenticated as {ctx.principal!r}; may not act as {owner!r}",
                principal=ctx.principal,
                owner=owner,
            )
        return _principal_tenant(proto, ctx.principal)
    if ctx.network:
        if owner is not None:
            raise scope_denied(
                "this connection is not authenticated, so it cannot name an owner", owner=owner
            )
        return Tenant(config.org, config.project, None, None, "anonymous", operator=False)
    return Tenant(
        config.org, config.project, owner, owner, owner or "local", operator=owner is None
    )


def _principal_tenant(proto: Protocol, principal: str) -> Tenant:
    """An authenticated principal's tenant: ``org/project/agent`` names all three; any
    other principal is an agent of the configured project."""
    config = proto.config.observations
    parts = principal.split("/")
    if len(parts) == 3 and all(parts):
        org, project, agent = parts
    else:
        org, project, agent = config.org, config.project, principal
    return Tenant(org, project, agent, principal, principal, operator=principal in config.operators)


def operator_of(proto: Protocol, ctx: CallContext) -> Tenant | None:
    """The tenant of an authenticated operator (``observations.operators``); ``None`` for
    anyone else, and without the extension."""
    if not proto.config.observations.enabled or ctx.principal is None:
        return None
    tenant = _principal_tenant(proto, ctx.principal)
    return tenant if tenant.operator else None


def operator_reach(proto: Protocol, ctx: CallContext) -> RecordFilter | None:
    """Beyond what its principal reads (§6), what an operator audits: every agent's
    observations of its own project. ``None`` for anyone else, and without the extension.

    The memory page lists these for an operator, so that auditing an agent's observations
    (what ``list`` and ``audit`` already allow it) needs no second tool."""
    tenant = operator_of(proto, ctx)
    if tenant is None:
        return None
    return readable_filter(proto, tenant, agent=None, every_agent=True, include_transferred=False)


def checked_agent(tenant: Tenant, agent: str | None) -> tuple[str | None, bool]:
    """(agent, every agent) a read may look at: another agent's only for an operator."""
    if agent is None:
        return tenant.agent, tenant.operator
    if agent != tenant.agent and not tenant.operator:
        raise scope_denied(
            f"only an operator may read another agent's observations ({agent!r})", agent=agent
        )
    return agent, False


def classification_of(classification: str | None, kind: str | None) -> str:
    """The derived classification: the given one, else the type's first dot-segment; a note
    (or nothing) is ``note``."""
    if classification is not None:
        value = classification.strip().lower()
    elif kind is not None:
        value = kind.strip().split(".", 1)[0].lower()
    else:
        value = "note"
    if not value:
        raise ProtocolError.invalid_params("classification must not be blank")
    if len(value) > MAX_CLASSIFICATION:
        raise ProtocolError.invalid_params(
            f"the classification {value[:40]!r}… (from the type's first dot-segment where "
            f"none is given) is longer than {MAX_CLASSIFICATION} characters",
            field="classification" if classification is not None else "type",
        )
    return value


MAX_CLASSIFICATION = 64
"""Characters a classification may hold, given or derived from a type."""
MAX_TAGS = 64
"""Tags an observation may hold, as written or as a duplicate's merge leaves them."""


def clean_tags(tags: Sequence[str] | None) -> list[str]:
    """The tags trimmed, each once, in order; a blank one is INVALID_PARAMS."""
    cleaned: list[str] = []
    for tag in tags or ():
        text = tag.strip()
        if not text:
            raise ProtocolError.invalid_params("a tag must not be blank", field="tags")
        if text not in cleaned:
            cleaned.append(text)
    return cleaned


def check_content(proto: Protocol, content: str) -> str:
    """The content trimmed; empty, blank or longer than the server takes is refused."""
    text = content.strip()
    if not text:
        raise ProtocolError.invalid_params("content must not be empty or blank", field="content")
    maximum = proto.config.limits.max_content_length
    if len(text) > maximum:
        raise ProtocolError.quota("max_content_length", maximum, len(text))
    return text


def check_weight(proto: Protocol, weight: float, name: str = "weight") -> float:
    """``weight`` when finite and from 0 to the configured maximum; else INVALID_PARAMS."""
    maximum = proto.config.observations.max_weight
    if not math.isfinite(weight) or weight < 0 or weight > maximum:
        raise ProtocolError.invalid_params(
            f"{name} must be a finite number from 0 to {maximum:g}, got {weight!r}",
            field=name,
            max=maximum,
        )
    return weight + 0.0  # -0.0 is 0


# --- records <-> observations --------------------------------------------------------------


def is_observation(record: StoredRecord) -> bool:
    """Whether ``record`` is an observation: ``metadata.observation`` is true, at a key
    under ``observation/``, where only the extension writes."""
    return bool(
        record.metadata
        and record.metadata.get("observation") is True
        and record.key is not None
        and record.key.startswith(OBSERVATION_KEY_PREFIX)
    )


def snapshot(record: StoredRecord | NewRecord) -> dict[str, Any]:
    """The audited fields of an observation record."""
    meta = record.metadata or {}
    return {
        "content": record.content,
        "type": meta.get("observation_type"),
        "classification": meta.get("observation_classification"),
        "weight": record.salience,
        "tags": list(meta.get("tags") or []),
        "file_path": meta.get("observation_file_path"),
    }


def project_of(record: StoredRecord) -> str:
    """The ``org/project`` an observation record belongs to."""
    meta = record.metadata or {}
    return f"{meta.get('observation_org')}/{meta.get('observation_project')}"


def to_observation(
    proto: Protocol, record: StoredRecord, tenant: Tenant, score: float | None = None
) -> dict[str, Any]:
    """An observation record as the extension's reads return it."""
    meta = record.metadata or {}
    project = project_of(record)
    transferred = project != tenant.project_path
    multiplier = proto.config.observations.transfer_multiplier if transferred else 1.0
    result: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "type": meta.get("observation_type") or "note",
        "classification": meta.get("observation_classification") or "note",
        "weight": record.salience,
        "effective_weight": record.salience * multiplier,
        "tags": list(meta.get("tags") or []),
        "source": meta.get("observation_source") or "explicit",
        "origin": meta.get("observation_origin"),
        "file_path": meta.get("observation_file_path"),
        "org": meta.get("observation_org"),
        "project": meta.get("observation_project"),
        "agent": meta.get("observation_agent"),
        "created_at": timestamp(record.created_at),
        "transferred": transferred,
        "source_project": project if transferred else None,
    }
    if score is not None:
        result["score"] = score
    return result


def audit_row(
    tenant_actor: str,
    action: str,
    record: StoredRecord | NewRecord,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    at: int,
) -> AuditRow:
    """The audit-log entry of ``action`` on ``record`` by ``tenant_actor``."""
    meta = record.metadata or {}
    return AuditRow(
        seq=0,
        at=at,
        actor=tenant_actor,
        action=action,
        observation_id=record.id,
        org=meta.get("observation_org"),
        project=meta.get("observation_project"),
        agent=meta.get("observation_agent"),
        before=before,
        after=after,
    )


def readable_filter(
    proto: Protocol,
    tenant: Tenant,
    *,
    agent: str | None,
    every_agent: bool,
    include_transferred: bool,
    classifications: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    source: str | None = None,
    tags: Sequence[str] | None = None,
) -> RecordFilter:
    """Observations the tenant may read: its project's, and granted projects' (same
    agent), narrowed by the filters."""
    config = proto.config.observations
    projects = (
        config.sources_for(tenant.project_path) if include_transferred else [tenant.project_path]
    )
    branches = []
    for path in projects:
        org, project = path.split("/", 1)
        where: dict[str, Any] = {"observation_org": org, "observation_project": project}
        if not every_agent:
            where["observation_agent"] = agent
        branches.append(RecordFilter(where=where))
    where = {"observation": True}
    if classifications:
        where["observation_classification"] = [c.strip().lower() for c in classifications]
    if types:
        where["observation_type"] = list(types)
    if source is not None:
        where["observation_source"] = source
    return RecordFilter(
        where=where,
        any_of=branches,
        tags_all=[tag.strip() for tag in tags] if tags else None,  # as stored: trimmed
        key_under=OBSERVATION_KEYS,
    )


def access_of(proto: Protocol, tenant: Tenant, record: StoredRecord) -> str:
    """``own`` when the tenant may change ``record``, ``transferred`` when it may only read
    it, ``hidden`` otherwise."""
    if not is_observation(record):
        return "hidden"
    meta = record.metadata or {}
    same_agent = tenant.operator or meta.get("observation_agent") == tenant.agent
    project = project_of(record)
    if project == tenant.project_path:
        return "own" if same_agent else "hidden"
    if same_agent and proto.config.observations.grant_holds(project, tenant.project_path):
        return "transferred"
    return "hidden"


def editable(
    proto: Protocol, tenant: Tenant, records: Sequence[StoredRecord], ids: Sequence[str], what: str
) -> list[StoredRecord]:
    """``records`` (found for ``ids``) when the tenant may change every one; else the
    typed error, and nothing changes."""
    by_id = {r.id: r for r in records}
    for record_id in ids:
        record = by_id.get(record_id)
        access = "hidden" if record is None else access_of(proto, tenant, record)
        if access == "transferred":
            assert record is not None
            raise ProtocolError(
                ErrorCode.READ_ONLY,
                f"observation {record_id!r} is a read-only transfer from project "
                f"{project_of(record)!r}; it cannot be {what} from {tenant.project_path!r}",
                {"transferred": True, "source_project": project_of(record), "id": record_id},
            )
        if access == "hidden":
            raise ProtocolError(
                ErrorCode.UNKNOWN_RECORD,
                f"no observation {record_id!r} that this caller may change",
                {"id": record_id},
            )
    return [by_id[i] for i in dict.fromkeys(ids)]
