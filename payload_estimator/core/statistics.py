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

Every channel's regressor row is a fixed linear map of twelve features
(:data:`~payload_estimator.core.regressor.FEATURE_MATRIX`). While the samples come
with their features (no per-sample whitening), the statistics keep only the Gram of the
extended feature rows ``u_j = [features (12), wrench (6), 1, tau_j]`` (20 x 20, one
product per batch) and the block sums of ``u_j``; the per-channel sums are mapped from
them when read. A batch without features (whitened samples) turns them into per-channel
sums for good.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from payload_estimator.core.batch_means import BlockSums, WhiteNoiseResiduals, block_vectors
from payload_estimator.core.regressor import FEATURE_MATRIX, N_BIAS, N_FEATURES, N_PARAMS, features_regressor

__all__ = ["RegressorStatistics", "N_DATA_COLUMNS", "N_FEATURE_ROW", "N_BLOCK_COLUMNS", "NormalEquations",
           "N_AUGMENTED", "WRENCH_COLUMN", "unknown_indices", "BLOCK_SECONDS", "CORRELATION_BLOCK", "SLOW_BLOCK",
           "Correlation", "N_EXTENDED_ROW", "ONE_COLUMN", "TIME_COLUMN", "CHANNEL_ROW_MAP", "BLOCK_ROW_MAP",
           "extended_rows"]

N_AUGMENTED = N_PARAMS + N_BIAS + 1
"""Columns of the augmented row: 10 parameters, 6 offsets, 1 measurement."""
WRENCH_COLUMN = N_AUGMENTED - 1
_DATA = np.r_[np.arange(N_PARAMS), WRENCH_COLUMN]
"""Columns of the augmented row that carry data: the regressor and the measurement."""
_N_DATA = N_DATA_COLUMNS = _DATA.shape[0]
"""Columns of a data row: the regressor and the measurement."""
_N_FEATURE_ROW = N_FEATURE_ROW = N_FEATURES + 6 + 1
"""Columns of a feature row: the 12 regressor features, the 6 measured channels and a 1."""
_K_FEATURES = FEATURE_MATRIX.reshape(N_FEATURES, 6, N_PARAMS)
_N_BLOCK = N_BLOCK_COLUMNS = _N_DATA + 1
"""Columns of a block-sum row: the regressor, the measurement and a 1 (the offset)."""
_ONE = _N_FEATURE_ROW - 1
"""The column of the 1 in a feature row (and of the extended row's)."""
_TAU = _N_FEATURE_ROW
"""The column of the sample time in an extended feature row ``[features, wrench, 1, tau]``."""
_N_EXTENDED = _N_FEATURE_ROW + 1


def _channel_maps() -> tuple[np.ndarray, np.ndarray]:
    """Return ``(P (6, 20, 11), Q (6, 19, 12))``: extended feature row -> channel data row, feature row -> block row."""
    P = np.zeros((6, _N_EXTENDED, _N_DATA))
    Q = np.zeros((6, _N_FEATURE_ROW, _N_BLOCK))
    for k in range(6):
        P[k, :N_FEATURES, :N_PARAMS] = _K_FEATURES[:, k, :]
        P[k, N_FEATURES + k, N_PARAMS] = 1.0
        Q[k, :, :_N_DATA] = P[k, :_N_FEATURE_ROW]
        Q[k, _ONE, _N_DATA] = 1.0
    return P, Q


_P_CHANNELS, _Q_BLOCKS = _channel_maps()
N_EXTENDED_ROW = _N_EXTENDED
ONE_COLUMN = _ONE
TIME_COLUMN = _TAU
CHANNEL_ROW_MAP = _P_CHANNELS
"""(6, 20, 11): an extended feature row times ``[k]`` is channel ``k``'s data row ``[Y_k, w_k]``."""
BLOCK_ROW_MAP = _Q_BLOCKS
"""(6, 19, 12): a feature row times ``[k]`` is channel ``k``'s block row ``[Y_k, w_k, 1]``."""


def extended_rows(features: np.ndarray, wrench: np.ndarray, tau: np.ndarray | None) -> np.ndarray:
    """Return the (N, 20) extended feature rows ``[features, wrench, 1, tau]`` (``tau`` None: 0)."""
    U = np.empty((wrench.shape[0], _N_EXTENDED))
    U[:, :N_FEATURES] = features
    U[:, N_FEATURES:N_FEATURES + 6] = wrench
    U[:, _ONE] = 1.0
    U[:, _TAU] = 0.0 if tau is None else tau
    return U

