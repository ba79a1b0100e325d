"""a2m-testing: test anything that uses A2M memory against a real store.

Installing the distribution registers a pytest plugin (:mod:`a2m_testing.plugin`) whose
fixtures give each test fresh servers on every binding, clients parametrized across the
bindings, and a respx router that answers HTTP from an in-process server.
:mod:`a2m_testing.contract` is the standard suite an adapter subclasses to prove it honours
the four-method contract; :mod:`a2m_testing.assertions` checks what a store holds."""

import pytest

# Before the modules are imported, so their plain asserts explain themselves when they fail.
pytest.register_assert_rewrite("a2m_testing.contract")

from .assertions import (  # noqa: E402
    assert_not_remembered,
    assert_not_remembered_async,
    assert_remembered,
    assert_remembered_async,
    matching_records,
)
from .bindings import BINDINGS, Binding, open_client  # noqa: E402
from .latency import DelayedTransport  # noqa: E402
from .mock_http import DEFAULT_URL, InProcessHTTP, route_to_server  # noqa: E402
from .servers import Servers, serve_http, stdio_command  # noqa: E402

__all__ = [
    "BINDINGS",
    "DEFAULT_URL",
    "Binding",
    "DelayedTransport",
    "InProcessHTTP",
    "Servers",
    "assert_not_remembered",
    "assert_not_remembered_async",
    "assert_remembered",
    "assert_remembered_async",
    "matching_records",
    "open_client",
    "route_to_server",
    "serve_http",
    "stdio_command",
]
