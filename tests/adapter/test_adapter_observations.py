"""The adapter contract's ``remember_observation`` (docs/observations.md §8), on the sync and
the async adapter over a real in-process server: one call, the adapter's provenance in the
record's metadata, the agent as owner where the server keeps owners, dedup, and a refusal
unsent against a server without the extension."""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

import pytest

from a2m import A2MClient, AsyncA2MClient, CapabilityNotSupported
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_server import A2MServer
from a2m_server.config import ObservationsConfig, ServerConfig

pytestmark = pytest.mark.anyio


async def settle(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


def _adapter(flavour: str, server: A2MServer, **scope: Any) -> Any:
    if flavour == "sync":
        return A2MAdapter(A2MClient.in_process(server), "team/notes", **scope)
    return AsyncA2MAdapter(AsyncA2MClient.in_process(server), "team/notes", **scope)


async def _close(adapter: Any) -> None:
    client = adapter.client
    await settle(client.aclose() if isinstance(client, AsyncA2MClient) else client.close())


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_an_adapter_remembers_an_observation_with_its_provenance(flavour: str) -> None:
    with A2MServer() as server:
        adapter = _adapter(
            flavour, server, source_framework="crewai", agent="researcher", session="s1"
        )
        try:
            first = await settle(
                adapter.remember_observation(
                    "The billing service keeps money in integer cents.",
                    classification="convention",
                    file_path="billing/money.py",
                    tags=["billing"],
                    weight=2.0,
                )
            )
            again = await settle(
                adapter.remember_observation("the billing service keeps money in integer cents.")
            )
        finally:
            await _close(adapter)
        assert (again.id, again.deduplicated, again.weight) == (first.id, True, 3.0)
        (record,) = server.connect().call("memory/timeline", {"where": {"observation": True}})[
            "records"
        ]
        assert record["owner"] == "researcher"
        meta = record["metadata"]
        assert meta["source_framework"] == "crewai"
        assert meta["source_agent"] == "researcher"
        assert meta["source_namespace"] == "team/notes"
        assert meta["session"] == "s1"
        assert meta["observation_agent"] == "researcher"
        assert meta["observation_file_path"] == "billing/money.py"


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_an_adapter_is_refused_unsent_without_the_extension(flavour: str) -> None:
    config = replace(ServerConfig(), observations=ObservationsConfig(enabled=False))
    with A2MServer(config) as server:
        adapter = _adapter(flavour, server, source_framework="agno")
        try:
            with pytest.raises(CapabilityNotSupported):
                await settle(adapter.remember_observation("x"))
        finally:
            await _close(adapter)
        assert server.connect().call("memory/timeline")["records"] == []
