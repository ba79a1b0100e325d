"""The remember tool for LangChain and LangGraph agents (docs/observations.md §8): the seed's
``af_memory_remember`` as a ``StructuredTool``, writing through an A2M adapter whose client
and agent fix the tenant; the model supplies only the observation."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m.observation_tool import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    RememberArguments,
    aremember,
    remember,
)

__all__ = ["remember_tool"]


def remember_tool(adapter: A2MAdapter | AsyncA2MAdapter) -> StructuredTool:
    """``af_memory_remember`` for a LangChain or LangGraph agent. Each call of the tool is
    one ``memory/observations/remember``. A sync adapter serves both ``invoke`` and
    ``ainvoke`` (the latter in a worker thread); an async one serves ``ainvoke`` only."""
    if isinstance(adapter, AsyncA2MAdapter):
        bound_async = adapter

        async def run_async(**values: Any) -> str:
            return await aremember(bound_async, **values)

        return StructuredTool.from_function(
            coroutine=run_async,
            name=TOOL_NAME,
            description=TOOL_DESCRIPTION,
            args_schema=RememberArguments,
        )
    bound = adapter

    def run(**values: Any) -> str:
        return remember(bound, **values)

    return StructuredTool.from_function(
        func=run, name=TOOL_NAME, description=TOOL_DESCRIPTION, args_schema=RememberArguments
    )
