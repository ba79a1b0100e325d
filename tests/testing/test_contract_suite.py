"""The adapter contract suite, run against the real adapter (``a2m.adapter``), sync and
async; and its guard against standard tests being silently redefined.

Here the suite runs in-process and over HTTP: over stdio it would send the same client
calls through another pipe, at the cost of starting a server process for each of its
tests. ``tests/adapter`` runs it over every binding."""

from __future__ import annotations

from typing import Any

import pytest

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_testing.contract import (
    AdapterContract,
    AsyncAdapterContract,
    StandardTests,
    override_reason,
    override_standard_test,
)

AGENT = "acme/wf-1/agent-a"
WORKFLOW = "acme/wf-1"


@pytest.mark.a2m_bindings("in-process", "http")
class TestSyncAdapterHonoursTheContract(AdapterContract):
    @pytest.fixture
    def adapter(self, a2m_client: A2MClient) -> A2MAdapter:
        return A2MAdapter(a2m_client, AGENT)

    @pytest.fixture
    def other_adapter(self, a2m_client: A2MClient) -> A2MAdapter:
        return A2MAdapter(a2m_client, WORKFLOW)


@pytest.mark.a2m_bindings("in-process", "http")
class TestAsyncAdapterHonoursTheContract(AsyncAdapterContract):
    @pytest.fixture
    def adapter(self, a2m_async_client: AsyncA2MClient) -> AsyncA2MAdapter:
        return AsyncA2MAdapter(a2m_async_client, AGENT)

    @pytest.fixture
    def other_adapter(self, a2m_async_client: AsyncA2MClient) -> AsyncA2MAdapter:
        return AsyncA2MAdapter(a2m_async_client, WORKFLOW)


def test_both_suites_hold_the_same_standard_tests() -> None:
    assert AdapterContract.standard_tests == AsyncAdapterContract.standard_tests
    assert len(AdapterContract.standard_tests) == 19


def test_a_silent_override_is_refused() -> None:
    with pytest.raises(TypeError, match="test_read_of_a_missing_key_is_none") as caught:

        class TestSilent(AdapterContract):
            def test_read_of_a_missing_key_is_none(self, adapter: Any) -> None:
                pass

    assert "override_standard_test" in str(caught.value)


def test_deleting_a_standard_test_is_refused() -> None:
    with pytest.raises(TypeError, match="test_query_by_text"):

        class TestDeleting(AsyncAdapterContract):
            test_query_by_text = None  # type: ignore[assignment]


def test_a_declared_override_is_accepted() -> None:
    class TestDeclared(AdapterContract):
        @override_standard_test("this store ranks text by recency")
        def test_query_by_text(self, adapter: Any) -> None:
            pass

    assert override_reason(TestDeclared.test_query_by_text) == "this store ranks text by recency"
    assert override_reason(AdapterContract.test_query_by_text) is None


def test_the_guard_reaches_grandchildren() -> None:
    class TestChild(AdapterContract):
        pass

    with pytest.raises(TypeError, match="test_meta_round_trips"):

        class TestGrandchild(TestChild):
            def test_meta_round_trips(self, adapter: Any) -> None:
                pass


def test_new_tests_in_a_subclass_need_no_declaration() -> None:
    class TestExtended(AdapterContract):
        def test_something_of_our_own(self) -> None:
            pass

    assert "test_something_of_our_own" not in TestExtended.standard_tests


def test_an_override_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="reason"):
        override_standard_test("  ")


def test_a_suite_of_your_own_gets_the_same_guard() -> None:
    class MySuite(StandardTests, standard=True):
        def test_one(self) -> None:
            pass

    with pytest.raises(TypeError, match="test_one"):

        class TestMine(MySuite):
            def test_one(self) -> None:
                pass
