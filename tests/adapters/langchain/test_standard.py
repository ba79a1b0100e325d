"""The ``langchain_tests`` standard integration suites, subclassed as they are meant to be:
the vector store suite and the retriever suite, sync and async, over in-process, JSON-RPC
HTTP and REST."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip(
    "langchain_tests", reason="the standard suites run in `uv run nox -s tests-langchain`"
)

from langchain_support import BINDINGS, async_client, sync_client
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from a2m_langchain import A2MRetriever, A2MVectorStore
from a2m_testing.servers import Servers


class TestA2MVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture(params=BINDINGS)
    async def vectorstore(  # type: ignore[override]
        self, request: pytest.FixtureRequest
    ) -> AsyncIterator[A2MVectorStore]:
        with Servers() as servers:
            server = servers.server()
            with sync_client(request.param, servers, server) as client:
                async with async_client(request.param, servers, server) as other:
                    yield A2MVectorStore(self.get_embeddings(), client, async_client=other)


_FACTS = [
    "the deploy key rotates every 90 days",
    "the deploy pipeline runs on every merge",
    "deploy freezes happen in december",
    "a deploy needs two approvals",
    "the office coffee machine is on floor two",
]


class TestA2MRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True, params=BINDINGS)
    async def _store(self, request: pytest.FixtureRequest) -> AsyncIterator[None]:
        with Servers() as servers:
            server = servers.server()
            with sync_client(request.param, servers, server) as client:
                async with async_client(request.param, servers, server) as other:
                    client.remember([{"content": fact, "role": "memory"} for fact in _FACTS])
                    self._clients = {"client": client, "async_client": other}
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
