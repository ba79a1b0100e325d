"""The SQLite file's schema version, as the server README states it: a new file records
the current version (5), and a file from a newer release is refused, naming both
versions, rather than misread, and is left as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from a2m_server import A2MServer
from a2m_server.store.schema import SCHEMA_VERSION


def _version(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return str(version)


def test_a_new_file_records_schema_version_5(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    A2MServer(db=db).close()
    assert SCHEMA_VERSION == 5
    assert _version(db) == "5"


def test_a_file_from_a_newer_release_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "newer.db"
    with A2MServer(db=db) as server:
        server.connect().call("memory/remember", {"records": [{"content": "kept"}]})
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    before = db.read_bytes()
    with pytest.raises(RuntimeError, match=r"schema version 999, newer than this server"):
        A2MServer(db=db)
    assert db.read_bytes() == before
    assert _version(db) == "999"
