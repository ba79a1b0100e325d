"""Server configuration: name, declared capabilities, tier layout, limits and policies.

Loaded from a TOML file (``a2m-server serve --config FILE``) or built in code; every
value has a default that makes a useful local server."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from a2m_types import CAPABILITIES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_TIERS",
    "LimitsConfig",
    "Metric",
    "ObservationsConfig",
    "ServerConfig",
    "TierConfig",
    "TransferGrant",
    "load_config",
]

Metric = Literal["cosine", "dot", "l2"]
TIER_KINDS = ("working", "episodic", "semantic", "procedural")


@dataclass(frozen=True)
class TierConfig:
    """One tier: what it is for, how much it holds, and where its records go next."""

    name: str
    kind: str | None = None
    capacity: int = 0
    """Records held before spilling; 0 means unbounded."""
    spill_to: str | None = None
    """Destination under capacity pressure; None drops what no longer fits."""
    promote_to: str | None = None
    """Destination for records that earned it."""
    promote_after: int | None = None
    """Recalls after which a record is promoted on consolidation."""
    half_life: float | None = None
    """Seconds after which recency counts half in ranking."""
    shared: bool = False
    """Records here are visible to every owner."""
    per_session: bool = False
    """Capacity applies within each session."""


DEFAULT_TIERS: tuple[TierConfig, ...] = (
    TierConfig(
        "working",
        kind="working",
        capacity=64,
        spill_to="episodic",
        half_life=3600.0,
        per_session=True,
    ),
    TierConfig(
        "episodic",
        kind="episodic",
        capacity=0,
        promote_to="semantic",
        promote_after=3,
        half_life=7 * 86400.0,
    ),
    TierConfig("semantic", kind="semantic", capacity=0, half_life=180 * 86400.0, shared=True),
    TierConfig("procedural", kind="procedural", capacity=0, shared=True),
)
"""The four kinds of the spec as a working → episodic → semantic stack, procedural apart."""


@dataclass(frozen=True)
class LimitsConfig:
    """Limits declared from describe and enforced on every call."""

    max_records_per_call: int = 1000
    max_recall_limit: int = 1000
    max_content_length: int = 100_000
    max_metadata_bytes: int = 1_048_576
    """Largest ``metadata``, in bytes of its compact UTF-8 JSON text. Any ``metadata``
    also nests at most :data:`a2m_types.json_values.MAX_JSON_DEPTH` levels, fixed."""


@dataclass(frozen=True)
class TransferGrant:
    """Read-only transfer of one project's observations into another (``org/project`` each)."""

    source: str
    destination: str


