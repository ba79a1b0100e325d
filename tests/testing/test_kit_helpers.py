"""The kit's building blocks outside pytest fixtures: ``Servers``, the configuration written
for stdio servers, the binding table, the record assertions, and the public names."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import a2m_testing
import a2m_testing.contract
from a2m import A2MClient, AsyncA2MClient, QuotaExceeded
from a2m_server.config import (
    LimitsConfig,
    ObservationsConfig,
    ServerConfig,
    TierConfig,
    TransferGrant,
    load_config,
)
from a2m_server.server import A2MServer
from a2m_testing import (
    BINDINGS,
    Servers,
    assert_not_remembered,
    assert_not_remembered_async,
    assert_remembered,
    assert_remembered_async,
    open_client,
)
from a2m_testing._config import config_toml, server_config
from a2m_testing.servers import Intercepted, refusal

CUSTOM = ServerConfig(
    name='team "memory" — ünïcode',
    capabilities=frozenset({"core", "keys", "tiers"}),
    tiers=(
        TierConfig("scratch", kind="working", capacity=8, spill_to="archive", per_session=True),
        TierConfig("archive", kind="episodic", half_life=3600.5, shared=True),
    ),
    default_tier="archive",
    limits=LimitsConfig(max_records_per_call=5, max_recall_limit=50),
    read_only=True,
    metric="dot",
    embedding_model="text-embedding-3-small",
    push=False,
    reinforce_amount=0.25,
)


OBSERVING = dataclasses.replace(
    ServerConfig(),
    observations=ObservationsConfig(
        org="acme",
        operators=frozenset({"admin"}),
        grants=(TransferGrant("acme/api", "acme/web"),),
        stacks={"acme/api": frozenset({"python", "uv"})},
    ),
)


@pytest.mark.parametrize(
    "config", [ServerConfig(), CUSTOM, OBSERVING], ids=["default", "custom", "observations"]
)
def test_a_configuration_survives_its_toml(config: ServerConfig, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config_toml(config), encoding="utf-8")
    assert load_config(path) == config


def test_server_config_applies_the_shorthands() -> None:
    assert server_config() == ServerConfig()
    narrowed = server_config(CUSTOM, capabilities=["core"], read_only=False)
    assert narrowed == dataclasses.replace(
        CUSTOM, capabilities=frozenset({"core"}), read_only=False
    )
    with pytest.raises(TypeError, match="list of names"):
        server_config(capabilities="core")


def test_a_stdio_server_runs_on_the_configuration_given() -> None:
    with Servers() as servers:
        assert "--config" not in servers.stdio_command()
        command = servers.stdio_command(CUSTOM, read_only=False)
        config_file = Path(command[command.index("--config") + 1])
        with A2MClient.stdio(command) as client:
            described = client.describe()
        assert described.name == CUSTOM.name
        assert set(described.capabilities) == {"core", "keys", "tiers"}
        assert [tier.name for tier in described.tiers or []] == ["scratch", "archive"]
        assert config_file.exists()
    assert not config_file.exists()
    assert not config_file.parent.exists()


def test_servers_refuse_mixed_or_late_requests() -> None:
    servers = Servers()
    server = servers.server()
    with pytest.raises(TypeError, match="not both"):
        servers.http_url(server, read_only=True)
    servers.close()
    servers.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        server.connect()
    with pytest.raises(RuntimeError, match="closed"):
        servers.server()
    with pytest.raises(RuntimeError, match="closed"):
        servers.stdio_command()


def test_open_client_names_the_known_bindings() -> None:
    with Servers() as servers, pytest.raises(ValueError, match="in-process, stdio, http, rest"):
        open_client(A2MClient, "pigeon", servers)


def test_the_binding_table_opens_both_clients() -> None:
    assert list(BINDINGS) == ["in-process", "stdio", "http", "rest"]
    with Servers() as servers:
        sync = open_client(A2MClient, "in-process", servers, capabilities=["core"])
        assert isinstance(sync, A2MClient)
        assert sync.capabilities == {"core"}
        sync.close()
        # Opening does no I/O, so an async client needs no event loop until its first call.
        asynchronous = open_client(AsyncA2MClient, "in-process", servers)
        assert isinstance(asynchronous, AsyncA2MClient)


def test_assert_remembered_reads_a_server_or_a_client(a2m_server: A2MServer) -> None:
    with A2MClient.in_process(a2m_server) as client:
        client.remember(
            [
                {"content": "The user lives in Lisbon", "key": "user/city"},
                {"content": "Lunch at noon", "metadata": {"source_framework": "crewai"}},
            ]
        )
        for source in (a2m_server, client):
            record = assert_remembered(source, key="user/city", contains="LISBON")
            assert record.content == "The user lives in Lisbon"
            assert_remembered(source, metadata={"source_framework": "crewai"})
            assert_not_remembered(source, contains="Paris")
        with pytest.raises(AssertionError, match="no record matches contains='Paris'") as caught:
            assert_remembered(client, contains="Paris")
        assert "key='user/city'" in str(caught.value)
        with pytest.raises(AssertionError, match="expected no record matching"):
            assert_not_remembered(client, tier="working")
        with pytest.raises(TypeError, match="at least one criterion"):
            assert_remembered(client)


@pytest.mark.anyio
async def test_assert_remembered_async(a2m_server: A2MServer) -> None:
    client = AsyncA2MClient.in_process(a2m_server)
    try:
        await client.remember({"content": "async memory", "key": "agent/state"})
        record = await assert_remembered_async(client, key="agent/state")
        assert record.content == "async memory"
        await assert_not_remembered_async(client, content="something else")
        with pytest.raises(AssertionError):
            await assert_remembered_async(client, content="something else")
    finally:
        await client.aclose()


def test_the_public_names_are_pinned() -> None:
    assert a2m_testing.__all__ == [
        "BINDINGS",
        "DEFAULT_URL",
        "Binding",
        "DelayedTransport",
        "InProcessHTTP",
        "Servers",
        "assert_not_remembered",
        "assert_not_remembered_async",
        "assert_remembered",
        "assert_remembered_async",
        "matching_records",
        "open_client",
        "route_to_server",
        "serve_http",
        "stdio_command",
    ]
    assert a2m_testing.contract.__all__ == [
        "ENTRY_FIELDS",
        "META_FIELDS",
        "AdapterContract",
        "AsyncAdapterContract",
        "AsyncExtendedAdapterContract",
        "ExtendedAdapterContract",
        "StandardTests",
        "as_entry",
        "as_hits",
        "check_entry",
        "override_reason",
        "override_standard_test",
    ]
    for module in (a2m_testing, a2m_testing.contract):
        assert all(hasattr(module, name) for name in module.__all__)


def test_the_stdio_command_runs_this_interpreter() -> None:
    command = a2m_testing.stdio_command("memory.db", "--read-only")
    assert command == [
        sys.executable,
        "-m",
        "a2m_server",
        "stdio",
        "--db",
        "memory.db",
        "--read-only",
    ]


def test_the_plugin_is_registered_under_the_entry_point_a2m() -> None:
    """The README: installing a2m-testing registers the pytest plugin, entry point ``a2m``."""
    from importlib.metadata import entry_points

    import a2m_testing.plugin

    (plugin,) = [ep for ep in entry_points(group="pytest11") if ep.name == "a2m"]
    assert plugin.load() is a2m_testing.plugin


def test_an_intercepted_server_answers_through_its_hook() -> None:
    """The hook sees each parsed request: it lets the server answer, or answers in its
    place with a refusal the client raises as its typed error; nothing refused is stored."""
    seen: list[str] = []

    def hook(request: dict[str, object], answer: object) -> str | None:
        seen.append(str(request["method"]))
        if request["method"] == "memory/remember" and seen.count("memory/remember") == 2:
            return refusal(request, -32006, "the store is full")
        return answer()  # type: ignore[operator, no-any-return]

    with A2MServer() as server, A2MClient.in_process(Intercepted(server, hook)) as client:
        client.remember("first")
        with pytest.raises(QuotaExceeded, match="the store is full"):
            client.remember("second")
        assert [r.content for r in client.timeline().records] == ["first"]
    assert seen.count("memory/remember") == 2
