"""Helpers for the A2E host tests: one backend store reachable by several clients of one
binding, and a host driven the same way whether its plugin is sync or async."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

from a2m import A2MClient, AsyncA2MClient
from a2m_a2e import A2EMemoryPlugin, AsyncA2EMemoryPlugin, new_message

MODES = ("sync", "async")
BINDINGS = ("in-process", "stdio", "http", "rest")
NAMESPACE = "agent-session-1"

RESPONSE_TYPES = {
    "memory/init/resp",
    "memory/store/resp",
    "memory/retrieve/resp",
    "memory/forget/resp",
    "memory/error",
}


class Backend:
    """One store, and clients of ``binding`` reaching it (each its own connection)."""

    def __init__(self, binding: str, tmp_path: Path, stack: contextlib.ExitStack) -> None:
        from a2m_server.server import A2MServer
        from a2m_testing.servers import serve_http

        self.binding = binding
        self.stack = stack
        self.db = str(tmp_path / f"a2e-{next(_counter)}.db")
        self.server: Any = None
        self.url: str | None = None
        if binding != "stdio":
            self.server = stack.enter_context(A2MServer())
            if binding in ("http", "rest"):
                self.url = stack.enter_context(serve_http(self.server))

    def _options(self) -> dict[str, Any]:
        return {"namespace": NAMESPACE} if self.binding == "rest" else {}

    def client(self, mode: str = "sync") -> Any:
        from a2m_testing.servers import stdio_command

        cls: Any = A2MClient if mode == "sync" else AsyncA2MClient
        if self.binding == "stdio":
            return cls.stdio(stdio_command(self.db))
        if self.binding == "in-process":
            return cls.in_process(self.server)
        if self.binding == "rest":
            return cls.rest(self.url, namespace=NAMESPACE)
        return cls(self.url)

    def sync_client(self) -> A2MClient:
        """A synchronous client closed with the test."""
        client: A2MClient = self.client("sync")
        self.stack.callback(client.close)
        return client

    def host(self, mode: str, **plugin_options: Any) -> Host:
        """A fresh host (its own client and plugin) on this store, closed with the test."""
        host = Host(self.client(mode), mode, **plugin_options)
        self.stack.callback(host.shutdown)
        return host


_counter = itertools.count()


class Host:
    """A plugin and its client: ``handle`` answers a message whichever the plugin's twin."""

    def __init__(self, client: Any, mode: str, **plugin_options: Any) -> None:
        self.mode = mode
        self.client = client
        self.loop = asyncio.new_event_loop() if mode == "async" else None
        plugin_class: Any = A2EMemoryPlugin if mode == "sync" else AsyncA2EMemoryPlugin
        self.plugin = plugin_class(client, **plugin_options)
        self._down = False

    def _run(self, value: Any) -> Any:
        return self.loop.run_until_complete(value) if self.loop is not None else value

    def handle(self, message: Any) -> dict[str, Any]:
        response: dict[str, Any] = self._run(self.plugin.handle(message))
        assert response["type"] in RESPONSE_TYPES
        return response

    def handle_json(self, text: str | bytes) -> dict[str, Any]:
        answer = self._run(self.plugin.handle_json(text))
        assert isinstance(answer, str)
        response: dict[str, Any] = json.loads(answer)
        assert response["type"] in RESPONSE_TYPES
        return response

    def end_memory(self, memory_id: str) -> int:
        return int(self._run(self.plugin.end_memory(memory_id)))

    def disconnect(self) -> None:
        """What the end of the agent's connection does: every memory session ends."""
        if self.loop is not None:
            self.loop.run_until_complete(self.plugin.aclose())
        else:
            self.plugin.close()

    def shutdown(self) -> None:
        if self._down:
            return
        self._down = True
        if self.loop is not None:
            self.loop.run_until_complete(self.client.aclose())
            self.loop.close()
        else:
            self.client.close()

    # --- the messages, with the seed's defaults --------------------------------------------

    def init(self, agent: str | None = "assistant", namespace: str = NAMESPACE) -> str:
        scope = {} if agent is None else {"agent": agent}
        response = self.handle(new_message("memory/init/req", namespace=namespace, scope=scope))
        assert response["type"] == "memory/init/resp", response
        return str(response["memory_id"])

    def store(self, memory_id: str, *entries: dict[str, Any]) -> dict[str, Any]:
        return self.handle(
            new_message("memory/store/req", memory_id=memory_id, entries=list(entries))
        )

    def retrieve(self, memory_id: str, **fields: Any) -> dict[str, Any]:
        return self.handle(new_message("memory/retrieve/req", memory_id=memory_id, **fields))

    def forget(self, memory_id: str, **fields: Any) -> dict[str, Any]:
        return self.handle(new_message("memory/forget/req", memory_id=memory_id, **fields))


def entry(
    key: dict[str, Any], content: Any, tier: str = "episodic", **fields: Any
) -> dict[str, Any]:
    """A store entry."""
    return {"key": key, "content": content, "tier": tier, **fields}


def keys_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [item["key"] for item in response["entries"]]