@dataclass(frozen=True)
class ObservationsConfig:
    """The ``observations`` extension (``docs/observations.md``): tenancy defaults, the tier
    observations live in, pruning, and operator-written transfer grants (deny by default)."""

    enabled: bool = True
    org: str = "default"
    """The org of principals that do not name one (``org/project/agent``)."""
    project: str = "default"
    """The project of principals that do not name one."""
    tier: str | None = None
    """Where observations live; None: the first tier neither shared nor bounded."""
    capacity: int = 0
    """Observations kept per tenant, lowest weight evicted first; 0 is unbounded."""
    max_weight: float = 1000.0
    """The largest weight a write or an update may set or reach."""
    operators: frozenset[str] = frozenset()
    """Principals that may act on every agent's observations of their project."""
    grants: tuple[TransferGrant, ...] = ()
    transfer_multiplier: float = 0.5
    """Transferred observations rank at their weight times this."""
    stacks: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Tech-stack fingerprints per ``org/project``; a grant between two projects that both
    declare one holds only at Jaccard similarity of at least ``min_stack_similarity``."""
    min_stack_similarity: float = 0.70

    def __post_init__(self) -> None:
        for name in ("org", "project"):
            value = getattr(self, name)
            if not value or "/" in value:
                raise ValueError(f"observations.{name} must be non-empty and hold no '/'")
        if self.capacity < 0:
            raise ValueError("observations.capacity must be 0 (unbounded) or more")
        if not 0 < self.max_weight < float("inf"):
            raise ValueError("observations.max_weight must be a positive finite number")
        if not 0 <= self.transfer_multiplier <= 1:
            raise ValueError("observations.transfer_multiplier must be within [0, 1]")
        if not 0 <= self.min_stack_similarity <= 1:
            raise ValueError("observations.min_stack_similarity must be within [0, 1]")
        for grant in self.grants:
            for end in (grant.source, grant.destination):
                if len(end.split("/")) != 2 or not all(end.split("/")):
                    raise ValueError(f"observations grant {end!r}: expected 'org/project'")

    def grant_holds(self, source: str, destination: str) -> bool:
        """Whether observations of project ``source`` may be read in ``destination``."""
        if source == destination:
            return True
        if not any(g.source == source and g.destination == destination for g in self.grants):
            return False
        a, b = self.stacks.get(source), self.stacks.get(destination)
        if not a or not b:
            return True
        return len(a & b) / len(a | b) >= self.min_stack_similarity

    def sources_for(self, destination: str) -> list[str]:
        """The projects whose observations ``destination`` may read, its own first."""
        granted = sorted(
            {g.source for g in self.grants if g.destination == destination} - {destination}
        )
        return [destination, *(s for s in granted if self.grant_holds(s, destination))]


@dataclass(frozen=True)
class ServerConfig:
    """Everything that shapes a server's behaviour, apart from where its data lives."""

    name: str = "a2m-server"
    capabilities: frozenset[str] = frozenset(CAPABILITIES)
    tiers: tuple[TierConfig, ...] = DEFAULT_TIERS
    default_tier: str | None = None
    """Where records without a tier go; None means the first tier of the layout."""
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    read_only: bool = False
    metric: Metric = "cosine"
    embedding_model: str | None = None
    default_recall_limit: int = 10
    event_retention: int = 10_000
    """Events kept in the log; older ones are pruned and their cursors get ``reset``."""
    push: bool = True
    """Offer push on transports that can carry it."""
    summarize_limit: int = 100
    """Most source records one summarize call reads."""
    reinforce_amount: float = 1.0
    """Salience added by reinforce when no amount is given."""
    timeline_cursor: bool = True
    """Page ``memory/timeline`` by keyset cursor (declared in describe as
    ``timeline.cursor``); off, the server answers as a plain 0.1 server, ignoring it."""
    declare_recall_limit: bool = True
    """Declare ``limits.max_recall_limit`` in describe and hold reads to it; off, the
    server declares no such limit and answers every ``limit`` asked (``0`` or none on a
    timeline: every record), as a plain 0.1 server may."""
    where_operators: bool = True
    """Run operator filters and nested ``metadata.`` paths in ``where`` (declared in
    describe as ``where.operators``); off, ``where`` is §5.2 equality only."""
    observations: ObservationsConfig = field(default_factory=ObservationsConfig)
    """The ``observations`` extension: declared in describe unless ``enabled`` is off."""
    exact_ranking: bool = False
    """Rank every lexical match by exact BM25 instead of within the posting budget: the
    same order on stores where some query word is rare, much slower where every query
    word is in a large share of the records (``tests/benchmarks/bench_quality.py``)."""
    embedder: str | None = None
    """The server-side embedder (``wordllama``, ``endpoint``, an entry point's name or
    ``module:factory``; ``a2m_server.embedders``): records and text-only queries that
    arrive without a vector get one. None (the default) embeds nothing."""
    embed_failures: Literal["fail", "lexical"] = "fail"
    """When the embedder fails on a write: ``fail`` refuses the write, naming the
    embedder; ``lexical`` stores the records without vectors and back-fills them."""
    re_embed: bool = False
    """Let an embedder whose model differs from the one that made the store's vectors
    drop them and embed every record again (in the background)."""

    def __post_init__(self) -> None:
        unknown = set(self.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities: {', '.join(sorted(unknown))}")
        if "core" not in self.capabilities:
            object.__setattr__(self, "capabilities", frozenset(self.capabilities) | {"core"})
        _check_tiers(self.tiers, self.default_tier)
        if self.metric not in ("cosine", "dot", "l2"):
            raise ValueError(f"metric must be cosine, dot or l2, not {self.metric!r}")
        for name in (
            "max_records_per_call",
            "max_recall_limit",
            "max_content_length",
            "max_metadata_bytes",
        ):
            if getattr(self.limits, name) < 1:
                raise ValueError(f"limits.{name} must be at least 1")
        if self.event_retention < 1:
            raise ValueError("event_retention must be at least 1")
        if self.embed_failures not in ("fail", "lexical"):
            raise ValueError(f"embed_failures must be fail or lexical, not {self.embed_failures!r}")
        self._check_observation_tier()

    def _check_observation_tier(self) -> None:
        tier = self.observations.tier
        if tier is not None:
            found = self.tier(tier)
            if found is None:
                raise ValueError(f"observations.tier {tier!r} is not a tier of the layout")
            if found.shared:
                raise ValueError(
                    f"observations.tier {tier!r} is shared: every project would read it"
                )

    @property
    def observation_tier(self) -> str:
        """The tier observations are written to (``ObservationsConfig.tier``)."""
        if self.observations.tier is not None:
            return self.observations.tier
        for tier in self.tiers:
            if not tier.shared and tier.capacity == 0:
                return tier.name
        return self.home_tier

    @property
    def home_tier(self) -> str:
        """The tier a record lands in when it names none."""
        return self.default_tier or self.tiers[0].name

    def tier(self, name: str) -> TierConfig | None:
        """The tier called ``name``, if the layout has one."""
        for tier in self.tiers:
            if tier.name == name:
                return tier
        return None

    def with_capabilities(self, capabilities: Iterable[str]) -> ServerConfig:
        """A copy declaring exactly ``capabilities`` (``core`` is always kept)."""
        return replace(self, capabilities=frozenset(capabilities) | {"core"})


def _check_tiers(tiers: tuple[TierConfig, ...], default_tier: str | None) -> None:
    if not tiers:
        raise ValueError("a server needs at least one tier")
    names = [tier.name for tier in tiers]
    if len(set(names)) != len(names):
        raise ValueError(f"tier names must be unique: {names}")
    for tier in tiers:
        if not tier.name:
            raise ValueError("a tier needs a name")
        if tier.kind is not None and tier.kind not in TIER_KINDS:
            raise ValueError(f"tier {tier.name!r}: kind must be one of {', '.join(TIER_KINDS)}")
        if tier.capacity < 0:
            raise ValueError(f"tier {tier.name!r}: capacity must be 0 (unbounded) or more")
        for target in (tier.spill_to, tier.promote_to):
            if target is not None and target not in names:
                raise ValueError(f"tier {tier.name!r} points at unknown tier {target!r}")
            if target == tier.name:
                raise ValueError(f"tier {tier.name!r} cannot spill or promote into itself")
        if tier.promote_after is not None and tier.promote_after < 1:
            raise ValueError(f"tier {tier.name!r}: promote_after must be at least 1")
    # A spill chain that loops would move records round for ever.
    by_name = {tier.name: tier for tier in tiers}
    for tier in tiers:
        seen = {tier.name}
        nxt = tier.spill_to
        while nxt is not None:
            if nxt in seen:
                raise ValueError(f"spill_to forms a cycle through tier {nxt!r}")
            seen.add(nxt)
            nxt = by_name[nxt].spill_to
    if default_tier is not None and default_tier not in names:
        raise ValueError(f"default_tier {default_tier!r} is not a tier of the layout")


def load_config(path: str | Path) -> ServerConfig:
    """Read a TOML configuration file.

    ```toml
    name = "team-memory"
    capabilities = ["core", "tiers", "keys"]   # default: all eleven
    read_only = false
    metric = "cosine"                          # cosine | dot | l2
    default_tier = "working"

    [limits]
    max_records_per_call = 1000

    [[tiers]]
    name = "working"
    kind = "working"
    capacity = 64
    spill_to = "episodic"
    per_session = true
    ```
    """
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    return config_from_mapping(data)


def config_from_mapping(data: Mapping[str, Any]) -> ServerConfig:
    """Build a :class:`ServerConfig` from plain data, naming the key at fault on error."""
    known = set(ServerConfig.__dataclass_fields__)
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown configuration keys: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = dict(data)
    if "capabilities" in values:
        values["capabilities"] = frozenset(values["capabilities"])
    if "limits" in values:
        values["limits"] = LimitsConfig(**values["limits"])
    if "observations" in values:
        values["observations"] = _observations_config(values["observations"])
    if "tiers" in values:
        tier_fields = set(TierConfig.__dataclass_fields__)
        tiers = []
        for entry in values["tiers"]:
            extra = set(entry) - tier_fields
            if extra:
                raise ValueError(f"unknown tier keys: {', '.join(sorted(extra))}")
            tiers.append(TierConfig(**entry))
        values["tiers"] = tuple(tiers)
    return ServerConfig(**values)


def _observations_config(data: Mapping[str, Any]) -> ObservationsConfig:
    known = set(ObservationsConfig.__dataclass_fields__)
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown observations keys: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = dict(data)
    if "operators" in values:
        values["operators"] = frozenset(values["operators"])
    if "grants" in values:
        grants = []
        for entry in values["grants"]:
            if set(entry) != {"source", "destination"}:
                raise ValueError("each observations grant needs exactly source and destination")
            grants.append(TransferGrant(str(entry["source"]), str(entry["destination"])))
        values["grants"] = tuple(grants)
    if "stacks" in values:
        values["stacks"] = {
            str(project): frozenset(str(item).lower() for item in items)
            for project, items in values["stacks"].items()
        }
    return ObservationsConfig(**values)
