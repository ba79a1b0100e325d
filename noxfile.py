"""Sessions for the A2M workspace: lint, types, one test session per package and per
framework, benchmarks.

Run everything CI runs with ``uv run nox``; one session with ``uv run nox -s tests-server``.
The package sessions run in the workspace environment that ``uv run`` has just synced from
the lock file. Each framework session builds its own environment holding only that
adapter, its framework and the test tools, so one framework's pins (CrewAI's pydantic,
AutoGen's protobuf) never reach another's tests."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.error_on_missing_interpreters = True

PACKAGES = ["packages/types/src", "packages/server/src", "packages/testing/src", "client/src"]
TEST_SUITES = {
    "types": ["tests/types"],
    "server": ["tests/server"],
    "client": ["tests/client"],
    "rest": ["tests/rest"],
    "testing": ["tests/testing"],
    "adapter": ["tests/adapter"],
    "examples": ["tests/examples"],
}

# The workspace's own distributions, installed editable into every framework environment.
LOCAL_PACKAGES = ["packages/types", "client", "packages/server", "packages/testing"]
# Test tools every framework session installs beside its adapter.
TEST_TOOLS = [
    "pytest>=8.3",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "respx>=0.22",
    "mypy>=1.13",
    "numpy>=1.26",
]
# Framework telemetry off, and nothing fetched from a model hub, in every framework session.
OFFLINE_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "AGNO_TELEMETRY": "false",
    "ANONYMIZED_TELEMETRY": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "HF_HUB_OFFLINE": "1",
}
# framework session name -> (adapter directory, extras to install, extra test packages).
FRAMEWORKS: dict[str, tuple[str, list[str], list[str]]] = {
    "langchain": ("langchain", ["classic"], ["langchain-tests>=1.1,<2", "pytest-asyncio>=0.23"]),
    "langgraph": (
        "langchain",
        ["langgraph"],
        [
            "langchain>=1.5,<2",
            "langgraph-checkpoint-conformance>=0.0.2,<0.1",
            "pytest-asyncio>=0.23",
        ],
    ),
    "crewai": ("crewai", [], []),
    "autogen": ("autogen", [], ["autogen-agentchat>=0.7.5,<0.8", "autogen-ext>=0.7.5,<0.8"]),
    "agno": ("agno", [], []),
}


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check over the whole workspace."""
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict on every package's source (each adapter's runs in its framework session)."""
    session.run("mypy", *PACKAGES)


@nox.session(name="tests")
def tests(session: nox.Session) -> None:
    """Every package's test suite, in one pytest run, in the workspace environment."""
    suites = [path for paths in TEST_SUITES.values() for path in paths if Path(path).is_dir()]
    session.run("pytest", *suites, *session.posargs)


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


def _framework_session(name: str, adapter: str, extras: list[str], extra: list[str]) -> None:
    @nox.session(name=f"tests-{name}", venv_backend="uv")
    def run(session: nox.Session) -> None:
        if not Path(f"tests/adapters/{name}").is_dir():
            session.skip(f"no tests for {name} yet")
        session.env.update(OFFLINE_ENV)
        editables = [arg for package in LOCAL_PACKAGES for arg in ("-e", package)]
        wanted = f"adapters/{adapter}[{','.join(extras)}]" if extras else f"adapters/{adapter}"
        session.install(*editables, "-e", wanted, *TEST_TOOLS, *extra)
        session.run("mypy", f"adapters/{adapter}/src")
        session.run("pytest", f"tests/adapters/{name}", *session.posargs)

    run.__doc__ = f"The {name} adapter: mypy and its tests, in an environment of its own."


for _name, (_adapter, _extras, _extra) in FRAMEWORKS.items():
    _framework_session(_name, _adapter, _extras, _extra)


@nox.session
def interop(session: nox.Session) -> None:
    """The N-by-N interop matrix: every framework's adapter, the raw client and REST, on one
    store. Runs in the workspace environment, the one that holds all four frameworks."""
    session.env.update(OFFLINE_ENV)
    session.run("pytest", "tests/interop", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks, server then client: they print figures and never fail on them.

    Arguments after ``--`` go to bench_server.py only; run bench_client.py directly to pass
    it options (``--records``, ``--block``, ``--rounds``, ``--batches``)."""
    session.run("python", "tests/benchmarks/bench_server.py", *session.posargs)
    session.run("python", "tests/benchmarks/bench_client.py")
