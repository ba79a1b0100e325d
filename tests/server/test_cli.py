"""The ``a2m-server`` command line, run as real subprocesses: ``--version``, one-line
configuration errors, the stdio flags, and ``serve`` answering then stopping on a signal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2m_testing.servers import stdio_command
from a2m_types import ErrorCode

TIMEOUT = 30.0
A2M_SERVER = [sys.executable, "-m", "a2m_server"]


def _run(
    args: list[str],
    *,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*A2M_SERVER, *args], input=stdin, capture_output=True, timeout=TIMEOUT, env=env, cwd=cwd
    )


def _requests(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def _responses(output: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_version() -> None:
    done = _run(["--version"])
    assert done.returncode == 0
    assert done.stdout.decode().strip() == "a2m-server 0.1.0 (a2m/0.1)"


def test_console_script_entry_point_is_main() -> None:
    from a2m_server.cli import main

    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0


def test_no_command_prints_usage_and_exits_2() -> None:
    done = _run([])
    assert done.returncode == 2
    assert b"usage: a2m-server" in done.stderr
    assert done.stdout == b""


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("bogus = 1\n", "unknown configuration keys: bogus"),
        ("name = \n", "bad.toml:"),
        ('capabilities = ["core", "telepathy"]\n', "telepathy"),
        ('metric = "manhattan"\n', "metric"),
        ("[limits]\nmax_records_per_call = 0\n", "max_records_per_call"),
        ("[limits]\nnope = 3\n", "nope"),
        ('[[tiers]]\nname = "a"\nspill_to = "b"\n', "unknown tier"),
    ],
)
def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, config: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(config, encoding="utf-8")
    done = _run(["stdio", "--db", ":memory:", "--config", str(path)])
    assert done.returncode == 2
    assert done.stdout == b""
    message = done.stderr.decode()
    assert message.count("\n") == 1, message
    assert message.startswith("a2m-server: error: ")
    assert str(path) in message
    assert expected in message
    assert "Traceback" not in message


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["stdio", "--config", "missing.toml"], "missing.toml: configuration file not found"),
        (["serve", "--config", "missing.toml"], "missing.toml: configuration file not found"),
        (["stdio", "--capabilities", "core,nope"], "unknown capabilities: nope"),
        (["stdio", "--capabilities", ","], "at least one capability"),
        (["serve", "--tokens", "missing.json"], "missing.json: token file not found"),
        (["serve", "--allow-origin", "example.com"], "not a browser origin"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    done = _run([*args, "--db", ":memory:"], cwd=tmp_path)
    assert done.returncode == 2
    message = done.stderr.decode()
    assert message.count("\n") == 1, message
    assert expected in message


def test_bad_token_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"tok": ""}', encoding="utf-8")
    done = _run(["serve", "--db", ":memory:", "--tokens", str(tokens)])
    assert done.returncode == 2
    message = done.stderr.decode()
    assert message.count("\n") == 1, message
    assert str(tokens) in message


def test_unopenable_store_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    done = _run(["stdio", "--db", str(blocker / "sub" / "a2m.db")])
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1
    assert b"Traceback" not in done.stderr


def test_stdio_read_only_refuses_writes(tmp_path: Path) -> None:
    done = subprocess.run(
        stdio_command(str(tmp_path / "ro.db"), "--read-only"),
        capture_output=True,
        timeout=TIMEOUT,
        input=_requests(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "memory/remember",
                "params": {"records": [{"content": "no"}]},
            },
            {"jsonrpc": "2.0", "id": 2, "method": "memory/recall", "params": {"query": "x"}},
        ),
    )
    assert done.returncode == 0, done.stderr
    refused, recalled = _responses(done.stdout)
    assert refused["error"]["code"] == ErrorCode.READ_ONLY
    assert recalled["result"]["records"] == []


def test_read_only_flag_overrides_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "a2m.toml"
    config.write_text('name = "team"\nread_only = false\n', encoding="utf-8")
    done = _run(
        ["stdio", "--db", ":memory:", "--config", str(config), "--read-only"],
        stdin=_requests(
            {"jsonrpc": "2.0", "id": 1, "method": "memory/describe"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "memory/remember",
                "params": {"records": [{"content": "no"}]},
            },
        ),
    )
    described, refused = _responses(done.stdout)
    assert described["result"]["name"] == "team"
    assert refused["error"]["code"] == ErrorCode.READ_ONLY


def test_capabilities_flag_declares_exactly_those(tmp_path: Path) -> None:
    done = _run(
        ["stdio", "--db", ":memory:", "--capabilities", "keys, tiers"],
        stdin=_requests(
            {"jsonrpc": "2.0", "id": 1, "method": "memory/describe"},
            {"jsonrpc": "2.0", "id": 2, "method": "memory/events", "params": {}},
        ),
    )
    described, refused = _responses(done.stdout)
    assert set(described["result"]["capabilities"]) == {"core", "keys", "tiers"}
    assert refused["error"]["code"] == ErrorCode.CAPABILITY_NOT_SUPPORTED


def test_db_defaults_to_the_environment_then_the_working_directory(tmp_path: Path) -> None:
    remember = _requests(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory/remember",
            "params": {"records": [{"content": "here"}]},
        }
    )
    env = {key: value for key, value in os.environ.items() if key != "A2M_DB"}
    done = _run(["stdio"], stdin=remember, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a2m.db").exists()

    chosen = tmp_path / "from-env.db"
    done = _run(["stdio"], stdin=remember, env={**env, "A2M_DB": str(chosen)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert chosen.exists()


# --- serve ------------------------------------------------------------------------------


class ServeProcess:
    def __init__(self, *args: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [*A2M_SERVER, "serve", "--port", str(self.port), "--log-level", "warning", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def wait_ready(self, headers: dict[str, str] | None = None) -> httpx.Response:
        deadline = time.monotonic() + TIMEOUT
        request = {"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}
        while True:
            assert self.process.poll() is None, self.process.communicate()[1].decode()
            try:
                return httpx.post(self.url, json=request, headers=headers, timeout=5)
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        self.process.send_signal(signum)
        _, stderr = self.process.communicate(timeout=TIMEOUT)
        return self.process.returncode, stderr.decode()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=TIMEOUT)


@pytest.fixture
def serve() -> Iterator[type[ServeProcess]]:
    started: list[ServeProcess] = []

    class Tracked(ServeProcess):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            started.append(self)

    yield Tracked
    for process in started:
        process.kill()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_then_stops_cleanly_on_a_signal(
    serve: type[ServeProcess], tmp_path: Path, signum: int
) -> None:
    db = tmp_path / "served.db"
    server = serve("--db", str(db))
    response = server.wait_ready()
    assert response.status_code == 200
    assert response.json()["result"]["protocol"] == "a2m/0.1"
    assert "scopes" not in response.json()["result"]["capabilities"]
    written = httpx.post(
        server.url,
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "memory/remember",
            "params": {"records": [{"content": "kept"}]},
        },
        timeout=TIMEOUT,
    )
    assert "result" in written.json()
    code, stderr = server.stop(signum)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    # The store was closed: SQLite folds the write-ahead log back in on the last close.
    assert not Path(f"{db}-wal").exists()


def test_serve_with_tokens_requires_them(serve: type[ServeProcess], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"s3cr3t": "alice"}), encoding="utf-8")
    server = serve("--db", ":memory:", "--tokens", str(tokens))
    assert server.wait_ready().status_code == 401
    admitted = server.wait_ready({"Authorization": "Bearer s3cr3t"})
    assert "scopes" in admitted.json()["result"]["capabilities"]


def test_serve_passes_origin_and_body_limit(serve: type[ServeProcess]) -> None:
    server = serve(
        "--db", ":memory:", "--allow-origin", "https://app.example", "--max-body-bytes", "512"
    )
    server.wait_ready()
    request = {"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}
    assert (
        httpx.post(server.url, json=request, headers={"Origin": "https://app.example"}).status_code
        == 200
    )
    assert (
        httpx.post(server.url, json=request, headers={"Origin": "https://evil.example"}).status_code
        == 403
    )
    assert httpx.post(server.url, content=b" " * 1024).status_code == 413


@pytest.mark.parametrize(("level", "logged"), [("info", True), ("warning", False)])
def test_serve_writes_the_access_log_at_info_only(
    serve: type[ServeProcess], level: str, logged: bool
) -> None:
    server = serve("--db", ":memory:", "--log-level", level)
    assert server.wait_ready().status_code == 200
    server.process.send_signal(signal.SIGTERM)
    stdout, stderr = server.process.communicate(timeout=TIMEOUT)
    assert server.process.returncode == 0, stderr
    # uvicorn writes its access log on stdout.
    assert (b'"POST / HTTP/1.1" 200' in stdout) is logged, stdout


def test_serve_warns_when_exposed_without_tokens() -> None:
    # A bad origin stops the command after the warning and before anything binds 0.0.0.0.
    done = _run(["serve", "--db", ":memory:", "--host", "0.0.0.0", "--allow-origin", "bogus"])
    assert done.returncode == 2
    assert b"without --tokens" in done.stderr


def test_serve_reports_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(["serve", "--db", ":memory:", "--port", str(port)])
    assert done.returncode == 1
    assert b"address already in use" in done.stderr
    assert b"Traceback" not in done.stderr
