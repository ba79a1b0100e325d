"""The ``observations`` extension (``docs/observations.md``): weighted, deduplicated facts per
(org, project, agent), stored as ordinary records, with an audit log and read-only transfer
between projects. Declared by an ``observations`` object in ``memory/describe``; its methods
live in :data:`OBSERVATION_METHODS`, apart from the 0.1 table."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field

from ._base import Count, Params, WireModel
from ._time import Timestamp, parse_timestamp
from .describe import ObservationsInfo
from .methods import MethodSpec
from .records import Embedding

__all__ = [
    "CLASSIFICATIONS",
    "OBSERVATIONS_EXTENSION",
    "OBSERVATION_METHODS",
    "TENANT_FIELDS",
    "AuditEntry",
    "Observation",
    "ObservationAuditParams",
    "ObservationAuditResult",
    "ObservationDeleteParams",
    "ObservationDeleteResult",
    "ObservationListParams",
    "ObservationListResult",
    "ObservationRecallParams",
    "ObservationRecallResult",
    "ObservationRememberParams",
    "ObservationRememberResult",
    "ObservationUpdateParams",
    "ObservationUpdateResult",
    "ObservationsInfo",
]

OBSERVATIONS_EXTENSION = "observations"
"""The extension's name: the describe object that declares it and its methods' capability."""

CLASSIFICATIONS: tuple[str, ...] = (
    "pattern",
    "decision",
    "error",
    "tool-use",
    "convention",
    "note",
)
"""The classifications the seed names; any other lower-case text is accepted too."""

TENANT_FIELDS = frozenset(
    {"org", "project", "agent", "tenant", "org_id", "project_id", "agent_id", "orgId", "projectId"}
    | {"agentId"}
)
"""Names a caller may not set on a write: the tenant comes from the principal (spec §6)."""

_Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
_Tag = Annotated[str, Field(min_length=1, max_length=128)]


def _rfc3339(value: str) -> str:
    parse_timestamp(value)  # refuses anything but an RFC 3339 time with an offset
    return value


_Since = Annotated[str, AfterValidator(_rfc3339)]
"""An RFC 3339 time, kept as the text the caller sent (params carry plain JSON)."""


class _TenantGuarded(Params):
    """Params that keep unknown names so the server can refuse a tenant field by name."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)


class ObservationRememberParams(_TenantGuarded):
    """``memory/observations/remember``: store one observation, or raise the weight of the
    identical one already stored for the caller's tenant."""

    content: str = Field(min_length=1)
    """The durable fact, learning or convention. Concise."""
    type: str | None = Field(default=None, min_length=1, max_length=128)
    """The observation's kind, e.g. ``code_pattern`` or ``decision.architecture``."""
    classification: str | None = Field(default=None, min_length=1, max_length=64)
    """``pattern``, ``decision``, ``error``, ``tool-use``, ``convention``, ``note`` or free
    text; derived from ``type`` when absent."""
    file_path: str | None = Field(default=None, max_length=4096)
    """The file or module the observation concerns."""
    tags: list[_Tag] | None = Field(default=None, max_length=64)
    """Free-form tags for later filtering."""
    weight: _Weight | None = None
    """Retrieval importance; default 1.0 for ``explicit``, the ingest's base confidence for
    ``auto``. A duplicate adds it to the stored weight."""
    source: Literal["explicit", "auto"] = "explicit"
    """``explicit``: the agent chose to remember it; ``auto``: an ingest pipeline did."""
    ingest: Literal["session", "pr", "batch"] | None = None
    """For ``auto``: which pipeline (session end 0.30, merged PR 0.55, batch 0.30)."""
    origin: str | None = Field(default=None, max_length=4096)
    """What wrote it: a session id, a PR URL, a job name."""
    metadata: dict[str, Any] | None = None
    """Extra metadata kept alongside (provenance); reserved observation keys are refused."""
    embedding: Embedding | None = Field(default=None, min_length=1)
    """The observation's vector, for recall by similarity (kept where the server declares
    ``embeddings``; a duplicate keeps the stored one's)."""
    owner: str | None = None
    """The agent, on a local transport only; over a network it is the principal."""


class ObservationRememberResult(WireModel):
    """Where the observation landed."""

    id: str
    deduplicated: bool
    """True when an identical observation was stored already and only its weight rose."""
    weight: float
    """The stored weight after this write."""


