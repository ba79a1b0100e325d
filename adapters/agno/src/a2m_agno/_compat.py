"""Which Agno this adapter speaks to, and a loud failure for any other."""

from __future__ import annotations

from importlib import metadata

SUPPORTED_AGNO = ">=3.1.10,<4"
"""The Agno versions this adapter is tested against."""

_USER_MEMORY_METHODS = (
    "upsert_user_memory",
    "upsert_memories",
    "get_user_memory",
    "get_user_memories",
    "delete_user_memory",
    "delete_user_memories",
    "clear_memories",
    "get_all_memory_topics",
    "get_user_memory_stats",
)
_VECTOR_METHODS = (
    "create",
    "exists",
    "drop",
    "insert",
    "upsert",
    "search",
    "name_exists",
    "id_exists",
    "content_hash_exists",
    "delete",
    "delete_by_id",
    "delete_by_name",
    "delete_by_metadata",
    "delete_by_content_id",
    "get_supported_search_types",
)


class UnsupportedAgnoError(ImportError):
    """The installed Agno lacks an interface this adapter plugs into."""


def _version() -> str:
    try:
        return metadata.version("agno")
    except metadata.PackageNotFoundError:
        return "not installed"


def _fail(missing: str) -> UnsupportedAgnoError:
    return UnsupportedAgnoError(
        f"a2m-agno supports agno{SUPPORTED_AGNO}; the installed agno ({_version()}) "
        f"lacks {missing}. Install a supported version: pip install 'agno{SUPPORTED_AGNO}'"
    )


def check_agno() -> None:
    """Raise :class:`UnsupportedAgnoError` naming the supported versions unless the
    installed Agno has every database and vector-db method this adapter overrides."""
    try:
        from agno.db.base import AsyncBaseDb, BaseDb
        from agno.db.in_memory import InMemoryDb
        from agno.db.schemas.memory import UserMemory
        from agno.vectordb.base import VectorDb
    except ImportError as exc:
        raise _fail(f"a module the adapter needs ({exc.name or exc})") from exc
    for cls in (BaseDb, AsyncBaseDb, InMemoryDb):
        absent = [name for name in _USER_MEMORY_METHODS if not hasattr(cls, name)]
        if cls is AsyncBaseDb:
            absent = [name for name in absent if name != "upsert_memories"]
        if absent:
            raise _fail(f"{cls.__name__}.{', '.join(absent)}")
    absent = [name for name in _VECTOR_METHODS if not hasattr(VectorDb, name)]
    if absent:
        raise _fail(f"VectorDb.{', '.join(absent)}")
    fields = set(getattr(UserMemory, "__dataclass_fields__", {}))
    wanted = {"memory", "memory_id", "topics", "user_id", "input", "created_at", "updated_at"}
    wanted |= {"feedback", "agent_id", "team_id"}
    if not wanted <= fields:
        raise _fail(f"UserMemory fields {', '.join(sorted(wanted - fields))}")
