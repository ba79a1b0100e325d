"""Long-term memory beside the session: function tools an Agents SDK agent calls to recall
from, and write to, the store every framework shares — ``Agent(tools=memory_tools(...))``."""

from __future__ import annotations

import uuid
from typing import Any

from agents import FunctionTool, function_tool

from a2m import AsyncA2MClient, Record
from a2m.adapter_support import DEFAULT_TIMEOUT, ClientSource, memory_lines

from ._items import SOURCE_FRAMEWORK, checked_namespace

__all__ = ["DEFAULT_MEMORY_NAMESPACE", "memory_tools", "recall_text"]

DEFAULT_MEMORY_NAMESPACE = "openai-agents/memory"
"""Where the ``remember`` tool writes when no namespace is given."""


def recall_text(records: list[Record]) -> str:
    """Recalled records as lines a model reads: who wrote each one, and its score."""
    return memory_lines(records) if records else "No memories found."


def memory_tools(
    client: AsyncA2MClient | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    namespace: str = DEFAULT_MEMORY_NAMESPACE,
    agent: str | None = None,
    k: int = 5,
    min_score: float | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[FunctionTool]:
    """The tools ``recall_memory(query, limit)`` and ``remember(content, tags)`` on one
    store. ``recall_memory`` searches every namespace (what any framework wrote) in one
    ``memory/recall``; ``remember`` writes one semantic record in ``namespace`` with
    provenance in one ``memory/remember``. ``client`` stays the caller's; without one, a
    client is opened from ``url`` (``A2M_URL``) on the first call. Nothing touches the
    network here."""
    scope = checked_namespace(namespace)
    source = ClientSource(client, url=url, token=token, timeout=timeout)
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")

    async def recall_memory(query: str, limit: int = k) -> str:
        """Search the long-term memory every agent shares for what is relevant.

        Args:
            query: What to look for, in a few words.
            limit: The most memories to return.
        """
        opened, layout = await source.open()
        wanted = max(1, min(limit, layout.max_recall_limit))
        options: dict[str, Any] = {"limit": wanted}
        if min_score is not None:
            options["min_score"] = min_score
        return recall_text((await opened.recall(query, **options)).records)

    async def remember(content: str, tags: list[str] | None = None) -> str:
        """Save a fact to the long-term memory every agent shares.

        Args:
            content: The fact, as one short self-contained sentence.
            tags: A few words to file it under.
        """
        opened, layout = await source.open()
        metadata: dict[str, Any] = {
            "namespace": scope,
            "type": "semantic",
            "source_framework": SOURCE_FRAMEWORK,
        }
        if agent is not None:
            metadata["source_agent"] = agent
        if tags:
            metadata["tags"] = list(tags)
        record: dict[str, Any] = {"content": content, "role": "memory", "metadata": metadata}
        if layout.supports("keys"):
            record["key"] = f"{scope}/{uuid.uuid4()}"
        tier = layout.tier("semantic")
        if tier is not None:
            record["tier"] = tier
        if agent is not None and layout.supports("scopes"):
            record["owner"] = agent
        ids = (await opened.remember(record)).ids
        return f"Remembered (id {ids[0]})."

    return [
        function_tool(recall_memory, name_override="recall_memory"),
        function_tool(remember, name_override="remember"),
    ]
