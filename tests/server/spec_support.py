"""Support for the A2M 0.1 conformance suite (``test_spec_*.py``): peers that speak to the
bundled server over each binding, and the JSON Schema checks every answer goes through.

A :class:`Peer` is one client connection on one binding:

- ``in-process``: ``A2MServer.connect()``, messages round-tripped through JSON (§8.1);
- ``stdio``: a real ``python -m a2m_server stdio`` subprocess, one JSON value per line,
  every stdout line parsed and checked (§8.2);
- ``http``: a real uvicorn on an ephemeral 127.0.0.1 port, driven by ``httpx`` (§8.3).

Every response a peer receives is validated against the spec's schema (the ``response``
envelope and the method's ``result``), every pushed notification against ``event``, and
every timestamp against §3.3's millisecond form. The schema is this directory's copy of
the spec's JSON Schema (shipped as ``a2m_types.json_schema()``)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
import queue
import re
import subprocess
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from a2m_server import A2MServer, ServerConfig, TierConfig
from a2m_testing.servers import serve_http, stdio_command
from a2m_types import json_schema
from store_backends import resolve_db

__all__ = [
    "BINDINGS",
    "CAPABILITY_METHODS",
    "METHOD_CAPABILITY",
    "PROTOCOL",
    "SCHEMA",
    "TIMESTAMP_MS",
    "Actor",
    "Agents",
    "HttpPeer",
    "InProcessPeer",
    "Peer",
    "PeerFactory",
    "RpcFailure",
    "StdioPeer",
    "config_toml",
    "json_identical",
    "rpc_error",
    "timeline_ids",
    "uid",
    "validate_notification",
    "validate_response",
    "validate_result",
]

BINDINGS = ("in-process", "stdio", "http")
PROTOCOL = "a2m/0.1"
TIMEOUT = 30.0
"""Seconds to wait for any one answer from a subprocess."""

SCHEMA: dict[str, Any] = json_schema()
_SCHEMA_ID: str = SCHEMA["$id"]
_REGISTRY: Registry[Any] = Registry().with_resource(_SCHEMA_ID, Resource.from_contents(SCHEMA))

METHOD_CAPABILITY: dict[str, str] = {
    name: entry["capability"] for name, entry in SCHEMA["methods"].items()
}
"""Every A2M method and the capability it belongs to (the schema's ``methods`` map)."""
CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {}
for _method, _capability in METHOD_CAPABILITY.items():
    CAPABILITY_METHODS[_capability] = (*CAPABILITY_METHODS.get(_capability, ()), _method)

TIMESTAMP_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
"""§3.3: RFC 3339, UTC, ``Z`` suffix, millisecond precision."""
_TIMESTAMP_FIELDS = frozenset({"created_at", "accessed_at", "at", "opened_at", "touched_at"})


def _validator(pointer: str) -> Draft202012Validator:
    return Draft202012Validator(
        {"$ref": _SCHEMA_ID + pointer},
        registry=_REGISTRY,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


_RESPONSE = _validator("#/$defs/response")
_EVENT = _validator("#/$defs/event")
_RESULTS = {name: _validator(entry["result"]["$ref"]) for name, entry in SCHEMA["methods"].items()}


def _check_timestamps(value: Any, where: str = "") -> None:
    """§3.3 everywhere: a timestamp field holds ``YYYY-MM-DDTHH:MM:SS.mmmZ``, never a number."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _TIMESTAMP_FIELDS and item is not None:
                assert isinstance(item, str), f"§3.3: {where}{key} = {item!r} is not a string"
                assert TIMESTAMP_MS.match(item), (
                    f"§3.3: {where}{key} = {item!r} is not an RFC 3339 UTC timestamp with ms"
                )
            elif key != "metadata":  # metadata is the caller's, returned as given
                _check_timestamps(item, f"{where}{key}.")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_timestamps(item, f"{where}{index}.")


def validate_result(method: str, result: Any) -> None:
    """Check a result against the schema's result definition for ``method``."""
    validator = _RESULTS.get(method)
    if validator is not None:
        validator.validate(result)
    _check_timestamps(result)


def validate_response(response: Any, method: str | None = None) -> None:
    """Check a whole JSON-RPC response: the envelope, and the result for ``method``."""
    _RESPONSE.validate(response)
    if "result" in response and method is not None:
        validate_result(method, response["result"])


def validate_notification(message: Any) -> None:
    """Check a pushed notification: no id, ``memory/event``, params an ``event`` (§4.13)."""
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    assert "id" not in message, f"§4.13: a notification carries no id: {message}"
    assert message.get("method") == "memory/event", message
    _EVENT.validate(message.get("params"))
    _check_timestamps(message["params"])


class RpcFailure(Exception):
    """A JSON-RPC error object received in answer to a call."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


def _method_of(message: Any) -> str | None:
    if isinstance(message, dict) and isinstance(message.get("method"), str):
        return str(message["method"])
    return None


class Peer:
    """One client connection to a server on one binding."""

    binding: str = ""
    push: bool = False
    """Whether this binding can carry notifications (§8.3: never over HTTP)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.subscribed = False
        self.db: str | None = None
        self.server: A2MServer | None = None
        """The server object, for bindings run inside this process."""

    # --- what each binding provides ---------------------------------------------------

    def _exchange(self, message: Any) -> dict[str, Any] | None:
        """Send one message (a dict, or raw ``str``/``bytes``); the response or ``None``."""
        raise NotImplementedError

    def notifications(self) -> list[dict[str, Any]]:
        """Every notification received since the last call of this method (drained)."""
        return []

    def close(self) -> None:
        """Release the connection (and whatever it started)."""

    # --- shared -------------------------------------------------------------------------

    def raw(self, message: Any) -> dict[str, Any] | None:
        """Send one message as is; the whole response, schema-checked, or ``None``."""
        response = self._exchange(message)
        if response is None:
            return None
        validate_response(response, _method_of(message))
        if isinstance(message, dict) and message.get("jsonrpc") == "2.0":
            request_id = message.get("id")
            if isinstance(request_id, str) or (
                isinstance(request_id, int) and not isinstance(request_id, bool)
            ):
                assert response["id"] == request_id, (response, message)
        return response

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Call ``method``; the result, or :class:`RpcFailure` for an error object."""
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        request["params"] = dict(params or {})
        response = self.raw(request)
        assert response is not None, f"no response to {method}"
        if "error" in response:
            error = response["error"]
            raise RpcFailure(error["code"], error["message"], error.get("data"))
        result: dict[str, Any] = response["result"]
        if method == "memory/events/subscribe":
            self.subscribed = True
        elif method == "memory/events/unsubscribe":
            self.subscribed = False
        return result

    def describe(self) -> dict[str, Any]:
        return self.call("memory/describe", {"protocol": PROTOCOL})

    def remember(self, *records: Mapping[str, Any], **params: Any) -> list[str]:
        """Write ``records`` in one call; the ids."""
        result = self.call("memory/remember", {"records": [dict(r) for r in records], **params})
        ids: list[str] = result["ids"]
        assert len(ids) == len(records), "§4.2: one id per input record"
        return ids

    def timeline(self, **params: Any) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.call("memory/timeline", params)["records"]
        return records

    def recall(self, **params: Any) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.call("memory/recall", params)["records"]
        return records

    def events_head(self) -> str:
        """The current events cursor (§4.12: no cursor means now)."""
        result = self.call("memory/events", {})
        assert result["events"] == []
        cursor: str = result["cursor"]
        return cursor

    def events_since(self, cursor: str, **params: Any) -> tuple[list[dict[str, Any]], str]:
        """Every event after ``cursor``, following ``more``; the events and the new cursor."""
        events: list[dict[str, Any]] = []
        while True:
            result = self.call("memory/events", {"cursor": cursor, **params})
            assert not result.get("reset"), "unexpected reset"
            events += result["events"]
            cursor = result["cursor"]
            if not result.get("more"):
                return events, cursor

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.binding}>"


class InProcessPeer(Peer):
    """A connection made with ``A2MServer.connect()`` (§8.1)."""

    binding = "in-process"

    def __init__(self, server: A2MServer, *, principal: str | None = None) -> None:
        super().__init__()
        self.server = server
        self.push = server.config.push
        self._notes: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.violations: list[str] = []
        self.connection = server.connect(
            transport="in-process", principal=principal, notify=self._on_notification
        )

    def _on_notification(self, message: dict[str, Any]) -> None:
        # Raising here would only be logged by the server: keep the finding for the test.
        try:
            validate_notification(message)
        except Exception as exc:
            self.violations.append(f"{exc}: {message}")
        with self._lock:
            self._notes.append(message)

    def _exchange(self, message: Any) -> dict[str, Any] | None:
        if isinstance(message, (str, bytes)):
            answer = self.connection.handle(message)
            return None if answer is None else json.loads(answer)
        return self.connection.handle_object(message)

    def notifications(self) -> list[dict[str, Any]]:
        assert not self.violations, f"§4.13: invalid notifications: {self.violations}"
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    def sibling(self, *, principal: str | None = None) -> InProcessPeer:
        """Another connection to the same server."""
        return InProcessPeer(self.server_required, principal=principal)

    @property
    def server_required(self) -> A2MServer:
        assert self.server is not None
        return self.server

    def close(self) -> None:
        self.connection.close()


class StdioPeer(Peer):
    """A ``python -m a2m_server stdio`` subprocess (§8.2).

    A reader thread parses every stdout line; anything that is not one JSON-RPC response
    or ``memory/event`` notification is recorded in :attr:`violations`."""

    binding = "stdio"
    push = True

    def __init__(self, argv: Sequence[str]) -> None:
        super().__init__()
        self.argv = list(argv)
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.violations: list[str] = []
        self.lines: list[bytes] = []
        self._responses: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._notes: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stderr: list[bytes] = []
        self.exit_code: int | None = None
        self.expect_clean_exit = True
        """Cleared by a test that has deliberately brought the server down."""
        self._threads = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            try:
                message = self._parse(line)
            except Exception as exc:  # any non-JSON-RPC output is a violation of §8.2
                self.violations.append(f"{exc}: {line[:200]!r}")
                continue
            if "id" in message:
                self._responses.put(message)
            else:
                with self._lock:
                    self._notes.append(message)
        self._responses.put(None)

    @staticmethod
    def _parse(line: bytes) -> dict[str, Any]:
        if not line.endswith(b"\n"):
            raise ValueError("a message must end with a newline")
        message = json.loads(line.decode("utf-8"))
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise ValueError("not a JSON-RPC message")
        if "id" not in message:
            validate_notification(message)
        elif message.get("method") is not None:
            raise ValueError("§8: a server never sends a request")
        return message

    def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        self._stderr.extend(self.process.stderr)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def _write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def _next_response(self) -> dict[str, Any]:
        try:
            message = self._responses.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no answer from the stdio server in {TIMEOUT}s") from None
        if message is None:
            self._responses.put(None)
            raise AssertionError(
                f"the stdio server exited (code {self.process.poll()}); stderr:\n{self.stderr}"
            )
        return message

    def _exchange(self, message: Any) -> dict[str, Any] | None:
        if (
            isinstance(message, dict)
            and type(message.get("id")) is int
            and isinstance(message.get("method"), str)
        ):
            # An ordinary call: the answer is the response carrying its id.
            self._write(json.dumps(message).encode("utf-8") + b"\n")
            response = self._next_response()
            assert response.get("id") == message["id"], (response, message)
            return response
        # Anything else may be answered once or not at all: follow it with a request of
        # our own, and whatever answer arrives before that one belongs to the message.
        if isinstance(message, (str, bytes)):
            data = message.encode("utf-8") if isinstance(message, str) else message
            data = data if data.endswith(b"\n") else data + b"\n"
        else:
            data = json.dumps(message).encode("utf-8") + b"\n"
        sentinel = f"sentinel-{uuid.uuid4().hex}"
        probe = {"jsonrpc": "2.0", "id": sentinel, "method": "memory/describe", "params": {}}
        self._write(data + json.dumps(probe).encode("utf-8") + b"\n")
        answers: list[dict[str, Any]] = []
        while True:
            response = self._next_response()
            if response.get("id") == sentinel:
                break
            answers.append(response)
        assert len(answers) <= 1, f"one message got {len(answers)} answers: {answers}"
        return answers[0] if answers else None

    def notifications(self) -> list[dict[str, Any]]:
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    def close_stdin(self) -> int:
        """§8.2: close stdin and wait for the process to exit; its exit code."""
        if self.exit_code is None:
            assert self.process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
            try:
                self.exit_code = self.process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(TIMEOUT)
                raise AssertionError("§8.2: the server did not exit when stdin closed") from None
            for thread in self._threads:
                thread.join(TIMEOUT)
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
        return self.exit_code

    def close(self) -> None:
        code = self.close_stdin()
        if not self.expect_clean_exit:
            return
        assert not self.violations, f"§8.2: non-JSON-RPC output on stdout: {self.violations}"
        assert code == 0, f"§8.2: exit code {code} after stdin closed; stderr:\n{self.stderr}"


class HttpPeer(Peer):
    """``POST /`` on a real HTTP server (§8.3); notifications cannot arrive."""

    binding = "http"
    push = False

    def __init__(self, url: str, *, token: str | None = None, server: A2MServer | None = None):
        super().__init__()
        self.url = url
        self.token = token
        self.server = server
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self.client = httpx.Client(base_url=url, headers=headers, timeout=TIMEOUT)

    def post(self, body: bytes, **headers: str) -> httpx.Response:
        return self.client.post("/", content=body, headers=headers)

    def _exchange(self, message: Any) -> dict[str, Any] | None:
        if isinstance(message, bytes):
            body = message
        elif isinstance(message, str):
            body = message.encode("utf-8")
        else:
            body = json.dumps(message).encode("utf-8")
        response = self.post(body)
        if response.status_code == 202:
            assert response.content == b"", "§8.3: 202 carries an empty body"
            return None
        assert response.status_code == 200, (response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/json")
        answer: dict[str, Any] = response.json()
        return answer

    def sibling(self, *, token: str | None = None) -> HttpPeer:
        """Another client of the same server, perhaps with another token."""
        return HttpPeer(self.url, token=token, server=self.server)

    def close(self) -> None:
        self.client.close()


@dataclasses.dataclass
class Actor:
    """An agent with an ``owner`` (§6): on a local transport it names its owner in every
    call; over authenticated HTTP its token says who it is and it names nobody."""

    peer: Peer
    owner: str
    names_owner: bool

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        merged = dict(params or {})
        if self.names_owner:
            merged.setdefault("owner", self.owner)
        return self.peer.call(method, merged)

    def remember(self, *records: Mapping[str, Any], **params: Any) -> list[str]:
        ids: list[str] = self.call(
            "memory/remember", {"records": [dict(r) for r in records], **params}
        )["ids"]
        return ids

    def timeline(self, **params: Any) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.call("memory/timeline", params)["records"]
        return records

    def recall(self, **params: Any) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.call("memory/recall", params)["records"]
        return records


class PeerFactory:
    """Starts servers on a binding and hands out peers to them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.stack = contextlib.ExitStack()
        self._count = itertools.count()

    def __call__(
        self,
        binding: str,
        config: ServerConfig | None = None,
        *,
        db: str | Path | None = None,
        tokens: Mapping[str, str] | None = None,
        token: str | None = None,
        allowed_origins: Sequence[str] = (),
        max_body_bytes: int | None = None,
        cli_args: Sequence[str] = (),
    ) -> Peer:
        """A peer on a new server. ``config`` applies on every binding (for stdio, as a
        TOML file plus ``cli_args``); ``db`` defaults to a private in-memory store."""
        config = config or ServerConfig()
        database = str(resolve_db(str(db) if db is not None else ":memory:"))
        if binding == "stdio":
            path = self.directory / f"config-{next(self._count)}.toml"
            path.write_text(config_toml(config), encoding="utf-8")
            argv = stdio_command(database, "--config", str(path), *cli_args)
            stdio = StdioPeer(argv)
            stdio.db = database
            self.stack.callback(stdio.close)
            return stdio
        server = A2MServer(config, db=database)
        self.stack.callback(server.close)
        peer: Peer
        if binding == "in-process":
            peer = InProcessPeer(server)
        elif binding == "http":
            options: dict[str, Any] = {"allowed_origins": tuple(allowed_origins)}
            if tokens is not None:
                options["tokens"] = dict(tokens)
            if max_body_bytes is not None:
                options["max_body_bytes"] = max_body_bytes
            url = self.stack.enter_context(serve_http(server, **options))
            peer = HttpPeer(url, token=token, server=server)
        else:
            raise ValueError(f"unknown binding {binding!r}")
        peer.db = database
        self.stack.callback(peer.close)
        return peer

    def adopt(self, peer: Peer) -> Peer:
        """Close ``peer`` (a sibling connection) with everything else."""
        self.stack.callback(peer.close)
        return peer

    def close(self) -> None:
        self.stack.close()


@dataclasses.dataclass
class Agents:
    """Two agents with owners of their own (§6), on one server."""

    alice: Actor
    bob: Actor
    peer: Peer
    """A peer acting as nobody in particular (unauthenticated locally; as alice over HTTP)."""


# --- small helpers ------------------------------------------------------------------------


def uid(prefix: str = "t") -> str:
    """A name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def rpc_error(peer: Peer | Actor, method: str, params: Mapping[str, Any] | None) -> RpcFailure:
    """Call ``method`` and return the error it must fail with."""
    try:
        result = peer.call(method, params)
    except RpcFailure as failure:
        return failure
    raise AssertionError(f"{method} {dict(params or {})} succeeded: {result}")


def timeline_ids(peer: Peer | Actor, **where: Any) -> list[str]:
    return [record["id"] for record in peer.timeline(where=where, limit=0)]


def json_identical(left: Any, right: Any) -> bool:
    """Equal as JSON values *and* in every JSON type: ``1`` is not ``1.0`` nor ``true``,
    key order aside (§3.1's round trip)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(
            json_identical(left[key], right[key]) for key in left
        )
    if isinstance(left, list):
        return len(left) == len(right) and all(
            json_identical(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, float):
        return left == right and math.copysign(1.0, left) == math.copysign(1.0, right)
    return bool(left == right)


# --- configuration files for the stdio binding ------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple, frozenset, set)):
        items = sorted(value) if isinstance(value, (frozenset, set)) else value
        return "[" + ", ".join(_toml_value(item) for item in items) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _scalars(obj: Any, skip: Iterable[str] = ()) -> list[str]:
    lines = []
    for item in dataclasses.fields(obj):
        value = getattr(obj, item.name)
        if item.name in skip or value is None:
            continue
        lines.append(f"{item.name} = {_toml_value(value)}")
    return lines


def config_toml(config: ServerConfig) -> str:
    """``config`` as the TOML file ``a2m-server --config`` reads (see ``load_config``)."""
    lines = _scalars(config, skip=("limits", "tiers", "observations"))
    lines += ["", "[limits]", *_scalars(config.limits)]
    for tier in config.tiers:
        assert isinstance(tier, TierConfig)
        lines += ["", "[[tiers]]", *_scalars(tier)]
    observations = config.observations
    lines += ["", "[observations]", *_scalars(observations, skip=("grants", "stacks"))]
    for grant in observations.grants:
        lines += ["", "[[observations.grants]]", *_scalars(grant)]
    if observations.stacks:
        lines += ["", "[observations.stacks]"]
        lines += [f"{json.dumps(p)} = {_toml_value(s)}" for p, s in observations.stacks.items()]
    return "\n".join(lines) + "\n"
