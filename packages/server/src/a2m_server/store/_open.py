"""Choosing a backend from where the data lives: a ``postgresql://`` URL opens
:class:`~a2m_server.store.postgres.PostgresStore`, anything else is a SQLite file (or
``:memory:``)."""

from __future__ import annotations

from pathlib import Path

from ._fts import POSTING_BUDGET
from .base import Store, StoreError
from .sqlite import SQLiteStore

__all__ = ["is_postgres_url", "open_store"]


def is_postgres_url(db: object) -> bool:
    """Whether ``db`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(("postgresql://", "postgres://"))


def open_store(
    db: str | Path = ":memory:",
    *,
    metric: str = "cosine",
    event_retention: int = 10_000,
    vector_index: str = "exact",
    posting_budget: int | None = POSTING_BUDGET,
) -> Store:
    """The store at ``db``. ``vector_index`` (``exact`` or ``hnsw``) applies to
    PostgreSQL; SQLite always searches its vectors exactly. ``posting_budget`` bounds the
    matches one lexical query ranks (None ranks every match: exact BM25)."""
    if vector_index not in ("exact", "hnsw"):
        raise ValueError(f"vector_index must be exact or hnsw, not {vector_index!r}")
    if is_postgres_url(db):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:
            raise StoreError(
                f"a PostgreSQL store needs psycopg: pip install 'a2m-server[postgres]' ({exc})"
            ) from None
        return PostgresStore(
            str(db),
            metric=metric,
            event_retention=event_retention,
            vector_index="hnsw" if vector_index == "hnsw" else "exact",
            posting_budget=posting_budget,
        )
    if vector_index == "hnsw":
        raise ValueError("--vector-index hnsw needs a PostgreSQL store (--db postgresql://...)")
    return SQLiteStore(
        db, metric=metric, event_retention=event_retention, posting_budget=posting_budget
    )
