"""The plugin's server fixtures, through pytester: what each gives a test, and that
everything it started is gone afterwards — servers closed, HTTP threads joined, stdio
processes reaped, temporary files removed — even when the test fails."""

from __future__ import annotations

import threading

import psutil
import pytest


@pytest.fixture
def strict(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(
        """
        [pytest]
        addopts = --strict-markers --strict-config -p no:cacheprovider
        filterwarnings = error
        """
    )
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """
    )
    return pytester


def _http_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("a2m-http-")]


def _children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def test_the_server_fixtures_give_what_they_say(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import httpx
        from a2m import A2MClient

        def test_in_process(a2m_server):
            with A2MClient.in_process(a2m_server) as client:
                client.remember({"content": "kept", "key": "app/note"})
                assert client.fetch("app/note").record.content == "kept"

        def test_factory(a2m_server_factory, tmp_path):
            small = a2m_server_factory(capabilities=["core"], read_only=True)
            assert small.config.capabilities == {"core"} and small.config.read_only
            on_disk = a2m_server_factory(db=tmp_path / "memory.db")
            with A2MClient.in_process(on_disk) as client:
                client.remember("persisted")
            assert (tmp_path / "memory.db").exists()

        def test_http_serves_a2m_server(a2m_server, a2m_http_url):
            assert a2m_http_url.startswith("http://127.0.0.1:")
            with A2MClient(a2m_http_url) as client:
                client.remember({"content": "over http", "key": "app/http"})
            with a2m_server.connect() as connection:
                assert connection.call("memory/fetch", {"key": "app/http"})["record"]

        def test_http_factory_passes_app_options(a2m_http_server_factory):
            url = a2m_http_server_factory(tokens={"s3cret": "alice"}, capabilities=["core"])
            assert httpx.get(url + ".well-known/a2m-server.json").status_code == 401
            headers = {"Authorization": "Bearer s3cret"}
            profile = httpx.get(url + ".well-known/a2m-server.json", headers=headers).json()
            assert profile["capabilities"] == ["core"]

            browser = a2m_http_server_factory(allowed_origins=["https://app.example"])
            for origin, status in (("https://app.example", 200), ("https://evil.example", 403)):
                answer = httpx.get(browser + ".well-known/a2m-server.json", headers={"Origin": origin})
                assert answer.status_code == status

        def test_stdio_command(a2m_stdio_command):
            assert "stdio" in a2m_stdio_command
            with A2MClient.stdio(a2m_stdio_command) as client:
                client.remember("over a pipe")
                assert client.recall("pipe").records
        """
    )
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=5)


def test_everything_started_is_gone_after_the_run(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import os
        import pytest
        from a2m import A2MClient

        seen = {}

        def test_start_everything(
            a2m_server, a2m_http_url, a2m_stdio_command, a2m_client_factory
        ):
            seen["server"] = a2m_server
            seen["db"] = a2m_stdio_command[a2m_stdio_command.index("--db") + 1]
            for binding in ("in-process", "stdio", "http"):
                a2m_client_factory(binding).remember("started")
            stdio = A2MClient.stdio(a2m_stdio_command)
            stdio.remember("another process")
            seen["stdio"] = stdio
            raise AssertionError("a failing test tears down too")

        def test_all_gone_after_the_failure():
            with pytest.raises(RuntimeError, match="closed"):
                seen["server"].connect()
            assert not os.path.exists(seen["db"])
            seen["stdio"].close()  # the test's own client: its process is the test's to reap
        """
    )
    threads_before, children_before = len(_http_threads()), _children()
    result = strict.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    assert len(_http_threads()) == threads_before
    assert _children() <= children_before


def test_async_clients_are_closed_on_the_loop_that_made_them(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        seen = []

        async def test_use(a2m_async_client):
            await a2m_async_client.remember("async")
            seen.append(a2m_async_client)

        def test_closed():
            assert len(seen) == 4  # one per binding
            assert all(client._state.closed for client in seen)
        """
    )
    children_before = _children()
    strict.runpytest().assert_outcomes(passed=5)  # test_use once per binding, then test_closed
    assert _children() <= children_before
    assert not _http_threads()


def test_every_fixture_is_documented(strict: pytest.Pytester) -> None:
    result = strict.runpytest("--fixtures")
    documented = {
        "a2m_servers": "fresh servers of",
        "a2m_server": "in-memory store",
        "a2m_server_factory": "Build in-process servers",
        "a2m_http_url": "ephemeral loopback port",
        "a2m_http_server_factory": "Serve servers over real HTTP",
        "a2m_stdio_command": "argv of a stdio server",
        "a2m_binding": "The binding this run",
        "a2m_client": "over each",
        "a2m_async_client": "async twin of",
        "a2m_client_factory": "Open",
        "a2m_async_client_factory": "async twin of",
        "a2m_respx_url": "answers on",
        "a2m_respx_router": "active respx router",
    }
    text = result.stdout.str()
    for name, phrase in documented.items():
        assert f"{name} -- " in text, f"{name} is not listed by --fixtures"
        section = text.split(f"{name} -- ", 1)[1].split(" -- ", 1)[0]
        assert phrase in " ".join(section.split()), f"{name}'s docstring is not shown"
