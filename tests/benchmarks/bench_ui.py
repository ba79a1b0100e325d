"""The agent memory page's load time: server time (one HTTP GET of the page, HTML complete)
and the browser's ``load`` event (headless Chromium), on the first page, a deep page
(reached by following the *Older* cursor) and the last page, at several store sizes.

The baseline, in the same process and against the same server, is the JSON-RPC call that
reads as much: ``memory/timeline`` with ``limit`` 50. Prints figures, never fails on them::

    uv run python tests/benchmarks/bench_ui.py --sizes 1000 100000

The store of each size is written through ``memory/remember`` in batches (the batch write
path); ``--keep DIR`` keeps it there for the next run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from a2m_server import A2MServer

TOKEN = "bench-token"
BATCH = 1000
"""Records per `memory/remember` (the server's default max_records_per_call)."""
AGENTS = ("planner", "researcher", "coder", "reviewer")
FRAMEWORKS = ("crewai", "langgraph", "autogen", "agno")
CLASSES = ("decision", "convention", "pattern", "error", "tool-use")


def seed(db: Path, size: int) -> float:
    """``size`` records by ``memory/remember`` in batches; the seconds it took."""
    started = time.perf_counter()
    with A2MServer(db=str(db)) as server:
        connection = server.connect()
        for start in range(0, size, BATCH):
            records = [
                {
                    "content": f"fact {i}: service {i % 97} keeps its dates in ISO 8601 UTC",
                    "tier": "episodic",
                    "metadata": {
                        "source_agent": AGENTS[i % len(AGENTS)],
                        "source_framework": FRAMEWORKS[i % len(FRAMEWORKS)],
                        "tags": ["billing", f"t{i % 13}"],
                        "observation_classification": CLASSES[i % len(CLASSES)],
                    },
                }
                for i in range(start, min(size, start + BATCH))
            ]
            connection.call("memory/remember", {"records": records, "owner": "alice"})
    return time.perf_counter() - started


def serve(db: Path, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    tokens = folder / "tokens.json"
    tokens.write_text(json.dumps({TOKEN: "alice"}), encoding="utf-8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
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
        ],
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/ui/login", timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


def signed_in(url: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=60)
    page = client.get("/ui/login").text
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    client.post("/ui/login", data={"csrf": csrf, "token": TOKEN, "next": "/ui/"})
    return client


def median_ms(action: Any, rounds: int) -> float:
    action()  # warm
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def deep_path(client: httpx.Client, path: str, hops: int) -> tuple[str, int]:
    """The page ``hops`` *Older* links from the first (fewer when the listing ends), and
    its number."""
    current, number = path, 1
    for _ in range(hops):
        html = client.get(current).text
        marker = '" rel="next"'
        if marker not in html:
            break
        current = html.split(marker, 1)[0].rsplit('href="', 1)[1].replace("&amp;", "&")
        number += 1
    return current, number


def browser_loads(
    url: str, paths: dict[str, str], rounds: int
) -> dict[str, tuple[float, float]] | None:
    """Per page, the median of the navigation's ``responseEnd`` (the HTML received) and of
    its ``loadEventEnd`` (styles and script loaded, the page laid out), in ms."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    executable = shutil.which("chromium")
    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    found: dict[str, tuple[float, float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=args)
        page = browser.new_page()
        page.goto(url + "/ui/login")
        page.fill("#token", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_url(url + "/ui/")
        for name, path in paths.items():
            received, loaded = [], []
            page.goto(url + path)  # warm
            for _ in range(rounds):
                page.goto(url + path, wait_until="load")
                entry = page.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return [n.responseEnd, n.loadEventEnd]; })()"
                )
                received.append(entry[0])
                loaded.append(entry[1])
            found[name] = (statistics.median(received), statistics.median(loaded))
        browser.close()
    return found


def run(size: int, rounds: int, hops: int, keep: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = (keep or folder) / f"bench-{size}.db"
        seeded = 0.0 if db.exists() else seed(db, size)
        process, url = serve(db, folder)
        try:
            client = signed_in(url)
            agent = "/ui/agents/planner/memory"
            deep, number = deep_path(client, agent, hops)
            paths = {
                "first page (all)": "/ui/memory",
                "first page (agent)": agent,
                f"page {number} (agent)": deep,
                "last page (agent)": agent + "?cursor=oldest",
                "agents index": "/ui/",
                "filtered (class+tag)": agent + "?classification=decision&tag=billing",
                "search page 1": agent + "?q=ISO+dates",
                "search page 3": agent + "?q=ISO+dates&page=3",
            }
            rpc = httpx.Client(
                base_url=url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}
            )
            body = {"jsonrpc": "2.0", "id": 1, "method": "memory/timeline", "params": {"limit": 50}}
            baseline = median_ms(lambda: rpc.post("/", json=body).raise_for_status(), rounds)
            how = f"seeded in {seeded:.1f} s" if seeded else f"kept in {db.parent}"
            print(
                f"\n{size:,} records ({how}); baseline memory/timeline "
                f"limit 50 over JSON-RPC: {baseline:.1f} ms"
            )
            server_ms = {
                name: median_ms(lambda p=path: client.get(p).raise_for_status(), rounds)
                for name, path in paths.items()
            }
            loads = browser_loads(url, paths, rounds)
            print(
                f"  {'page':<24}{'server ms':>10}{'x baseline':>12}"
                f"{'browser: HTML in':>18}{'load event':>12}"
            )
            for name, ms in server_ms.items():
                got = f"{loads[name][0]:.0f}" if loads else "n/a"
                load = f"{loads[name][1]:.0f}" if loads else "n/a"
                print(f"  {name:<24}{ms:>10.1f}{ms / baseline:>12.1f}{got:>18}{load:>12}")
        finally:
            process.terminate()
            process.wait(timeout=15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hops", type=int, default=20, help="Older links to the deep page")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="a folder to keep each size's store in and reuse on the next run (a 1M-record "
        "store takes minutes to write)",
    )
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    for size in args.sizes:
        run(size, args.rounds, args.hops, args.keep)


if __name__ == "__main__":
    main()
