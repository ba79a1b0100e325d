"""The LangChain interfaces this package implements, imported in one place so that an
installed LangChain lacking one fails loudly, naming the versions this package supports."""

from __future__ import annotations

from importlib import metadata
from typing import Any

SUPPORTED_CORE = "langchain-core>=1.8,<2"
SUPPORTED_CLASSIC = "langchain-classic>=1.0.8,<2"
CLASSIC_INSTALL = "pip install 'a2m-langchain[classic]'"


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _missing(interface: str, distribution: str, supported: str) -> ImportError:
    return ImportError(
        f"a2m-langchain needs {interface}, which the installed {distribution} "
        f"({_installed(distribution)}) does not provide; a2m-langchain supports {supported}"
    )


try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import VectorStore
except ImportError as exc:  # an interface moved or vanished: say which versions work
    raise _missing(
        "langchain_core's BaseChatMessageHistory, BaseRetriever and VectorStore",
        "langchain-core",
        SUPPORTED_CORE,
    ) from exc


def load_base_memory() -> Any:
    """``langchain_classic.base_memory.BaseMemory``, or an ImportError naming the extra to
    install (LangChain moved ``BaseMemory`` out of langchain-core into langchain-classic)."""
    try:
        import langchain_classic  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "A2MMemory is a langchain-classic BaseMemory, and langchain-classic is not "
            f"installed: {CLASSIC_INSTALL} (supported: {SUPPORTED_CLASSIC})"
        ) from exc
    try:
        from langchain_classic.base_memory import BaseMemory
    except ImportError as exc:
        raise _missing(
            "langchain_classic.base_memory.BaseMemory", "langchain-classic", SUPPORTED_CLASSIC
        ) from exc
    return BaseMemory


__all__ = [
    "CLASSIC_INSTALL",
    "SUPPORTED_CLASSIC",
    "SUPPORTED_CORE",
    "BaseChatMessageHistory",
    "BaseRetriever",
    "VectorStore",
    "load_base_memory",
]
