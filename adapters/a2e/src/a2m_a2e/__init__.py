"""A2E memory capability (``MemoryPlugin``, seed 000) backed by A2M: the eight ``memory/*``
messages answered over a shared A2M store, so an A2E agent shares memory with every
framework adapter.

```python
from a2m import A2MClient
from a2m_a2e import A2EMemoryPlugin, new_message

with A2MClient("http://127.0.0.1:8765/") as client, A2EMemoryPlugin(client) as host:
    init = host.handle(new_message("memory/init/req", namespace="demo", scope={"agent": "ada"}))
    host.handle(new_message("memory/store/req", memory_id=init["memory_id"], entries=[
        {"key": {"topic": "prefs"}, "content": {"style": "concise"}, "tier": "episodic"}]))
```

A2M calls per message (``L`` = the server's ``max_recall_limit``): ``memory/init`` none,
but a host's first message sends one ``memory/describe``; ``memory/store`` one
``memory/remember`` (one per entry when the server refuses the batch, to find which), plus
one ``memory/timeline`` of the written keys when a quota is set, and a listing of the
namespace (``⌈n/L⌉`` calls) the first time a quota needs its usage; ``memory/retrieve``
one ``memory/recall`` (query) or ``memory/timeline`` (keys), or ``⌈n/L⌉`` timelines for a
listing by tags or tier alone; ``memory/forget`` the same lookup, then one
``memory/forget``; ending a memory session one ``memory/forget`` and one
``memory/session/close``."""

from ._host import HostLimits, MemorySession
from ._keys import decode_key, encode_key
from ._messages import (
    CAPABILITY,
    ERROR,
    FORGET_REQ,
    FORGET_RESP,
    INIT_REQ,
    INIT_RESP,
    PROTOCOL_VERSION,
    RETRIEVE_REQ,
    RETRIEVE_RESP,
    STORE_REQ,
    STORE_RESP,
    TIERS,
    ErrorCode,
    new_message,
)
from ._plugin import A2EMemoryPlugin, AsyncA2EMemoryPlugin
from ._stdio import serve_lines

__all__ = [
    "CAPABILITY",
    "ERROR",
    "FORGET_REQ",
    "FORGET_RESP",
    "INIT_REQ",
    "INIT_RESP",
    "PROTOCOL_VERSION",
    "RETRIEVE_REQ",
    "RETRIEVE_RESP",
    "STORE_REQ",
    "STORE_RESP",
    "TIERS",
    "A2EMemoryPlugin",
    "AsyncA2EMemoryPlugin",
    "ErrorCode",
    "HostLimits",
    "MemorySession",
    "decode_key",
    "encode_key",
    "new_message",
    "serve_lines",
]
