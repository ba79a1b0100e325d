"""JSON lines over stdio: one request per line in, one response per line out; the end of
input is the agent's disconnect, which ends its memory sessions."""

from __future__ import annotations

from typing import TextIO

from ._plugin import A2EMemoryPlugin

__all__ = ["serve_lines"]


def serve_lines(plugin: A2EMemoryPlugin, reader: TextIO, writer: TextIO) -> int:
    """Answer every line of ``reader`` on ``writer`` until end of input, then end the
    plugin's memory sessions. Blank lines are skipped. Returns how many were answered."""
    answered = 0
    try:
        for line in reader:
            if not line.strip():
                continue
            writer.write(plugin.handle_json(line) + "\n")
            writer.flush()
            answered += 1
    finally:
        plugin.close()
    return answered
