"""Sums of augmented regressor rows over consecutive blocks of sample time (batch means).

For residuals ``r_j = z_j . v``, ``sum_b (sum_{j in b} r_j)²`` over blocks much longer than the
noise's correlation time estimates the long-run variance, ``sum_L rho_L`` times the per-sample
variance. :class:`BlockSums` keeps the Gram of the block sums, so that ``v`` may be chosen later:
:class:`~payload_estimator.core.statistics.RegressorStatistics` measures with it how long its
residuals stay correlated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from payload_estimator.core.regressor import N_BIAS, N_PARAMS

__all__ = ["BlockSums", "WhiteNoiseResiduals", "block_vectors"]


class BlockSums:
    """Gram of the sums of augmented rows over consecutive blocks of sample time (module docstring).

    Args:
        length_s: the blocks' length in sample time, s.
        width: columns of a row.
        channels: rows per sample (one per wrench channel, 6), or None: one row shared by every
            channel (the feature rows that every channel's row is a linear map of).

    Attributes:
        gram: (6, width, width) Gram of the closed blocks' sums, per wrench channel ((width, width)
            with ``channels`` None).
        n_blocks: closed blocks held (decayed like the Gram).
    """

    def __init__(self, length_s: float, width: int, channels: int | None = 6) -> None:
        self.length_s = float(length_s)
        self._make: Callable[[], BlockSums] | None = None
        lead = () if channels is None else (channels,)
        self.gram = np.zeros((*lead, width, width))
        self.n_blocks = 0.0
        self._key: float | None = None
        self._carry = np.zeros((*lead, width))

    _STATE = ("gram", "n_blocks", "_key", "_carry")
    """What a deferred instance computes when first read."""

    @classmethod
    def deferred(cls, length_s: float, make: Callable[[], BlockSums], n_held: float) -> BlockSums:
        """Block sums that ``make()`` computes when they are first read (merged, mapped or read).

        For a projection the next read may not need (a correlation analysis kept from an earlier
        estimate reads none): what ``make`` uses must not change afterwards. ``n_held``: the
        :attr:`n_held` of what it makes."""
        out = cls.__new__(cls)
        out.length_s = float(length_s)
        out._make = _once(make)
        out._n_held = float(n_held)
        return out

    def __getattr__(self, name: str) -> Any:
        # only for an attribute not set: a deferred instance's state, computed now
        if name in BlockSums._STATE and self.__dict__.get("_make") is not None:
            self._compute()
            return getattr(self, name)
        raise AttributeError(name)

    def _compute(self) -> None:
        """A deferred instance's state, computed now (it lets go of what computed it)."""
        make = self._make
        assert make is not None
        made = make()._copy()  # its own arrays: others may share what make() gave
        self._make = None
        for field in BlockSums._STATE:
            setattr(self, field, getattr(made, field))

    def _as_thunk(self) -> Callable[[], BlockSums]:
        """These block sums as they are now, to be computed later (a copy unless already deferred)."""
        if self._make is not None:
            return self._make
        frozen = self._copy()
        return lambda: frozen

    @property
    def n_held(self) -> float:
        """Blocks held, the open one (still filling) included (a deferred instance knows it uncomputed)."""
        if self._make is not None:
            return self._n_held
        return self.n_blocks + (1.0 if self._key is not None else 0.0)

    def reset(self) -> None:
        """Forget every block."""
        self.gram[:] = 0.0
        self.n_blocks = 0.0
        self._key = None
        self._carry[:] = 0.0

    def add(self, rows: np.ndarray, t: np.ndarray) -> None:
        """Add ``rows`` (n, 6, width) (or (n, width)) sampled at times ``t`` (n,), s.

        The rows are already scaled by the square roots of the sample weights."""
        with np.errstate(over="ignore", invalid="ignore"):  # absurd stamps make blocks of their own
            keys = np.floor(np.asarray(t, dtype=float) / self.length_s)
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        sums = np.add.reduceat(rows, starts, axis=0)
        first_key = keys[0]
        if self._key is not None and first_key == self._key:
            sums[0] += self._carry
        elif self._key is not None:
            self._close(self._carry)
        closed = sums[:-1]
        if len(closed):  # every block but the last is complete: their Grams in one product
            flat = closed.reshape(len(closed), -1, closed.shape[-1])  # (blocks, channels or 1, width)
            self.gram += np.einsum("bki,bkj->kij", flat, flat).reshape(self.gram.shape)
            self.n_blocks += float(len(closed))
        self._carry = sums[-1].copy()
        self._key = float(keys[-1])

    def _close(self, block: np.ndarray) -> None:
        self.gram += block[..., :, None] * block[..., None, :]
        self.n_blocks += 1.0

    def add_closed(self, block: np.ndarray) -> None:
        """Add the sums (6, width) of a block that is complete (it holds no later sample)."""
        self._close(block)

    def decay(self, factor: float) -> None:
        """Multiply every block by ``factor`` (its sums by the square root: exponential forgetting)."""
        self.gram *= factor
        self.n_blocks *= factor
        self._carry *= np.sqrt(factor)

    def merge(self, other: BlockSums) -> None:
        """Add ``other``'s blocks (its open block counted as closed); deferred when ``other`` is.

        A deferral never nests in this one: block sums that are deferred themselves are computed first,
        so what they hold is one frozen copy and ``other``'s thunk. Otherwise statistics that take in
        a deferred window after another, and are never read themselves (the closed windows of
        :class:`~payload_estimator.core.offset_windows.WindowedStatistics`), would hold a chain of
        every window merged, and every sum computed along it, for as long as they live.
        """
        if other._make is not None:
            if self._make is not None:
                self._compute()
            mine, theirs = self._as_thunk(), other._as_thunk()

            def merged() -> BlockSums:
                out = mine()._copy()
                out.merge(theirs())
                return out

            self._defer(merged, self.n_held + other.n_held)
            return
        self.gram += other.gram
        self.n_blocks += other.n_blocks
        if other._key is not None:
            self._close(other._carry)

    def _defer(self, make: Callable[[], BlockSums], n_held: float) -> None:
        """Become ``make()``'s block sums (``n_held`` of them), computed when first read."""
        for field in BlockSums._STATE:
            self.__dict__.pop(field, None)
        self._make = _once(make)
        self._n_held = float(n_held)

    def _copy(self) -> BlockSums:
        out = BlockSums.__new__(BlockSums)
        out.length_s, out._make = self.length_s, None
        out.gram, out.n_blocks, out._key, out._carry = self.gram.copy(), self.n_blocks, self._key, self._carry.copy()
        return out

    def gram_with_open_block(self) -> np.ndarray:
        """(6, width, width) the Gram of the block sums, the open block's counted as closed."""
        if self._key is None:
            return self.gram.copy()
        return self.gram + self._carry[..., :, None] * self._carry[..., None, :]

    def mapped(self, Q: np.ndarray) -> BlockSums:
        """Return the per-channel block sums of rows ``r @ Q[k]`` from these shared rows ``r``.

        ``Q`` (6, width, width_k) maps a shared row to each channel's row (the blocks, their count
        and the open block are the same); deferred when these are."""
        if self._make is not None:
            source = self._make
            return BlockSums.deferred(self.length_s, lambda: source().mapped(Q), self._n_held)
        out = BlockSums(self.length_s, Q.shape[2])
        out.gram = Q.transpose(0, 2, 1) @ self.gram @ Q
        out.n_blocks = self.n_blocks
        out._key = self._key
        out._carry = np.einsum("i,kia->ka", self._carry, Q)
        return out

    def shifted(self, M: np.ndarray) -> BlockSums:
        """Return these shared block sums with every row ``r`` replaced by ``M @ r``."""
        out = BlockSums(self.length_s, M.shape[0], channels=None)
        out.gram = M @ self.gram @ M.T
        out.n_blocks = self.n_blocks
        out._key = self._key
        out._carry = M @ self._carry
        return out

    def sums_of_squares(self, V: np.ndarray) -> tuple[np.ndarray, float]:
        """Return (6,) ``sum_b (S_bk . v_k)²`` for the per-channel vectors ``V`` (6, width), and the block count.

        Per-channel block sums only.

        The open block is included in both."""
        total = np.einsum("ki,kij,kj->k", V, self.gram, V)
        n = self.n_blocks
        if self._key is not None:
            total = total + np.einsum("ki,ki->k", V, self._carry) ** 2
            n += 1.0
        return total, n


