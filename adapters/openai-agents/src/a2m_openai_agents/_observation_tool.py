"""The seed's remember tool for Agents SDK agents (docs/observations.md §8):
``af_memory_remember`` as a function tool, writing an observation through an A2M adapter
whose client and agent fix the tenant; the model supplies only the observation."""

from __future__ import annotations

from agents import FunctionTool, function_tool

from a2m.adapter import AsyncA2MAdapter
from a2m.observation_tool import TOOL_DESCRIPTION, TOOL_NAME, aremember

__all__ = ["remember_tool"]


def remember_tool(adapter: AsyncA2MAdapter) -> FunctionTool:
    """``af_memory_remember`` for ``Agent(tools=[...])``: each call is one
    ``memory/observations/remember`` — an identical fact raises the stored one's weight
    instead of adding a copy. The tenant is the adapter's (its client's principal, or its
    agent on a local transport), never an argument the model sets; input the server
    refuses comes back to the model as text, nothing written."""

    async def af_memory_remember(
        content: str,
        classification: str | None = None,
        filePath: str | None = None,
        tags: list[str] | None = None,
        weight: float = 1.0,
    ) -> str:
        """Persist a durable fact, learning or convention.

        Args:
            content: The durable fact, learning, or convention. Be concise.
            classification: pattern, decision, error, tool-use or convention; defaults to note.
            filePath: The source file or module this observation concerns.
            tags: Free-form tags for filtering.
            weight: Retrieval importance (default 1.0); above 1 for key facts to surface first.
        """
        return await aremember(
            adapter,
            content=content,
            classification=classification,
            filePath=filePath,
            tags=tags,
            weight=weight,
        )

    return function_tool(
        af_memory_remember,
        name_override=TOOL_NAME,
        description_override=TOOL_DESCRIPTION,
        strict_mode=False,
    )
