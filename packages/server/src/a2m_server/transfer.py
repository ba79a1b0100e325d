"""Moving a store's records between backends as JSON Lines (``a2m-server export`` /
``a2m-server import``).

The first line is a header (format, metric, vector width); each further line is one
record with everything that makes it that record: id, key, owner, session, tier,
salience, access counts, revision, metadata, the verbatim vector, and every timestamp
in epoch milliseconds. Both directions stream in pages, so memory stays flat whatever
the store's size. Import checks the whole file before writing anything, and skips ids
already present, so re-importing a dump is a no-op. The event log is not carried: its
cursors belong to the store that issued them."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from typing import IO, Any

from a2m_types.json_values import MAX_JSON_DEPTH, JSONValueError, check_json_value

from .store import RecordFilter, Store, StoredRecord

__all__ = ["FORMAT", "DumpError", "check_dump", "export_records", "import_records"]

FORMAT = "a2m-export/1"
_PAGE = 500

log = logging.getLogger("a2m_server.transfer")

Progress = Callable[[int, int], None]
"""Told (records done, records in all) after each page of an export or import."""

_TEXT = ("id", "content")
_OPTIONAL_TEXT = ("role", "group", "tier", "owner", "session", "key", "uri", "media_type")
_TIMES = ("created_at", "updated_at")
_OPTIONAL_TIMES = ("accessed_at", "expires_at")


class DumpError(ValueError):
    """A dump line that cannot be imported; names the line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def _record_to_json(record: StoredRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "content": record.content,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "role": record.role,
        "metadata": record.metadata,
        "group": record.group,
        "tier": record.tier,
        "salience": record.salience,
        "accessed_at": record.accessed_at,
        "access_count": record.access_count,
        "owner": record.owner,
        "session": record.session,
        "key": record.key,
        "revision": record.revision,
        "uri": record.uri,
        "media_type": record.media_type,
        "expires_at": record.expires_at,
        "embedding": record.embedding,
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def export_records(store: Store, out: IO[str], *, progress: Progress | None = None) -> int:
    """Write ``store`` to ``out``; returns how many records were written.

    One snapshot covers the whole export, read a page at a time. A record that cannot be
    written as JSON (metadata nested past what the encoder follows, stored by an earlier
    release) is left out and logged with its id, rather than ending the export."""
    written = 0
    done = 0
    with store.reading() as reader:
        total = reader.count(RecordFilter())
        out.write(
            _dumps({"format": FORMAT, "dimensions": reader.dimensions(), "store": store.store_id})
            + "\n"
        )
        after = 0
        while True:
            page = reader.scan(after, _PAGE)
            if not page:
                break
            for record in page:
                try:
                    line = _dumps(_record_to_json(record))
                except (ValueError, TypeError, RecursionError) as exc:
                    log.error("record %s left out of the export: %s", record.id, exc)
                    continue
                out.write(line + "\n")
                written += 1
            done += len(page)
            after = page[-1].rowid
            if progress is not None:
                progress(done, max(total, done))
    return written


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse(line_number: int, text: str) -> StoredRecord:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DumpError(line_number, f"not JSON ({exc}); the line may be truncated") from None
    except RecursionError:
        raise DumpError(line_number, f"a value nests deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise DumpError(line_number, "a record must be a JSON object")
    for name in _TEXT:
        if not isinstance(data.get(name), str):
            raise DumpError(line_number, f"{name} must be a string")
    for name in _OPTIONAL_TEXT:
        if data.get(name) is not None and not isinstance(data[name], str):
            raise DumpError(line_number, f"{name} must be a string or null")
    for name in _TIMES:
        if not _is_int(data.get(name)):
            raise DumpError(line_number, f"{name} must be epoch milliseconds (an integer)")
    for name in _OPTIONAL_TIMES:
        if data.get(name) is not None and not _is_int(data[name]):
            raise DumpError(line_number, f"{name} must be epoch milliseconds or null")
    for name in ("access_count", "revision"):
        if not _is_int(data.get(name, 0)) or data.get(name, 0) < 0:
            raise DumpError(line_number, f"{name} must be a non-negative integer")
    salience = data.get("salience", 0.0)
    if not isinstance(salience, (int, float)) or isinstance(salience, bool):
        raise DumpError(line_number, "salience must be a number")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise DumpError(line_number, "metadata must be an object or null")
    if metadata is not None:
        try:
            check_json_value(metadata, "metadata")
        except JSONValueError as exc:
            raise DumpError(line_number, f"{exc.path[:160]} {exc.reason}") from None
    embedding = data.get("embedding")
    if embedding is not None and (
        not isinstance(embedding, list)
        or not embedding
        or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            for x in embedding
        )
    ):
        raise DumpError(line_number, "embedding must be a non-empty list of finite numbers")
    known = {*_TEXT, *_OPTIONAL_TEXT, *_TIMES, *_OPTIONAL_TIMES}
    known |= {"access_count", "revision", "salience", "metadata", "embedding"}
    unknown = set(data) - known
    if unknown:
        raise DumpError(line_number, f"unknown fields: {', '.join(sorted(unknown))}")
    return StoredRecord(
        rowid=0,
        id=data["id"],
        content=data["content"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        role=data.get("role"),
        metadata=metadata,
        group=data.get("group"),
        tier=data.get("tier"),
        salience=float(salience),
        accessed_at=data.get("accessed_at"),
        access_count=data.get("access_count", 0),
        owner=data.get("owner"),
        session=data.get("session"),
        key=data.get("key"),
        revision=data.get("revision", 0),
        embedding=[float(x) for x in embedding] if embedding is not None else None,
        uri=data.get("uri"),
        media_type=data.get("media_type"),
        expires_at=data.get("expires_at"),
    )


def _records(lines: IO[str]) -> Iterator[tuple[int, StoredRecord]]:
    header_seen = False
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        if not header_seen:
            header_seen = True
            try:
                header = json.loads(text)
            except ValueError:
                header = None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise DumpError(number, f"not an a2m-export (expected an {FORMAT} header line)")
            continue
        yield number, _parse(number, text)
    if not header_seen:
        raise DumpError(1, "the file is empty")


def check_dump(source: IO[str]) -> tuple[int, int | None]:
    """Read a whole dump, checking every line; returns (records, vector width or None).
    Raises :class:`DumpError` naming the first bad line."""
    width: int | None = None
    count = 0
    for number, record in _records(source):
        if record.embedding is not None:
            if width is None:
                width = len(record.embedding)
            elif len(record.embedding) != width:
                raise DumpError(
                    number, f"embedding has {len(record.embedding)} dimensions, not {width}"
                )
        count += 1
    return count, width


def import_records(
    store: Store, source: IO[str], *, progress: Progress | None = None
) -> tuple[int, int]:
    """Load an export into ``store``; returns (records read, records added).

    ``source`` must be seekable: it is read twice, once to check every line and once to
    write, so a bad line anywhere means nothing is written."""
    count, width = check_dump(source)
    with store.reading() as reader:
        existing = reader.dimensions()
    if width is not None and existing is not None and existing != width:
        raise DumpError(0, f"the dump's vectors are {width} wide; this store's are {existing}")
    source.seek(0)
    added = 0
    done = 0
    page: list[StoredRecord] = []
    for _, record in _records(source):
        page.append(record)
        if len(page) >= _PAGE:
            added += _write(store, page, width)
            done += len(page)
            page = []
            if progress is not None:
                progress(done, count)
    if page:
        added += _write(store, page, width)
        done += len(page)
        if progress is not None:
            progress(done, count)
    return count, added


def _write(store: Store, page: list[StoredRecord], width: int | None) -> int:
    with store.writing() as writer:
        if width is not None and writer.dimensions() is None:
            writer.set_dimensions(width)
        return writer.restore(page)
