"""The floor under "recall over HTTP p50 - in-process p50": what a bare ASGI app costs when
it does nothing but spend a recall's worth of CPU on the server's worker threads.

    uv run python tests/benchmarks/bench_http_floor.py [--work-ms 2.4] [--rounds 20]

The app runs under uvicorn with the settings ``a2m-server serve`` uses (uvloop, httptools,
no server header, no access log), in its own process, and answers every ``POST /`` with a
fixed JSON body of a recall response's size after ``--work-ms`` of CPU on a worker thread
(``a2m_server._web.in_worker``, the threads the HTTP binding uses). No A2M code runs on the
request path: no gate, no routing, no parsing. Five variants run interleaved on the same
load:

- in-process: the same CPU spin called directly, the in-process side of the comparison;
- HTTP (httpx): a raw ``httpx.Client.post``, the client the HTTP benchmark uses;
- HTTP (a2m client transport): the typed client's HTTP transport (``handle_request``:
  encode, POST on its keep-alive pool, read the status and the JSON-RPC object);
- HTTP (socket): the same request written and read on a plain socket, so what is left
  is the server and the kernel;
- HTTP, work on the loop: the spin on the event loop instead (never allowed in the
  server, where that work blocks: it shows what the thread hand-off costs).

``HTTP - in-process`` of the first HTTP variant is the least any server built this way
(uvicorn, a worker thread per blocking call) can reach with that client on this machine;
bench_http.py prints it beside the real server's gap (``--skip-floor`` leaves it out)."""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from a2m.transports import HTTPTransport

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import free_port, load_average

RESPONSE_BYTES = 2500  # about a recall of 10 records of the HTTP benchmark's corpus
REQUEST_OBJECT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "memory/recall",
    "params": {"query": "alpha beta gamma", "limit": 10},
}
REQUEST = (
    b'{"jsonrpc":"2.0","id":1,"method":"memory/recall",'
    b'"params":{"query":"alpha beta gamma","limit":10}}'
)


def spin(work_ns: int) -> None:
    """Hold the CPU (and the GIL) for ``work_ns`` of this thread's CPU time."""
    end = time.thread_time_ns() + work_ns
    while time.thread_time_ns() < end:
        pass


def serve(port: int, work_ns: int, on_loop: bool) -> None:
    """Run the bare app on ``port`` until terminated."""
    import uvicorn

    from a2m_server._web import in_worker

    body = b'{"jsonrpc":"2.0","id":1,"result":{"records":[' + b" " * RESPONSE_BYTES + b"]}}"
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]

    def work() -> bytes:
        spin(work_ns)
        return body

    async def app(scope: dict, receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        payload = work() if on_loop else await in_worker(work)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        server_header=False,
        access_log=False,
    )


class _App:
    """One bare app in its own process."""

    def __init__(self, work_ns: int, *, on_loop: bool) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        command = [sys.executable, __file__, "serve", str(self.port), str(work_ns)]
        if on_loop:
            command.append("on-loop")
        self.process = subprocess.Popen(command)
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the bare app did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


class _RawSocket:
    """One keep-alive connection, the request in a single write, the response read by its
    Content-Length: about the least a client can do."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = (
            b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n" % len(REQUEST)
        ) + REQUEST

    def __call__(self) -> None:
        self.sock.sendall(self.request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += self.sock.recv(65536)

    def close(self) -> None:
        self.sock.close()


def measure(work_ms: float, rounds: int, block: int = 20) -> dict[str, float]:
    """p50 in ms of each variant, interleaved in rotating order, ``rounds`` blocks each."""
    work_ns = int(work_ms * 1e6)
    worker_app = _App(work_ns, on_loop=False)
    loop_app = _App(work_ns, on_loop=True)
    http = httpx.Client(timeout=60)
    raw = _RawSocket(worker_app.port)
    transport = HTTPTransport(worker_app.url)
    try:
        calls: dict[str, Callable[[], object]] = {
            "in-process": lambda: spin(work_ns),
            "HTTP (httpx)": lambda: http.post(worker_app.url, content=REQUEST).content,
            "HTTP (a2m client transport)": lambda: transport.handle_request(
                REQUEST_OBJECT, timeout=60
            ),
            "HTTP (socket)": raw,
            "HTTP, work on the loop (httpx)": lambda: (
                http.post(loop_app.url, content=REQUEST).content
            ),
        }
        for call in calls.values():
            for _ in range(block):
                call()
        samples: dict[str, list[float]] = {name: [] for name in calls}
        names = list(calls)
        for index in range(rounds):
            shift = index % len(names)
            for name in names[shift:] + names[:shift]:
                call = calls[name]
                for _ in range(block):
                    started = time.perf_counter()
                    call()
                    samples[name].append(time.perf_counter() - started)
        return {name: statistics.median(values) * 1e3 for name, values in samples.items()}
    finally:
        raw.close()
        transport.close()
        http.close()
        worker_app.stop()
        loop_app.stop()


def floor_section(work_ms: float, rounds: int) -> dict[str, float]:
    """Print the floor for ``work_ms`` of server CPU; returns the p50s."""
    print(
        f"\n== floor: a bare uvicorn app spending {work_ms:.2f} ms of CPU per POST on a "
        "worker thread =="
    )
    figures = measure(work_ms, rounds)
    local = figures["in-process"]
    for name, value in figures.items():
        gap = "" if name == "in-process" else f"  {value - local:+.3f} ms over in-process"
        print(f"  {name:<32} p50 {value:7.3f} ms{gap}")
    print(f"  load {load_average()}")
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]), on_loop=sys.argv[4:] == ["on-loop"])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-ms", type=float, default=2.4)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load_average()}")
    floor_section(args.work_ms, args.rounds)


if __name__ == "__main__":
    main()
