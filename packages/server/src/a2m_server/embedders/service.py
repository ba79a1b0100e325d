"""The configured embedder bound to one store: it embeds what arrives without a vector
(one embedder call per write batch), embeds text-only queries, keeps the store tied to
the model that made its vectors, and back-fills records that have none in a background
thread (resumable: what is done is in the data, not in memory)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Literal

from a2m_server.errors import ProtocolError
from a2m_server.store import NewRecord, Store
from a2m_types import ErrorCode

from .base import Embedder, EmbedderError

__all__ = ["MODEL_KEY", "EmbeddingService", "ModelConflict"]

MODEL_KEY = "embedding_model"
"""The store's meta key naming the model its vectors came from."""
BACKFILL_BATCH = 256
"""Records one back-fill step embeds (one embedder call, one write transaction)."""
_RESCAN_S = 30.0
"""How often an idle back-fill looks again (records written by other processes)."""
_RETRY_S = 5.0

log = logging.getLogger("a2m_server.embed")

EmbedFailures = Literal["fail", "lexical"]


class ModelConflict(ValueError):
    """The store's vectors came from another model than the configured embedder's."""


class EmbeddingService:
    """``embedder`` serving ``store``; see the module. Opening checks the model the
    store recorded (no network call); :meth:`start` begins the back-fill."""

    def __init__(
        self,
        embedder: Embedder,
        store: Store,
        *,
        failures: EmbedFailures = "fail",
        re_embed: bool = False,
        read_only: bool = False,
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.failures = failures
        self.read_only = read_only
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._claim_store(re_embed)

    @property
    def model(self) -> str:
        return self.embedder.model

    @property
    def name(self) -> str:
        return self.embedder.name

    # --- the store's model ---------------------------------------------------------------

    def _claim_store(self, re_embed: bool) -> None:
        if self.read_only:
            with self.store.reading() as reader:
                conflict = self._conflict(reader.meta_value(MODEL_KEY), reader.dimensions())
            if conflict:
                raise ModelConflict(f"{conflict}; a read-only server cannot re-embed")
            return
        with self.store.writing() as writer:
            conflict = self._conflict(writer.meta_value(MODEL_KEY), writer.dimensions())
            if conflict:
                if not re_embed:
                    raise ModelConflict(
                        f"{conflict}; start with re_embed = true (--re-embed) to drop the "
                        "store's vectors and embed every record again with "
                        f"{self.model!r}, or configure the model the store speaks"
                    )
                dropped = writer.clear_vectors()
                log.warning(
                    "re-embedding: dropped %d vectors (%s); the back-fill makes new ones",
                    dropped,
                    conflict,
                )
            writer.set_meta_value(MODEL_KEY, self.model)

    def _conflict(self, recorded: str | None, width: int | None) -> str | None:
        if recorded is not None and recorded != self.model:
            return (
                f"this store's vectors were made by model {recorded!r}, not the configured "
                f"{self.model!r}"
            )
        dimensions = self.embedder.dimensions
        if width is not None and dimensions is not None and width != dimensions:
            return (
                f"this store's vectors have {width} dimensions; model {self.model!r} "
                f"makes {dimensions}"
            )
        return None

    # --- writes and queries --------------------------------------------------------------

    def embed_records(self, records: Sequence[NewRecord]) -> bool:
        """Give every record without a vector one, in one embedder call; a caller's
        vector stays as it is. On failure: a typed error naming the embedder (nothing is
        written), or with ``embed_failures = "lexical"`` no vector, to back-fill later:
        then True, and the caller calls :meth:`wake` once the records are written."""
        missing = [record for record in records if record.embedding is None]
        if not missing:
            return False
        try:
            vectors = self.embedder.embed([record.content for record in missing])
        except EmbedderError as exc:
            if self.failures == "lexical":
                log.warning(
                    "%s; %d records stored without vectors, to back-fill", exc, len(missing)
                )
                return True
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"{exc}; nothing was written",
                {"embedder": self.name, "model": self.model, "reason": exc.reason},
            ) from None
        for record, vector in zip(missing, vectors, strict=True):
            record.embedding = vector
        return False

    def wake(self) -> None:
        """Have the back-fill look for records without vectors now."""
        self._wake.set()

    def embed_query(self, text: str) -> list[float] | None:
        """The query's vector, or None when the embedder fails (recall stays lexical)."""
        try:
            (vector,) = self.embedder.embed([text])
        except EmbedderError as exc:
            log.warning("%s; this recall ranks lexically", exc)
            return None
        return vector

    # --- back-fill -----------------------------------------------------------------------

    def start(self) -> None:
        """Begin back-filling records without vectors, in a daemon thread."""
        if self.read_only or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="a2m-embed-backfill", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 30.0) -> None:
        """Stop the back-fill (the step under way finishes or is abandoned: nothing of it
        is written half)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def backfill_step(self, after: int) -> tuple[int, int] | None:
        """Embed and store one batch of records without vectors past rowid ``after``;
        (last rowid seen, vectors added), or None when none is left."""
        with self.store.reading() as reader:
            batch = reader.missing_vectors(after, BACKFILL_BATCH)
        if not batch:
            return None
        vectors = self.embedder.embed([content for _, content in batch])
        with self.store.writing() as writer:
            if writer.dimensions() is None:
                writer.set_dimensions(len(vectors[0]))
            added = writer.add_vectors(
                [(rowid, vector) for (rowid, _), vector in zip(batch, vectors, strict=True)]
            )
        return batch[-1][0], added

    def _run(self) -> None:
        after, done = 0, 0
        while not self._stop.is_set():
            try:
                step = self.backfill_step(after)
            except EmbedderError as exc:
                log.warning("back-fill paused: %s; retrying in %.0f s", exc, _RETRY_S)
                self._stop.wait(_RETRY_S)
                continue
            except Exception:  # a closed store, a lost connection: stop, resume on restart
                if not self._stop.is_set():
                    log.exception("back-fill stopped; it resumes when the server restarts")
                return
            if step is None:
                if done:
                    log.info("back-fill done: %d records embedded with %s", done, self.model)
                after, done = 0, 0
                self._wake.wait(_RESCAN_S)
                self._wake.clear()
                continue
            after, added = step
            done += added
            log.info("back-fill: %d records embedded so far (through rowid %d)", done, after)
