"""An OpenAI-compatible embeddings endpoint (``POST {url}/embeddings``), what vLLM, TEI,
Ollama and hosted APIs serve. Configured from the environment:

``A2M_EMBED_URL`` (the API base, e.g. ``http://127.0.0.1:8000/v1``, or the full
``.../embeddings`` URL), ``A2M_EMBED_MODEL``, ``A2M_EMBED_API_KEY`` (optional),
``A2M_EMBED_DIMENSIONS`` (optional: otherwise the first answer fixes the width) and
``A2M_EMBED_TIMEOUT`` (seconds, default 10)."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence

from .base import EmbedderError, check_vectors

__all__ = ["EndpointEmbedder"]

DEFAULT_TIMEOUT_S = 10.0


class EndpointEmbedder:
    """One ``POST`` per batch, with a timeout; every failure an :class:`EmbedderError`."""

    name = "endpoint"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the embeddings URL must be http(s)://..., not {url!r}")
        if not model:
            raise ValueError("the endpoint embedder needs a model name (A2M_EMBED_MODEL)")
        base = url.rstrip("/")
        self.url = base if base.endswith("/embeddings") else base + "/embeddings"
        self.model = model
        self._api_key = api_key
        self._dimensions = dimensions
        self._timeout = timeout
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> EndpointEmbedder:
        """Configured from ``A2M_EMBED_*`` (see the module); ValueError naming what is missing."""
        env = os.environ if environ is None else environ
        url = env.get("A2M_EMBED_URL")
        model = env.get("A2M_EMBED_MODEL")
        if not url or not model:
            raise ValueError("the endpoint embedder needs A2M_EMBED_URL and A2M_EMBED_MODEL set")
        dimensions = env.get("A2M_EMBED_DIMENSIONS")
        timeout = env.get("A2M_EMBED_TIMEOUT")
        return cls(
            url,
            model,
            api_key=env.get("A2M_EMBED_API_KEY") or None,
            dimensions=int(dimensions) if dimensions else None,
            timeout=float(timeout) if timeout else DEFAULT_TIMEOUT_S,
        )

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        body = json.dumps({"model": self.model, "input": list(texts)}).encode()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbedderError(self.name, f"{self.url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise EmbedderError(
                    self.name, f"{self.url} did not answer within {self._timeout:g} s"
                ) from None
            raise EmbedderError(self.name, f"{self.url} is unreachable ({reason})") from None
        except ValueError:
            raise EmbedderError(self.name, f"{self.url} answered something not JSON") from None
        try:
            items = sorted(answer["data"], key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in items]
        except (KeyError, TypeError, AttributeError):
            raise EmbedderError(
                self.name, f"{self.url} answered without data[].embedding"
            ) from None
        with self._lock:
            if self._dimensions is None and vectors and isinstance(vectors[0], list):
                self._dimensions = len(vectors[0])
        return check_vectors(self, texts, vectors)
