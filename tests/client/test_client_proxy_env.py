"""The client README: whether a proxy from the environment (``HTTP_PROXY``, ``ALL_PROXY``,
``NO_PROXY``) applies to a plain ``http://`` URL is read when the client is made, so a
proxy set afterwards does not move a client off its own HTTP/1.1 code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from client_support import MODES, Driver
from scripted_http import ScriptedServer

from a2m import A2MClient, AsyncA2MClient

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def proxy() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def direct() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def _make(mode: str, url: str) -> Driver:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    return Driver(cls(url), "http")  # type: ignore[arg-type]


async def _close(driver: Driver) -> None:
    if driver.is_async:
        await driver.client.aclose()
    else:
        driver.client.close()


@pytest.mark.parametrize("mode", MODES)
async def test_a_proxy_set_after_the_client_was_made_is_not_used(
    proxy: ScriptedServer, direct: ScriptedServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    driver = _make(mode, direct.url)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    assert (await driver.recall("straight there")).records[0].content == "straight there"
    assert direct.requests[-1].request_line == b"POST / HTTP/1.1"
    assert proxy.requests == []
    await _close(driver)
