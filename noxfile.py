"""Sessions for the A2M workspace: lint, types, one test session per package, benchmarks.

Run everything CI runs with ``uv run nox``; one session with ``uv run nox -s tests-server``.
Sessions run in the workspace environment that ``uv run`` has just synced from the lock
file, so nothing is installed twice."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "types", "tests"]
nox.options.error_on_missing_interpreters = True

PACKAGES = ["packages/types/src", "packages/server/src", "packages/testing/src", "client/src"]
TEST_SUITES = {
    "types": ["tests/types"],
    "server": ["tests/server"],
    "client": ["tests/client"],
    "rest": ["tests/rest"],
    "testing": ["tests/testing"],
}


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check over the whole workspace."""
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict on every distribution's source."""
    session.run("mypy", *PACKAGES)


@nox.session(name="tests")
def tests(session: nox.Session) -> None:
    """Every test suite, in one pytest run (what CI runs)."""
    session.run("pytest", *session.posargs)


def _package_session(package: str, paths: list[str]) -> None:
    @nox.session(name=f"tests-{package}", default=False)
    def run(session: nox.Session) -> None:
        existing = [path for path in paths if Path(path).is_dir()]
        if not existing:
            session.skip(f"no tests for {package} yet")
        session.run("pytest", *existing, *session.posargs)

    run.__doc__ = f"The {package} package's tests only."


for _package, _paths in TEST_SUITES.items():
    _package_session(_package, _paths)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks, server then client: they print figures and never fail on them.

    Arguments after ``--`` go to bench_server.py only; run bench_client.py directly to pass
    it options (``--records``, ``--block``, ``--rounds``, ``--batches``)."""
    session.run("python", "tests/benchmarks/bench_server.py", *session.posargs)
    session.run("python", "tests/benchmarks/bench_client.py")
