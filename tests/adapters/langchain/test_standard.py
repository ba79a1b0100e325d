"""The ``langchain_tests`` standard integration suites, subclassed as they are meant to be:
the vector store suite and the retriever suite, sync and async, over JSON-RPC HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip(
    "langchain_tests", reason="the standard suites run in `uv run nox -s tests-langchain`"
)

from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain import A2MRetriever, A2MVectorStore
from a2m_testing.servers import Servers


class TestA2MVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    async def vectorstore(self) -> AsyncIterator[A2MVectorStore]:  # type: ignore[override]
        with Servers() as servers:
            url = servers.http_url()
            with A2MClient(url) as client:
                async with AsyncA2MClient(url) as async_client:
                    yield A2MVectorStore(self.get_embeddings(), client, async_client=async_client)


_FACTS = [
    "the deploy key rotates every 90 days",
    "the deploy pipeline runs on every merge",
    "deploy freezes happen in december",
    "a deploy needs two approvals",
    "the office coffee machine is on floor two",
]


class TestA2MRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    async def _store(self) -> AsyncIterator[None]:
        with Servers() as servers:
            url = servers.http_url()
            with A2MClient(url) as client:
                async with AsyncA2MClient(url) as async_client:
                    client.remember([{"content": fact, "role": "memory"} for fact in _FACTS])
                    self._clients = {"client": client, "async_client": async_client}
                    yield

    @property
    def retriever_constructor(self) -> type[A2MRetriever]:
        return A2MRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return dict(self._clients)

    @property
    def retriever_query_example(self) -> str:
        return "deploy"
