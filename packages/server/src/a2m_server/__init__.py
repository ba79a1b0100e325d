"""The bundled A2M 0.1 server: every capability on embedded SQLite, in-process, over stdio
and over HTTP.

``A2MServer()`` is a complete in-memory server; ``A2MServer(db="memory.db")`` persists.
``server.connect()`` is the in-process binding; ``a2m-server serve`` / ``a2m-server
stdio`` are the others."""

from .config import DEFAULT_TIERS, LimitsConfig, ServerConfig, TierConfig, load_config
from .errors import ProtocolError
from .server import A2MServer, Connection, NotificationHandler, Transport
from .store import SQLiteStore, Store

__all__ = [
    "DEFAULT_TIERS",
    "A2MServer",
    "Connection",
    "LimitsConfig",
    "NotificationHandler",
    "ProtocolError",
    "SQLiteStore",
    "ServerConfig",
    "Store",
    "TierConfig",
    "Transport",
    "load_config",
]

__version__ = "0.1.0"