CORRELATION_BLOCK = 0.1
"""Short block (s of sample time): long enough to hold the correlation of filtered noise (the
pipeline's 10 Hz low-pass: ~0.02 s), short enough for the regressor to stay nearly constant."""
SLOW_BLOCK = 0.5
"""Long block (s): residuals that stay correlated this long are model error, not noise."""
BLOCK_SECONDS = (CORRELATION_BLOCK, SLOW_BLOCK)
KEPT_GROWTH = 0.05
"""What an estimate measures of the data's noise (a correlation analysis here, PMD's channel weights) is
kept while the samples grew by at most this share since it was measured ... (ratios and variances that
settle as the data accumulate; the next estimate, a turn later, asks again: a correlation analysis costs
about a third of a millisecond, three of them each estimate) ..."""
ANALYSIS_KEPT_SHIFT = 0.01
"""... and the unknowns it is asked at moved each channel's residual sum of squares by at most this
share (their own residuals: a tenth of the residual RMS), the channel weights by at most
:data:`KEPT_GROWTH`."""


@dataclass(frozen=True)
class Correlation:
    """How the residuals are correlated in time (:meth:`RegressorStatistics.correlation_analysis`)."""

    tau_short: np.ndarray
    tau_slow: np.ndarray
    slow_score: np.ndarray


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
        """The unknowns' count ``p`` (10, or 16 with the offsets)."""
        return self.A.shape[0]

    def residual(self, x: np.ndarray) -> float:
        """Sum of squared residuals at ``x``."""
        return float(x @ self.A @ x - 2.0 * self.c @ x + self.s)


def unknown_indices(with_bias: bool) -> np.ndarray:
    """Columns of the augmented row that are unknowns: phi, then the offsets if asked."""
    n = N_PARAMS + (N_BIAS if with_bias else 0)
    return np.arange(n)


_SUM_FIELDS = frozenset({"_data_gram", "_data_sum", "n_samples", "weight_sum", "_gram", "_analysis", "_blocks",
                         "_feature_gram", "_t0", "_t_last", "_time_ok", "_time_sum", "_time_sq", "_time_data",
                         "_extended", "_feature_blocks", "_mapped"})
"""The attributes that hold a :class:`RegressorStatistics`' sums (what :meth:`RegressorStatistics.assign` copies)."""


