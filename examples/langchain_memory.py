"""LangChain on A2M in a minute: a classic chain remembering a conversation with A2MMemory,
a chat history behind RunnableWithMessageHistory, and a retriever finding what another
framework wrote — all on one store.

Talks to the server at ``A2M_URL`` when set; otherwise starts a throw-away in-process
server. The chat model is LangChain's own fake, so it runs offline as it is:

    uv run python examples/langchain_memory.py
"""

from __future__ import annotations

import os
import warnings

from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.history import RunnableWithMessageHistory

from a2m import A2MClient
from a2m.adapter import A2MAdapter
from a2m_langchain import A2MChatMessageHistory, A2MMemory, A2MRetriever
from a2m_server import A2MServer

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
# ConversationChain and RunnableWithMessageHistory are deprecated in LangChain 1.x, and
# still what a great many applications run.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def classic_chain(memory: A2MClient) -> None:
    from langchain_classic.chains import ConversationChain

    model = FakeListChatModel(responses=["Nice to meet you, Ada.", "You live in Lyon."])
    chain = ConversationChain(
        llm=model, memory=A2MMemory(client=memory, session_id="conversation-1")
    )
    chain.invoke({"input": "I am Ada and I live in Lyon."})
    chain.invoke({"input": "Where do I live?"})
    # A new memory object — as a new process would build — sees the same conversation.
    again = A2MMemory(client=memory, session_id="conversation-1", k=1)
    print("A2MMemory, last turn:")
    print("  " + again.load_memory_variables({})["history"].replace("\n", "\n  "))


def chat_history(memory: A2MClient) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | FakeListChatModel(responses=["Paris.", "About two million."]),
        lambda session_id: A2MChatMessageHistory(session_id, memory),
        input_messages_key="question",
        history_messages_key="history",
    )
    config: RunnableConfig = {"configurable": {"session_id": "conversation-2"}}
    chain.invoke({"question": "Capital of France?"}, config)
    chain.invoke({"question": "How many people live there?"}, config)
    print("A2MChatMessageHistory:")
    for message in A2MChatMessageHistory("conversation-2", memory).messages:
        print(f"  {message.type}: {message.text}")


def across_frameworks(memory: A2MClient) -> None:
    crew = A2MAdapter(memory, "crew/research", source_framework="crewai", agent="researcher")
    crew.write("lyon-weather", "semantic", "Lyon has hot summers and cold winters.")
    print("A2MRetriever, 'Lyon summers':")
    for document in A2MRetriever(client=memory, k=1).invoke("Lyon summers"):
        source = document.metadata["source_framework"]
        print(f"  {document.page_content}  (from {source}, {document.metadata['key']})")


def run(memory: A2MClient) -> None:
    classic_chain(memory)
    chat_history(memory)
    across_frameworks(memory)


def main() -> None:
    url = os.environ.get("A2M_URL")
    if url:
        with A2MClient(url) as memory:
            run(memory)
    else:
        with A2MServer() as server, A2MClient.in_process(server) as memory:
            run(memory)


if __name__ == "__main__":
    main()