def _once(make: Callable[[], BlockSums]) -> Callable[[], BlockSums]:
    """``make``, computed at its first call only (whoever reads the result copies what it changes)."""
    made: list[BlockSums] = []

    def once() -> BlockSums:
        if not made:
            made.append(make())
        return made[0]

    return once


class WhiteNoiseResiduals:
    """What white noise leaves in the least-squares residuals.

    Used by :meth:`~payload_estimator.core.statistics.RegressorStatistics.correlation_analysis`: per channel ``k``,
    ``E[rss_k] = sum_l M_kl s_l²`` for noise variances ``s_l²``.

    Args:
        A_inv: (p, p) inverse of the weighted normal matrix.
        gram: (6, p, p) per-channel Grams of the unknowns over the samples.
        c: (6,) channel weights.
        n_w: the (weighted) number of samples.
    """

    def __init__(self, A_inv: np.ndarray, gram: np.ndarray, c: np.ndarray, n_w: float) -> None:
        self.A_inv = A_inv
        self.GA = gram @ A_inv  # (6, p, p): G_l A^-1
        self.c = c
        self.n_w = n_w

    def expected(self, G_k: np.ndarray) -> np.ndarray:
        """Return the (6, 6) ``M_kl`` for the per-channel Grams ``G_k`` (6, p, p).

        ``G_k`` are the Grams of the sums the residuals are squared over (the samples, or their
        block sums)."""
        c = self.c
        GkA = G_k @ self.A_inv
        M = np.einsum("kij,lji->kl", GkA, self.GA) * (c * c)[None, :]
        M[np.arange(6), np.arange(6)] += self.n_w - 2.0 * c * np.einsum("kii->k", GkA)
        return M


def block_vectors(x: np.ndarray, with_bias: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(V (6, 12), cols (6, p))``, the per-channel maps from block sums to residual sums.

    A block-sum row is ``[Y (10), w, 1]``. Per channel, ``V`` is the vector whose product with a
    block-sum row is the block's residual sum at ``x``, and ``cols`` the block-row column of each
    unknown (12, a zero column, where the unknown is not in that channel's rows)."""
    p = x.shape[0]
    width = N_PARAMS + 2
    V = np.zeros((6, width))
    V[:, :N_PARAMS] = x[:N_PARAMS]
    V[:, N_PARAMS] = -1.0
    if with_bias:
        V[:, N_PARAMS + 1] = x[N_PARAMS:N_PARAMS + N_BIAS]
    cols = np.tile(np.r_[np.arange(N_PARAMS), np.full(p - N_PARAMS, width)], (6, 1))
    if with_bias:
        cols[np.arange(6), N_PARAMS + np.arange(6)] = N_PARAMS + 1
    return V, cols
