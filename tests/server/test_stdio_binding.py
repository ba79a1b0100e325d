"""The stdio binding (§8.2): a real ``python -m a2m_server stdio`` subprocess speaking one
JSON message per line, plus ``run_stdio`` driven directly for what a pipe cannot provoke."""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2m_server.bindings.stdio import run_stdio
from a2m_server.server import A2MServer
from a2m_testing.servers import stdio_command
from a2m_types import EVENT_NOTIFICATION, ErrorCode

pytestmark = pytest.mark.spec("8.2")

TIMEOUT = 30.0


def _check_message(line: bytes) -> dict[str, Any]:
    """Every stdout line must be exactly one JSON-RPC response or notification."""
    assert line.endswith(b"\n"), line
    assert b"\n" not in line[:-1]
    message = json.loads(line.decode("utf-8"))
    assert isinstance(message, dict), message
    assert message["jsonrpc"] == "2.0"
    if "id" in message:
        assert ("result" in message) != ("error" in message), message
    else:
        assert message["method"] == EVENT_NOTIFICATION, message
        assert isinstance(message["params"], dict)
    return message


class StdioPeer:
    """One stdio server subprocess, read line by line on a background thread."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self.notifications: list[dict[str, Any]] = []
        self._next_id = 0
        self._threads = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        self._stderr.extend(self.process.stderr)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def send(self, data: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        raw = data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n"
        self.process.stdin.write(raw)
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        line = self._lines.get(timeout=TIMEOUT)
        assert line is not None, f"the server closed stdout; stderr:\n{self.stderr}"
        return _check_message(line)

    def response(self) -> dict[str, Any]:
        """The next response, keeping any notification that arrives first."""
        while True:
            message = self.read()
            if "id" in message:
                return message
            self.notifications.append(message)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        response = self.response()
        assert response["id"] == self._next_id
        return response

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        response = self.request(method, params)
        assert "error" not in response, response
        return response["result"]

    def close(self) -> int:
        """Close stdin, check whatever is left on stdout, and return the exit code."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(TIMEOUT)
        self.drain()
        return code

    def drain(self) -> list[dict[str, Any]]:
        for thread in self._threads:
            thread.join(TIMEOUT)
        rest = []
        while (line := self._lines.get_nowait()) is not None:
            rest.append(_check_message(line))
        return rest

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        for thread in self._threads:
            thread.join(TIMEOUT)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., StdioPeer]]:
    peers: list[StdioPeer] = []

    def start(*extra_args: str, db: Path | None = None) -> StdioPeer:
        peer = StdioPeer(stdio_command(str(db or tmp_path / "memory.db"), *extra_args))
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        peer.terminate()


