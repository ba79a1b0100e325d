"""What the host needs to know of the A2M server, read once from ``memory/describe``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from a2m import DescribeResult

__all__ = ["Layout"]


@dataclass(frozen=True)
class Layout:
    """What the host needs to know of the server, from ``memory/describe``."""

    fields: frozenset[str]
    tier_for_kind: Mapping[str, str]
    kind_of_tier: Mapping[str, str]
    max_recall_limit: int
    """The most records one read asks for: the server's ``max_recall_limit``, or 1,000
    where it declares none."""
    recall_limit_declared: bool
    """Whether the server declares ``max_recall_limit``; one that does not returns a whole
    timeline asked for with no ``limit`` (spec §4.4)."""
    max_records_per_call: int
    max_content_length: int | None
    cursor: bool
    """``memory/timeline`` pages by keyset cursor (describe ``timeline.cursor``)."""
    sessions: bool
    scopes: bool

    @classmethod
    def of(cls, described: DescribeResult) -> Layout:
        capabilities = set(described.capabilities)
        tiers = described.tiers or [] if "tiers" in capabilities else []
        kinds = {tier.name: tier.kind for tier in tiers if tier.kind}
        first: dict[str, str] = {}
        for name, kind in kinds.items():
            first.setdefault(kind, name)
        fields = {
            name
            for name, capability in (
                ("owner", "scopes"),
                ("session", "sessions"),
                ("salience", "salience"),
                ("embedding", "embeddings"),
                ("key", "keys"),
            )
            if capability in capabilities
        }
        limits = described.limits
        return cls(
            fields=frozenset(fields),
            tier_for_kind=first,
            kind_of_tier=kinds,
            max_recall_limit=(limits.max_recall_limit if limits else None) or 1000,
            recall_limit_declared=bool(limits and limits.max_recall_limit),
            max_records_per_call=(limits.max_records_per_call if limits else None) or 100,
            max_content_length=limits.max_content_length if limits else None,
            cursor=described.timeline is not None and bool(described.timeline.cursor),
            sessions="sessions" in capabilities,
            scopes="scopes" in capabilities,
        )
