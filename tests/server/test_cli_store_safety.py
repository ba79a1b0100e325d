"""The command line never creates a store by mistake and says which store it works on:
export of a store that is not there refuses and creates nothing; import checks its dump
before creating anything; each subcommand takes only its own flags; ``serve`` logs the
store it opened (a URL without its password) and its capabilities, and says when it
created one, as ``stdio`` does on its stderr, which never mixes with its JSON-RPC; export and import show progress on a terminal and stay quiet when piped."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from a2m_server import A2MServer
from a2m_server.cli import _Progress, _without_password

TIMEOUT = 60.0
A2M_SERVER = [sys.executable, "-m", "a2m_server"]
SERVING_ONLY = ("--read-only", "--exact-ranking", "--capabilities", "--host", "--tokens")


def run(args: list[str], *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "A2M_DB"}
    return subprocess.run(
        [*A2M_SERVER, *args], capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=cwd
    )


def test_export_of_a_store_that_is_not_there_refuses_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "memory.db"
    done = run(["export", "--db", str(missing)])
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"no store at {missing}" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not missing.parent.exists()
    # Without --db, the default ./a2m.db is not created either.
    done = run(["export"], cwd=tmp_path)
    assert done.returncode == 2
    assert not (tmp_path / "a2m.db").exists()


def test_import_checks_the_dump_before_creating_a_store(tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"not": "a header"}\n')
    target = tmp_path / "new.db"
    done = run(["import", "--db", str(target), str(dump)])
    assert done.returncode == 1
    assert "not an a2m-export (expected an a2m-export/1 header line)" in done.stderr
    assert "nothing was imported" in done.stderr
    assert not target.exists()
    # A folder that is not there is refused too, not made.
    dump.write_text('{"format": "a2m-export/1", "dimensions": null}\n')
    elsewhere = tmp_path / "no-such-folder" / "new.db"
    done = run(["import", "--db", str(elsewhere), str(dump)])
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    assert not elsewhere.parent.exists()


@pytest.mark.parametrize("command", ["export", "import"])
def test_each_subcommand_takes_only_its_own_flags(command: str, tmp_path: Path) -> None:
    helped = run([command, "--help"])
    assert helped.returncode == 0
    for flag in SERVING_ONLY:
        assert flag not in helped.stdout, (flag, helped.stdout)
    assert "--db" in helped.stdout
    store = tmp_path / "store.db"
    A2MServer(db=store).close()
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"format": "a2m-export/1", "dimensions": null}\n')
    args = [command, "--db", str(store), "--read-only"]
    done = run([*args, str(dump)] if command == "import" else args)
    assert done.returncode == 2
    assert "unrecognized arguments: --read-only" in done.stderr


def test_export_and_import_round_trip_quietly_when_piped(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    with A2MServer(db=source) as server:
        connection = server.connect()
        for start in range(0, 1200, 400):
            records = [{"content": f"note {n}"} for n in range(start, start + 400)]
            connection.call("memory/remember", {"records": records})
    exported = run(["export", "--db", str(source)])
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == ""  # no progress on a pipe
    assert len(exported.stdout.splitlines()) == 1201
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported.stdout)
    target = tmp_path / "target.db"
    done = run(["import", "--db", str(target), str(dump)])
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(f"created a new store at {target}" in line for line in lines), lines
    assert lines[-1] == f"imported 1200 of 1200 records (0 already present) into {target}"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_records_rate_and_time_left_on_a_terminal_only() -> None:
    terminal = _Terminal()
    progress = _Progress("exported", terminal)
    progress.update(500, 2000)
    progress.update(2000, 2000)
    progress.finish()
    shown = terminal.getvalue()
    assert "exported 500 of 2,000 records" in shown
    assert "records/s" in shown
    assert "left" in shown
    assert "exported 2,000 of 2,000 records" in shown
    assert shown.endswith("\n")
    piped = io.StringIO()
    quiet = _Progress("exported", piped)
    quiet.update(500, 2000)
    quiet.finish()
    assert piped.getvalue() == ""


def test_a_database_url_is_logged_without_its_password() -> None:
    assert _without_password("postgresql://a2m:s3cret@db.internal:5433/memory") == (
        "postgresql://a2m:***@db.internal:5433/memory"
    )
    assert _without_password("postgresql://db/memory?user=a2m&password=s3cret&sslmode=require") == (
        "postgresql://db/memory?user=a2m&sslmode=require"
    )
    assert _without_password("postgresql://a2m@db/memory") == "postgresql://a2m@db/memory"


def test_serve_says_which_store_it_opened_and_created(tmp_path: Path) -> None:
    with socket_port() as port:
        env = {key: value for key, value in os.environ.items() if key != "A2M_DB"}
        process = subprocess.Popen(
            [*A2M_SERVER, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            message = {"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}
            while True:
                assert process.poll() is None, process.communicate()[1]
                try:
                    httpx.post(f"http://127.0.0.1:{port}/", json=message, timeout=2)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=TIMEOUT)
    created = tmp_path / "a2m.db"
    assert created.exists()
    assert f"created a new store at {created} (no --db given" in stderr, stderr
    (line,) = [line for line in stderr.splitlines() if "store: " in line]
    assert f"store: {created} (SQLite); capabilities: core," in line
    assert json.dumps(line)  # one line


def test_stdio_says_which_store_it_created_and_keeps_stdout_for_json_rpc(tmp_path: Path) -> None:
    target = tmp_path / "typo.db"
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}) + "\n"
    quiet = subprocess.run(
        [*A2M_SERVER, "stdio", "--db", str(target)],
        input=request, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    (answer,) = quiet.stdout.splitlines()
    assert json.loads(answer)["id"] == 1
    assert f"created a new store at {target}" in quiet.stderr, quiet.stderr
    assert "store: " not in quiet.stderr  # the opened store is an info line: below warning
    reopened = subprocess.run(
        [*A2M_SERVER, "stdio", "--db", str(target), "--log-level", "info"],
        input=request, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert "created a new store" not in reopened.stderr
    (line,) = [line for line in reopened.stderr.splitlines() if "store: " in line]
    assert f"store: {target} (SQLite); capabilities: core," in line
    assert len(reopened.stdout.splitlines()) == 1


class socket_port:
    """A free loopback port for the duration of a block."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_file_uri_opens_its_file_and_makes_no_folder_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--db file:/abs/path.db?mode=rwc`` is SQLite's URI: read as a path, it once left an
    empty ``file:`` folder tree in the working directory."""
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    store = tmp_path / "uri.db"
    with A2MServer(db=f"file:{store}?mode=rwc") as server, server.connect() as peer:
        peer.call("memory/remember", {"records": [{"content": "kept"}]})
    assert store.exists()
    assert list(here.iterdir()) == []
