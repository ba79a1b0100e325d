"""Fixtures for the A2M 0.1 conformance suite (``test_spec_*.py``).

- ``binding``: the binding under test, one of ``in-process``, ``stdio`` and ``http``;
  every test asking for it runs on all three, unless marked ``bindings(...)``.
- ``peer``: a connection to a server with the default configuration, shared by every test
  of a module on that binding (tests use their own keys, owners, sessions and tags).
- ``make_peer``: builds a peer on a server of its own (special configuration, file
  store, tokens), torn down after the test; ``module_peer_factory`` does the same for a
  whole module.

Only 127.0.0.1 is ever bound; every process and thread started here is stopped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from spec_support import BINDINGS, Actor, Agents, HttpPeer, Peer, PeerFactory, uid


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "bindings(*names): run a binding-parametrized test on these bindings only"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "binding" in metafunc.fixturenames and metafunc.module.__name__.startswith("test_spec_"):
        marker = metafunc.definition.get_closest_marker("bindings")
        chosen = marker.args if marker is not None else BINDINGS
        metafunc.parametrize("binding", chosen, indirect=True, scope="module")


@pytest.fixture(scope="module")
def binding(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(autouse=True)
def _store(store_backend: str) -> str:
    """Every test here runs on each store backend (see tests/conftest.py)."""
    return store_backend


@pytest.fixture(scope="module")
def module_peer_factory(
    tmp_path_factory: pytest.TempPathFactory, store_backend: str
) -> Iterator[PeerFactory]:
    factory = PeerFactory(tmp_path_factory.mktemp("spec-module"))
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def make_peer(tmp_path: Path, store_backend: str) -> Iterator[PeerFactory]:
    factory = PeerFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture(scope="module")
def shared_peer(binding: str, module_peer_factory: PeerFactory) -> Peer:
    """One default server per module and binding."""
    return module_peer_factory(binding)


@pytest.fixture
def peer(shared_peer: Peer) -> Iterator[Peer]:
    """The module's shared peer, with no notification left over from another test."""
    shared_peer.notifications()
    yield shared_peer
    if shared_peer.subscribed:
        shared_peer.call("memory/events/unsubscribe")
    shared_peer.notifications()


@pytest.fixture(scope="module")
def agents(binding: str, module_peer_factory: PeerFactory, shared_peer: Peer) -> Agents:
    """On a local transport, owners are named in the call (§6 allows it); over HTTP they
    come from bearer tokens (§6.1), on a server of the module's own."""
    alice_name, bob_name = uid("alice"), uid("bob")
    if binding != "http":
        return Agents(
            Actor(shared_peer, alice_name, names_owner=True),
            Actor(shared_peer, bob_name, names_owner=True),
            shared_peer,
        )
    alice_token, bob_token = uid("token"), uid("token")
    alice_peer = module_peer_factory(
        "http", tokens={alice_token: alice_name, bob_token: bob_name}, token=alice_token
    )
    assert isinstance(alice_peer, HttpPeer)
    bob_peer = module_peer_factory.adopt(alice_peer.sibling(token=bob_token))
    return Agents(
        Actor(alice_peer, alice_name, names_owner=False),
        Actor(bob_peer, bob_name, names_owner=False),
        alice_peer,
    )
