"""The offline embedder: WordLlama's ``l2_supercat`` model, 256-d static word vectors
that ship inside the ``wordllama`` wheel, so it runs with no download and no network."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from .base import EmbedderError, check_vectors

__all__ = ["WordLlamaEmbedder"]

_DIMENSIONS = 256


class WordLlamaEmbedder:
    """``l2_supercat`` at 256 dimensions, loaded from the package's own folder on first use
    (about a second); needs ``pip install 'a2m-server[embed]'``."""

    name = "wordllama"
    model = "wordllama/l2_supercat-256"

    def __init__(self) -> None:
        try:
            import wordllama  # noqa: F401 - fail here, at configuration, when absent
        except ImportError:
            raise ValueError(
                "the wordllama embedder needs the wordllama package: "
                "pip install 'a2m-server[embed]'"
            ) from None
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return _DIMENSIONS

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                import wordllama
                from wordllama import WordLlama

                # Its loader looks elsewhere for the tokenizer and would download it; the
                # wheel holds everything in its own folder.
                self._model = WordLlama.load(
                    cache_dir=os.path.dirname(wordllama.__file__),
                    disable_download=True,
                    dim=_DIMENSIONS,
                )
            return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            matrix = self._loaded().embed(list(texts), norm=True)
        except Exception as exc:
            raise EmbedderError(self.name, f"failed: {exc}") from exc
        return check_vectors(self, texts, matrix.tolist())
