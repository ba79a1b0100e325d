"""A2M memory for LangChain: a classic ``BaseMemory``, a chat message history, a retriever
and a vector store, all over one A2M store that other frameworks read too.

```python
from a2m import A2MClient
from a2m_langchain import A2MChatMessageHistory

history = A2MChatMessageHistory("conversation-42", A2MClient("http://127.0.0.1:8765/"))
```

``A2MMemory`` needs langchain-classic: ``pip install 'a2m-langchain[classic]'``. The
LangGraph store and checkpointer live in :mod:`a2m_langchain.langgraph`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._chat_history import A2MChatMessageHistory
from ._compat import SUPPORTED_CLASSIC, SUPPORTED_CORE
from ._retriever import A2MRetriever
from ._tools import remember_tool
from ._vectorstore import A2MVectorStore

if TYPE_CHECKING:
    from ._memory import A2MMemory

__all__ = [
    "SUPPORTED_CLASSIC",
    "SUPPORTED_CORE",
    "A2MChatMessageHistory",
    "A2MMemory",
    "A2MRetriever",
    "A2MVectorStore",
    "remember_tool",
]


def __getattr__(name: str) -> Any:
    # A2MMemory needs the optional langchain-classic; importing the package must not.
    if name == "A2MMemory":
        from ._memory import A2MMemory

        return A2MMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
