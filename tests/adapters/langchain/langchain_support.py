"""Helpers shared by the LangChain adapter's tests: counting the A2M calls a framework
call makes, and the messages of every LangChain type."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)

from a2m import A2MClient, AsyncA2MClient
from a2m_server.server import A2MServer
from a2m_testing.servers import Servers

BINDINGS = ["in-process", "http", "rest"]
"""The bindings every client test runs over."""

REST_NAMESPACE = "langchain-rest"
"""The namespace REST clients of these tests are opened with."""

METHODS = ("remember", "recall", "timeline", "forget", "fetch", "describe")


@contextmanager
def counting(
    monkeypatch: pytest.MonkeyPatch, client: A2MClient | AsyncA2MClient
) -> Iterator[Counter[str]]:
    """Count the calls made on ``client``, method by method (the client still runs them)."""
    calls: Counter[str] = Counter()
    for name in METHODS:
        original = getattr(client, name)

        def spy(*args: Any, __name: str = name, __original: Any = original, **kw: Any) -> Any:
            calls[__name] += 1
            return __original(*args, **kw)

        monkeypatch.setattr(client, name, spy)
    yield calls


@contextmanager
def deprecated_baseline() -> Iterator[None]:
    """Build one of LangChain's own, deprecated, classes as a baseline: LangChain warns once
    per process that it is deprecated, which is not what these tests are about."""
    from langchain_core._api import LangChainDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)
        yield


def every_message_type() -> list[BaseMessage]:
    """One message of every LangChain type, with the fields that are easiest to lose."""
    return [
        SystemMessage("You are terse.", id="sys-1"),
        HumanMessage(
            "What is the weather in Paris?",
            id="h-1",
            name="alice",
            additional_kwargs={"lang": "en", "nested": {"a": [1, 2.5, None]}},
        ),
        AIMessage(
            "",
            id="ai-1",
            tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "call-1"}],
            invalid_tool_calls=[
                {"name": "broken", "args": "{oops", "id": "call-2", "error": "bad json"}
            ],
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
            usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
        ),
        ToolMessage(
            "18C and sunny",
            tool_call_id="call-1",
            id="t-1",
            name="weather",
            artifact={"raw": {"temp": 18}},
            status="success",
        ),
        FunctionMessage("42", name="answer", id="f-1"),
        ChatMessage("Looks right.", role="critic", id="c-1"),
        AIMessage("It is 18C and sunny in Paris.", id="ai-2", name="bot"),
        HumanMessage(
            [
                {"type": "text", "text": "and this picture?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/p.png"}},
            ],
            id="h-2",
        ),
        AIMessageChunk(
            "part",
            id="aic-1",
            tool_call_chunks=[{"name": "weather", "args": '{"ci', "id": "call-3", "index": 0}],
        ),
        HumanMessageChunk("human chunk", id="hc-1"),
        SystemMessageChunk("system chunk"),
        ToolMessageChunk("tool chunk", tool_call_id="call-3"),
        FunctionMessageChunk("function chunk", name="fn"),
        ChatMessageChunk("chat chunk", role="narrator"),
    ]


def assert_same_messages(
    got: list[BaseMessage], expected: list[BaseMessage], *, ids: bool = True
) -> None:
    """Equal, type for type, field for field (``ids=False``: but for the ids a model run
    gives its messages, which differ from run to run)."""
    assert [type(m) for m in got] == [type(m) for m in expected]

    def fields(message: BaseMessage) -> dict[str, Any]:
        return message.model_dump(exclude=None if ids else {"id"})

    assert [fields(m) for m in got] == [fields(m) for m in expected]


class WordEmbeddings(Embeddings):
    """A deterministic embedding that means something: one dimension per word of a fixed
    vocabulary, so texts sharing words are near each other (no model, no network)."""

    VOCABULARY = [
        "cat",
        "dog",
        "pet",
        "animal",
        "tea",
        "coffee",
        "drink",
        "lyon",
        "paris",
        "city",
        "deploy",
        "key",
        "rotates",
        "days",
        "pipeline",
        "merge",
        "approvals",
        "coffee",
        "machine",
        "floor",
    ]

    def _vector(self, text: str) -> list[float]:
        words = text.lower().replace(",", " ").replace(".", " ").replace("?", " ").split()
        vector = [float(words.count(term)) for term in self.VOCABULARY]
        return vector if any(vector) else [0.0] * (len(vector) - 1) + [1e-3]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def sync_client(binding: str, servers: Servers, server: A2MServer) -> A2MClient:
    """A sync client of ``server`` over ``binding``."""
    if binding == "in-process":
        return A2MClient.in_process(server)
    url = servers.http_url(server)
    if binding == "http":
        return A2MClient(url)
    return A2MClient.rest(url, namespace=REST_NAMESPACE)


def async_client(binding: str, servers: Servers, server: A2MServer) -> AsyncA2MClient:
    """An async client of ``server`` over ``binding``."""
    if binding == "in-process":
        return AsyncA2MClient.in_process(server)
    url = servers.http_url(server)
    if binding == "http":
        return AsyncA2MClient(url)
    return AsyncA2MClient.rest(url, namespace=REST_NAMESPACE)
