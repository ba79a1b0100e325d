"""The remember tool for Agno agents (docs/observations.md §8): the seed's
``af_memory_remember`` as an Agno ``Function``, writing through an A2M adapter whose client
and agent fix the tenant; the model supplies only the observation."""

from __future__ import annotations

from agno.tools import Function

from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m.observation_tool import TOOL_DESCRIPTION, TOOL_NAME, aremember, remember

__all__ = ["remember_tool"]


def remember_tool(adapter: A2MAdapter | AsyncA2MAdapter) -> Function:
    """``af_memory_remember`` for an Agno agent: each call is one
    ``memory/observations/remember``, async with an async adapter."""
    if isinstance(adapter, AsyncA2MAdapter):
        bound_async = adapter

        async def af_memory_remember(
            content: str,
            classification: str | None = None,
            filePath: str | None = None,
            tags: list[str] | None = None,
            weight: float = 1.0,
        ) -> str:
            """Persist a durable fact, learning or convention about this project.

            Args:
                content: The durable fact, learning, or convention. Be concise.
                classification: pattern, decision, error, tool-use or convention; default note.
                filePath: The source file or module this observation concerns.
                tags: Free-form tags for filtering.
                weight: Retrieval importance (default 1.0); above 1 for key facts.
            """
            return await aremember(
                bound_async,
                content=content,
                classification=classification,
                filePath=filePath,
                tags=tags,
                weight=weight,
            )

        function = Function.from_callable(af_memory_remember, name=TOOL_NAME)
    else:
        bound = adapter

        def af_memory_remember_sync(
            content: str,
            classification: str | None = None,
            filePath: str | None = None,
            tags: list[str] | None = None,
            weight: float = 1.0,
        ) -> str:
            """Persist a durable fact, learning or convention about this project.

            Args:
                content: The durable fact, learning, or convention. Be concise.
                classification: pattern, decision, error, tool-use or convention; default note.
                filePath: The source file or module this observation concerns.
                tags: Free-form tags for filtering.
                weight: Retrieval importance (default 1.0); above 1 for key facts.
            """
            return remember(
                bound,
                content=content,
                classification=classification,
                filePath=filePath,
                tags=tags,
                weight=weight,
            )

        function = Function.from_callable(af_memory_remember_sync, name=TOOL_NAME)
    function.description = TOOL_DESCRIPTION
    return function
