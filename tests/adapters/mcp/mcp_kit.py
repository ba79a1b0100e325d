"""Helpers for the MCP server's tests: the ``a2m-mcp`` command, how the MCP client starts
it over stdio, an HTTP server process on an ephemeral loopback port."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream
from mcp import StdioServerParameters

from a2m_mcp import MemoryConfig

CONFIG = MemoryConfig(namespace="mcp", agent="coder", org="acme", project="billing")


def command(*args: str) -> list[str]:
    """The ``a2m-mcp`` command of this environment."""
    return [sys.executable, "-m", "a2m_mcp.cli", *args]


def stdio_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """How the MCP client starts ``a2m-mcp`` as a subprocess over stdio."""
    argv = command(*args)
    return StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **(env or {})})


@asynccontextmanager
async def http_server(*args: str) -> AsyncIterator[str]:
    """``a2m-mcp --transport http`` on an ephemeral loopback port; yields its MCP URL and
    stops the process on the way out."""
    argv = command(*args, "--transport", "http", "--port", "0")
    async with await anyio.open_process(argv, stdout=subprocess.DEVNULL) as process:
        try:
            assert process.stderr is not None
            seen = ""
            with anyio.fail_after(30):
                async for chunk in TextReceiveStream(process.stderr):
                    seen += chunk
                    found = re.search(r"serving MCP at (\S+)\n", seen)
                    if found:
                        break
            assert found is not None, f"a2m-mcp did not start: {seen}"
            yield found.group(1)
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


def text(result: Any) -> str:
    """The first text block of a tool result."""
    return str(result.content[0].text)