class Observation(WireModel):
    """One observation as the extension's reads return it."""

    id: str
    content: str
    type: str
    classification: str
    weight: float
    effective_weight: float
    """``weight``, times the transfer multiplier when transferred."""
    tags: list[str] = Field(default_factory=list)
    source: str
    origin: str | None = None
    file_path: str | None = None
    org: str | None = None
    project: str | None = None
    agent: str | None = None
    created_at: Timestamp
    transferred: bool = False
    source_project: str | None = None
    """``org/project`` of a transferred observation."""
    score: float | None = None
    """From ``recall`` only: relevance scaled by effective weight, in [0, 1]."""


class ObservationListParams(_TenantGuarded):
    """``memory/observations/list``: the tenant's observations, newest first or heaviest first."""

    agent: str | None = None
    """Another agent of the project: operators only."""
    classifications: list[str] | None = None
    """Any of these classifications (multi-select)."""
    tags: list[str] | None = None
    """Every one of these tags."""
    types: list[str] | None = None
    source: Literal["explicit", "auto"] | None = None
    include_transferred: bool = True
    order: Literal["recent", "weight"] = "recent"
    limit: Count | None = None
    cursor: str | None = Field(default=None, max_length=64)
    owner: str | None = None


class ObservationListResult(WireModel):
    """One page of observations."""

    observations: list[Observation]
    next_cursor: str | None = None


class ObservationRecallParams(_TenantGuarded):
    """``memory/observations/recall``: observations ranked by relevance scaled by weight."""

    query: str | None = None
    embedding: Embedding | None = Field(default=None, min_length=1)
    limit: Count | None = None
    classifications: list[str] | None = None
    tags: list[str] | None = None
    include_transferred: bool = True
    owner: str | None = None


class ObservationRecallResult(WireModel):
    """Observations best first, each with its ``score``."""

    observations: list[Observation]


class ObservationUpdateParams(_TenantGuarded):
    """``memory/observations/update``: edit one observation (audited)."""

    id: str = Field(min_length=1)
    content: str | None = Field(default=None, min_length=1)
    type: str | None = Field(default=None, min_length=1, max_length=128)
    classification: str | None = Field(default=None, min_length=1, max_length=64)
    weight: _Weight | None = None
    tags: list[_Tag] | None = Field(default=None, max_length=64)
    file_path: str | None = Field(default=None, max_length=4096)
    owner: str | None = None


class ObservationUpdateResult(WireModel):
    """The observation after the edit."""

    observation: Observation


class ObservationDeleteParams(_TenantGuarded):
    """``memory/observations/delete``: hard-delete observations (audited)."""

    ids: list[str] = Field(min_length=1)
    owner: str | None = None


class ObservationDeleteResult(WireModel):
    """How many observations were deleted."""

    deleted: int = Field(ge=0)


class ObservationAuditParams(_TenantGuarded):
    """``memory/observations/audit``: the append-only log of changes, newest first."""

    agent: str | None = None
    observation_id: str | None = None
    since: _Since | None = None
    until: _Since | None = None
    limit: Count | None = None
    cursor: str | None = Field(default=None, max_length=64)
    owner: str | None = None


class AuditEntry(WireModel):
    """One change: who, when, what, and the observation before and after."""

    seq: int
    at: Timestamp
    actor: str
    action: str
    observation_id: str
    org: str | None = None
    project: str | None = None
    agent: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class ObservationAuditResult(WireModel):
    """One page of the log."""

    entries: list[AuditEntry]
    next_cursor: str | None = None


def _specs() -> dict[str, MethodSpec]:
    specs = (
        MethodSpec(
            "memory/observations/remember",
            OBSERVATIONS_EXTENSION,
            ObservationRememberParams,
            ObservationRememberResult,
            False,
        ),
        MethodSpec(
            "memory/observations/list",
            OBSERVATIONS_EXTENSION,
            ObservationListParams,
            ObservationListResult,
            True,
        ),
        MethodSpec(
            "memory/observations/recall",
            OBSERVATIONS_EXTENSION,
            ObservationRecallParams,
            ObservationRecallResult,
            True,
        ),
        MethodSpec(
            "memory/observations/update",
            OBSERVATIONS_EXTENSION,
            ObservationUpdateParams,
            ObservationUpdateResult,
            False,
        ),
        MethodSpec(
            "memory/observations/delete",
            OBSERVATIONS_EXTENSION,
            ObservationDeleteParams,
            ObservationDeleteResult,
            True,
        ),
        MethodSpec(
            "memory/observations/audit",
            OBSERVATIONS_EXTENSION,
            ObservationAuditParams,
            ObservationAuditResult,
            True,
        ),
    )
    return {spec.name: spec for spec in specs}


OBSERVATION_METHODS = _specs()
"""The extension's methods by wire name (a ``MethodSpec`` each, capability ``observations``)."""
