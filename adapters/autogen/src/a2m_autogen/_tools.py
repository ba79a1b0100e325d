"""The remember tool for AutoGen agents (docs/observations.md §8): the seed's
``af_memory_remember`` as a ``FunctionTool``, writing through an A2M adapter whose client and
agent fix the tenant; the model supplies only the observation."""

from __future__ import annotations

from typing import Annotated

from autogen_core.tools import FunctionTool

from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m.observation_tool import TOOL_DESCRIPTION, TOOL_NAME, aremember, remember

__all__ = ["remember_tool"]

_Content = Annotated[str, "The durable fact, learning, or convention. Be concise."]
_Classification = Annotated[
    str | None, "pattern, decision, error, tool-use or convention; defaults to note."
]
_FilePath = Annotated[str | None, "The source file or module this observation concerns."]
_Tags = Annotated[list[str] | None, "Free-form tags for filtering."]
_Weight = Annotated[float, "Retrieval importance (default 1.0); above 1 for key facts."]


def remember_tool(adapter: A2MAdapter | AsyncA2MAdapter) -> FunctionTool:
    """``af_memory_remember`` for an AutoGen agent: each call is one
    ``memory/observations/remember``. An async adapter runs on the agent's loop; a sync one
    runs in AutoGen's worker thread."""
    if isinstance(adapter, AsyncA2MAdapter):
        bound_async = adapter

        async def af_memory_remember(
            content: _Content,
            classification: _Classification = None,
            filePath: _FilePath = None,
            tags: _Tags = None,
            weight: _Weight = 1.0,
        ) -> str:
            return await aremember(
                bound_async,
                content=content,
                classification=classification,
                filePath=filePath,
                tags=tags,
                weight=weight,
            )

        return FunctionTool(af_memory_remember, TOOL_DESCRIPTION, name=TOOL_NAME)
    bound = adapter

    def af_memory_remember_sync(
        content: _Content,
        classification: _Classification = None,
        filePath: _FilePath = None,
        tags: _Tags = None,
        weight: _Weight = 1.0,
    ) -> str:
        return remember(
            bound,
            content=content,
            classification=classification,
            filePath=filePath,
            tags=tags,
            weight=weight,
        )

    return FunctionTool(af_memory_remember_sync, TOOL_DESCRIPTION, name=TOOL_NAME)
