"""Values LangChain accepts (in a ``Document``'s metadata, a message's
``additional_kwargs``) but A2M cannot carry exactly are refused with
``a2m.adapter.UnstorableValue`` (an ``A2MError`` and a ``ValueError``) naming where they
are, before anything is written: never a bare ``RecursionError``, a serializer's own
error or a silent change."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_support import WordEmbeddings

from a2m import A2MClient, A2MError
from a2m.adapter import UnstorableValue
from a2m_langchain import A2MChatMessageHistory, A2MVectorStore
from a2m_testing.hostile import HOSTILE_VALUES

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


@pytest.mark.parametrize("label", list(HOSTILE_VALUES))
def test_a_document_a2m_cannot_carry_is_refused_unwritten(client: A2MClient, label: str) -> None:
    store = A2MVectorStore(WordEmbeddings(), client=client)
    documents = [Document("fine"), Document("hostile", metadata={"k": HOSTILE_VALUES[label]})]
    with pytest.raises(UnstorableValue, match="meta") as caught:
        store.add_documents(documents, ids=["a", "b"])
    assert isinstance(caught.value, A2MError)
    assert store.get_by_ids(["a", "b"]) == []


@pytest.mark.parametrize("label", list(HOSTILE_VALUES))
def test_a_message_a2m_cannot_carry_is_refused_unwritten(client: A2MClient, label: str) -> None:
    history = A2MChatMessageHistory("hostile", client)
    messages = [
        HumanMessage("hi"),
        AIMessage("hello", additional_kwargs={"k": HOSTILE_VALUES[label]}),
    ]
    with pytest.raises(UnstorableValue, match=r"messages\[1\]"):
        history.add_messages(messages)
    assert history.messages == []
