"""A2M memory for AutoGen: an ``autogen_core`` Memory, and a model context, kept in a shared
A2M store that whole teams (and agents of other frameworks) read together.

```python
from a2m_autogen import A2MMemory
from autogen_agentchat.agents import AssistantAgent

memory = A2MMemory(url="http://127.0.0.1:8765/", namespace="app/assistant")
agent = AssistantAgent("assistant", model_client=model, memory=[memory])
```

:mod:`a2m_autogen.agentchat` records a team's messages (it needs autogen-agentchat).
Supported: autogen-core 0.7.5 up to 0.8; an AutoGen without these interfaces fails at
import, naming the supported versions."""

from __future__ import annotations

from . import _compat  # noqa: F401  (checks the AutoGen interfaces first)
from ._compat import SUPPORTED_AGENTCHAT, SUPPORTED_CORE
from ._connection import ConnectionConfig
from ._contents import PROVENANCE_KEY, ContentNotStorable
from ._context import A2MChatCompletionContext, A2MChatCompletionContextConfig
from ._memory import MEMORY_HEADER, A2MMemory, A2MMemoryConfig
from ._tools import remember_tool

__all__ = [
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
]
