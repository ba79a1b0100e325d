"""The top-level README's snippets run as a reader would run them: every Python block as a
script against a real server on an ephemeral loopback port (offline, network guarded),
every shell line it shows, and its interop table is docs/interop.md's."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from a2m_server import A2MServer
from a2m_testing.network import guarded_environment, refused_in
from a2m_testing.servers import serve_http

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
SHELL = [
    line.split("  #", 1)[0].strip()
    for block in re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    for line in block.splitlines()
    if line.strip()
]
README_URL = "http://127.0.0.1:8765/"
TIME_LIMIT_S = 120


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with A2MServer() as server, serve_http(server) as address:
        yield address


def _environment(tmp_path: Path) -> dict[str, str]:
    env = guarded_environment(tmp_path / "net")
    env.pop("A2M_URL", None)
    env["HOME"] = str(tmp_path / "home")
    env["TMPDIR"] = str(tmp_path)
    return env


def test_the_readme_shows_each_framework_and_the_two_commands() -> None:
    assert len(PYTHON) >= 8, len(PYTHON)
    for module in ("a2m_langchain", "a2m_langchain.langgraph", "a2m_crewai", "a2m_autogen"):
        assert any(f"from {module} import" in block for block in PYTHON), module
    assert any("from a2m_agno import" in block for block in PYTHON)
    assert SHELL[:2] == ["uv run python examples/shared_memory.py", "uv run nox"]


@pytest.mark.timeout(TIME_LIMIT_S + 30)
@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_a_python_snippet_runs(index: int, url: str, tmp_path: Path) -> None:
    script = tmp_path / f"snippet_{index}.py"
    script.write_text(PYTHON[index].replace(README_URL, url), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        env=_environment(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{PYTHON[index]}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert refused_in(tmp_path / "net") == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run a ``serve`` line on a free loopback port, and call it until it answers."""
    port = _free_port()
    argv = [a if a != "0.0.0.0" else "127.0.0.1" for a in argv]
    headers = {}
    if "--tokens" in argv:
        tokens = json.loads((cwd / argv[argv.index("--tokens") + 1]).read_text())
        headers["authorization"] = f"Bearer {next(iter(tokens))}"
    process = subprocess.Popen([*argv, "--port", str(port)], cwd=cwd, env=env)
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "memory/describe", "params": {}}
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/", json=request, headers=headers)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, argv
                time.sleep(0.1)
        assert answer.status_code == 200, answer.text
        assert "result" in answer.json(), answer.text
        if headers:  # an authenticated server refuses a call without its token
            assert httpx.post(f"http://127.0.0.1:{port}/", json=request).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.mark.timeout(120)
def test_every_shell_line_works(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("A2M_URL", None)
    server = [sys.executable, "-m", "a2m_server"]
    for line in SHELL:
        words = shlex.split(line)
        if words[:3] == ["uv", "run", "python"]:
            assert (ROOT / words[3]).is_file(), line  # tests/examples runs every example
        elif words == ["uv", "run", "nox"]:
            listed = subprocess.run(
                [sys.executable, "-m", "nox", "-l", "-f", str(ROOT / "noxfile.py")],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for session in ("lint", "types", "tests", "interop", "demo", "tests-crewai"):
                assert f"* {session}" in listed, listed
            # "not run by default": one tests-<package> per package, and bench.
            for session in ("bench", "tests-server", "tests-client", "tests-testing"):
                assert f"- {session} ->" in listed, listed
            for framework in ("langchain", "langgraph", "crewai", "autogen", "agno"):
                assert f"* tests-{framework} ->" in listed, listed
        elif words[:3] == ["uv", "run", "a2m-server"] and words[3] == "serve":
            if any(word.startswith("postgresql://") for word in words):
                # The README's database is the test session's real PostgreSQL.
                fresh = request.getfixturevalue("postgres_server").fresh_url()
                words = [fresh if w.startswith("postgresql://") else w for w in words]
            _serve([*server, *words[3:]], tmp_path, env)
        elif words[:3] == ["uv", "run", "a2m-server"] and words[3] == "stdio":
            describe = '{"jsonrpc":"2.0","id":1,"method":"memory/describe","params":{}}\n'
            done = subprocess.run(
                [*server, *words[3:]],
                input=describe,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            assert json.loads(done.stdout.splitlines()[0])["id"] == 1
        elif words[0] == "echo":
            subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True)
        else:
            pytest.fail(f"a README shell line no test runs: {line}")


def _matrix(text: str) -> str:
    start = text.index("| writer ↓ / reader →")
    return text[start : text.index("\n\n", start)]


def test_the_readme_table_is_the_interop_matrix() -> None:
    assert _matrix(README) == _matrix((ROOT / "docs" / "interop.md").read_text(encoding="utf-8"))
