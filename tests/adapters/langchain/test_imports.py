"""The public names, and the errors a user sees when LangChain is missing a piece."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import a2m_langchain
from a2m_langchain._compat import CLASSIC_INSTALL

EXPECTED = [
    "SUPPORTED_CLASSIC",
    "SUPPORTED_CORE",
    "A2MChatMessageHistory",
    "A2MMemory",
    "A2MRetriever",
    "A2MVectorStore",
    "remember_tool",
]


def test_all_lists_exactly_the_public_names() -> None:
    assert a2m_langchain.__all__ == EXPECTED
    for name in EXPECTED:
        assert getattr(a2m_langchain, name) is not None
    # the typing helpers the module imports, and the LangGraph subpackage once imported
    incidental = {"annotations", "TYPE_CHECKING", "Any", "langgraph"}
    public = {n for n in dir(a2m_langchain) if not n.startswith("_")} - incidental
    assert public == set(EXPECTED) - {"A2MMemory"}  # that one is loaded on first use


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("hidden", "expected"),
    [
        # the classic extra is not installed: say which extra to install
        (["langchain_classic", "langchain_classic.base_memory"], CLASSIC_INSTALL),
        # it is, but BaseMemory moved: say which versions work
        (["langchain_classic.base_memory"], "langchain-classic>=1.0.8,<2"),
    ],
)
def test_a2m_memory_without_base_memory_says_what_to_install(
    hidden: list[str], expected: str
) -> None:
    done = _run(
        f"""
        import sys
        for name in {hidden!r}:
            sys.modules[name] = None  # as if it could not be imported
        import a2m_langchain  # the rest of the package still imports
        from a2m_langchain import A2MChatMessageHistory
        try:
            a2m_langchain.A2MMemory
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


def test_a_langchain_without_an_interface_names_the_supported_versions() -> None:
    done = _run(
        """
        import sys
        sys.modules["langchain_core.vectorstores"] = None  # an interface that moved
        try:
            import a2m_langchain
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "langchain-core>=1.8,<2" in done.stdout
    assert "VectorStore" in done.stdout
