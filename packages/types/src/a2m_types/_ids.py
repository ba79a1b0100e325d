"""Record identifiers: UUID version 7 strings, time-ordered and unique without coordination.

Clients must treat ids as opaque (§3.2); the format only matters to whoever generates them."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id() -> str:
    """A fresh UUIDv7 string; ids made in one process sort in creation order."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same millisecond (or a clock step back): keep ordering with a counter.
            ms = _last_ms
            _counter += 1
            if _counter > 0xFFF:
                ms += 1
                _counter = 0
        else:
            _counter = int.from_bytes(os.urandom(2), "big") & 0x7FF
        _last_ms = ms
        counter = _counter
    tail = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= tail
    # The canonical 8-4-4-4-12 form, as str(uuid.UUID(int=value)) writes it, without
    # building a UUID object: every record a server writes pays for this.
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
