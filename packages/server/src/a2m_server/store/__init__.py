"""Storage backends behind one interface (:class:`Store`)."""

from .base import (
    EventRow,
    NewRecord,
    RecordFilter,
    Scope,
    SessionStats,
    Store,
    StoredRecord,
    StoreReader,
    StoreWriter,
)
from .sqlite import SQLiteStore

__all__ = [
    "EventRow",
    "NewRecord",
    "RecordFilter",
    "SQLiteStore",
    "Scope",
    "SessionStats",
    "Store",
    "StoreReader",
    "StoreWriter",
    "StoredRecord",
]
