"""The a2m-testing kit's own tests: pytester runs small test files through the installed
plugin, and the plugin's fixtures are used directly, since the entry point loads it here too."""

from __future__ import annotations

import pytest

# pytester's in-process runs drop the modules a run imported when it ends; numpy (which
# the server's store loads) cannot be imported twice in one process, so load the server
# stack here, before any run, where the snapshot keeps it.
import a2m_server.bindings.http
import a2m_server.server  # noqa: F401

pytest_plugins = ["pytester"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
