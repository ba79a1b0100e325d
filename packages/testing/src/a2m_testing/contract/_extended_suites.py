"""The suites of what :mod:`a2m.adapter` offers beyond the four methods — batched writes,
reads and deletes, complete listing by offset, cursor and iterator, and ``where`` filters
with operators — for adapters that offer them too: :class:`ExtendedAdapterContract`
(sync) and :class:`AsyncExtendedAdapterContract` (async). Fixtures as in
:class:`~a2m_testing.contract.AdapterContract`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from . import _batch_scenarios as batches
from . import _driver as driver
from . import _paging_scenarios as paging
from ._guard import StandardTests
from ._suites import _handles, _other_adapter

__all__ = ["AsyncExtendedAdapterContract", "ExtendedAdapterContract"]


class ExtendedAdapterContract(StandardTests, standard=True):
    """``write_many``, ``read_many`` and ``delete_many`` for a sync adapter: batches are
    atomic (one bad entry, none written), returned in order, and keep to the namespace."""

    @pytest.fixture
    def contract_other_adapter(self, request: pytest.FixtureRequest) -> Any:
        """``other_adapter`` when the subclass defines it; the test is skipped otherwise."""
        return _other_adapter(request)

    def _run(self, check: Callable[..., driver.Scenario], adapter: Any, *args: Any) -> None:
        handles = _handles(adapter)
        driver.run(check(handles[driver.ADAPTER], *args), {driver.ADAPTER: adapter})

    def test_write_many_returns_the_entries_in_order(self, adapter: Any) -> None:
        """write_many returns each stored entry, in the order given; read_many reads them."""
        self._run(batches.write_many_returns_the_entries_in_order, adapter)

    def test_write_many_is_atomic(self, adapter: Any) -> None:
        """One invalid entry (a bad type, a missing key) and nothing of the batch is written."""
        self._run(batches.write_many_is_atomic, adapter)

    def test_write_many_replaces_keeping_id_and_created_at(self, adapter: Any) -> None:
        """A batched write to an existing key replaces it, keeping id and created_at."""
        self._run(batches.write_many_replaces_keeping_id_and_created_at, adapter)

    def test_a_key_given_twice_keeps_its_last_value(self, adapter: Any) -> None:
        """A key given twice in one batch ends with its last value, as two writes would."""
        self._run(batches.a_key_given_twice_keeps_its_last_value, adapter)

    def test_a_large_batch_is_written_whole(self, adapter: Any) -> None:
        """A batch of 250 entries is written and read back whole."""
        self._run(batches.a_large_batch_is_written_whole, adapter)

    def test_read_many_leaves_out_missing_keys(self, adapter: Any) -> None:
        """read_many returns the entries that exist, by key, with their vectors."""
        self._run(batches.read_many_leaves_out_missing_keys, adapter)

    def test_delete_many_returns_how_many_went(self, adapter: Any) -> None:
        """delete_many deletes the entries that exist and says how many; twice is safe."""
        self._run(batches.delete_many_returns_how_many_went, adapter)

    def test_empty_batches_do_nothing(self, adapter: Any) -> None:
        """An empty batch writes, reads and deletes nothing."""
        self._run(batches.empty_batches_do_nothing, adapter)

    def test_batches_stay_in_their_namespace(
        self, adapter: Any, contract_other_adapter: Any
    ) -> None:
        """Batched writes and deletes keep to their namespace; read_many crosses by name."""
        handles = _handles(adapter, contract_other_adapter)
        scenario = batches.batches_stay_in_their_namespace(
            handles[driver.ADAPTER], handles[driver.OTHER]
        )
        driver.run(scenario, {driver.ADAPTER: adapter, driver.OTHER: contract_other_adapter})

    def test_listing_by_cursor_is_complete_and_stable(self, adapter: Any) -> None:
        """5,000 entries listed by cursor while another writer adds, replaces and deletes:
        each present throughout listed once, oldest first, in a bounded number of pages."""
        self._run(paging.listing_by_cursor_is_complete_and_stable, adapter)

    def test_iter_entries_yields_every_entry_once(self, adapter: Any) -> None:
        """iter_entries yields every entry once, oldest first, and is not truncated."""
        self._run(paging.iter_entries_yields_every_entry_once, adapter)

    def test_list_by_offset_is_complete(self, adapter: Any) -> None:
        """list by offset reaches every entry, with the exact total."""
        self._run(paging.list_by_offset_is_complete, adapter)

    def test_where_narrows_listing_and_query(self, adapter: Any) -> None:
        """where with each operator, equality and nested metadata paths narrows list,
        iter_entries and query alike; a missing key never matches $gt."""
        self._run(paging.where_narrows_listing_and_query, adapter)

    def test_a_bad_filter_or_cursor_is_refused(self, adapter: Any) -> None:
        """An unknown operator, $gt with an object, an empty $in, a tampered cursor: refused,
        nothing lost."""
        self._run(paging.a_bad_filter_or_cursor_is_refused, adapter)


class AsyncExtendedAdapterContract(StandardTests, standard=True):
    """:class:`ExtendedAdapterContract` for an async adapter: the same tests, awaited."""

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
        await driver.run_async(check(handles[driver.ADAPTER], *args), {driver.ADAPTER: adapter})

    async def test_write_many_returns_the_entries_in_order(self, adapter: Any) -> None:
        """write_many returns each stored entry, in the order given; read_many reads them."""
        await self._run(batches.write_many_returns_the_entries_in_order, adapter)

    async def test_write_many_is_atomic(self, adapter: Any) -> None:
        """One invalid entry (a bad type, a missing key) and nothing of the batch is written."""
        await self._run(batches.write_many_is_atomic, adapter)

    async def test_write_many_replaces_keeping_id_and_created_at(self, adapter: Any) -> None:
        """A batched write to an existing key replaces it, keeping id and created_at."""
        await self._run(batches.write_many_replaces_keeping_id_and_created_at, adapter)

    async def test_a_key_given_twice_keeps_its_last_value(self, adapter: Any) -> None:
        """A key given twice in one batch ends with its last value, as two writes would."""
        await self._run(batches.a_key_given_twice_keeps_its_last_value, adapter)

    async def test_a_large_batch_is_written_whole(self, adapter: Any) -> None:
        """A batch of 250 entries is written and read back whole."""
        await self._run(batches.a_large_batch_is_written_whole, adapter)

    async def test_read_many_leaves_out_missing_keys(self, adapter: Any) -> None:
        """read_many returns the entries that exist, by key, with their vectors."""
        await self._run(batches.read_many_leaves_out_missing_keys, adapter)

    async def test_delete_many_returns_how_many_went(self, adapter: Any) -> None:
        """delete_many deletes the entries that exist and says how many; twice is safe."""
        await self._run(batches.delete_many_returns_how_many_went, adapter)

    async def test_empty_batches_do_nothing(self, adapter: Any) -> None:
        """An empty batch writes, reads and deletes nothing."""
        await self._run(batches.empty_batches_do_nothing, adapter)

    async def test_batches_stay_in_their_namespace(
        self, adapter: Any, contract_other_adapter: Any
    ) -> None:
        """Batched writes and deletes keep to their namespace; read_many crosses by name."""
        handles = _handles(adapter, contract_other_adapter)
        scenario = batches.batches_stay_in_their_namespace(
            handles[driver.ADAPTER], handles[driver.OTHER]
        )
        await driver.run_async(
            scenario, {driver.ADAPTER: adapter, driver.OTHER: contract_other_adapter}
        )

    async def test_listing_by_cursor_is_complete_and_stable(self, adapter: Any) -> None:
        """5,000 entries listed by cursor while another writer adds, replaces and deletes:
        each present throughout listed once, oldest first, in a bounded number of pages."""
        await self._run(paging.listing_by_cursor_is_complete_and_stable, adapter)

    async def test_iter_entries_yields_every_entry_once(self, adapter: Any) -> None:
        """iter_entries yields every entry once, oldest first, and is not truncated."""
        await self._run(paging.iter_entries_yields_every_entry_once, adapter)

    async def test_list_by_offset_is_complete(self, adapter: Any) -> None:
        """list by offset reaches every entry, with the exact total."""
        await self._run(paging.list_by_offset_is_complete, adapter)

    async def test_where_narrows_listing_and_query(self, adapter: Any) -> None:
        """where with each operator, equality and nested metadata paths narrows list,
        iter_entries and query alike; a missing key never matches $gt."""
        await self._run(paging.where_narrows_listing_and_query, adapter)

    async def test_a_bad_filter_or_cursor_is_refused(self, adapter: Any) -> None:
        """An unknown operator, $gt with an object, an empty $in, a tampered cursor: refused,
        nothing lost."""
        await self._run(paging.a_bad_filter_or_cursor_is_refused, adapter)
