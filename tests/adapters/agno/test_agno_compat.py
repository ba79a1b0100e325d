"""An Agno without the interfaces this adapter plugs into fails loudly, naming the
supported versions, at import time rather than deep inside an agent run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agno.db.base import BaseDb
from agno.vectordb.base import VectorDb

from a2m_agno import SUPPORTED_AGNO, UnsupportedAgnoError
from a2m_agno._compat import check_agno


def test_the_installed_agno_is_supported() -> None:
    check_agno()
    assert SUPPORTED_AGNO == ">=3.1.10,<4"


@pytest.mark.parametrize(
    ("owner", "method"), [(BaseDb, "upsert_memories"), (VectorDb, "delete_by_metadata")]
)
def test_a_missing_method_is_named_with_the_supported_versions(
    monkeypatch: pytest.MonkeyPatch, owner: type, method: str
) -> None:
    monkeypatch.delattr(owner, method)
    with pytest.raises(UnsupportedAgnoError, match=method) as raised:
        check_agno()
    assert "agno>=3.1.10,<4" in str(raised.value)
    assert isinstance(raised.value, ImportError)


def test_importing_against_an_agno_without_databases_fails_clearly(tmp_path: Path) -> None:
    fake = tmp_path / "agno"
    fake.mkdir()
    (fake / "__init__.py").write_text("", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "import a2m_agno"],
        env={"PYTHONPATH": str(tmp_path), "AGNO_TELEMETRY": "false", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "UnsupportedAgnoError" in done.stderr
    assert "a2m-agno supports agno>=3.1.10,<4" in done.stderr
