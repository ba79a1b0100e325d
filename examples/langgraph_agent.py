"""A LangGraph agent whose long-term memory is an A2M store and whose threads are A2M
sessions: it saves a fact in one thread and recalls it in another.

Talks to the server at ``A2M_URL`` when set; otherwise starts a throw-away in-process
server. The chat model is a scripted fake, so it runs offline as it is:

    uv run python examples/langgraph_agent.py
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from a2m import A2MClient
from a2m_langchain.langgraph import A2MSaver, A2MStore
from a2m_server import A2MServer


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, willing to be given tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


@tool
def save_memory(fact: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the user."""
    assert runtime.store is not None
    runtime.store.put(("users", "ada"), "colour", {"fact": fact})
    return "saved"


@tool
def recall_memories(query: str, runtime: ToolRuntime) -> str:
    """Look up what is remembered about the user."""
    assert runtime.store is not None
    found = runtime.store.search(("users", "ada"), query=query, limit=3)
    return "; ".join(item.value["fact"] for item in found) or "nothing"


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": name}])


def main() -> None:
    url = os.environ.get("A2M_URL")
    client = A2MClient(url) if url else A2MClient.in_process(A2MServer())
    with client:
        model = ScriptedModel(
            messages=iter(
                [
                    call("save_memory", fact="Ada's favourite colour is teal"),
                    "Noted.",
                    call("recall_memories", query="favourite colour"),
                    "Your favourite colour is teal.",
                ]
            )
        )
        agent = create_agent(
            model,
            [save_memory, recall_memories],
            store=A2MStore(client, agent="assistant"),
            checkpointer=A2MSaver(client),
        )
        agent.invoke({"messages": [("user", "I love teal.")]}, {"configurable": {"thread_id": "1"}})
        answer = agent.invoke(
            {"messages": [("user", "What is my favourite colour?")]},
            {"configurable": {"thread_id": "2"}},
        )
        print("thread 2:", answer["messages"][-1].content)
        record = client.recall("favourite colour", limit=1).records[0]
        print(
            "any A2M client sees:",
            record.content,
            "from",
            (record.metadata or {})["source_framework"],
        )


if __name__ == "__main__":
    main()
