"""A2M memory for CrewAI: a ``StorageBackend`` so crews share state.

```python
from a2m_crewai import a2m_memory

crew = Crew(agents=[...], tasks=[...], memory=a2m_memory(
    "http://127.0.0.1:8765/", llm=my_llm, embedder=my_embedder))
```

:class:`A2MStorage` implements every member of CrewAI's ``StorageBackend``;
:func:`a2m_memory` builds a ``Memory`` on it that carries the query text down, so the
server ranks by words and vector together; :func:`use_a2m_storage` makes
``Crew(memory=True)`` land in A2M."""

from __future__ import annotations

from ._compat import SUPPORTED_CREWAI, check_crewai

check_crewai()

from ._listing import ListingCapped  # noqa: E402
from ._mapping import FRAMEWORK  # noqa: E402
from ._memory import A2MMemory, a2m_memory, use_a2m_storage  # noqa: E402
from ._storage import A2MStorage, ForeignRecordError  # noqa: E402
from ._tools import A2MRememberTool, remember_tool  # noqa: E402

__all__ = [
    "FRAMEWORK",
    "SUPPORTED_CREWAI",
    "A2MMemory",
    "A2MRememberTool",
    "A2MStorage",
    "ForeignRecordError",
    "ListingCapped",
    "a2m_memory",
    "remember_tool",
    "use_a2m_storage",
]
