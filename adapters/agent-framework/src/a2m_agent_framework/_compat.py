"""The Agent Framework interfaces this adapter is built on, checked once at import, so a
release that moved or removed one fails loudly, naming the versions this adapter supports."""

from __future__ import annotations

from importlib import import_module, metadata

__all__ = ["SUPPORTED", "require"]

SUPPORTED = "agent-framework-core>=1.23,<2"
"""The Agent Framework releases this adapter is tested against."""

_NEEDED: dict[str, tuple[str, ...]] = {
    "agent_framework": (
        "AgentSession",
        "ContextProvider",
        "HistoryProvider",
        "Message",
        "SessionContext",
        "SessionStore",
        "tool",
    ),
    "agent_framework._sessions": ("filter_new_messages",),
}


def _installed() -> str:
    try:
        return metadata.version("agent-framework-core")
    except metadata.PackageNotFoundError:
        return "not installed"


def require(names: dict[str, tuple[str, ...]] = _NEEDED) -> None:
    """Raise :class:`ImportError` unless every ``module: (attribute, …)`` in ``names`` can
    be imported; the message names the supported versions and the one installed."""
    missing: list[str] = []
    for module_name, attributes in names.items():
        try:
            module = import_module(module_name)
        except ImportError:
            missing.append(module_name)
            continue
        missing += [f"{module_name}.{a}" for a in attributes if not hasattr(module, a)]
    if missing:
        raise ImportError(
            f"a2m-agent-framework needs {SUPPORTED} (found agent-framework-core "
            f"{_installed()}); missing: {', '.join(missing)}. Install a supported release: "
            f'pip install "{SUPPORTED}"'
        )


require()
