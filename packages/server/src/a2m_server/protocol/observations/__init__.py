"""The ``observations`` extension (``docs/observations.md``): weighted, deduplicated facts per
(org, project, agent), kept as ordinary records, every change written to an append-only
audit log, and read-only transfer between projects by operator grant.

The tenant always comes from the connection — the authenticated principal, or on a local
transport the call's ``owner`` — never from a field the caller sets (spec §6).

``model`` holds the tenant, key and hash and the record/observation mapping, ``writing``
the write paths and the hooks into core methods, ``reading`` the listing, recall and
audit reads."""

from __future__ import annotations

from typing import Any

from .model import (
    OBSERVATION_KEY_PREFIX,
    OBSERVATION_KEYS,
    Tenant,
    access_of,
    content_hash,
    is_observation,
    normalise,
    operator_of,
    operator_reach,
    weight_factor,
)
from .reading import audit, audit_to_wire, list_observations, recall_observations
from .writing import (
    audit_forgotten,
    delete,
    prune_observations,
    remember,
    reweigh,
    update,
)

__all__ = [
    "HANDLERS",
    "OBSERVATION_KEYS",
    "OBSERVATION_KEY_PREFIX",
    "Tenant",
    "access_of",
    "audit_forgotten",
    "audit_to_wire",
    "content_hash",
    "is_observation",
    "normalise",
    "operator_of",
    "operator_reach",
    "prune_observations",
    "reweigh",
    "weight_factor",
]

HANDLERS: dict[str, Any] = {
    "memory/observations/remember": remember,
    "memory/observations/list": list_observations,
    "memory/observations/recall": recall_observations,
    "memory/observations/update": update,
    "memory/observations/delete": delete,
    "memory/observations/audit": audit,
}
