"""A real LangGraph agent (``langchain.agents.create_agent``) driven by a scripted,
tool-calling fake chat model, with tools that reach the store through ``ToolRuntime``.

Importable by a child process too, so a test can run part of a conversation, end the
process, and resume the thread in another."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

USER = "user-1"
MEMORIES = ("memories", USER)


class ToolCallingFakeModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts tools (none of LangChain's fakes does)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
        return self


@tool
def save_memory(text: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the user for later conversations."""
    assert runtime.store is not None
    key = f"fact-{len(runtime.store.search(MEMORIES, limit=100))}"
    runtime.store.put(MEMORIES, key, {"text": text})
    return f"saved {key}"


@tool
def recall_memories(query: str, runtime: ToolRuntime) -> str:
    """Look up what is remembered about the user."""
    assert runtime.store is not None
    found = runtime.store.search(MEMORIES, query=query, limit=5)
    return "\n".join(item.value["text"] for item in found) or "nothing remembered"


@tool
async def arecall_memories(query: str, runtime: ToolRuntime) -> str:
    """Look up what is remembered about the user (async store calls)."""
    assert runtime.store is not None
    found = await runtime.store.asearch(MEMORIES, query=query, limit=5)
    return "\n".join(item.value["text"] for item in found) or "nothing remembered"


@tool
async def asave_memory(text: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the user (async store calls)."""
    assert runtime.store is not None
    key = f"fact-{len(await runtime.store.asearch(MEMORIES, limit=100))}"
    await runtime.store.aput(MEMORIES, key, {"text": text})
    return f"saved {key}"


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def script(*turns: AIMessage | str) -> Iterator[AIMessage | str]:
    return iter(turns)


def build_agent(
    turns: Iterator[AIMessage | str],
    *,
    store: BaseStore,
    checkpointer: BaseCheckpointSaver[Any],
    asynchronous: bool = False,
) -> Any:
    tools = [asave_memory, arecall_memories] if asynchronous else [save_memory, recall_memories]
    model = ToolCallingFakeModel(messages=turns)
    return create_agent(model, tools, store=store, checkpointer=checkpointer)
