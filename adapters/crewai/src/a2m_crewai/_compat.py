"""Refuse, with the versions that work, a CrewAI without the unified memory's
``StorageBackend`` protocol (0.x and 1.x before the rewrite have a different memory)."""

from __future__ import annotations

from importlib import metadata

__all__ = ["SUPPORTED_CREWAI", "check_crewai"]

SUPPORTED_CREWAI = ">=1.15.30,<1.16"
"""The CrewAI releases this adapter is tested against."""


def _installed() -> str:
    try:
        return metadata.version("crewai")
    except metadata.PackageNotFoundError:
        return "none"


def check_crewai() -> None:
    """Raise ``ImportError`` naming the supported versions unless CrewAI's
    ``StorageBackend``, ``MemoryRecord`` and storage factory can be imported."""
    try:
        from crewai.memory.storage.backend import StorageBackend  # noqa: F401
        from crewai.memory.storage.factory import set_memory_storage_factory  # noqa: F401
        from crewai.memory.types import MemoryRecord, ScopeInfo  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"a2m-crewai needs CrewAI {SUPPORTED_CREWAI}, whose unified memory has the "
            f"StorageBackend protocol; the installed crewai is {_installed()}. "
            f'Install a supported release: pip install "crewai{SUPPORTED_CREWAI}"'
        ) from exc
