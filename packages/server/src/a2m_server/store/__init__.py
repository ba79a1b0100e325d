"""Storage backends behind one interface (:class:`Store`): embedded SQLite, and
PostgreSQL with pgvector (:mod:`a2m_server.store.postgres`, needs ``a2m-server[postgres]``)."""

from ._json_text import dump_json
from ._open import is_postgres_url, open_store
from .base import (
    AgentCount,
    EventRow,
    LexicalHit,
    NewRecord,
    RecordFilter,
    Scope,
    SessionStats,
    Store,
    StoredRecord,
    StoreError,
    StoreReader,
    StoreWriter,
)
from .sqlite import SQLiteStore

__all__ = [
    "AgentCount",
    "EventRow",
    "LexicalHit",
    "NewRecord",
    "RecordFilter",
    "SQLiteStore",
    "Scope",
    "SessionStats",
    "Store",
    "StoreError",
    "StoreReader",
    "StoreWriter",
    "StoredRecord",
    "dump_json",
    "is_postgres_url",
    "open_store",
]
