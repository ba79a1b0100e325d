"""LangGraph on A2M: :class:`A2MStore` / :class:`AsyncA2MStore`, a complete LangGraph
``BaseStore`` for long-term memory, and :class:`A2MSaver`, a checkpointer keeping each
thread in its A2M session, sync and async.

```python
from a2m import A2MClient
from a2m_langchain.langgraph import A2MSaver, A2MStore
from langchain.agents import create_agent

memory = A2MClient("http://127.0.0.1:8765/")
agent = create_agent(model, tools, store=A2MStore(memory), checkpointer=A2MSaver(memory))
```

Install with ``pip install 'a2m-langchain[langgraph]'``; importing this module without a
supported LangGraph raises an ``ImportError`` naming the supported versions."""

from ._compat import SUPPORTED, require_langgraph

require_langgraph()

from ._addressing import (  # noqa: E402
    AddressError,
    decode_key,
    decode_segment,
    encode_key,
    encode_segment,
)
from ._items import ValueRefused  # noqa: E402
from ._saver import A2MSaver  # noqa: E402
from ._store import A2MStore, AsyncA2MStore  # noqa: E402

__all__ = [
    "SUPPORTED",
    "A2MSaver",
    "A2MStore",
    "AddressError",
    "AsyncA2MStore",
    "ValueRefused",
    "decode_key",
    "decode_segment",
    "encode_key",
    "encode_segment",
]
