"""Helpers shared by the client tests: the driver that runs one body against either client,
a respx-played fake server, a request spy and an injectable sleep."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from collections.abc import Callable
from typing import Any

import httpx

from a2m import A2MClient, AsyncA2MClient
from a2m_types import DescribeResult

MODES = ("sync", "async")
BINDINGS = ("in-process", "stdio", "http")
PUSH_BINDINGS = ("in-process", "stdio")


class Driver:
    """One client, sync or async, driven the same way: ``await driver.recall(...)``.

    Attributes that are not coroutines on either client (``capabilities``, ``supports``,
    ``with_options``, ``watch``) pass through unchanged."""

    _PLAIN = frozenset({"supports", "with_options", "watch"})

    def __init__(self, client: A2MClient | AsyncA2MClient, binding: str) -> None:
        self.client = client
        self.binding = binding
        self.is_async = isinstance(client, AsyncA2MClient)

    def __repr__(self) -> str:
        return f"<Driver {'async' if self.is_async else 'sync'} {self.binding}>"

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        if not callable(attribute) or name in self._PLAIN:
            return attribute

        @functools.wraps(attribute)
        async def call(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result

        return call


async def close_all(make_driver: Any) -> None:
    """Close the async clients ``make_driver`` built (sync ones close with the fixture)."""
    while make_driver.async_clients:
        await make_driver.async_clients.pop().aclose()


def server_config(
    capabilities: list[str] | None = None, read_only: bool = False, **changes: Any
) -> Any:
    from a2m_server.config import ServerConfig

    config = ServerConfig()
    if capabilities is not None:
        config = config.with_capabilities(capabilities)
    return dataclasses.replace(config, read_only=read_only, **changes)


def stdio_args(capabilities: list[str] | None, read_only: bool) -> list[str]:
    args: list[str] = []
    if capabilities is not None:
        args += ["--capabilities", ",".join(capabilities)]
    if read_only:
        args.append("--read-only")
    return args


class Spy:
    """Records the method of every request a client's transport is asked to send."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def count(self, method: str) -> int:
        return self.methods.count(method)


def pretend_capabilities(driver: Driver, capabilities: list[str]) -> None:
    """Make the client believe the server declared ``capabilities`` (so its own gating lets
    calls through and the server's refusal can be observed)."""
    driver.client._state.negotiated(
        DescribeResult(protocol="a2m/0.1", name="pretend", capabilities=capabilities, methods=[])
    )


RPC_URL = "http://a2m.test/"


def rpc_result(request: httpx.Request, result: Any) -> httpx.Response:
    """A 200 JSON-RPC response answering ``request``."""

    body = json.loads(request.content)
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})


def rpc_error(request: httpx.Request, code: int, message: str, data: Any = None) -> httpx.Response:
    """A 200 JSON-RPC error response answering ``request``."""

    body = json.loads(request.content)
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "error": error})


DESCRIBE_ALL = {
    "protocol": "a2m/0.1",
    "name": "fake",
    "capabilities": [
        "core",
        "tiers",
        "salience",
        "scopes",
        "sessions",
        "keys",
        "embeddings",
        "external",
        "events",
        "summarize",
        "prompt",
    ],
    "methods": [],
    "events": {"push": False},
}


class FakeServer:
    """A respx side effect playing an A2M server over HTTP: describe answers ``DESCRIBE_ALL``
    and every other method is answered by ``handlers[method](request, params)``, a queue of
    answers consumed in order (the last one repeats)."""

    def __init__(self) -> None:
        self.handlers: dict[str, list[Callable[[httpx.Request, dict[str, Any]], Any]]] = {}
        self.calls: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.describe: dict[str, Any] = dict(DESCRIBE_ALL)

    def on(self, method: str, *answers: Callable[[httpx.Request, dict[str, Any]], Any]) -> None:
        self.handlers[method] = list(answers)

    def __call__(self, request: httpx.Request) -> httpx.Response:

        body = json.loads(request.content)
        self.calls.append(body["method"])
        self.bodies.append(body)
        if body["method"] == "memory/describe" and "memory/describe" not in self.handlers:
            return rpc_result(request, self.describe)
        answers = self.handlers[body["method"]]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        outcome = answer(request, body.get("params", {}))
        if isinstance(outcome, BaseException):
            raise outcome
        if isinstance(outcome, httpx.Response):
            return outcome
        return rpc_result(request, outcome)


class SleepRecorder:
    """An injectable sleep that records instead of waiting (sync and async flavours)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.delays.append(seconds)


def install_sleep(client: A2MClient | AsyncA2MClient) -> SleepRecorder:
    recorder = SleepRecorder()
    client._sleep = recorder.asleep if isinstance(client, AsyncA2MClient) else recorder  # type: ignore[assignment]
    return recorder
