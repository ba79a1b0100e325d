"""The adapter fails loudly, naming the supported versions, on an AutoGen that lacks the
interfaces it is built on; and its public names are exactly the documented ones."""

from __future__ import annotations

import importlib
import sys
from importlib import metadata

import autogen_agentchat.messages
import autogen_core.memory
import pytest

import a2m_autogen
import a2m_autogen._compat
import a2m_autogen.agentchat


def test_an_autogen_core_without_memory_fails_at_import_naming_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(autogen_core.memory, "Memory")
    with pytest.raises(ImportError) as raised:
        importlib.reload(a2m_autogen._compat)
    message = str(raised.value)
    assert "autogen-core>=0.7.5,<0.8" in message
    assert f"found autogen-core {metadata.version('autogen-core')}" in message
    assert "autogen_core.memory.Memory" in message


def test_an_agentchat_without_its_messages_fails_at_import_naming_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(autogen_agentchat.messages, "MessageFactory")
    with pytest.raises(ImportError, match=r"autogen-agentchat>=0\.7\.5,<0\.8"):
        importlib.reload(a2m_autogen.agentchat)


def test_the_public_names() -> None:
    assert set(a2m_autogen.__all__) == {
        "MEMORY_HEADER",
        "PROVENANCE_KEY",
        "SUPPORTED_AGENTCHAT",
        "SUPPORTED_CORE",
        "A2MChatCompletionContext",
        "A2MChatCompletionContextConfig",
        "A2MMemory",
        "A2MMemoryConfig",
        "ConnectionConfig",
        "ContentNotStorable",
        "remember_tool",
    }
    assert a2m_autogen.agentchat.__all__ == ["A2MTranscript"]
    for name in a2m_autogen.__all__:
        assert getattr(a2m_autogen, name) is not None


def test_the_declared_dependencies_are_what_the_adapter_imports() -> None:
    requires = metadata.requires("a2m-autogen") or []
    assert "autogen-core<0.8,>=0.7.5" in requires or "autogen-core>=0.7.5,<0.8" in requires
    assert any(r.startswith("autogen-agentchat") and "extra" in r for r in requires)


def test_every_imported_distribution_is_declared() -> None:
    import ast
    from pathlib import Path

    source = Path(a2m_autogen.__file__).parent
    imported: set[str] = set()
    for module in source.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
    third_party = {name for name in imported if name not in sys.stdlib_module_names}
    assert third_party == {
        "a2m",
        "a2m_types",
        "autogen_agentchat",
        "autogen_core",
        "pydantic",
        "typing_extensions",
    }
    declared = {
        r.split(";")[0].split(">")[0].split("<")[0].strip()
        for r in metadata.requires("a2m-autogen") or []
    }
    assert declared == {
        "a2m-client",
        "a2m-types",
        "autogen-core",
        "autogen-agentchat",
        "pydantic",
        "typing-extensions",
    }
