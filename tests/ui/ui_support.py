"""The memory page's test support: a real ``a2m-server serve`` on a loopback ephemeral port over
a seeded SQLite file, a real headless Chromium driven by Playwright, and the JSON-RPC API of
the same server to check what the page did.

Chromium is the system's (``/usr/bin/chromium``, Debian's package) where present, else
Playwright's own install; without either the browser tests are skipped, saying why."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.testclient import TestClient

from a2m_server import A2MServer

SCREENSHOTS = Path(__file__).parent / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKENS = {"alice-token": "alice", "bob-token": "bob"}
PLANNER_RECORDS = 130
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def chromium_path() -> str | None:
    """The system Chromium, if installed (else Playwright's own is used)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Served:
    """A running ``a2m-server serve``."""

    url: str
    db: Path
    process: subprocess.Popen[bytes]

    def rpc(self, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC call to the API, as ``token``'s principal."""
        response = httpx.post(
            self.url + "/",
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        response.raise_for_status()
        body = response.json()
        assert "error" not in body, body
        result: dict[str, Any] = body["result"]
        return result


def seed(db: Path) -> None:
    """What the page shows: an agent (planner, CrewAI) with 130 records of several
    classifications, a LangGraph agent, a record holding markup, and bob's own."""
    server = A2MServer(db=str(db))
    try:
        connection = server.connect()
        classes = ["decision", "convention", "pattern", "error", "tool-use"]
        extension = "observations" in connection.call("memory/describe")
        for i in range(PLANNER_RECORDS):
            kind = classes[i % len(classes)]
            content = f"planner fact {i:03d}: service {i % 7} uses ISO 8601 dates"
            tags = ["billing"] if i % 2 else ["datetime", "billing"]
            provenance = {"source_framework": "crewai", "source_agent": "planner"}
            if extension:
                # Where the server has observations, the planner's facts are observations.
                connection.call(
                    "memory/observations/remember",
                    {
                        "content": content,
                        "classification": kind,
                        "type": f"{kind}.general",
                        "tags": tags,
                        "origin": f"run-{i // 40}",
                        "metadata": provenance,
                        "owner": "alice",
                    },
                )
            else:
                record = {
                    "content": content,
                    "tier": "episodic",
                    "session": f"run-{i // 40}",
                    "salience": 1.0,
                    "metadata": {
                        **provenance,
                        "tags": tags,
                        "observation_classification": kind,
                        "observation_type": f"{kind}.general",
                        "observation_source": "explicit",
                    },
                }
                connection.call("memory/remember", {"records": [record], "owner": "alice"})
        connection.call(
            "memory/remember",
            {
                "owner": "alice",
                "records": [
                    {
                        "content": "researcher note: the API is rate limited to 100 rps",
                        "tier": "episodic",
                        "metadata": {"source_framework": "langgraph", "source_agent": "researcher"},
                    },
                    {
                        "content": XSS,
                        "tier": "episodic",
                        "metadata": {"source_framework": "autogen", "source_agent": "mallory"},
                    },
                ],
            },
        )
        connection.call(
            "memory/remember",
            {
                "owner": "bob",
                "records": [
                    {
                        "content": "bob's private fact: the staging password rotates weekly",
                        "tier": "episodic",
                        "metadata": {"source_framework": "agno", "source_agent": "bob-agent"},
                    }
                ],
            },
        )
    finally:
        server.close()


def start_serve(folder: Path, *extra: str, tokens_map: dict[str, str] | None = None) -> Served:
    db = folder / "ui.db"
    if not db.exists():
        seed(db)
    tokens = folder / "tokens.json"
    tokens.write_text(json.dumps(tokens_map or TOKENS), encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "a2m_server",
            "serve",
            "--db",
            str(db),
            "--port",
            str(port),
            "--tokens",
            str(tokens),
            "--log-level",
            "warning",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/ui/login", timeout=1)
            break
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                _, err = process.communicate()
                raise RuntimeError(f"a2m-server serve did not start: {err.decode()}") from None
            time.sleep(0.05)
    return Served(url, db, process)


def stop(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()
    if served.process.stderr is not None:
        served.process.stderr.close()


def shot(page: Any, name: str, *, full_page: bool = True) -> None:
    """Save a screenshot of the page (or of what the window shows) under
    tests/ui/screenshots/."""
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def login(page: Any, url: str, token: str) -> None:
    page.goto(url + "/ui/")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(url + "/ui/")


def sign_in(app: object, token: str) -> tuple[TestClient, str]:
    """A client of the ASGI ``app`` signed in to the page with ``token``, and the CSRF
    value its forms carry."""
    client = TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=True)
    csrf = csrf_of(client.get("/ui/login").text)
    done = client.post(
        "/ui/login", data={"csrf": csrf, "token": token, "next": "/ui/"}, follow_redirects=False
    )
    assert done.status_code == 303
    return client, csrf_of(client.get("/ui/memory").text)


def csrf_of(text: str) -> str:
    """The CSRF value of the first form on a page."""
    found = re.search(r'name="csrf" value="([^"]+)"', text)
    assert found is not None
    return found.group(1)
