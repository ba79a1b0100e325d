"""Fail at import, naming the versions this adapter supports, when the installed LangGraph
lacks the interfaces it implements (they move between releases)."""

from __future__ import annotations

from importlib import import_module, metadata

__all__ = ["SUPPORTED", "require_langgraph"]

SUPPORTED = "langgraph >=1.2.24,<2 with langgraph-checkpoint >=4.3,<5"
"""The releases the store and checkpointer are tested against."""

_NEEDED = {
    "langgraph.store.base": (
        "BaseStore",
        "GetOp",
        "PutOp",
        "SearchOp",
        "ListNamespacesOp",
        "TTLConfig",
        "IndexConfig",
        "validate_op_namespace",
        "get_text_at_path",
        "tokenize_path",
        "ensure_embeddings",
    ),
    "langgraph.checkpoint.base": (
        "BaseCheckpointSaver",
        "CheckpointTuple",
        "WRITES_IDX_MAP",
        "get_checkpoint_id",
        "get_checkpoint_metadata",
    ),
}


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def require_langgraph() -> None:
    """Raise :class:`ImportError` unless every LangGraph name the adapter uses exists."""
    for module_name, names in _NEEDED.items():
        try:
            module = import_module(module_name)
        except ImportError as exc:
            raise ImportError(_message(f"cannot import {module_name} ({exc})")) from exc
        missing = [name for name in names if not hasattr(module, name)]
        if missing:
            raise ImportError(_message(f"{module_name} has no {', '.join(missing)}"))


def _message(problem: str) -> str:
    return (
        f"a2m_langchain.langgraph needs {SUPPORTED}; the installed langgraph is "
        f"{_installed('langgraph')} and langgraph-checkpoint is "
        f"{_installed('langgraph-checkpoint')}: {problem}. "
        "Install a supported release: pip install 'a2m-langchain[langgraph]'"
    )
