"""CrewAI runs here offline and quietly: telemetry off, and HOME (where ``import crewai``
writes) and CrewAI's storage in a temporary folder, all before CrewAI is first imported."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

OFFLINE = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "HF_HUB_OFFLINE": "1",
}
_HOME = Path(tempfile.mkdtemp(prefix="a2m-crewai-home-"))
os.environ.update(OFFLINE)
os.environ["HOME"] = str(_HOME)
os.environ["CREWAI_STORAGE_DIR"] = str(_HOME / "crewai-storage")

# CrewAI's own import raises an ImportWarning (a lazy module of crewai.rag), which this
# suite's filterwarnings = error would turn into a failure; it is CrewAI's, not ours.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import crewai
    import crewai.memory.storage.lancedb_storage
    import crewai.memory.unified_memory  # noqa: F401


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home() -> Path:
    """The temporary HOME every CrewAI test runs with."""
    return _HOME


@pytest.fixture
def storage_factory(a2m_http_url: str) -> Iterator[object]:
    """Build ``A2MStorage`` objects on a fresh server over real HTTP; all closed after."""
    from a2m_crewai import A2MStorage

    made: list[A2MStorage] = []

    def build(**options: object) -> A2MStorage:
        storage = A2MStorage(a2m_http_url, **options)  # type: ignore[arg-type]
        made.append(storage)
        return storage

    yield build
    for storage in made:
        storage.close()