def test_request_and_response_lines(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    describe = peer.call("memory/describe", {"protocol": "a2m/0.1"})
    assert describe["protocol"] == "a2m/0.1"
    assert "scopes" in describe["capabilities"]
    assert describe["events"]["push"] is True
    ids = peer.call("memory/remember", {"records": [{"content": "stdio works"}]})["ids"]
    recalled = peer.call("memory/recall", {"query": "stdio"})
    assert [record["id"] for record in recalled["records"]] == ids
    assert peer.close() == 0


def test_stdout_carries_only_json_rpc(start: Callable[..., StdioPeer]) -> None:
    # Debug logging makes the server chatty: all of it must land on stderr.
    peer = start("--log-level", "debug")
    peer.call("memory/events/subscribe", {})
    peer.call("memory/remember", {"records": [{"content": f"line {n}"} for n in range(5)]})
    peer.send(b"not json\n")
    assert peer.response()["error"]["code"] == ErrorCode.PARSE_ERROR
    peer.call("memory/timeline", {})
    assert peer.request("memory/nope")["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
    assert peer.close() == 0
    assert "Traceback" not in peer.stderr


def test_garbage_line_is_a_parse_error_and_the_server_keeps_going(
    start: Callable[..., StdioPeer],
) -> None:
    peer = start()
    for garbage in (b"garbage\n", b'{"jsonrpc": \n', b"\xff\xfe\xfd\n", b"{}}\n"):
        peer.send(garbage)
        error = peer.response()["error"]
        assert error["code"] == ErrorCode.PARSE_ERROR
    assert peer.call("memory/describe")["protocol"] == "a2m/0.1"
    assert peer.close() == 0


def test_array_is_refused_as_invalid_request(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    peer.send(b'[{"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}]\n')
    assert peer.response()["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert peer.close() == 0


def test_blank_lines_are_ignored(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    peer.send(b"\n   \n\r\n")
    response = peer.request("memory/describe")
    assert response["id"] == 1
    assert peer.close() == 0


def test_notification_gets_no_line(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    peer.send(
        {
            "jsonrpc": "2.0",
            "method": "memory/remember",
            "params": {"records": [{"content": "quiet", "key": "k/q"}]},
        }
    )
    # The next line is the answer to the next request, not to the notification.
    assert peer.call("memory/fetch", {"key": "k/q"})["record"]["content"] == "quiet"
    assert peer.close() == 0


def test_closing_stdin_exits_cleanly(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    peer.call("memory/describe")
    assert peer.close() == 0
    assert "Traceback" not in peer.stderr


def test_closing_stdin_mid_line_exits_cleanly(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    peer.send(b'{"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}')
    assert peer.close() == 0
    assert "Traceback" not in peer.stderr


@pytest.mark.spec("4.13")
def test_subscribe_then_remember_pushes_an_event_line(start: Callable[..., StdioPeer]) -> None:
    peer = start()
    assert peer.call("memory/events/subscribe", {}) == {"subscribed": True}
    ids = peer.call("memory/remember", {"records": [{"content": "pushed"}]})["ids"]
    deadline_reads = 5
    while not peer.notifications and deadline_reads:
        peer.notifications.append(peer.read())
        deadline_reads -= 1
    event = peer.notifications[0]
    assert "id" not in event
    assert event["method"] == EVENT_NOTIFICATION
    assert event["params"]["kind"] == "written"
    assert event["params"]["id"] == ids[0]
    assert peer.close() == 0


def test_data_persists_across_two_runs(start: Callable[..., StdioPeer], tmp_path: Path) -> None:
    db = tmp_path / "persist.db"
    first = start(db=db)
    ids = first.call("memory/remember", {"records": [{"content": "remember me", "key": "p/1"}]})[
        "ids"
    ]
    assert first.close() == 0
    second = start(db=db)
    assert second.call("memory/fetch", {"key": "p/1"})["record"]["id"] == ids[0]
    assert second.close() == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_cleanly(start: Callable[..., StdioPeer], signum: int) -> None:
    peer = start()
    peer.call("memory/describe")
    peer.process.send_signal(signum)
    assert peer.process.wait(TIMEOUT) == 0
    peer.drain()
    assert "Traceback" not in peer.stderr


# --- run_stdio driven directly --------------------------------------------------------


def _lines(output: bytes) -> list[dict[str, Any]]:
    return [_check_message(line) for line in output.splitlines(keepends=True)]


def test_run_stdio_returns_at_end_of_input() -> None:
    requests = b'{"jsonrpc":"2.0","id":1,"method":"memory/describe"}\n\n{"jsonrpc":"2.0","id":2,"method":"memory/timeline"}'
    output = io.BytesIO()
    with A2MServer() as server:
        run_stdio(server, stdin=io.BytesIO(requests), stdout=output)
    assert [message["id"] for message in _lines(output.getvalue())] == [1, 2]


def test_run_stdio_refuses_an_overlong_line_and_continues() -> None:
    requests = (
        b'{"jsonrpc":"2.0","id":1,"method":"'
        + b"x" * 500
        + b'"}\n{"jsonrpc":"2.0","id":2,"method":"memory/describe"}\n'
    )
    output = io.BytesIO()
    with A2MServer() as server:
        run_stdio(server, stdin=io.BytesIO(requests), stdout=output, max_line_bytes=100)
    first, second = _lines(output.getvalue())
    assert first["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert second["id"] == 2
    assert "result" in second


def test_run_stdio_answers_a_lone_surrogate_with_valid_utf8() -> None:
    output = io.BytesIO()
    with A2MServer() as server:
        run_stdio(
            server,
            stdin=io.BytesIO(b'{"jsonrpc":"2.0","id":"\\ud800","method":"nope"}\n'),
            stdout=output,
        )
    (response,) = _lines(output.getvalue())
    assert response["id"] == "\ud800"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_message = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0"]) | _json,
        "id": st.integers() | st.text(max_size=8) | _json,
        "method": st.sampled_from(
            ["memory/describe", "memory/recall", "memory/remember", "memory/fetch", "memory/events"]
        )
        | _json,
        "params": st.dictionaries(
            st.sampled_from(["query", "records", "key", "limit", "owner", "tier"]),
            _json,
            max_size=3,
        )
        | _json,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.binary(max_size=120).map(lambda raw: raw.replace(b"\n", b" "))
        | _message.map(lambda message: json.dumps(message).encode())
        | _json.map(lambda value: json.dumps(value).encode()),
        max_size=6,
    )
)
def test_any_input_gets_only_json_rpc_back(lines: list[bytes]) -> None:
    output = io.BytesIO()
    with A2MServer() as server:
        run_stdio(server, stdin=io.BytesIO(b"\n".join(lines) + b"\n"), stdout=output)
    answers = _lines(output.getvalue())
    assert len(answers) <= len(lines)
    assert all("id" in answer for answer in answers)


class _Interrupting(io.BytesIO):
    def readline(self, size: int | None = -1) -> bytes:
        raise KeyboardInterrupt


class _ClosedOutput(io.BytesIO):
    def write(self, data: Any) -> int:
        raise BrokenPipeError


def test_run_stdio_returns_on_keyboard_interrupt() -> None:
    with A2MServer() as server:
        run_stdio(server, stdin=_Interrupting(), stdout=io.BytesIO())


def test_run_stdio_stops_when_the_peer_closes_its_end() -> None:
    requests = b'{"jsonrpc":"2.0","id":1,"method":"memory/describe"}\n' * 3
    stdin = io.BytesIO(requests)
    with A2MServer() as server:
        run_stdio(server, stdin=stdin, stdout=_ClosedOutput())
    # It gave up after the first failed write instead of reading on.
    assert stdin.tell() < len(requests)


@pytest.mark.spec("4.13")
def test_pushed_lines_never_interleave_with_responses() -> None:
    read_fd, write_fd = os.pipe()
    output = io.BytesIO()
    writers, per_writer = 4, 25
    with A2MServer() as server, open(read_fd, "rb") as stdin, open(write_fd, "wb") as requests:
        serving = threading.Thread(
            target=run_stdio, args=(server,), kwargs={"stdin": stdin, "stdout": output}
        )
        serving.start()
        requests.write(b'{"jsonrpc":"2.0","id":"sub","method":"memory/events/subscribe"}\n')
        requests.flush()
        _wait_for(lambda: b'"sub"' in output.getvalue())

        def write_from_elsewhere(n: int) -> None:
            with server.connect() as other:
                for i in range(per_writer):
                    other.call("memory/remember", {"records": [{"content": f"w{n} r{i}"}]})

        threads = [threading.Thread(target=write_from_elsewhere, args=(n,)) for n in range(writers)]
        # Responses on our own connection race with the pushed lines.
        for i in range(per_writer):
            requests.write(b'{"jsonrpc":"2.0","id":%d,"method":"memory/describe"}\n' % i)
        requests.flush()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
        _wait_for(lambda: output.getvalue().count(b'"kind":"written"') >= writers * per_writer)
        requests.close()
        serving.join(TIMEOUT)
    messages = _lines(output.getvalue())
    written = [
        m
        for m in messages
        if m.get("method") == EVENT_NOTIFICATION and m["params"]["kind"] == "written"
    ]
    assert len(written) == writers * per_writer
    assert sum(1 for m in messages if "id" in m) == per_writer + 1


def _wait_for(condition: Callable[[], bool]) -> None:
    event = threading.Event()
    for _ in range(int(TIMEOUT / 0.01)):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("condition not met in time")
