"""The two standard suites: :class:`AdapterContract` for a sync adapter and
:class:`AsyncAdapterContract` for an async one. Each test is one line naming a scenario of
:mod:`._scenarios`; the suites differ only in the loop of :mod:`._driver` that makes a
scenario's calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from . import _driver as driver
from . import _scenarios as scenarios
from ._guard import StandardTests

__all__ = ["AdapterContract", "AsyncAdapterContract"]

_VALUES = pytest.mark.parametrize(
    "value", list(scenarios.JSON_VALUES.values()), ids=list(scenarios.JSON_VALUES)
)
_TYPES = pytest.mark.parametrize("memory_type", list(scenarios.TYPE_EXAMPLES))

_NO_OTHER = (
    "define an `other_adapter` fixture (an adapter on the same store, scoped to a namespace "
    "above the adapter's) to run the cross-namespace tests"
)


def _handles(adapter: Any, other: Any = None) -> dict[str, driver.Handle]:
    handles = {driver.ADAPTER: driver.Handle(driver.ADAPTER, _namespace(adapter))}
    if other is not None:
        handles[driver.OTHER] = driver.Handle(driver.OTHER, _namespace(other))
    return handles


def _namespace(adapter: Any) -> str:
    namespace = getattr(adapter, "namespace", None)
    if not isinstance(namespace, str) or not namespace:
        raise TypeError(
            f"{type(adapter).__name__} has no `namespace`: the contract suite needs "
            "`adapter.namespace`, the namespace the adapter writes to"
        )
    return namespace


def _other_adapter(request: pytest.FixtureRequest) -> Any:
    try:
        return request.getfixturevalue("other_adapter")
    except pytest.FixtureLookupError:
        pytest.skip(_NO_OTHER)


class AdapterContract(StandardTests, standard=True):
    """The four-method adapter contract, for a sync adapter (``a2m.adapter.A2MAdapter`` or
    your own): subclass it in a test module and provide fixtures.

    - ``adapter`` (required): an adapter on a fresh, empty store, exposing ``namespace``.
    - ``other_adapter`` (optional): an adapter on the same store, scoped to a namespace
      above ``adapter``'s (``acme/wf-1`` for ``acme/wf-1/agent-a``); without it the three
      cross-namespace tests are skipped.

    Those three hold the contract's rule: a namespace scopes an adapter's writes and
    deletes, never its reads — ``query`` with no namespace argument searches every
    namespace, so agents of different frameworks find each other's entries.

    Entries may be dicts or pydantic models in the REST draft's shape (§6.1). Redefining
    a standard test needs :func:`~a2m_testing.contract.override_standard_test`."""

    @pytest.fixture
    def contract_other_adapter(self, request: pytest.FixtureRequest) -> Any:
        """``other_adapter`` when the subclass defines it; the test is skipped otherwise."""
        return _other_adapter(request)

    def _run(self, check: Callable[..., driver.Scenario], adapter: Any, *args: Any) -> None:
        handles = _handles(adapter)
        driver.run(check(handles[driver.ADAPTER], *args), {driver.ADAPTER: adapter})

    def _run_across(self, check: Callable[..., driver.Scenario], adapter: Any, other: Any) -> None:
        handles = _handles(adapter, other)
        scenario = check(handles[driver.ADAPTER], handles[driver.OTHER])
        driver.run(scenario, {driver.ADAPTER: adapter, driver.OTHER: other})

    def test_write_returns_the_entry(self, adapter: Any) -> None:
        """write returns the stored entry: id, key, namespace, type, value, embedding, meta."""
        self._run(scenarios.write_returns_the_entry, adapter)

    def test_read_returns_the_written_entry(self, adapter: Any) -> None:
        """read returns what write returned."""
        self._run(scenarios.read_returns_the_written_entry, adapter)

    def test_read_of_a_missing_key_is_none(self, adapter: Any) -> None:
        """read of a key never written returns None rather than raising."""
        self._run(scenarios.read_of_a_missing_key_is_none, adapter)

    def test_upsert_keeps_id_and_created_at(self, adapter: Any) -> None:
        """A second write to a key replaces the value, keeping id and created_at (§5.4)."""
        self._run(scenarios.upsert_keeps_id_and_created_at, adapter)

    @_VALUES
    def test_value_round_trips(self, adapter: Any, value: Any) -> None:
        """A value of every JSON kind reads back exactly as written."""
        self._run(scenarios.value_round_trips, adapter, value)

    @_TYPES
    def test_memory_type_round_trips(self, adapter: Any, memory_type: str) -> None:
        """Each of the five memory types reads back as itself (§6.2)."""
        self._run(scenarios.memory_type_round_trips, adapter, memory_type)

    def test_embedding_round_trips(self, adapter: Any) -> None:
        """The caller's embedding is stored verbatim; none written reads as null."""
        self._run(scenarios.embedding_round_trips, adapter)

    def test_meta_round_trips(self, adapter: Any) -> None:
        """tags, source_agent, source_framework, confidence and ttl_s read back."""
        self._run(scenarios.meta_round_trips, adapter)

    def test_query_ranks_by_embedding_similarity(self, adapter: Any) -> None:
        """query(embedding) ranks most similar first and skips entries without a vector."""
        self._run(scenarios.query_ranks_by_embedding_similarity, adapter)

    def test_query_honours_top_k(self, adapter: Any) -> None:
        """query returns at most top_k results, the best ones."""
        self._run(scenarios.query_honours_top_k, adapter)

    def test_query_honours_min_score(self, adapter: Any) -> None:
        """query leaves out results scoring below min_score."""
        self._run(scenarios.query_honours_min_score, adapter)

    def test_query_honours_type(self, adapter: Any) -> None:
        """query(type=…) searches only entries of that memory type."""
        self._run(scenarios.query_honours_type, adapter)

    def test_query_honours_tags(self, adapter: Any) -> None:
        """query(tags=[…]) searches only entries carrying the tag."""
        self._run(scenarios.query_honours_tags, adapter)

    def test_query_by_text(self, adapter: Any) -> None:
        """query(text=…) finds entries by their words, best match first."""
        self._run(scenarios.query_by_text, adapter)

    def test_delete_removes_the_entry(self, adapter: Any) -> None:
        """delete returns None, and the entry is gone from read and query."""
        self._run(scenarios.delete_removes_the_entry, adapter)

    def test_delete_of_a_missing_key_is_not_an_error(self, adapter: Any) -> None:
        """delete of a key that holds nothing returns None (deleting twice is safe)."""
        self._run(scenarios.delete_of_a_missing_key_is_not_an_error, adapter)

    def test_writes_stay_in_their_namespace(
        self, adapter: Any, contract_other_adapter: Any
    ) -> None:
        """Each adapter writes in its own namespace: one key there is two entries."""
        self._run_across(scenarios.writes_stay_in_their_namespace, adapter, contract_other_adapter)

    def test_reads_cross_namespaces(self, adapter: Any, contract_other_adapter: Any) -> None:
        """A namespace scopes writes and deletes, never reads: a query with no namespace
        argument finds entries of every namespace, above and beneath (recursive=True too)."""
        self._run_across(scenarios.reads_cross_namespaces, adapter, contract_other_adapter)

    def test_another_namespace_cannot_delete_the_entry(
        self, adapter: Any, contract_other_adapter: Any
    ) -> None:
        """Reads reach across namespaces, deletes do not: by key or by key path."""
        self._run_across(
            scenarios.another_namespace_cannot_delete_the_entry, adapter, contract_other_adapter
        )


