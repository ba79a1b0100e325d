"""What ``memory/describe`` reports (§4.1): capabilities, methods, limits, tiers and the
objects each optional capability adds."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import WireModel

__all__ = [
    "CAPABILITIES",
    "Capability",
    "DescribeResult",
    "EmbeddingsInfo",
    "EventsInfo",
    "Limits",
    "ObservationsInfo",
    "PromptInfo",
    "SummarizeInfo",
    "TierInfo",
    "TierKind",
]

Capability = Literal[
    "core",
    "tiers",
    "salience",
    "scopes",
    "sessions",
    "embeddings",
    "keys",
    "external",
    "events",
    "summarize",
    "prompt",
]
"""A capability name of A2M 0.1."""

CAPABILITIES: tuple[str, ...] = (
    "core",
    "tiers",
    "salience",
    "scopes",
    "sessions",
    "keys",
    "embeddings",
    "external",
    "events",
    "summarize",
    "prompt",
)
"""Every capability A2M 0.1 defines, ``core`` first."""

TierKind = Literal["working", "episodic", "semantic", "procedural"]
"""What a tier is for, independently of its name (§4.7)."""


class TierInfo(WireModel):
    """One tier of the server's layout, with how many records it holds."""

    name: str
    """The tier's name, used in ``tier`` params."""
    count: int = Field(ge=0)
    """Records in the tier now (scoped to ``owner`` when describe was given one)."""
    kind: str | None = None
    """working, episodic, semantic or procedural."""
    capacity: int | None = Field(default=None, ge=0)
    """Records the tier holds before it spills; 0 means unbounded."""
    spill_to: str | None = None
    """Where records go under capacity pressure; null means they are dropped."""
    promote_to: str | None = None
    """Where records go once they have earned it."""
    promote_after: int | None = Field(default=None, ge=0)
    """Recalls after which a record is promoted to ``promote_to``."""
    half_life: float | None = Field(default=None, ge=0)
    """Seconds after which recency counts half in ranking."""
    shared: bool | None = None
    """Records here are visible to every owner."""
    per_session: bool | None = None
    """Capacity applies within each session rather than across the tier."""


class Limits(WireModel):
    """Limits a server enforces; a client should respect them."""

    max_records_per_call: int | None = Field(default=None, ge=1)
    """Most records one ``memory/remember`` may carry."""
    max_recall_limit: int | None = Field(default=None, ge=1)
    """Largest ``limit`` accepted by recall and timeline."""
    max_content_length: int | None = Field(default=None, ge=1)
    """Longest ``content``, in characters."""


class EventsInfo(WireModel):
    """The ``events`` object (§4.13)."""

    push: bool
    """Whether ``memory/events/subscribe`` works on this connection."""


class SummarizeInfo(WireModel):
    """The ``summarize`` object (§4.15)."""

    model: str | None
    """What writes the summary, or null when no model is involved."""


class PromptInfo(WireModel):
    """The ``prompt`` object (§4.16)."""

    styles: list[str]
    """Styles the server renders."""
    methods: list[str]
    """Rendering methods offered; always includes template."""
    model: str | None = None
    """What method ``model`` would use."""


class EmbeddingsInfo(WireModel):
    """The ``embeddings`` object (§3.7)."""

    dimensions: int | None = Field(default=None, ge=1)
    """Vector width, fixed by the first vector stored; null until then."""
    metric: Literal["cosine", "dot", "l2"] | None = None
    """How vectors are compared in this store today."""
    model: str | None = None
    """The embedding model, when the server knows it."""
    metrics: list[str] | None = None
    """Every comparison this store could be configured for."""


class TimelineInfo(WireModel):
    """The ``timeline`` object: extensions of ``memory/timeline`` this server offers. An
    addition to 0.1 that old clients ignore (§2); a client sends ``cursor`` only to a
    server declaring ``cursor: true``, since any other would ignore it (§2) and answer
    with the newest records instead."""

    cursor: bool = False
    """``memory/timeline`` pages forward by keyset cursor (``cursor`` / ``next_cursor``)."""


class RecallInfo(WireModel):
    """The ``recall`` object: extensions of ``memory/recall`` this server offers. An
    addition to 0.1 that old clients ignore (§2); a client sends ``rank`` only to a server
    declaring the order it names, since any other would ignore it (§2) and blend."""

    rank: list[str] = Field(default_factory=lambda: ["blend"])
    """The orders ``rank`` may name: ``blend`` (§5, the default) and ``similarity`` (by the
    store's metric to ``embedding`` alone)."""


class WhereInfo(WireModel):
    """The ``where`` object: the filter language beyond §5.2's equality this server runs
    (:mod:`a2m_types.filters`). An addition to 0.1 that old clients ignore (§2)."""

    operators: list[str] = Field(default_factory=list)
    """Operators accepted in an operator object, e.g. ``$gte``; nested ``metadata.``
    paths come with them."""


class ObservationsInfo(WireModel):
    """The ``observations`` object of describe: the extension is offered."""

    methods: list[str]
    classifications: list[str]
    max_weight: float
    transfer_multiplier: float
    transfers: bool = False
    """Whether the operator has granted any project another's observations: without a
    grant, ``recall`` and ``list`` never return a transferred one, and a client that only
    wants those need not ask."""


class DescribeResult(WireModel):
    """The result of ``memory/describe``."""

    protocol: str
    """The version the server speaks, e.g. ``a2m/0.1``."""
    name: str
    """Human-readable server name."""
    capabilities: list[str]
    """Capabilities declared; always includes ``core``."""
    methods: list[str]
    """Every method the server accepts."""
    limits: Limits | None = None
    """Enforced limits."""
    tiers: list[TierInfo] | None = None
    """The tier layout, with counts (``tiers``)."""
    events: EventsInfo | None = None
    """Present with ``events``."""
    summarize: SummarizeInfo | None = None
    """Present with ``summarize``."""
    prompt: PromptInfo | None = None
    """Present with ``prompt``."""
    embeddings: EmbeddingsInfo | None = None
    """Present with ``embeddings``."""
    recall: RecallInfo | None = None
    """Extensions of ``memory/recall`` (ranking by similarity alone), when offered."""
    timeline: TimelineInfo | None = None
    """Extensions of ``memory/timeline`` (keyset paging), when offered."""
    where: WhereInfo | None = None
    """Filter operators beyond equality, when offered."""
    observations: ObservationsInfo | None = None
    """The ``observations`` extension (``docs/observations.md``), when offered."""
    owner: str | None = None
    """Whom this connection's calls act as, with ``scopes`` (an extension of the bundled
    server): the authenticated principal, else the ``owner`` asked for; ``None`` when
    unowned or not reported (``model_fields_set`` tells which)."""
