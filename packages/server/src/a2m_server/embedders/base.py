"""What every embedder is: the interface, its error, and the check of what it answers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder", "EmbedderError", "check_vectors"]


class EmbedderError(RuntimeError):
    """The embedder could not embed a batch: down, too slow, or answering wrong."""

    def __init__(self, embedder: str, message: str) -> None:
        super().__init__(f"embedder {embedder!r}: {message}")
        self.embedder = embedder
        self.reason = message


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed width, one call per batch."""

    name: str
    """What the server was configured with (``wordllama``, ``endpoint``, ...)."""
    model: str
    """The model that makes the vectors, as ``memory/describe`` reports it."""

    @property
    def dimensions(self) -> int | None:
        """The vectors' width; None until an embedder that learns it has answered once."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raises :class:`EmbedderError` on failure."""
        ...


def check_vectors(embedder: Embedder, texts: Sequence[str], vectors: object) -> list[list[float]]:
    """``vectors`` as plain float lists, checked: one per text, all of the embedder's width,
    finite; an :class:`EmbedderError` naming the embedder otherwise."""
    try:
        rows = [[float(x) for x in vector] for vector in vectors]  # type: ignore[attr-defined]
    except (TypeError, ValueError) as exc:
        raise EmbedderError(
            embedder.name, f"answered something that is not vectors ({exc})"
        ) from None
    if len(rows) != len(texts):
        raise EmbedderError(
            embedder.name, f"answered {len(rows)} vectors for {len(texts)} texts"
        ) from None
    width = embedder.dimensions
    for row in rows:
        if width is not None and len(row) != width:
            raise EmbedderError(
                embedder.name,
                f"answered a vector of {len(row)} dimensions; model {embedder.model!r} "
                f"makes {width}",
            )
        if not all(math.isfinite(x) for x in row):
            raise EmbedderError(embedder.name, "answered a vector holding NaN or infinity")
    return rows