class AsyncAdapterContract(StandardTests, standard=True):
    """:class:`AdapterContract` for an async adapter (``a2m.adapter.AsyncA2MAdapter`` or
    your own): the same tests and fixtures, each call awaited. The tests run on anyio's
    pytest plugin on asyncio (the ``anyio_backend`` fixture below); the ``adapter`` and
    ``other_adapter`` fixtures may be ``async def``."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture
    def anyio_backend(self) -> str:
        """asyncio: the A2M async client runs on it."""
        return "asyncio"

    @pytest.fixture
    def contract_other_adapter(self, request: pytest.FixtureRequest) -> Any:
        """``other_adapter`` when the subclass defines it; the test is skipped otherwise."""
        return _other_adapter(request)

    async def _run(self, check: Callable[..., driver.Scenario], adapter: Any, *args: Any) -> None:
        handles = _handles(adapter)
        scenario = check(handles[driver.ADAPTER], *args)
        await driver.run_async(scenario, {driver.ADAPTER: adapter})

    async def _run_across(
        self, check: Callable[..., driver.Scenario], adapter: Any, other: Any
    ) -> None:
        handles = _handles(adapter, other)
        scenario = check(handles[driver.ADAPTER], handles[driver.OTHER])
        await driver.run_async(scenario, {driver.ADAPTER: adapter, driver.OTHER: other})

    async def test_write_returns_the_entry(self, adapter: Any) -> None:
        """write returns the stored entry: id, key, namespace, type, value, embedding, meta."""
        await self._run(scenarios.write_returns_the_entry, adapter)

    async def test_read_returns_the_written_entry(self, adapter: Any) -> None:
        """read returns what write returned."""
        await self._run(scenarios.read_returns_the_written_entry, adapter)

    async def test_read_of_a_missing_key_is_none(self, adapter: Any) -> None:
        """read of a key never written returns None rather than raising."""
        await self._run(scenarios.read_of_a_missing_key_is_none, adapter)

    async def test_upsert_keeps_id_and_created_at(self, adapter: Any) -> None:
        """A second write to a key replaces the value, keeping id and created_at (§5.4)."""
        await self._run(scenarios.upsert_keeps_id_and_created_at, adapter)

    @_VALUES
    async def test_value_round_trips(self, adapter: Any, value: Any) -> None:
        """A value of every JSON kind reads back exactly as written."""
        await self._run(scenarios.value_round_trips, adapter, value)

    @_TYPES
    async def test_memory_type_round_trips(self, adapter: Any, memory_type: str) -> None:
        """Each of the five memory types reads back as itself (§6.2)."""
        await self._run(scenarios.memory_type_round_trips, adapter, memory_type)

    async def test_embedding_round_trips(self, adapter: Any) -> None:
        """The caller's embedding is stored verbatim; none written reads as null."""
        await self._run(scenarios.embedding_round_trips, adapter)

    async def test_meta_round_trips(self, adapter: Any) -> None:
        """tags, source_agent, source_framework, confidence and ttl_s read back."""
        await self._run(scenarios.meta_round_trips, adapter)

    async def test_query_ranks_by_embedding_similarity(self, adapter: Any) -> None:
        """query(embedding) ranks most similar first and skips entries without a vector."""
        await self._run(scenarios.query_ranks_by_embedding_similarity, adapter)

    async def test_query_honours_top_k(self, adapter: Any) -> None:
        """query returns at most top_k results, the best ones."""
        await self._run(scenarios.query_honours_top_k, adapter)

    async def test_query_honours_min_score(self, adapter: Any) -> None:
        """query leaves out results scoring below min_score."""
        await self._run(scenarios.query_honours_min_score, adapter)

    async def test_query_honours_type(self, adapter: Any) -> None:
        """query(type=…) searches only entries of that memory type."""
        await self._run(scenarios.query_honours_type, adapter)

    async def test_query_honours_tags(self, adapter: Any) -> None:
        """query(tags=[…]) searches only entries carrying the tag."""
        await self._run(scenarios.query_honours_tags, adapter)

    async def test_query_by_text(self, adapter: Any) -> None:
        """query(text=…) finds entries by their words, best match first."""
        await self._run(scenarios.query_by_text, adapter)

    async def test_delete_removes_the_entry(self, adapter: Any) -> None:
        """delete returns None, and the entry is gone from read and query."""
        await self._run(scenarios.delete_removes_the_entry, adapter)

    async def test_delete_of_a_missing_key_is_not_an_error(self, adapter: Any) -> None:
        """delete of a key that holds nothing returns None (deleting twice is safe)."""
        await self._run(scenarios.delete_of_a_missing_key_is_not_an_error, adapter)

    async def test_writes_stay_in_their_namespace(
        self, adapter: Any, contract_other_adapter: Any
    ) -> None:
        """Each adapter writes in its own namespace: one key there is two entries."""
        await self._run_across(
            scenarios.writes_stay_in_their_namespace, adapter, contract_other_adapter
        )

    async def test_reads_cross_namespaces(self, adapter: Any, contract_other_adapter: Any) -> None:
        """A namespace scopes writes and deletes, never reads: a query with no namespace
        argument finds entries of every namespace, above and beneath (recursive=True too)."""
        await self._run_across(scenarios.reads_cross_namespaces, adapter, contract_other_adapter)

    async def test_another_namespace_cannot_delete_the_entry(
        self, adapter: Any, contract_other_adapter: Any
    ) -> None:
        """Reads reach across namespaces, deletes do not: by key or by key path."""
        await self._run_across(
            scenarios.another_namespace_cannot_delete_the_entry, adapter, contract_other_adapter
        )
