"""The AutoGen interfaces this adapter is built on, checked once at import, so a release
that moved or removed one fails loudly, naming the versions this adapter supports."""

from __future__ import annotations

from importlib import import_module, metadata

__all__ = ["SUPPORTED_AGENTCHAT", "SUPPORTED_CORE", "require"]

SUPPORTED_CORE = "autogen-core>=0.7.5,<0.8"
"""The autogen-core releases this adapter is tested against."""
SUPPORTED_AGENTCHAT = "autogen-agentchat>=0.7.5,<0.8"
"""The autogen-agentchat releases :mod:`a2m_autogen.agentchat` is tested against."""


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def require(distribution: str, supported: str, names: dict[str, tuple[str, ...]]) -> None:
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
            f"a2m-autogen needs {supported} (found {distribution} "
            f"{_installed(distribution)}); missing: {', '.join(missing)}. "
            f'Install a supported release: pip install "{supported}"'
        )


require(
    "autogen-core",
    SUPPORTED_CORE,
    {
        "autogen_core": ("CancellationToken", "Component", "ComponentModel"),
        "autogen_core.memory": (
            "Memory",
            "MemoryContent",
            "MemoryMimeType",
            "MemoryQueryResult",
            "UpdateContextResult",
        ),
        "autogen_core.model_context": ("ChatCompletionContext",),
        "autogen_core.models": (
            "AssistantMessage",
            "FunctionExecutionResultMessage",
            "SystemMessage",
            "UserMessage",
        ),
    },
)
