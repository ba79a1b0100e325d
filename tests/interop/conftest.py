"""The frameworks run here offline and quietly: telemetry off, and HOME (where CrewAI
writes on import) in a temporary folder, all before any framework is imported."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

_HOME = Path(tempfile.mkdtemp(prefix="a2m-interop-home-"))
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "AGNO_TELEMETRY": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "HF_HUB_OFFLINE": "1",
        "HOME": str(_HOME),
        "CREWAI_STORAGE_DIR": str(_HOME / "crewai"),
    }
)

# The frameworks' own import-time warnings, which filterwarnings = error would turn into
# failures; they are theirs, not ours.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import crewai
    import crewai.memory.unified_memory  # noqa: F401


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)
