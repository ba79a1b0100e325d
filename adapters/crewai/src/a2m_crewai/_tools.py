"""The remember tool for CrewAI agents (docs/observations.md §8): the seed's
``af_memory_remember`` as a CrewAI ``BaseTool``, writing through an A2M adapter whose client
and agent fix the tenant; the model supplies only the observation."""

from __future__ import annotations

import asyncio
from typing import Any

from crewai.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m.observation_tool import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    RememberArguments,
    aremember,
    remember,
)

__all__ = ["A2MRememberTool", "remember_tool"]


class A2MRememberTool(BaseTool):
    """``af_memory_remember``: one ``memory/observations/remember`` per use. ``_run`` needs a
    sync adapter, ``_arun`` an async one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = TOOL_NAME
    description: str = TOOL_DESCRIPTION
    args_schema: type[BaseModel] = RememberArguments
    adapter: Any = Field(exclude=True)
    """An :class:`~a2m.adapter.A2MAdapter` or :class:`~a2m.adapter.AsyncA2MAdapter`."""

    def _run(self, **values: Any) -> str:
        if not isinstance(self.adapter, A2MAdapter):
            raise TypeError("this tool holds an async adapter; CrewAI must use it asynchronously")
        return remember(self.adapter, **values)

    async def _arun(self, **values: Any) -> str:
        if isinstance(self.adapter, AsyncA2MAdapter):
            return await aremember(self.adapter, **values)
        sync_adapter = self.adapter
        return await asyncio.to_thread(remember, sync_adapter, **values)


def remember_tool(adapter: A2MAdapter | AsyncA2MAdapter) -> A2MRememberTool:
    """``af_memory_remember`` for a CrewAI agent, over ``adapter``."""
    return A2MRememberTool(adapter=adapter)
