"""The host's own rules: a store that fails is a ``backend_error`` response, a read-only
store refuses entries one by one, the bytes quota, and the authenticated principal."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest
from a2e_support import NAMESPACE, Backend, Host, entry

from a2m import A2MClient, AsyncA2MClient
from a2m_a2e import A2EMemoryPlugin, AsyncA2EMemoryPlugin, HostLimits, new_message

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


def dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # bound then released: nothing listens there


def test_an_unreachable_store_is_a_retryable_backend_error_sync_and_async() -> None:
    request = new_message("memory/init/req", id="i1", namespace=NAMESPACE, scope={"agent": "a"})
    with A2MClient(dead_url(), max_retries=0, timeout=5) as client:
        response = A2EMemoryPlugin(client).handle(request)
    assert (response["type"], response["code"], response["retryable"], response["req_id"]) == (
        "memory/error",
        "backend_error",
        True,
        "i1",
    )

    async def run() -> dict[str, object]:
        async with AsyncA2MClient(dead_url(), max_retries=0, timeout=5) as client:
            return await AsyncA2EMemoryPlugin(client).handle(request)

    response = asyncio.run(run())
    assert (response["code"], response["retryable"]) == ("backend_error", True)


def test_a_read_only_store_refuses_each_entry_and_still_answers_reads() -> None:
    from a2m_server.config import ServerConfig
    from a2m_server.server import A2MServer

    with A2MServer(ServerConfig(read_only=True)) as server, A2MClient.in_process(server) as client:
        host = A2EMemoryPlugin(client)
        memory = host.handle(new_message("memory/init/req", namespace=NAMESPACE))["memory_id"]
        stored = host.handle(
            new_message(
                "memory/store/req",
                memory_id=memory,
                entries=[entry({"k": 1}, "x"), entry({"k": 2}, "y")],
            )
        )
        assert stored["stored"] == []
        assert [error.split(":")[1].strip() for error in stored["errors"]] == ["backend_error"] * 2
        listing = host.handle(new_message("memory/retrieve/req", memory_id=memory))
        assert (listing["type"], listing["total"]) == ("memory/retrieve/resp", 0)


def test_the_bytes_quota_counts_content_and_replacements(
    make_backend: Callable[[str], Backend],
) -> None:
    host: Host = make_backend("in-process").host("sync", limits=HostLimits(max_bytes=30))
    memory = host.init()
    assert host.store(memory, entry({"k": 1}, "a" * 10))["stored"] == [{"k": 1}]  # 12 bytes
    assert host.store(memory, entry({"k": 2}, "b" * 10))["stored"] == [{"k": 2}]  # 24
    full = host.store(memory, entry({"k": 3}, "c" * 10))
    assert full["stored"] == []
    assert full["errors"][0].startswith("entries[0]: memory_full:")
    assert host.store(memory, entry({"k": 1}, "a"))["stored"] == [{"k": 1}]  # shrinks to 15
    assert host.store(memory, entry({"k": 3}, "c" * 10))["stored"] == [{"k": 3}]  # 27


def test_a_quota_counts_what_the_namespace_already_holds(
    make_backend: Callable[[str], Backend],
) -> None:
    backend = make_backend("in-process")
    first = backend.host("sync")
    memory = first.init()
    first.store(memory, *[entry({"k": n}, n) for n in range(3)])
    later = backend.host("sync", limits=HostLimits(max_entries=4))
    again = later.init()
    response = later.store(again, entry({"k": 3}, 3), entry({"k": 4}, 4))
    assert response["stored"] == [{"k": 3}]
    assert "memory_full" in response["errors"][0]


def test_over_a_network_only_the_principal_may_be_the_agent(
    make_backend: Callable[[str], Backend],
) -> None:
    backend = make_backend("http")
    host = backend.host("sync", principal="ada")
    refused = host.handle(
        new_message("memory/init/req", namespace=NAMESPACE, scope={"agent": "eve"})
    )
    assert (refused["type"], refused["code"]) == ("memory/error", "permission_denied")
    memory = host.init(agent=None)  # no agent given: the principal is the agent
    host.store(memory, entry({"k": "mine"}, "ada's", tags=["p"]))
    eve = backend.host("sync")
    other = eve.init("eve")
    assert eve.retrieve(other, tags=["p"])["total"] == 0  # ada's episodic entry is ada's
    assert host.retrieve(other, tags=["p"])["code"] == "unknown_memory"  # ids are per host
    (record,) = backend.sync_client().timeline(key_prefix=NAMESPACE + "/").records
    # An HTTP server without tokens declares no scopes: the agent travels in metadata.
    assert (record.metadata or {})["source_agent"] == "ada"


def test_an_unsupported_version_and_an_unknown_type_are_named(local: Host) -> None:
    old = {**new_message("memory/init/req", namespace=NAMESPACE), "version": "2.0"}
    assert local.handle(old)["code"] == "unsupported_version"
    assert local.handle({"type": "memory/compact/req", "id": "z"})["code"] == "unknown_type"
    assert (
        local.handle({**new_message("memory/init/req", namespace=NAMESPACE), "version": "1.3"})[
            "type"
        ]
        == "memory/init/resp"
    )


def test_behind_bearer_tokens_the_owner_is_the_authenticated_principal() -> None:
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    with (
        A2MServer() as server,
        serve_http(server, tokens={"ada-token": "ada", "eve-token": "eve"}) as url,
        A2MClient(url, token="ada-token") as ada_client,
        A2MClient(url, token="eve-token") as eve_client,
    ):
        ada = A2EMemoryPlugin(ada_client, principal="ada")
        memory = ada.handle(new_message("memory/init/req", namespace=NAMESPACE))["memory_id"]
        stored = ada.handle(
            new_message("memory/store/req", memory_id=memory, entries=[entry({"k": 1}, "mine")])
        )
        assert stored["errors"] == []
        (record,) = ada_client.timeline(key_prefix=NAMESPACE + "/").records
        assert record.owner == "ada"
        eve = A2EMemoryPlugin(eve_client, principal="eve")
        theirs = eve.handle(new_message("memory/init/req", namespace=NAMESPACE))["memory_id"]
        looked = eve.handle(new_message("memory/retrieve/req", memory_id=theirs, keys=[{"k": 1}]))
        assert looked["code"] == "memory_not_found"  # the server scopes eve to eve's records