class RegressorStatistics:
    """Per-channel Gram matrices of the augmented regressor rows (module docstring).

    Only the data block (the ten regressor columns and the measurement) needs
    a matrix product per sample; the offset columns are unit vectors, so their
    entries are plain weighted sums. The full (6, 17, 17) :attr:`gram` is
    assembled from the three pieces when asked for. While every batch came with
    its features, only their extended Gram is summed (module docstring).

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
        self._analysis: tuple[bytes, Correlation] | None = None
        """The last :meth:`correlation_analysis` and its arguments (an estimate asks several times)."""
        self._kept_analysis: tuple[bool, np.ndarray, np.ndarray, int, float, Correlation, dict] | None = None
        """``(with_bias, weights, x, n_samples, weight_sum, analysis, derived)`` of the last analysis made, kept
        across new samples (:data:`KEPT_GROWTH`); forgotten by :meth:`reset` and :meth:`decay`. ``derived``:
        what was computed from it and lives as long as it (:meth:`kept_derived`)."""
        self._kept_other: tuple[bool, np.ndarray, np.ndarray, int, float, Correlation, dict] | None = None
        """The kept analysis before it, at other unknowns: an estimator that asks at two (PMD: its own estimate and
        the unconstrained fit it is judged against) finds each kept, where one would be replaced at every ask."""
        self._blocks = tuple(BlockSums(length, _N_BLOCK) for length in BLOCK_SECONDS)
        self._feature_gram: np.ndarray | None = np.zeros((_N_FEATURE_ROW, _N_FEATURE_ROW))
        self._t0: float | None = None
        self._t_last: float | None = None
        self._time_ok = True
        self._time_sum = 0.0
        self._time_sq = 0.0
        self._time_data = np.zeros((6, _N_DATA))
        self._extended: np.ndarray | None = np.zeros((_N_EXTENDED, _N_EXTENDED))
        """Feature mode: the weighted Gram of the extended feature rows (None: per-channel sums)."""
        self._feature_blocks = tuple(BlockSums(length, _N_FEATURE_ROW, channels=None) for length in BLOCK_SECONDS)
        self._mapped = True
        """Feature mode: whether the per-channel sums hold what the extended Gram maps to."""

    def reset(self) -> None:
        """Forget every sample."""
        self._data_gram[:] = 0.0
        self._data_sum[:] = 0.0
        self.n_samples = 0
        self.weight_sum = 0.0
        self._gram = None
        self._analysis = None
        self._kept_analysis = self._kept_other = None
        for blocks in self._blocks:
            blocks.reset()
        self._feature_gram = np.zeros((_N_FEATURE_ROW, _N_FEATURE_ROW))
        self._t0 = None
        self._t_last = None
        self._time_ok = True
        self._time_sum = 0.0
        self._time_sq = 0.0
        self._time_data[:] = 0.0
        self._extended = np.zeros((_N_EXTENDED, _N_EXTENDED))
        self._feature_blocks = tuple(BlockSums(length, _N_FEATURE_ROW, channels=None) for length in BLOCK_SECONDS)
        self._mapped = True

    def copy(self) -> RegressorStatistics:
        """An independent copy of the statistics."""
        other = RegressorStatistics()
        other += self
        return other

    def add(
        self,
        Y: np.ndarray | None,
        wrench: np.ndarray,
        weights: np.ndarray | None = None,
        t: np.ndarray | None = None,
        features: np.ndarray | None = None,
    ) -> None:
        """Accumulate a batch.

        Args:
            Y: (N, 6, 10) regressor of the batch; may be None when ``features`` are given (it is
                their map, :func:`~payload_estimator.core.regressor.features_regressor`).
            wrench: (N, 6) measured wrench on the sensor.
            weights: (N,) non-negative per-sample weights, default 1.
            t: (N,) sample times, s: with them the block sums that measure how long
                residuals stay correlated (:meth:`correlation_factors`) are kept too.
            features: (N, 12) the features ``Y`` was made of
                (:func:`~payload_estimator.core.regressor.regressor_features`): with them the
                cross-channel terms of the covariance (:meth:`score_covariance`) are kept.
                Statistics that miss them for any batch fall back to independent channels.
        """
        n = wrench.shape[0]
        if n == 0:
            return
        if features is not None and self._extended is not None:
            self._add_features(features, wrench, weights, t)
            return
        self._to_channels()
        if Y is None:
            assert features is not None, "a batch needs its regressor or its features"
            Y = features_regressor(features)
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
        self._analysis = None
        if features is None:
            self._feature_gram = None
        elif self._feature_gram is not None:
            U = extended_rows(features, wrench, None)[:, :_N_FEATURE_ROW]
            Uw = U if weights is None else U * weights[:, None]
            self._feature_gram += Uw.T @ U
        tau = self._sample_times(t)
        if tau is not None:
            ws = tau if weights is None else tau * weights
            with np.errstate(over="ignore", invalid="ignore"):  # absurd stamps: the trend is not measured
                moments = (float(ws.sum()), float(ws @ tau), np.einsum("n,knd->kd", ws, Z))
            if np.isfinite(moments[1]) and np.all(np.isfinite(moments[2])):
                self._time_sum += moments[0]
                self._time_sq += moments[1]
                self._time_data += moments[2]
            else:
                self._time_ok = False
        if t is not None:
            rows = np.empty((n, 6, _N_BLOCK))
            rows[:, :, :_N_DATA] = Z.transpose(1, 0, 2)
            rows[:, :, _N_DATA] = 1.0
            if weights is not None:
                rows *= np.sqrt(np.clip(weights, 0.0, None))[:, None, None]
            for blocks in self._blocks:
                blocks.add(rows, t)

    def _add_features(self, features: np.ndarray, wrench: np.ndarray, weights: np.ndarray | None,
                      t: np.ndarray | None) -> None:
        """Feature mode's :meth:`add`: one product of the extended rows, and their block sums."""
        n = wrench.shape[0]
        U = extended_rows(features, wrench, None)
        tau = self._sample_times(t)
        if tau is not None:
            if np.max(np.abs(tau)) < 1e100:  # absurd stamps: the trend is not measured
                U[:, _TAU] = tau
            else:
                self._time_ok = False
        assert self._extended is not None
        if weights is None:
            self.weight_sum += float(n)
            self._extended += U.T @ U
        else:
            weights = np.asarray(weights, dtype=float)
            self.weight_sum += float(weights.sum())
            self._extended += (U.T * weights) @ U
        self.n_samples += n
        self._changed()
        if t is not None:
            rows = U[:, :_N_FEATURE_ROW]
            if weights is not None:
                rows = rows * np.sqrt(np.clip(weights, 0.0, None))[:, None]
            for blocks in self._feature_blocks:
                blocks.add(rows, t)

    @classmethod
    def from_extended(cls, extended: np.ndarray, blocks: list[BlockSums],
                      like: RegressorStatistics) -> RegressorStatistics:
        """Statistics in feature mode holding the extended Gram ``extended`` (20, 20) and the shared ``blocks``.

        The counts and times are ``like``'s (a projection of ``like``'s samples)."""
        out = cls()
        out._extended = extended
        out._feature_blocks = tuple(blocks)
        out.n_samples, out.weight_sum = like.n_samples, like.weight_sum
        out._t0, out._t_last, out._time_ok = like._t0, like._t_last, like._time_ok
        out._mapped = False
        return out

    def add_extended(self, extended: np.ndarray, n: int, weight_sum: float, t: np.ndarray) -> None:
        """Feature mode: add the Gram ``extended`` (20, 20) of ``n`` samples at times ``t``, without block sums.

        Their ``tau`` counts from :attr:`first_time` (the first sample's time when there is none yet); whoever
        adds them keeps the block sums."""
        assert self._extended is not None, "add_extended needs statistics in feature mode"
        self._sample_times(t)
        self._extended += extended
        self.weight_sum += weight_sum
        self.n_samples += n
        self._changed()

    def extended_gram(self) -> np.ndarray | None:
        """(20, 20) the Gram of the extended feature rows (feature mode), or None (per-channel sums)."""
        return self._extended

    def _sample_times(self, t: np.ndarray | None) -> np.ndarray | None:
        """Return a batch's times since :attr:`first_time` (set by the first batch), s; None when not all finite.

        Also keeps the newest time, and notes in :attr:`time_ok` a batch without usable times."""
        if t is None or not np.all(np.isfinite(t)):
            self._time_ok = False
            return None
        if self._t0 is None:
            self._t0 = float(t[0])
        self._t_last = float(t[-1])
        return np.asarray(t, dtype=float) - self._t0

    def _changed(self) -> None:
        """Forget what was derived from the sums."""
        self._gram = None
        self._analysis = None
        self._mapped = False

    def _map_features(self) -> None:
        """Feature mode: make the per-channel sums what the extended Gram and block sums map to."""
        if self._mapped or self._extended is None:
            return
        E = self._extended
        self._data_gram = _P_CHANNELS.transpose(0, 2, 1) @ E @ _P_CHANNELS
        self._data_sum = np.einsum("i,kia->ka", E[:, _ONE], _P_CHANNELS)
        self._time_data = np.einsum("i,kia->ka", E[:, _TAU], _P_CHANNELS)
        self._time_sum = float(E[_ONE, _TAU])
        self._time_sq = float(E[_TAU, _TAU])
        self._feature_gram = E[:_N_FEATURE_ROW, :_N_FEATURE_ROW].copy()
        self._blocks = tuple(blocks.mapped(_Q_BLOCKS) for blocks in self._feature_blocks)
        self._mapped = True

    def _to_channels(self) -> None:
        """Leave feature mode for good: the per-channel sums become the sums kept."""
        if self._extended is None:
            return
        self._map_features()
        self._extended = None
        self._feature_blocks = ()

    def _ready(self) -> None:
        """Bring the sums up to date before a read."""
        self._sync()
        self._map_features()

    def add_with_forgetting(
        self,
        Y: np.ndarray | None,
        wrench: np.ndarray,
        forgetting: float,
        t: np.ndarray | None = None,
        features: np.ndarray | None = None,
    ) -> float:
        """Accumulate a batch under exponential forgetting; returns the factor old data were decayed by.

        With forgetting ``lambda`` per sample, a batch of ``N`` decays what was
        held by ``lambda^N`` and enters with weights ``lambda^(N-1-j)``: the
        same sums as ``N`` one-sample updates.
        """
        n = wrench.shape[0]
        if forgetting >= 1.0 or n == 0:
            self.add(Y, wrench, t=t, features=features)
            return 1.0
        factor = forgetting**n
        self.decay(factor)
        self.add(Y, wrench, forgetting ** np.arange(n - 1, -1, -1, dtype=float), t=t, features=features)
        return factor

    def decay(self, factor: float) -> None:
        """Multiply every statistic by ``factor`` (exponential forgetting)."""
        self._kept_analysis = self._kept_other = None
        if self._extended is not None:
            self._extended *= factor
            for fblocks in self._feature_blocks:
                fblocks.decay(factor)
            self.weight_sum *= factor
            self._changed()
            return
        self._data_gram *= factor
        self._data_sum *= factor
        self.weight_sum *= factor
        self._gram = None
        self._analysis = None
        for blocks in self._blocks:
            blocks.decay(factor)
        if self._feature_gram is not None:
            self._feature_gram *= factor
        self._time_sum *= factor
        self._time_sq *= factor
        self._time_data *= factor

    def __iadd__(self, other: RegressorStatistics) -> RegressorStatistics:
        other._sync()
        if self._extended is not None and other._extended is not None:
            self._add_extended(other)
            return self
        other._map_features()
        self._to_channels()
        self._time_ok = self._time_ok and other._time_ok
        if other._t0 is not None:
            if self._t0 is None:
                self._t0 = other._t0
            d = other._t0 - self._t0  # other's times on this origin: tau + d
            self._time_data += other._time_data + d * other._data_sum
            self._time_sq += other._time_sq + 2.0 * d * other._time_sum + d * d * other.weight_sum
            self._time_sum += other._time_sum + d * other.weight_sum
            if other._t_last is not None:
                self._t_last = other._t_last if self._t_last is None else max(self._t_last, other._t_last)
        self._data_gram += other._data_gram
        self._data_sum += other._data_sum
        self.n_samples += other.n_samples
        self.weight_sum += other.weight_sum
        self._gram = None
        self._analysis = None
        for mine, theirs in zip(self._blocks, other._blocks):
            mine.merge(theirs)
        if self._feature_gram is None or other._feature_gram is None:
            self._feature_gram = None
        else:
            self._feature_gram += other._feature_gram
        return self

    def _add_extended(self, other: RegressorStatistics) -> None:
        """Feature mode's ``+=``: ``other``'s extended rows, their times put on this origin."""
        assert self._extended is not None and other._extended is not None
        self._time_ok = self._time_ok and other._time_ok
        E = other._extended
        if other._t0 is not None:
            if self._t0 is None:
                self._t0 = other._t0
            shift = np.eye(_N_EXTENDED)
            shift[_TAU, _ONE] = other._t0 - self._t0  # tau on this origin: tau + d * 1
            E = shift @ E @ shift.T
            if other._t_last is not None:
                self._t_last = other._t_last if self._t_last is None else max(self._t_last, other._t_last)
        self._extended += E
        for mine, theirs in zip(self._feature_blocks, other._feature_blocks):
            mine.merge(theirs)
        self.n_samples += other.n_samples
        self.weight_sum += other.weight_sum
        self._changed()

    # -------------------------------------------------------------- raw sums
    def _sync(self) -> None:
        """Bring the sums up to date before a read (statistics that assemble them lazily override it)."""

    @property
    def data_gram(self) -> np.ndarray:
        """(6, 11, 11) per channel, the weighted Gram of the data rows ``[Y_k, w_k]``."""
        self._ready()
        return self._data_gram

    @property
    def data_sum(self) -> np.ndarray:
        """(6, 11) per channel, the weighted sum of the data rows."""
        self._ready()
        return self._data_sum

    @property
    def time_data(self) -> np.ndarray:
        """(6, 11) the weighted sum of the data rows times the sample time since :attr:`first_time`."""
        self._ready()
        return self._time_data

    @property
    def time_ok(self) -> bool:
        """Whether every sample came with a finite time (else the time sums are not kept)."""
        return self._time_ok

    @property
    def time_sum(self) -> float:
        """The weighted sum of the sample times since :attr:`first_time`, s."""
        self._ready()
        return self._time_sum

    @property
    def time_sq(self) -> float:
        """The weighted sum of the squared sample times since :attr:`first_time`, s²."""
        self._ready()
        return self._time_sq

    @property
    def first_time(self) -> float | None:
        """The first sample's time, s (None before any)."""
        return self._t0

    @property
    def last_time(self) -> float | None:
        """The newest sample's time, s (None before any)."""
        return self._t_last

    def block_sums(self) -> tuple[BlockSums, ...]:
        """The batch-means block sums, one per length of :data:`BLOCK_SECONDS`."""
        self._ready()
        return self._blocks

    def feature_gram(self) -> np.ndarray | None:
        """(19, 19) the weighted Gram of the feature rows ``[features, wrench, 1]``, or None without features."""
        self._ready()
        return self._feature_gram

    def replace_sums(self, data_gram: np.ndarray, data_sum: np.ndarray, time_data: np.ndarray,
                     feature_gram: np.ndarray | None, blocks: list[BlockSums]) -> None:
        """Put transformed sums in place of the data's (a projection off the offsets' time course)."""
        self._to_channels()
        self._data_gram, self._data_sum, self._time_data = data_gram, data_sum, time_data
        self._feature_gram = feature_gram
        self._blocks = tuple(blocks)
        self._gram = None
        self._analysis = None

    def assign(self, other: RegressorStatistics) -> None:
        """Hold exactly ``other``'s sums."""
        self.__dict__.update({k: v for k, v in other.__dict__.items() if k in _SUM_FIELDS})

    @property
    def gram(self) -> np.ndarray:
        """(6, 17, 17) ``M_k`` over ``[Y_k, e_k, w_k]`` (read-only view; assembled lazily)."""
        self._ready()
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
        M = self.gram
        return (np.asarray(channel_weights, dtype=float) @ M.reshape(6, -1)).reshape(M.shape[1:])

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

    def n_blocks(self, which: int) -> float:
        """Blocks held (the open one included) of ``BLOCK_SECONDS[which]``."""
        self._ready()
        return self._blocks[which].n_held

    def correlation_factors(
        self, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(tau_short, tau_slow)`` of :meth:`correlation_analysis`."""
        analysis = self.correlation_analysis(x, with_bias, channel_weights)
        return analysis.tau_short, analysis.tau_slow

    def correlation_analysis(
        self, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray | None = None
    ) -> Correlation:
        """See :meth:`_correlation_analysis`; the last answer is kept until the statistics change.

        A later one, of a few more samples (:data:`KEPT_GROWTH`) at unknowns that fit them
        nearly as well (:data:`ANALYSIS_KEPT_SHIFT`) with the same channel weights, is the kept one, its
        persistent residuals' score scaled to the samples now held."""
        self._ready()
        key = b"".join((np.asarray(x, dtype=float).tobytes(), bytes([with_bias]),
                        b"" if channel_weights is None else np.asarray(channel_weights, dtype=float).tobytes()))
        if self._analysis is None or self._analysis[0] != key:
            self._analysis = (key, self._kept_or_new_analysis(np.asarray(x, dtype=float), with_bias, channel_weights))
        return self._analysis[1]

    def carry_analysis(self, earlier: RegressorStatistics) -> None:
        """Keep ``earlier``'s correlation analysis (these statistics: ``earlier``'s with samples added).

        For a sum rebuilt after new samples; :meth:`correlation_analysis` judges whether it still holds."""
        self._kept_analysis, self._kept_other = earlier._kept_analysis, earlier._kept_other

    def forget_analyses(self) -> None:
        """Forget every correlation analysis kept: the next is made anew, as for statistics just built.

        For another model of the same samples (new point masses), asked at other unknowns."""
        self._analysis = None
        self._kept_analysis = self._kept_other = None

    def _kept_or_new_analysis(
        self, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray | None
    ) -> Correlation:
        """The kept analysis when it still holds (:meth:`correlation_analysis`), else a new one, kept."""
        c = np.ones(6) if channel_weights is None else np.asarray(channel_weights, dtype=float)
        rss: np.ndarray | None = None
        for kept in (self._kept_analysis, self._kept_other):
            if kept is None:
                continue
            bias0, c0, x0, n0, w0, analysis, _ = kept
            same_weights = bool(np.all(np.abs(c0 - c) <= KEPT_GROWTH * np.abs(c)))  # np.allclose, rtol only
            if (bias0 == with_bias and x0.shape == x.shape and same_weights
                    and n0 <= self.n_samples <= (1.0 + KEPT_GROWTH) * n0 and w0 > 0.0):
                step = x - x0
                moved = np.einsum("i,kij,j->k", step, self.channel_gram(with_bias), step)
                rss = np.clip(self.channel_residuals(x, with_bias), 0.0, None) if rss is None else rss
                if np.all(moved <= ANALYSIS_KEPT_SHIFT * rss):
                    if kept is self._kept_other:  # the one returned is the one whose derived values are read
                        self._kept_analysis, self._kept_other = kept, self._kept_analysis
                    return replace(analysis, slow_score=analysis.slow_score * (self.weight_sum / w0))
        analysis = self._correlation_analysis(x, with_bias, channel_weights)
        self._kept_other = self._kept_analysis
        self._kept_analysis = (with_bias, c.copy(), x.copy(), self.n_samples, self.weight_sum, analysis, {})
        return analysis

    def kept_derived(self) -> dict[str, Any] | None:
        """What a reader derived from the kept correlation analysis and keeps as long as it (None: none kept).

        The dict lives exactly as long as the analysis :meth:`correlation_analysis` last returned (a new
        analysis starts an empty one): e.g. the score's covariance, kept with the weight sum it was
        measured at and scaled to the samples now held. Ask :meth:`correlation_analysis` first."""
        kept = self._kept_analysis
        return None if kept is None else kept[6]

    def _correlation_analysis(
        self, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray | None = None
    ) -> Correlation:
        """How much the residuals at ``x`` are correlated in time, per wrench channel.

        Returns ``(tau_short, tau_slow)``, each (6,): the long-run variance of the residual
        over its per-sample variance, measured by batch means over blocks of
        :data:`CORRELATION_BLOCK` and :data:`SLOW_BLOCK` seconds (both 1 for white
        residuals). Least squares treats samples as independent; with correlated residuals
        (filtered signals) its covariance is ``tau_short`` times too small. A ``tau_slow``
        well above ``tau_short`` means residuals that persist for seconds: model error.

        ``x`` is taken as the least-squares solution with ``channel_weights``. Its residuals
        are not the noise: the fit removes what the regressor can explain (``-2 c_k tr(A^-1 G_k)``
        per channel), and adds back its own error ``Y_k (x - x_true)``, which varies as slowly as
        the regressor and carries the other channels' noise (``tr(G_k Cov)``). White noise of
        variances ``s_l²`` would give, per sample and per block set,
        ``E[rss_k] = sum_l M_kl s_l²`` with ``M_kl = delta_kl (N - 2 c_k tr(A^-1 G_k))
        + c_l² tr(G_k A^-1 G_l A^-1)``, and the same with the Gram ``G_bk`` of the block sums
        of the regressor: the per-sample sums give ``s²``, the block sums are compared with
        what it predicts. NaN where the data cannot tell (fewer than four blocks, or no
        sample times).

        ``slow_score`` (p, p) is what the persistent part of the residual adds to the
        covariance of the least-squares score: the long blocks' residual sums beyond what
        short-correlated noise explains give a per-sample variance ``v_k`` of a component
        that stays put for a block, which enters the score through the block sums of the
        regressor, ``sum_k c_k² v_k G_bk``. A drifting F/T offset moves the mass and the
        COM (whose regressor, gravity, changes slowly) and barely the inertia (whose
        regressor, the angular acceleration, averages out within a block).
        """
        p = x.shape[0]
        c = np.ones(6) if channel_weights is None else np.asarray(channel_weights, dtype=float)
        nan = np.full(6, np.nan)
        fitted = self._white_noise(x, with_bias, c)
        if fitted is None:
            return Correlation(nan, nan, np.zeros((p, p)))
        white_noise, noise_var = fitted
        V, cols = block_vectors(x, with_bias)
        channel = np.arange(6)[:, None, None]
        factors = []
        slow_score = np.zeros((p, p))
        for which, blocks in enumerate(self._blocks):
            ss, n_blocks = blocks.sums_of_squares(V)
            if n_blocks < 4:
                factors.append(nan)
                continue
            held = blocks.gram_with_open_block()  # the open block too, as sums_of_squares counts it
            padded = np.zeros((6, _N_BLOCK + 1, _N_BLOCK + 1))
            padded[:, :_N_BLOCK, :_N_BLOCK] = held
            G_b = padded[channel, cols[:, :, None], cols[:, None, :]]
            white = white_noise.expected(G_b) @ noise_var
            factors.append(np.where(white > 0.0, ss / np.where(white > 0.0, white, 1.0), np.nan))
            if which == 1 and np.all(np.isfinite(factors[0])):
                size_sq = held[:, _N_DATA, _N_DATA]
                excess = np.clip(ss - np.maximum(factors[0], 1.0) * white, 0.0, None)
                v_slow = excess / np.maximum(size_sq, 1e-300)
                slow_score = np.tensordot(c * c * v_slow, G_b, axes=1)
        return Correlation(factors[0], factors[1], 0.5 * (slow_score + slow_score.T))

    def _white_noise(
        self, x: np.ndarray, with_bias: bool, c: np.ndarray
    ) -> tuple[WhiteNoiseResiduals, np.ndarray] | None:
        """Return what white noise leaves in the residuals at ``x``, and the noise variances.

        The first is the residuals' sums of squares at ``x`` if the noise were white; the second
        the (6,) per-channel noise variances that explain the measured ones
        (:meth:`_correlation_analysis`). None when the data cannot tell (no more samples than
        unknowns, or no positive variances)."""
        p = x.shape[0]
        idx = unknown_indices(with_bias)
        A = self.normal_equations(with_bias, c).A
        d = np.sqrt(np.clip(np.diag(A), 0.0, None))
        d[d == 0.0] = 1.0
        A_inv = np.linalg.pinv(A / np.outer(d, d), hermitian=True) / np.outer(d, d)
        gram = self.gram[:, idx][:, :, idx]
        n_w = self.weight_sum
        if n_w <= p:
            return None
        white_noise = WhiteNoiseResiduals(A_inv, gram, c, n_w)
        rss = np.clip(self.channel_residuals(x, with_bias), 0.0, None)
        try:
            noise_var = np.linalg.solve(white_noise.expected(gram), rss)
        except np.linalg.LinAlgError:
            return None
        if not np.all(noise_var > 0.0):
            return None
        return white_noise, noise_var

    def residual_covariance(self, x: np.ndarray, with_bias: bool) -> np.ndarray | None:
        """Return the (6, 6) covariance of the wrench residual at ``x`` across channels, or None without features.

        Noise in the accelerations moves forces and torques together
        (``m da`` and ``m c x da``; ``[dalpha]x m c`` and ``J dalpha``): the channels'
        residuals are correlated, which per-channel variances miss."""
        self._ready()
        if self._feature_gram is None:
            return None
        B = np.einsum("fkp,p->fk", _K_FEATURES, x[:N_PARAMS])
        T = np.zeros((6, _N_FEATURE_ROW))
        T[:, :N_FEATURES] = -B.T
        T[:, N_FEATURES:N_FEATURES + 6] = np.eye(6)
        if with_bias:
            T[:, -1] = -x[N_PARAMS:N_PARAMS + N_BIAS]
        dof = max(self.weight_sum - x.shape[0] / 6.0, 1.0)
        C = T @ self._feature_gram @ T.T / dof
        return 0.5 * (C + C.T)

    def score_covariance(
        self,
        x: np.ndarray,
        with_bias: bool,
        channel_weights: np.ndarray | None = None,
        correlation: np.ndarray | None = None,
    ) -> np.ndarray:
        """(p, p) ``sum_j D_j^T W Sigma W D_j``: the covariance of the least-squares score at ``x``.

        ``D_j`` (6 x p) is sample ``j``'s design (regressor rows, and the identity of the
        offsets), ``W`` the channel weights and ``Sigma`` the residuals' covariance across
        channels (:meth:`residual_covariance`), formed from the feature Gram; without
        features, each channel's own variance times its Gram. ``correlation`` (6,): each
        channel's residual correlation factor in time (default 1), which scales its
        variance (covariances by the geometric mean). The middle of the sandwich
        covariance ``A^-1 S A^-1``.
        """
        c = np.ones(6) if channel_weights is None else np.asarray(channel_weights, dtype=float)
        tau = np.ones(6) if correlation is None else np.asarray(correlation, dtype=float)
        Sigma = self.residual_covariance(x, with_bias)
        if Sigma is None:
            rss = np.clip(self.channel_residuals(x, with_bias), 0.0, None)
            var = rss / max(self.weight_sum - x.shape[0] / 6.0, 1.0)
            return np.tensordot(c * c * var * tau, self.channel_gram(with_bias), axes=1)
        assert self._feature_gram is not None
        root = np.sqrt(tau)
        M = (c * root)[:, None] * Sigma * (c * root)[None, :]
        F = self._feature_gram
        p = x.shape[0]
        S = np.zeros((p, p))
        # sum_ab F_ab K_a^T M K_b, as two products: X_a = K_a^T M (10 x 6), Y_a = sum_b F_ab K_b (6 x 10)
        X = np.einsum("akp,kl->apl", _K_FEATURES, M)
        Y = np.tensordot(F[:N_FEATURES, :N_FEATURES], _K_FEATURES, axes=1)
        S[:N_PARAMS, :N_PARAMS] = X.transpose(1, 0, 2).reshape(N_PARAMS, -1) @ Y.reshape(-1, N_PARAMS)
        if with_bias:
            Spb = np.einsum("a,akp,kl->pl", F[:N_FEATURES, -1], _K_FEATURES, M)
            S[:N_PARAMS, N_PARAMS:] = Spb
            S[N_PARAMS:, :N_PARAMS] = Spb.T
            S[N_PARAMS:, N_PARAMS:] = self.weight_sum * M
        return 0.5 * (S + S.T)
