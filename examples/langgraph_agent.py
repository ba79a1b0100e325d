"""A LangGraph agent whose long-term memory and threads live in A2M, and what any other
framework sees of them. Offline: a scripted chat model plays the LLM.

    uv run python examples/langgraph_agent.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from a2m import A2MClient
from a2m_langchain.langgraph import A2MSaver, A2MStore
from a2m_server.server import A2MServer


class ScriptedModel(GenericFakeChatModel):
    """Plays back its messages; accepts tools, as a real chat model does."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


@tool
def remember(fact: str, runtime: ToolRuntime) -> str:
    """Keep a fact about the user for later conversations."""
    assert runtime.store is not None
    runtime.store.put(("users", "alice"), "favourite-city", {"text": fact})
    return "remembered"


def main() -> None:
    with A2MServer() as server, A2MClient.in_process(server) as memory:
        model = ScriptedModel(
            messages=iter(
                [
                    AIMessage(
                        "",
                        tool_calls=[
                            {"name": "remember", "args": {"fact": "Alice loves Lyon"}, "id": "1"}
                        ],
                    ),
                    "I'll keep that in mind.",
                ]
            )
        )
        agent = create_agent(
            model,
            [remember],
            store=A2MStore(memory),
            checkpointer=A2MSaver(memory, transcript=True),
        )
        agent.invoke(
            {"messages": [HumanMessage("My favourite city is Lyon.")]},
            {"configurable": {"thread_id": "chat-1"}},
        )

        # Any other framework's agent reads the same store: the fact is an A2M record…
        fact = memory.fetch("users/alice/favourite-city").record
        assert fact is not None
        print(f"fact at {fact.key}: {fact.content}")
        # …and the conversation is a session of readable, role-tagged records.
        for record in memory.timeline(where={"session": "chat-1", "type": "episodic"}).records:
            print(f"  {record.role:>9}: {record.content}")


if __name__ == "__main__":
    main()
