"""A2M memory for Agno: a database whose user memories and knowledge live in A2M."""

from __future__ import annotations

__all__: list[str] = []
