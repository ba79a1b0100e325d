"""An installed CrewAI without the unified memory's StorageBackend is refused at import,
with the supported versions named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from a2m_crewai import SUPPORTED_CREWAI

_OLD_CREWAI = '__version__ = "0.95.0"\n'
_OLD_MEMORY = "class ShortTermMemory:\n    pass\n"


def test_an_old_crewai_is_refused_by_name(tmp_path: Path) -> None:
    # A stand-in for CrewAI 0.x: a crewai package whose memory has no storage backend.
    package = tmp_path / "site" / "crewai"
    (package / "memory").mkdir(parents=True)
    (package / "__init__.py").write_text(_OLD_CREWAI)
    (package / "memory" / "__init__.py").write_text(_OLD_MEMORY)
    done = subprocess.run(
        [sys.executable, "-c", "import a2m_crewai"],
        env={"PYTHONPATH": str(tmp_path / "site"), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: a2m-crewai needs CrewAI >=1.15.30,<1.16")
    assert "StorageBackend" in last
    assert SUPPORTED_CREWAI == ">=1.15.30,<1.16"


def test_the_installed_crewai_is_supported() -> None:
    from importlib.metadata import version

    major, minor, patch = (int(part) for part in version("crewai").split(".")[:3])
    assert (major, minor) == (1, 15)
    assert patch >= 30
