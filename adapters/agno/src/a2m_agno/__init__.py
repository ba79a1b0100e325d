"""A2M memory for Agno: a database whose user memories and knowledge live in A2M.

``A2MDb`` / ``AsyncA2MDb`` are Agno databases (``Agent(db=…)``) whose user memories are A2M
entries; ``A2MVectorDb`` is an Agno vector database for ``Knowledge``. Importing this
package with an Agno that lacks these interfaces raises ``UnsupportedAgnoError`` naming
the supported versions."""

from __future__ import annotations

from ._compat import SUPPORTED_AGNO, UnsupportedAgnoError, check_agno

check_agno()

from ._async_memory_db import AsyncA2MDb  # noqa: E402
from ._memory_db import A2MDb  # noqa: E402
from ._store import IncompleteListingError  # noqa: E402
from ._tools import remember_tool  # noqa: E402
from ._vectordb import A2MVectorDb  # noqa: E402

__all__ = [
    "SUPPORTED_AGNO",
    "A2MDb",
    "A2MVectorDb",
    "AsyncA2MDb",
    "IncompleteListingError",
    "UnsupportedAgnoError",
    "remember_tool",
]
