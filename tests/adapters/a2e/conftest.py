"""Fixtures for the A2E host tests: a fresh store per test on each binding, and hosts on it
with sync or async plugins."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from a2e_support import BINDINGS, MODES, Backend, Host


@pytest.fixture
def make_backend(tmp_path: Path) -> Iterator[Callable[[str], Backend]]:
    """Build a store on a binding; everything it starts is torn down after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda binding: Backend(binding, tmp_path, stack)


@pytest.fixture(params=[(m, b) for m in MODES for b in BINDINGS], ids="-".join)
def cell(
    request: pytest.FixtureRequest, make_backend: Callable[[str], Backend]
) -> tuple[str, Backend]:
    """The matrix: (mode, store) for sync and async plugins on every binding."""
    mode, binding = request.param
    return mode, make_backend(binding)


@pytest.fixture
def host(cell: tuple[str, Backend]) -> Host:
    """A host in every cell of the matrix, granting the semantic tier to ``curator``."""
    mode, backend = cell
    return backend.host(mode, semantic_writers=["curator"])


@pytest.fixture
def local(make_backend: Callable[[str], Backend]) -> Host:
    """One sync host on an in-process store, for rules that do not depend on the binding."""
    return make_backend("in-process").host("sync", semantic_writers=["curator"])
