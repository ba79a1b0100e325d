"""The four-method contract's own implementation, proved by the standard suite that every
adapter runs, over every binding, sync and async."""

from __future__ import annotations

import pytest

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_testing.contract import (
    AdapterContract,
    AsyncAdapterContract,
    AsyncExtendedAdapterContract,
    ExtendedAdapterContract,
)


class TestA2MAdapter(AdapterContract):
    @pytest.fixture
    def adapter(self, a2m_client: A2MClient) -> A2MAdapter:
        return A2MAdapter(a2m_client, "acme/wf-1/agent-a", source_framework="contract")

    @pytest.fixture
    def other_adapter(self, a2m_client: A2MClient) -> A2MAdapter:
        return A2MAdapter(a2m_client, "acme/wf-1", source_framework="contract")


class TestAsyncA2MAdapter(AsyncAdapterContract):
    @pytest.fixture
    def adapter(self, a2m_async_client: AsyncA2MClient) -> AsyncA2MAdapter:
        return AsyncA2MAdapter(a2m_async_client, "acme/wf-1/agent-a", source_framework="contract")

    @pytest.fixture
    def other_adapter(self, a2m_async_client: AsyncA2MClient) -> AsyncA2MAdapter:
        return AsyncA2MAdapter(a2m_async_client, "acme/wf-1", source_framework="contract")


class TestA2MAdapterExtended(ExtendedAdapterContract):
    @pytest.fixture
    def adapter(self, a2m_client: A2MClient) -> A2MAdapter:
        return A2MAdapter(a2m_client, "acme/wf-1/agent-a", source_framework="contract")

    @pytest.fixture
    def other_adapter(self, a2m_client: A2MClient) -> A2MAdapter:
        return A2MAdapter(a2m_client, "acme/wf-1", source_framework="contract")


class TestAsyncA2MAdapterExtended(AsyncExtendedAdapterContract):
    @pytest.fixture
    def adapter(self, a2m_async_client: AsyncA2MClient) -> AsyncA2MAdapter:
        return AsyncA2MAdapter(a2m_async_client, "acme/wf-1/agent-a", source_framework="contract")

    @pytest.fixture
    def other_adapter(self, a2m_async_client: AsyncA2MClient) -> AsyncA2MAdapter:
        return AsyncA2MAdapter(a2m_async_client, "acme/wf-1", source_framework="contract")
