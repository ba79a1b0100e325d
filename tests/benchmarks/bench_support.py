"""What the benchmarks share: the server in its own process, percentiles, the load line.

Each benchmark imports this file from its own folder (``sys.path``), so it runs as a plain
script: ``uv run python tests/benchmarks/bench_x.py``."""

from __future__ import annotations

import math
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

__all__ = ["WELL_KNOWN", "ServerProcess", "free_port", "load_average", "p50", "p99", "percentile"]

WELL_KNOWN = "/.well-known/a2m-server.json"


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest sample at or above ``fraction`` of them."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def p50(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def p99(samples: Sequence[float]) -> float:
    return percentile(samples, 0.99)


def load_average() -> str:
    """The 1/5/15-minute load, printed beside figures so a reader can judge the noise."""
    try:
        return "/".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "n/a"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """``python -m a2m_server serve`` on the SQLite file ``db`` and a free loopback port,
    in its own process so its CPU never shares the benchmark's GIL."""

    def __init__(self, db: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = db.with_suffix(".log")
        command = [
            sys.executable, "-m", "a2m_server", "serve", "--db", str(db),
            "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
        ]  # fmt: skip
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url.rstrip("/") + WELL_KNOWN, timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the server did not answer within {seconds}s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
