"""Sufficient statistics of the regressor: every estimator's only memory of the data.

For each sample ``j`` and each wrench channel ``k`` (fx, fy, fz, tx, ty, tz) the
augmented row is ``z_jk = [Y_jk (10), e_k (6), w_jk]``: the regressor row, the
row of the F/T-offset columns (a unit vector) and the measured wrench
component. The statistics are the per-channel weighted Gram matrices::

    M_k = sum_j  s_j z_jk^T z_jk          (6 matrices of 17 x 17)

with optional per-sample weights ``s_j >= 0``. Everything a least-squares,
total-least-squares or point-mass estimator needs follows from them: the
normal equations for any channel weighting, residual sums of squares per
channel, covariances and condition numbers. Memory and per-solve work are
constant in the number of samples; each sample costs one small matrix product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.core.regressor import N_BIAS, N_PARAMS

__all__ = ["RegressorStatistics", "NormalEquations", "N_AUGMENTED", "WRENCH_COLUMN", "unknown_indices"]

N_AUGMENTED = N_PARAMS + N_BIAS + 1
"""Columns of the augmented row: 10 parameters, 6 offsets, 1 measurement."""
WRENCH_COLUMN = N_AUGMENTED - 1
_DATA = np.r_[np.arange(N_PARAMS), WRENCH_COLUMN]
"""Columns of the augmented row that carry data: the regressor and the measurement."""
_N_DATA = _DATA.shape[0]


@dataclass(frozen=True)
class NormalEquations:
    """``min_x  x^T A x - 2 c^T x + s`` for the unknowns ``x`` = phi (+ offsets).

    Attributes:
        A: (p, p) Gram of the unknowns' columns.
        c: (p,) cross term with the measurement.
        s: sum of squared (weighted) measurements.
        with_bias: whether ``x`` includes the six F/T offsets after ``phi``.
    """

    A: np.ndarray
    c: np.ndarray
    s: float
    with_bias: bool

    @property
    def n_unknowns(self) -> int:
        return self.A.shape[0]

    def residual(self, x: np.ndarray) -> float:
        """Sum of squared residuals at ``x``."""
        return float(x @ self.A @ x - 2.0 * self.c @ x + self.s)


def unknown_indices(with_bias: bool) -> np.ndarray:
    """Columns of the augmented row that are unknowns: phi, then the offsets if asked."""
    n = N_PARAMS + (N_BIAS if with_bias else 0)
    return np.arange(n)


class RegressorStatistics:
    """Per-channel Gram matrices of the augmented regressor rows (module docstring).

    Only the data block (the ten regressor columns and the measurement) needs
    a matrix product per sample; the offset columns are unit vectors, so their
    entries are plain weighted sums. The full (6, 17, 17) :attr:`gram` is
    assembled from the three pieces when asked for.

    Attributes:
        n_samples: number of samples added (not reduced by :meth:`decay`).
        weight_sum: sum of the per-sample weights currently held (decayed).
    """

    def __init__(self) -> None:
        self._data_gram = np.zeros((6, _N_DATA, _N_DATA))
        self._data_sum = np.zeros((6, _N_DATA))
        self.n_samples = 0
        self.weight_sum = 0.0
        self._gram: np.ndarray | None = None

    def reset(self) -> None:
        """Forget every sample."""
        self._data_gram[:] = 0.0
        self._data_sum[:] = 0.0
        self.n_samples = 0
        self.weight_sum = 0.0
        self._gram = None

    def copy(self) -> RegressorStatistics:
        other = RegressorStatistics()
        other += self
        return other

    def add(self, Y: np.ndarray, wrench: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Accumulate a batch.

        Args:
            Y: (N, 6, 10) regressor of the batch.
            wrench: (N, 6) measured wrench on the sensor.
            weights: (N,) non-negative per-sample weights, default 1.
        """
        n = Y.shape[0]
        if n == 0:
            return
        Z = np.empty((6, n, _N_DATA))
        Z[:, :, :N_PARAMS] = Y.transpose(1, 0, 2)
        Z[:, :, N_PARAMS] = wrench.T
        if weights is None:
            self.weight_sum += float(n)
            self._data_sum += Z.sum(axis=1)
            self._data_gram += Z.transpose(0, 2, 1) @ Z
        else:
            weights = np.asarray(weights, dtype=float)
            Zw = Z * weights[None, :, None]
            self.weight_sum += float(weights.sum())
            self._data_sum += Zw.sum(axis=1)
            self._data_gram += Zw.transpose(0, 2, 1) @ Z
        self.n_samples += n
        self._gram = None

    def add_with_forgetting(self, Y: np.ndarray, wrench: np.ndarray, forgetting: float) -> float:
        """Accumulate a batch under exponential forgetting; returns the factor old data were decayed by.

        With forgetting ``lambda`` per sample, a batch of ``N`` decays what was
        held by ``lambda^N`` and enters with weights ``lambda^(N-1-j)``: the
        same sums as ``N`` one-sample updates.
        """
        n = Y.shape[0]
        if forgetting >= 1.0 or n == 0:
            self.add(Y, wrench)
            return 1.0
        factor = forgetting**n
        self.decay(factor)
        self.add(Y, wrench, forgetting ** np.arange(n - 1, -1, -1, dtype=float))
        return factor

    def decay(self, factor: float) -> None:
        """Multiply every statistic by ``factor`` (exponential forgetting)."""
        self._data_gram *= factor
        self._data_sum *= factor
        self.weight_sum *= factor
        self._gram = None

    def __iadd__(self, other: RegressorStatistics) -> RegressorStatistics:
        self._data_gram += other._data_gram
        self._data_sum += other._data_sum
        self.n_samples += other.n_samples
        self.weight_sum += other.weight_sum
        self._gram = None
        return self

    @property
    def gram(self) -> np.ndarray:
        """(6, 17, 17) ``M_k`` over ``[Y_k, e_k, w_k]`` (read-only view; assembled lazily)."""
        if self._gram is None:
            M = np.zeros((6, N_AUGMENTED, N_AUGMENTED))
            M[:, _DATA[:, None], _DATA[None, :]] = self._data_gram
            channels = np.arange(6)
            bias_col = N_PARAMS + channels
            M[channels[:, None], _DATA[None, :], bias_col[:, None]] = self._data_sum
            M[channels[:, None], bias_col[:, None], _DATA[None, :]] = self._data_sum
            M[channels, bias_col, bias_col] = self.weight_sum
            M.setflags(write=False)
            self._gram = M
        return self._gram

    def combined(self, channel_weights: np.ndarray | None = None) -> np.ndarray:
        """``sum_k c_k M_k``: the Gram of all channels, each weighted by ``c_k`` (default 1)."""
        if channel_weights is None:
            return self.gram.sum(axis=0)
        return np.tensordot(np.asarray(channel_weights, dtype=float), self.gram, axes=1)

    def normal_equations(
        self, with_bias: bool, channel_weights: np.ndarray | None = None
    ) -> NormalEquations:
        """The least-squares problem over phi (and the offsets when ``with_bias``)."""
        M = self.combined(channel_weights)
        idx = unknown_indices(with_bias)
        return NormalEquations(
            A=M[np.ix_(idx, idx)].copy(),
            c=M[idx, WRENCH_COLUMN].copy(),
            s=float(M[WRENCH_COLUMN, WRENCH_COLUMN]),
            with_bias=with_bias,
        )

    def channel_residuals(self, x: np.ndarray, with_bias: bool) -> np.ndarray:
        """(6,) sum of squared residuals of each channel at the unknowns ``x``."""
        idx = unknown_indices(with_bias)
        v = np.zeros(N_AUGMENTED)
        v[idx] = x
        v[WRENCH_COLUMN] = -1.0
        return np.einsum("i,kij,j->k", v, self.gram, v)

    def channel_gram(self, with_bias: bool) -> np.ndarray:
        """(6, p, p) per-channel Gram of the unknowns' columns."""
        idx = unknown_indices(with_bias)
        return self.gram[:, idx][:, :, idx]
