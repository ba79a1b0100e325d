"""The stdio transport's own behaviour (§8.2): lazy spawn, responses matched by id while
notifications and stray lines interleave, a crash reported with the server's stderr, and a
clean (or forced) shutdown."""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from client_support import Driver, install_sleep

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import async_stdio, stdio

pytestmark = pytest.mark.anyio

MODES = ["sync", "async"]

FAKE_SERVER = textwrap.dedent(
    """
    import json, sys

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    held = []
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message["method"], message["id"]
        if method == "memory/describe":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocol": "a2m/0.1", "name": "fake", "capabilities": ["core", "events"],
                "methods": [], "events": {"push": True}}})
        elif method == "memory/events/subscribe":
            send({"jsonrpc": "2.0", "id": ident, "result": {"subscribed": True}})
        elif method == "memory/recall":
            held.append(message)
            if len(held) == 2:
                # Answer in reverse order, with a notification and a stray line between.
                sys.stdout.write("not json, but a client must survive it\\n")
                send({"jsonrpc": "2.0", "method": "memory/event", "params": {
                    "kind": "written", "id": "n1", "at": "2026-07-28T10:15:30.123Z"}})
                for request in reversed(held):
                    query = request["params"]["query"]
                    send({"jsonrpc": "2.0", "id": request["id"], "result": {"records": [
                        {"id": query, "content": query,
                         "created_at": "2026-07-28T10:15:30.123Z"}]}})
                held.clear()
        # memory/timeline is never answered
    """
)


def make(mode: str, command: list[str], **options: object) -> Driver:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    return Driver(cls.stdio(command, **options), "stdio")  # type: ignore[arg-type]


async def close(driver: Driver) -> None:
    if driver.is_async:
        await driver.client.aclose()
    else:
        driver.client.close()


@pytest.fixture
def fake_command(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_stdio_server.py"
    script.write_text(FAKE_SERVER)
    return [sys.executable, str(script)]


@pytest.mark.parametrize("mode", MODES)
async def test_spawns_lazily_and_exits_cleanly_when_stdin_closes(tmp_path, mode) -> None:
    from a2m_testing.servers import stdio_command

    driver = make(mode, stdio_command(str(tmp_path / "m.db")))
    transport = driver.client._state.transport
    assert transport._process is None  # nothing spawned by the constructor
    await driver.remember("persisted")
    process = transport._process
    assert process is not None
    await close(driver)
    assert process.returncode == 0  # closing stdin stopped it (§8.2)

    again = make(mode, stdio_command(str(tmp_path / "m.db")))
    assert [r.content for r in (await again.timeline()).records] == ["persisted"]
    await close(again)


@pytest.mark.parametrize("mode", MODES)
async def test_matches_responses_by_id_amid_notifications_and_noise(
    fake_command, mode, caplog
) -> None:
    driver = make(mode, fake_command)
    subscription = await driver.subscribe()
    if driver.is_async:
        first, second = await asyncio.gather(driver.recall("alpha"), driver.recall("beta"))
    else:
        first, second = await asyncio.gather(
            asyncio.to_thread(driver.client.recall, "alpha"),
            asyncio.to_thread(driver.client.recall, "beta"),
        )
    assert first.records[0].content == "alpha"
    assert second.records[0].content == "beta"
    events = (
        [e async for e in subscription.iter_events(timeout=0.5)]
        if driver.is_async
        else list(subscription.iter_events(timeout=0.5))
    )
    assert [e.id for e in events] == ["n1"]
    assert any("not JSON" in r.getMessage() for r in caplog.records)
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_an_unanswered_call_times_out(fake_command, mode) -> None:
    driver = make(mode, fake_command, max_retries=0)
    with pytest.raises(a2m.A2MTimeoutError) as caught:
        await driver.timeline(timeout=0.3)
    assert caught.value.method == "memory/timeline"
    await close(driver)


DEAF_SERVER = textwrap.dedent(
    """
    import json, sys, time
    line = sys.stdin.readline()  # answers describe, then never reads again
    ident = json.loads(line)["id"]
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {
        "protocol": "a2m/0.1", "name": "deaf", "capabilities": ["core"], "methods": []}}) + "\\n")
    sys.stdout.flush()
    time.sleep(60)
    """
)


@pytest.mark.parametrize("mode", MODES)
async def test_a_server_that_stops_reading_times_the_write_out_too(tmp_path, mode) -> None:
    """A request larger than the pipe holds, to a server that reads no more: the write
    itself waited for ever, and held every other call behind it."""
    import time

    script = tmp_path / "deaf.py"
    script.write_text(DEAF_SERVER)
    driver = make(mode, [sys.executable, str(script)], max_retries=0)
    await driver.describe()
    started = time.monotonic()
    with pytest.raises(a2m.A2MTimeoutError):
        await driver.remember([{"content": "x" * 400_000}], timeout=1)
    with pytest.raises(a2m.A2MTimeoutError):
        await driver.recall("anything", timeout=1)
    assert time.monotonic() - started < 10
    await close(driver)


SAYS_NULL = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        message = json.loads(line)
        if message["method"] == "memory/describe":
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocol": "a2m/0.1", "name": "n", "capabilities": ["core"], "methods": []}}
        else:  # as a server answers a line whose id it could not read
            answer = {"jsonrpc": "2.0", "id": None,
                      "error": {"code": -32600, "message": "line too long"}}
        sys.stdout.write(json.dumps(answer) + "\\n")
        sys.stdout.flush()
    """
)


@pytest.mark.parametrize("mode", MODES)
async def test_an_error_with_a_null_id_answers_the_one_request_waiting(tmp_path, mode) -> None:
    script = tmp_path / "says_null.py"
    script.write_text(SAYS_NULL)
    driver = make(mode, [sys.executable, str(script)], max_retries=0)
    with pytest.raises(a2m.InvalidRequest, match="line too long"):
        await driver.recall("x", timeout=5)
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_a_crash_fails_the_call_with_the_stderr_tail(mode) -> None:
    command = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('starting\\nfatal: cannot open memory.db\\n'); sys.exit(3)",
    ]
    driver = make(mode, command)
    sleeps = install_sleep(driver.client)
    with pytest.raises(a2m.A2MConnectionError) as caught:
        await driver.recall("x")
    error = caught.value
    assert "fatal: cannot open memory.db" in str(error)
    assert "exited with code 3" in str(error)
    assert error.data["returncode"] == 3
    assert error.retryable is False
    assert sleeps.delays == []  # a dead process is not retried
    with pytest.raises(a2m.A2MConnectionError, match=r"cannot open memory\.db"):
        await driver.recall("again")
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_a_command_that_cannot_start(tmp_path, mode) -> None:
    driver = make(mode, [str(tmp_path / "no-such-server")])
    with pytest.raises(a2m.A2MConnectionError, match="could not start"):
        await driver.recall("x")
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("import time; time.sleep(60)", -signal.SIGTERM),
        (
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
            -signal.SIGKILL,
        ),
    ],
    ids=["terminated", "killed"],
)
async def test_a_server_that_lingers_is_terminated_then_killed(
    monkeypatch, mode, program, expected
) -> None:
    monkeypatch.setattr(stdio, "CLOSE_GRACE", 0.3)
    monkeypatch.setattr(async_stdio, "CLOSE_GRACE", 0.3)
    driver = make(mode, [sys.executable, "-c", program], max_retries=0)
    with pytest.raises(a2m.A2MTimeoutError):
        await driver.recall("x", timeout=1.0)  # the describe before it is never answered
    process = driver.client._state.transport._process
    await close(driver)
    assert process.returncode == expected
