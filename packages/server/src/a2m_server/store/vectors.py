"""An in-memory vector index: every stored vector as one float32 matrix, scanned exactly.

Exact brute force is what a store of up to a few hundred thousand vectors needs: no
training, no recall loss, and one BLAS call per query. Vectors stay verbatim (float64)
in the database; this float32 copy exists only to rank."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["VectorIndex", "exact_similarities", "to_similarity"]

Matrix = npt.NDArray[np.float32]


def to_similarity(metric: str, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Map raw comparisons into [0, 1], larger meaning closer.

    cosine: (cos + 1) / 2; dot: logistic of the product; l2: 1 / (1 + distance)."""
    if metric == "cosine":
        return np.clip((raw + 1.0) / 2.0, 0.0, 1.0)
    if metric == "dot":
        return 1.0 / (1.0 + np.exp(-np.clip(raw, -60.0, 60.0)))
    return 1.0 / (1.0 + np.sqrt(np.maximum(-raw, 0.0)))


def exact_similarities(
    metric: str,
    query: Sequence[float],
    vectors: Sequence[Sequence[float]] | npt.NDArray[np.float64],
) -> list[float]:
    """The similarity in [0, 1] of each verbatim vector (a row, when ``vectors`` is a
    matrix) to ``query``, in float64: what the float32 index approximates, for a score a
    caller compares with its own arithmetic."""
    if len(vectors) == 0:
        return []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        matrix = np.asarray(vectors, dtype=np.float64)
        q = np.asarray(query, dtype=np.float64)
        if metric == "cosine":
            norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
            raw = np.where(norms == 0, 0.0, (matrix @ q) / np.where(norms == 0, 1.0, norms))
        elif metric == "dot":
            raw = matrix @ q
        else:
            raw = -np.sum((matrix - q) ** 2, axis=1)
        similarity = to_similarity(metric, raw)
    return [float(x) for x in np.nan_to_num(similarity, nan=0.0)]


class VectorIndex:
    """Rows of vectors keyed by record rowid, with free slots reused after deletes."""

    def __init__(self, metric: str, dimensions: int) -> None:
        self.metric = metric
        self.dimensions = dimensions
        self._lock = threading.Lock()
        self._matrix: Matrix = np.zeros((0, dimensions), dtype=np.float32)
        self._sq_norms = np.zeros(0, dtype=np.float32)
        self._rowids = np.zeros(0, dtype=np.int64)  # -1 marks a free slot
        self._size = 0
        self._slot: dict[int, int] = {}
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self._slot)

    def _prepare(self, vector: Sequence[float] | npt.NDArray[np.float64]) -> Matrix:
        # A finite vector may still overflow float32; it then ranks as nothing (its
        # comparisons are not finite) instead of raising.
        with np.errstate(over="ignore", invalid="ignore"):
            row = np.asarray(vector, dtype=np.float32)
            if self.metric == "cosine":
                norm = float(np.linalg.norm(row))
                if norm > 0:
                    row = row / norm
        return row

    def _grow(self, needed: int) -> None:
        capacity = self._matrix.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity * 2, 1024)
        matrix = np.zeros((new_capacity, self.dimensions), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        norms = np.zeros(new_capacity, dtype=np.float32)
        norms[: self._size] = self._sq_norms[: self._size]
        rowids = np.full(new_capacity, -1, dtype=np.int64)
        rowids[: self._size] = self._rowids[: self._size]
        self._matrix, self._sq_norms, self._rowids = matrix, norms, rowids

    def add_many(self, items: Iterable[tuple[int, Sequence[float]]]) -> None:
        """Insert or overwrite the vectors of these rowids."""
        with self._lock:
            for rowid, vector in items:
                row = self._prepare(vector)
                slot = self._slot.get(rowid)
                if slot is None:
                    if self._free:
                        slot = self._free.pop()
                    else:
                        self._grow(self._size + 1)
                        slot = self._size
                        self._size += 1
                    self._slot[rowid] = slot
                    self._rowids[slot] = rowid
                self._matrix[slot] = row
                with np.errstate(over="ignore", invalid="ignore"):
                    self._sq_norms[slot] = float(np.dot(row, row))

    def remove_many(self, rowids: Iterable[int]) -> None:
        """Forget the vectors of these rowids (unknown rowids are ignored)."""
        with self._lock:
            for rowid in rowids:
                slot = self._slot.pop(rowid, None)
                if slot is None:
                    continue
                self._rowids[slot] = -1
                self._matrix[slot] = 0.0
                self._sq_norms[slot] = 0.0
                self._free.append(slot)

    def search_rows(
        self, vector: Sequence[float], limit: int, rowids: Iterable[int]
    ) -> list[tuple[int, float]]:
        """:meth:`search` among ``rowids`` alone (those without a vector are skipped): the
        rows are gathered by slot, so its cost follows their number, not the index's."""
        query = self._prepare(vector)
        with self._lock:
            slots = [slot for slot in map(self._slot.get, rowids) if slot is not None]
            # Gathered under the lock: a writer overwrites slots in place.
            matrix = self._matrix[slots]
            kept = self._rowids[slots]
            sq_norms = self._sq_norms[slots]
        if not slots or limit <= 0:
            return []
        return self._top(query, matrix, kept, sq_norms, limit)

    def search(
        self,
        vector: Sequence[float],
        limit: int,
        *,
        allowed: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``limit`` closest (rowid, similarity in [0, 1]) pairs, closest first.

        ``allowed``, when given, is the set of rowids that may be returned."""
        query = self._prepare(vector)
        with self._lock:
            # Snapshot the arrays; writers replace them rather than resizing in place.
            size = self._size
            matrix = self._matrix[:size]
            rowids = self._rowids[:size]
            sq_norms = self._sq_norms[:size]
            has_free_slots = bool(self._free)
        if size == 0 or limit <= 0:
            return []
        if allowed is not None:
            positions = np.flatnonzero(np.isin(rowids, allowed) & (rowids >= 0))
            if positions.size == 0:
                return []
            matrix, rowids, sq_norms = matrix[positions], rowids[positions], sq_norms[positions]
            has_free_slots = False
        return self._top(query, matrix, rowids, sq_norms, limit, skip_free=has_free_slots)

    def _top(
        self,
        query: Matrix,
        matrix: Matrix,
        rowids: npt.NDArray[np.int64],
        sq_norms: Matrix,
        limit: int,
        *,
        skip_free: bool = False,
    ) -> list[tuple[int, float]]:
        """The ``limit`` rows of ``matrix`` closest to ``query``, as (rowid, similarity)."""
        with np.errstate(over="ignore", invalid="ignore"):
            raw = matrix @ query
            if self.metric == "l2":
                # 2 x.q - |x|^2 orders like -|x - q|^2; -|q|^2 is added for the top only.
                raw = 2.0 * raw - sq_norms
        if skip_free:
            raw[rowids < 0] = -np.inf
        count = min(limit, raw.shape[0])
        if count < raw.shape[0]:
            top = np.argpartition(-raw, count - 1)[:count]
        else:
            top = np.arange(raw.shape[0])
        top = top[np.argsort(-raw[top], kind="stable")]
        top = top[np.isfinite(raw[top])]
        values = raw[top].astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.metric == "l2":
                values -= float(np.dot(query, query))
            similarity = to_similarity(self.metric, values)
        finite = np.isfinite(similarity)
        top, similarity = top[finite], similarity[finite]
        return list(zip(rowids[top].tolist(), similarity.tolist(), strict=True))
