"""The records and the peers the storage tests compare: A2MStorage over HTTP beside
CrewAI's own default storage (LanceDB, on a temporary folder)."""

from __future__ import annotations

from datetime import datetime, timedelta

from crew_support import embed_one
from crewai.memory.types import MemoryRecord

BASE = datetime(2026, 1, 1, 12, 0, 0)

# (content, scope, categories, metadata, days after BASE); no two contents equally close
# to the queries below, and no scope that is a string prefix of another's segment.
ROWS = [
    (
        "the deploy key rotates every ninety days",
        "/crew/research",
        ["ops", "security"],
        {"team": "blue"},
        0,
    ),
    (
        "the staging database is restored each night",
        "/crew/research/agent/analyst",
        ["ops"],
        {"team": "red"},
        1,
    ),
    ("customers prefer the annual plan", "/crew/sales", ["market"], {"team": "blue"}, 2),
    ("the deploy pipeline runs on every merge", "/crew/ops", ["ops"], {"team": "green"}, 3),
    (
        "quarterly revenue grew by twelve percent",
        "/finance",
        ["market", "numbers"],
        {"team": "blue", "year": 2026},
        4,
    ),
]


def records() -> list[MemoryRecord]:
    """Fresh copies of the test records (same ids every call within a test)."""
    return [
        MemoryRecord(
            id=f"rec-{index}",
            content=content,
            scope=scope,
            categories=list(categories),
            metadata=dict(metadata),
            importance=0.5,
            created_at=BASE + timedelta(days=days),
            last_accessed=BASE + timedelta(days=days),
            embedding=embed_one(content),
        )
        for index, (content, scope, categories, metadata, days) in enumerate(ROWS)
    ]


def ids(pairs: list[tuple[MemoryRecord, float]]) -> list[str]:
    return [record.id for record, _ in pairs]


def without_vectors(record: MemoryRecord | None) -> dict[str, object] | None:
    """A record as compared across backends (LanceDB keeps vectors as float32)."""
    return None if record is None else record.model_dump()
