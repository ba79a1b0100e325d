"""What every framework's remember tool shares (docs/observations.md §8): the seed's
``af_memory_remember`` name, description and parameters, and the one call that runs it
through an adapter. The tenant is the adapter's — its client's principal, or its agent on a
local transport — never a parameter the model sees or sets.

A framework adapter wraps :func:`remember` / :func:`aremember` in its own tool type; the
model gets a one-line answer, and input the server refuses (empty or oversized content, a
weight out of range) comes back as text too, so the model can correct itself: nothing was
written. Any other error (no extension, a refused scope) is raised for the caller."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a2m_types.observations import ObservationRememberResult

from .adapter import A2MAdapter, AsyncA2MAdapter
from .errors import InvalidParams, QuotaExceeded

__all__ = [
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "RememberArguments",
    "aremember",
    "remember",
]

TOOL_NAME = "af_memory_remember"
"""The tool's name, as the seed names it."""

TOOL_DESCRIPTION = (
    "Persist a durable fact, learning or convention about this project so future sessions "
    "know it without rediscovering it. Be concise. Writing a fact already remembered raises "
    "its importance instead of storing a copy."
)
"""What the model reads about the tool."""


class RememberArguments(BaseModel):
    """The tool's parameters, spelled as the seed spells them (``filePath``)."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(description="The durable fact, learning, or convention. Be concise.")
    classification: str | None = Field(
        default=None,
        description="pattern, decision, error, tool-use or convention; defaults to note.",
    )
    filePath: str | None = Field(
        default=None, description="The source file or module this observation concerns."
    )
    tags: list[str] | None = Field(default=None, description="Free-form tags for filtering.")
    weight: float = Field(
        default=1.0,
        description="Retrieval importance (default 1.0); above 1 for key facts to surface first.",
    )


def _arguments(values: dict[str, Any]) -> RememberArguments | str:
    try:
        return RememberArguments.model_validate(values)
    except ValidationError as exc:
        return f"Not remembered: invalid arguments ({exc.error_count()} problems: {exc})"


def _answer(result: ObservationRememberResult) -> str:
    if result.deduplicated:
        return f"Already remembered as {result.id}; its weight is now {result.weight:g}."
    return f"Remembered as {result.id} with weight {result.weight:g}."


def _call_arguments(arguments: RememberArguments) -> dict[str, Any]:
    return {
        "classification": arguments.classification,
        "file_path": arguments.filePath,
        "tags": arguments.tags,
        "weight": arguments.weight,
    }


def remember(adapter: A2MAdapter, **values: Any) -> str:
    """Run the tool through a sync adapter: one ``memory/observations/remember``."""
    arguments = _arguments(values)
    if isinstance(arguments, str):
        return arguments
    try:
        result = adapter.remember_observation(arguments.content, **_call_arguments(arguments))
    except (InvalidParams, QuotaExceeded) as exc:
        return f"Not remembered: {exc}"
    return _answer(result)


async def aremember(adapter: AsyncA2MAdapter, **values: Any) -> str:
    """Run the tool through an async adapter: one ``memory/observations/remember``."""
    arguments = _arguments(values)
    if isinstance(arguments, str):
        return arguments
    try:
        result = await adapter.remember_observation(arguments.content, **_call_arguments(arguments))
    except (InvalidParams, QuotaExceeded) as exc:
        return f"Not remembered: {exc}"
    return _answer(result)
