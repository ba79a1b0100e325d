"""A2M memory for AutoGen: an autogen_core Memory that teams share."""

from __future__ import annotations

__all__: list[str] = []
