"""A key given twice in one ``write_many``, as docs/adapters.md states it: written once,
with its last value, both positions returning that entry, as two ``write`` calls one
after the other would leave it; a replaced entry keeps its ``id`` and ``created_at``. Over
every binding, sync and async."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter

pytestmark = pytest.mark.anyio


async def settle(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


@pytest.fixture(params=["sync", "async"])
def adapter(
    request: pytest.FixtureRequest,
    a2m_binding: str,
    a2m_client_factory: Callable[..., A2MClient],
    a2m_async_client_factory: Callable[..., AsyncA2MClient],
) -> A2MAdapter | AsyncA2MAdapter:
    if request.param == "async":
        return AsyncA2MAdapter(a2m_async_client_factory(a2m_binding), "acme/repeats")
    return A2MAdapter(a2m_client_factory(a2m_binding), "acme/repeats")


def _entry(key: str, value: Any, **fields: Any) -> dict[str, Any]:
    return {"key": key, "type": "semantic", "value": value, **fields}


async def test_a_new_key_given_twice_is_written_once_with_its_last_value(
    adapter: A2MAdapter | AsyncA2MAdapter,
) -> None:
    written = await settle(
        adapter.write_many(
            [_entry("k", "first", meta={"tags": ["a"]}), _entry("other", 1), _entry("k", "last")]
        )
    )
    assert [entry.key for entry in written] == ["k", "other", "k"]
    assert written[0] == written[2]
    assert written[0].value == "last"
    assert written[0].meta.tags == []  # the last write is the whole entry, as a write is
    listed = await settle(adapter.list(limit=10))
    assert sorted(entry.key for entry in listed.entries) == ["k", "other"]
    assert (await settle(adapter.read("k"))).value == "last"


async def test_a_stored_key_given_twice_keeps_its_id_and_created_at(
    adapter: A2MAdapter | AsyncA2MAdapter,
) -> None:
    before = await settle(adapter.write("k", "semantic", "stored"))
    written = await settle(adapter.write_many([_entry("k", "middle"), _entry("k", "last")]))
    assert written[0] == written[1]
    assert written[0].value == "last"
    assert written[0].id == before.id
    assert written[0].meta.created_at == before.meta.created_at
    listed = await settle(adapter.list(limit=10))
    assert [(entry.key, entry.value) for entry in listed.entries] == [("k", "last")]
