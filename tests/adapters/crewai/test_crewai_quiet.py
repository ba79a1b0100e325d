"""The README's CrewAI snippet, run as a reader runs it with no API key, prints its one
answer and nothing else (no console panels, no ``OPENAI_API_KEY is required``); pointed
at a server that is down it fails with one ``A2MConnectError``, raised before CrewAI
starts a flow that would log tracebacks of its own."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

README = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
(SNIPPET,) = [
    block
    for block in re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    if "from a2m_crewai import a2m_memory" in block
]
README_URL = "http://127.0.0.1:8765/"


def _run(url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "snippet.py"
    script.write_text(SNIPPET.replace(README_URL, url), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HOME"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.timeout(330)
def test_the_readme_snippet_prints_its_answer_and_nothing_else(
    a2m_server: A2MServer, tmp_path: Path
) -> None:
    with serve_http(a2m_server) as url:
        done = _run(url, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The deploy key rotates every 90 days.\n"
    assert done.stderr == ""


@pytest.mark.timeout(330)
def test_a_server_that_is_down_is_one_error(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = _run(f"http://127.0.0.1:{port}/", tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[-1].startswith("a2m.errors.A2MConnectError: memory/describe: could not connect")
    assert done.stderr.count("Traceback") == 1
    assert len(lines) <= 12, done.stderr  # the client's two retries, and one short traceback
    for noise in ("Storage search failed", "Error executing listener", "╭", "CrewAIEventsBus"):
        assert noise not in done.stderr
