"""A2M memory for CrewAI: a StorageBackend so crews share state."""

from __future__ import annotations

__all__: list[str] = []
