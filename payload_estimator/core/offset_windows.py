"""Offsets that vary in time: a line per window of sample time, left out of the statistics.

An F/T sensor's offsets drift (temperature, a strain gauge warming up); a robot's joint-torque path
leaves slow, unmodelled torques. Held constant over a long run, such an offset is absorbed by the
parameters whose regressor varies slowly (mass and COM through gravity) and by the inertia, or inflates
their uncertainty, and the longer the run the worse. :class:`WindowedStatistics` models the offset of
each wrench channel as a line, ``b_k(t) = m_k + beta_k (t - t_w)``, of its own in every window of
:attr:`WindowedStatistics.window_s` seconds of sample time. Profiling the lines out of the least-squares
problem is projecting every column of the augmented rows (the regressor and the measurement) off
``[1, t]`` within each window, with the samples' weights: exact, in sufficient statistics.

What remains is what the regressor does *within* windows: drift slower than the window is gone, and
any motion faster than it (an ordinary reorientation, 0.1 Hz and up, in the default 10 s windows) keeps
most of its information. The information therefore grows with every window and never decays: the
uncertainty of an identified quantity shrinks as the run goes on.

Whoever knows the offsets in the first window of an estimate (the payload tracker after a change,
which keeps the offsets it found) gives it raw (``first_known``): its mean tells the mass at once. A
window removes a line only where it can afford to: once it spans :data:`LINE_AFTER` of the window
length, and only while the line leaves at least :data:`LINE_KEEPS` of the information about mass and
first moment that removing the mean alone leaves. A slow reorientation turns gravity in the sensor
frame almost linearly in time over a window, and a line would take it for drift: such a window removes
its mean only, and the drift within it stays in the residuals, where the uncertainty counts it.
The window still filling is projected on the fly; a window closes when a sample of a later one arrives,
or when the input breaks off (:meth:`WindowedStatistics.new_window`: the offsets may have jumped while the
sensor was silent). The first window of an estimate removes its mean only, then and later: a line
there would move the estimate as the window fills, just when it first converges (measured: the default
demo's inertia moved 15 % in its tenth second); a short run keeps the constant-offset model, whose
uncertainty measures a drift from the residuals' trend.

Windows are independent batches of the data: what the offsets' nonlinear wander leaves in one window
(and any model error correlated over seconds) moves the score coherently within it, not across them.
Once there are :data:`MIN_BATCHES` of them, the spread of their scores gives the score's covariance as
the data show it (batch means; the batches' own Grams kept apart, at most :data:`MAX_BATCHES`), which
:func:`~payload_estimator.core.estimators.uncertainty.sandwich` takes where it exceeds the covariance
built from the residuals sample by sample. Short batches of :data:`BATCH_S` (projected by their window's
lines) tell it early, windows later: the larger of the two counts.

Conventions: sample time in s, the statistics' own per-sample weights, channels ``fx fy fz tx ty tz``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from payload_estimator.core.batch_means import BlockSums
from payload_estimator.core.regressor import N_PARAMS, features_regressor
from payload_estimator.core.statistics import (
    BLOCK_ROW_MAP,
    BLOCK_SECONDS,
    CHANNEL_ROW_MAP,
    N_BLOCK_COLUMNS,
    N_DATA_COLUMNS,
    N_FEATURE_ROW,
    ONE_COLUMN,
    TIME_COLUMN,
    RegressorStatistics,
    extended_rows,
)

__all__ = ["WindowedStatistics", "current_offsets", "current_offsets_covariance", "current_offsets_rate",
           "DEFAULT_WINDOW_S", "LINE_AFTER",
           "LINE_KEEPS", "MIN_BATCHES", "MAX_BATCHES", "BATCH_S"]

DEFAULT_WINDOW_S = 10.0
"""s: the default window: a period of the slowest reorientation an ordinary motion makes (0.1 Hz);
``benchmarks/drift.py`` measured 10 s best of 10, 20 and 40."""
LINE_AFTER = 0.5
"""A window spanning less than this share of :attr:`WindowedStatistics.window_s` removes only its mean
(a line through a few seconds would take motion for drift)."""
MIN_BATCHES = 8
"""Windows needed before their scores tell the estimate's covariance
(:meth:`WindowedStatistics.batch_score_covariance`)."""
BATCH_S = 2.0
"""s: the short batches of sample time whose scores are kept apart too (a model error correlated over a
second or two shows in them before enough windows have closed)."""
MAX_BATCHES = 64
"""Windows kept apart for that; beyond, neighbouring batches are merged two by two (memory stays bounded)."""
LINE_KEEPS = 0.5
"""A window removes a line only if that keeps this share of each of the mass's and first moment's
information (the diagonal of the combined Gram) that removing its mean keeps."""


class _OpenWindow:
    """The raw sums of the window still filling, with what projecting it needs beyond the statistics'.

    Attributes:
        stats: the window's raw statistics (its times counted from its first sample).
        blocks: per block length, block key -> [sums (6, 12) of sqrt-weighted rows, sum of sqrt(s) tau].
        feature_time: (19,) sum of s tau over the feature rows.
    """

    def __init__(self) -> None:
        self.stats = RegressorStatistics()
        self.blocks: list[dict[float, list[Any]]] = [{} for _ in BLOCK_SECONDS]
        self.feature_time = np.zeros(N_FEATURE_ROW)
        self.t0: float | None = None
        self.order = 1
        """What the last projection removed (:meth:`projected`): 0 nothing, 1 the mean, 2 a line (in part)."""
        self.share = 0.0
        """... and the line's share of it (:meth:`line_share`)."""
        self.sub: dict[float, list[Any]] = {}
        """Short batches (:data:`BATCH_S`): key -> raw sums [G (6, 11, 11), S (6, 11), U (6, 11), W, T1, T2]."""
        self._sub_grams: list[np.ndarray] | None = []
        self._sub_make: Any = None
        """What computes :attr:`sub_grams` when they are first read (None: they are at hand)."""
        self.features = True
        """While every batch came with its features, the short batches and blocks are kept as extended
        feature rows (:func:`~payload_estimator.core.statistics.extended_rows`), mapped to the channels
        when read: ``feature_sub`` key -> Gram (20, 20), ``feature_blocks`` key -> sum (20,) of
        sqrt-weighted rows."""
        self.feature_sub: dict[float, np.ndarray] = {}
        self.feature_blocks: list[dict[float, np.ndarray]] = [{} for _ in BLOCK_SECONDS]

    @property
    def sub_grams(self) -> list[np.ndarray]:
        """The short batches' data Grams (6, 11, 11) as the last projection left them."""
        if self._sub_grams is None:
            self._sub_grams, self._sub_make = self._sub_make(), None
        return self._sub_grams

    @sub_grams.setter
    def sub_grams(self, grams: list[np.ndarray]) -> None:
        self._sub_grams, self._sub_make = grams, None

    def add(self, Y: np.ndarray | None, wrench: np.ndarray, weights: np.ndarray | None, t: np.ndarray,
            features: np.ndarray | None) -> None:
        """Add a batch that lies in this window (``Y`` may be None when ``features`` are given)."""
        if self.t0 is None:
            self.t0 = float(t[0])
        tau = t - self.t0
        s = np.ones(len(t)) if weights is None else np.clip(np.asarray(weights, dtype=float), 0.0, None)
        if (features is not None and self.features and self.stats.extended_gram() is not None
                and np.max(np.abs(tau)) < 1e100):
            # the window's Gram is the sum of its short batches': one product per sample for both
            U = extended_rows(features, wrench, tau)
            self.feature_time += (s * tau) @ U[:, :N_FEATURE_ROW]
            self.stats.add_extended(self._add_feature_rows(U, s, t), len(t), float(s.sum()), t)
            return
        self._to_channels()
        self.stats.add(Y, wrench, weights, t=t, features=features)
        if features is not None:
            self.feature_time += (s * tau) @ extended_rows(features, wrench, tau)[:, :N_FEATURE_ROW]
        if Y is None:
            assert features is not None, "a batch needs its regressor or its features"
            Y = features_regressor(features)
        rows = np.empty((len(t), 6, N_BLOCK_COLUMNS))
        rows[:, :, :N_PARAMS] = Y
        rows[:, :, N_PARAMS] = wrench
        rows[:, :, -1] = 1.0
        self._add_short_batches(rows[:, :, :N_DATA_COLUMNS], s, t, tau)
        root = np.sqrt(s)
        rows *= root[:, None, None]
        for which, length in enumerate(BLOCK_SECONDS):
            keys = np.floor(t / length)
            starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            sums = np.add.reduceat(rows, starts, axis=0)
            tsums = np.add.reduceat(root * tau, starts)
            for key, block, tsum in zip(keys[starts], sums, tsums):
                held = self.blocks[which].setdefault(float(key), [np.zeros((6, N_BLOCK_COLUMNS)), 0.0])
                held[0] += block
                held[1] += float(tsum)

    def _add_feature_rows(self, U: np.ndarray, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Feature mode's short batches and blocks: one product per batch, sums per block; returns the batch's Gram."""
        keys = np.floor(t / BATCH_S)
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        total = np.zeros((U.shape[1], U.shape[1]))
        for start, stop in zip(starts, np.r_[starts[1:], len(t)]):
            u = U[start:stop]
            gram = (u.T * s[start:stop]) @ u
            total += gram
            key = float(keys[start])
            held = self.feature_sub.get(key)
            self.feature_sub[key] = gram if held is None else held + gram
        R = U * np.sqrt(s)[:, None]
        for which, length in enumerate(BLOCK_SECONDS):
            keys = np.floor(t / length)
            starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            held_blocks = self.feature_blocks[which]
            for key, block in zip(keys[starts], np.add.reduceat(R, starts, axis=0)):
                key = float(key)
                held_block = held_blocks.get(key)
                held_blocks[key] = block if held_block is None else held_block + block
        return total

    def _to_channels(self) -> None:
        """Leave feature mode for good: the short batches and blocks become per-channel sums."""
        if not self.features:
            return
        for key, held in self._sub_sums():
            mine = self.sub.setdefault(key, [np.zeros_like(held[0]), np.zeros_like(held[1]),
                                             np.zeros_like(held[2]), 0.0, 0.0, 0.0])
            for i in range(6):
                mine[i] = mine[i] + held[i]
        for which in range(len(BLOCK_SECONDS)):
            keys, sums, tsums = self._block_sums(which)
            for key, block, tsum in zip(keys, sums, tsums):
                mine = self.blocks[which].setdefault(key, [np.zeros((6, N_BLOCK_COLUMNS)), 0.0])
                mine[0] = mine[0] + block
                mine[1] += float(tsum)
        self.feature_sub = {}
        self.feature_blocks = [{} for _ in BLOCK_SECONDS]
        self.features = False
        if self.stats.extended_gram() is not None:  # its sums per channel, and its block sums from the window's
            self.stats.replace_sums(self.stats.data_gram.copy(), self.stats.data_sum.copy(),
                                    self.stats.time_data.copy(), self.stats.feature_gram(),
                                    [self._open_blocks(which) for which in range(len(BLOCK_SECONDS))])

    def _open_blocks(self, which: int) -> BlockSums:
        """The per-channel blocks of ``BLOCK_SECONDS[which]`` as block sums that continue: the last one open."""
        out = BlockSums(BLOCK_SECONDS[which], N_BLOCK_COLUMNS)
        held = self.blocks[which]
        if held:
            keys = sorted(held)
            for key in keys[:-1]:
                out.add_closed(held[key][0])
            out._key = keys[-1]
            out._carry = held[keys[-1]][0].copy()
        return out

    def _sub_sums(self) -> list[tuple[float, list[Any]]]:
        """The short batches' raw sums, key -> [G (6, 11, 11), S (6, 11), U (6, 11), W, T1, T2]."""
        if not self.features:
            return list(self.sub.items())
        P = CHANNEL_ROW_MAP
        out = []
        for key, E in self.feature_sub.items():
            out.append((key, [P.transpose(0, 2, 1) @ E @ P, np.einsum("i,kia->ka", E[:, ONE_COLUMN], P),
                              np.einsum("i,kia->ka", E[:, TIME_COLUMN], P), float(E[ONE_COLUMN, ONE_COLUMN]),
                              float(E[ONE_COLUMN, TIME_COLUMN]), float(E[TIME_COLUMN, TIME_COLUMN])]))
        return out

    def _block_sums(self, which: int) -> tuple[list[float], np.ndarray, np.ndarray]:
        """The blocks of ``BLOCK_SECONDS[which]``: keys, sums (B, 6, 12) of sqrt-weighted rows, (B,) of sqrt(s) tau."""
        if not self.features:
            held = self.blocks[which]
            if not held:
                return [], np.zeros((0, 6, N_BLOCK_COLUMNS)), np.zeros(0)
            return (list(held), np.array([h[0] for h in held.values()]),
                    np.array([h[1] for h in held.values()], dtype=float))
        held_f = self.feature_blocks[which]
        if not held_f:
            return [], np.zeros((0, 6, N_BLOCK_COLUMNS)), np.zeros(0)
        vectors = np.array(list(held_f.values()))
        return (list(held_f), np.einsum("bi,kia->bka", vectors[:, :N_FEATURE_ROW], BLOCK_ROW_MAP),
                vectors[:, TIME_COLUMN].copy())

    def _add_short_batches(self, Z: np.ndarray, s: np.ndarray, t: np.ndarray, tau: np.ndarray) -> None:
        keys = np.floor(t / BATCH_S)
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        for start, stop in zip(starts, np.r_[starts[1:], len(t)]):
            z, w, u = Z[start:stop].transpose(1, 0, 2), s[start:stop], tau[start:stop]  # z (6, m, 11)
            held = self.sub.setdefault(float(keys[start]), [np.zeros((6, N_DATA_COLUMNS, N_DATA_COLUMNS)),
                                                            np.zeros((6, N_DATA_COLUMNS)),
                                                            np.zeros((6, N_DATA_COLUMNS)), 0.0, 0.0, 0.0])
            held[0] += np.einsum("kmi,m,kmj->kij", z, w, z)
            held[1] += np.einsum("kmi,m->ki", z, w)
            held[2] += np.einsum("kmi,m->ki", z, w * u)
            held[3] += float(w.sum())
            held[4] += float(w @ u)
            held[5] += float(w @ (u * u))

    def decay(self, factor: float) -> None:
        """Exponential forgetting of everything held."""
        self.stats.decay(factor)
        self.feature_time *= factor
        self.feature_sub = {key: E * factor for key, E in self.feature_sub.items()}
        self.feature_blocks = [{key: b * np.sqrt(factor) for key, b in held.items()} for held in self.feature_blocks]
        for held in self.sub.values():
            for i in range(len(held)):
                held[i] = held[i] * factor
        root = np.sqrt(factor)
        for blocks in self.blocks:
            for held in blocks.values():
                held[0] *= root
                held[1] *= root

    def span_s(self) -> float:
        """Sample time the window holds, s (from its first sample to its last)."""
        first, last = self.stats.first_time, self.stats.last_time
        return 0.0 if first is None or last is None else last - first

    def projected(self, order: int, line_share: float = 1.0) -> RegressorStatistics:
        """Return the window's statistics with its offsets' time course projected off.

        A polynomial of ``order`` in time (0: none, 1: the mean, 2: a line) is projected off every
        column, with the samples' weights (module docstring). With ``order`` 2, ``line_share`` of the
        line's projection and the rest of the mean's: the window moves from one to the other as it fills
        (:meth:`line_share`), so that the estimate never jumps."""
        raw = self.stats
        W = raw.weight_sum
        share = self.line_share() * line_share if order == 2 else 0.0
        self.order = order if order < 2 else (2 if share > 0.0 else 1)
        self.share = share
        if self.features and raw.extended_gram() is not None and W > 0.0:
            mix = [(1.0, 0)] if order == 0 else [(1.0 - share, 1), (share, 2)] if share > 0.0 else [(1.0, 1)]
            return self._projected_features(mix)
        if order == 0 or W <= 0.0:
            self.sub_grams = [held[0] for _, held in self._sub_sums()]
            return raw.copy()
        mean = self._projection(1)
        if share <= 0.0:
            return mean[0]
        line = self._projection(2)
        self.sub_grams = [(1.0 - share) * a + share * b for a, b in zip(mean[1], line[1])]
        out = mean[0]
        blocks = [_blend_blocks(a, b, share) for a, b in zip(mean[0].block_sums(), line[0].block_sums())]
        F_mean, F_line = mean[0].feature_gram(), line[0].feature_gram()
        out.replace_sums((1.0 - share) * mean[0].data_gram + share * line[0].data_gram,
                         np.zeros_like(raw.data_sum),
                         (1.0 - share) * mean[0].time_data + share * line[0].time_data,
                         None if F_mean is None or F_line is None else (1.0 - share) * F_mean + share * F_line, blocks)
        return out

    def _projected_features(self, mix: list[tuple[float, int]]) -> RegressorStatistics:
        """Feature mode's :meth:`projected`: the window's fitted lines taken off the extended feature rows.

        Taking each column's fitted mean (or line) off every sample is one linear map of the extended
        rows, ``u' = L u`` (:func:`_line_map`), the same for every channel: the window's Gram becomes
        ``L E L^T``, each short batch's ``L E_b L^T`` and each block's sums ``L v``. ``mix``: the
        projections (1: mean, 2: line) and their shares."""
        E = self.stats.extended_gram()
        assert E is not None
        maps = [(weight, _line_map(E, order)) for weight, order in mix if weight > 0.0]
        extended = sum(weight * (L @ E @ L.T) for weight, L in maps)
        # The short batches and the blocks only a new correlation analysis or the batches' covariance
        # reads (most estimates keep the last ones): projected when first read. The held sums are
        # replaced, never changed in place, as samples come: the lists taken now stay as they are.
        self._sub_grams = None
        self._sub_make = partial(_projected_sub_grams, list(self.feature_sub.values()), maps)
        blocks = [BlockSums.deferred(length, partial(_projected_blocks, list(held.values()), maps, length), len(held))
                  for held, length in zip(self.feature_blocks, BLOCK_SECONDS)]
        return RegressorStatistics.from_extended(extended, blocks, self.stats)

    def _projection(self, order: int) -> tuple[RegressorStatistics, list[np.ndarray]]:
        """The window's statistics and short batches' Grams with its mean (1) or a line (2) projected off."""
        raw = self.stats
        W, T1, T2 = raw.weight_sum, raw.time_sum, raw.time_sq
        F = raw.feature_gram()
        if order == 1:
            M_inv = np.array([[1.0 / W]])
            C = raw.data_sum[:, :, None]  # (6, 11, 1)
            Cf = None if F is None else F[:, -1:]
        else:
            M_inv = np.linalg.inv(np.array([[W, T1], [T1, T2]]))
            C = np.stack([raw.data_sum, raw.time_data], axis=2)  # (6, 11, 2)
            Cf = None if F is None else np.stack([F[:, -1], self.feature_time], axis=1)
        coef = C @ M_inv  # (6, 11, k): each column's fitted intercept (and slope)
        batches = [self._projected_batch(held, coef) for _, held in self._sub_sums()]
        gram = raw.data_gram - np.einsum("kia,kja->kij", coef, C)
        feature_gram = None if F is None or Cf is None else F - (Cf @ M_inv) @ Cf.T
        if order == 1:
            self.sub_grams = batches
        return self._with_sums(raw.copy(), coef, gram, feature_gram), batches

    @staticmethod
    def _projected_batch(held: list[Any], coef: np.ndarray) -> np.ndarray:
        """A short batch's data Gram with the window's fitted lines (``coef``) taken off its samples."""
        G, S, U, W, T1, T2 = held
        m = coef[:, :, 0]
        b = coef[:, :, 1] if coef.shape[2] == 2 else np.zeros_like(m)
        out = G - np.einsum("ki,kj->kij", S, m) - np.einsum("ki,kj->kij", m, S)
        out = out - np.einsum("ki,kj->kij", U, b) - np.einsum("ki,kj->kij", b, U)
        out = out + W * np.einsum("ki,kj->kij", m, m) + T1 * (np.einsum("ki,kj->kij", m, b)
                                                              + np.einsum("ki,kj->kij", b, m))
        return out + T2 * np.einsum("ki,kj->kij", b, b)

    def line_share(self, window_s: float | None = None) -> float:
        """How far (0 to 1) the window removes a line rather than its mean.

        It rises from 0 at :data:`LINE_AFTER` of the window's length (``window_s``, None: full) to 1 at
        its end, and only as far as removing a line keeps more than :data:`LINE_KEEPS` of the mass's
        and first moment's information that removing the mean keeps (1 at three quarters kept)."""
        raw = self.stats
        W, T1, T2 = raw.weight_sum, raw.time_sum, raw.time_sq
        if not (W > 0.0 and W * T2 - T1 * T1 > 1e-9 * max(W * T2, 1e-300)):
            return 0.0
        timing = 1.0 if window_s is None else float(np.clip((self.span_s() / window_s - LINE_AFTER)
                                                            / (1.0 - LINE_AFTER), 0.0, 1.0))
        if timing <= 0.0:
            return 0.0
        kept = self._line_keeps()
        return timing * float(np.clip((kept - LINE_KEEPS) / (0.75 - LINE_KEEPS), 0.0, 1.0))

    def _line_keeps(self) -> float:
        """The least share of a mass or first-moment column's information (mean removed) a line keeps."""
        raw = self.stats
        W, T1, T2 = raw.weight_sum, raw.time_sum, raw.time_sq
        S, U = raw.data_sum[:, :4], raw.time_data[:, :4]  # per channel; the channels' information adds up
        G = np.einsum("kii->i", raw.data_gram[:, :4, :4])
        mean_kept = G - np.sum(S * S, axis=0) / W
        det = W * T2 - T1 * T1
        line_kept = mean_kept - np.sum((W * U - T1 * S) ** 2, axis=0) / (W * det)
        informative = mean_kept > 1e-12 * max(float(np.max(G)), 1e-300)
        if not np.any(informative):
            return 0.0
        return float(np.min(line_kept[informative] / mean_kept[informative]))

    def _with_sums(self, out: RegressorStatistics, coef: np.ndarray, gram: np.ndarray,
                   feature_gram: np.ndarray | None) -> RegressorStatistics:
        """Return ``out`` holding the projected sums: the Gram, the feature Gram and the blocks.

        ``coef`` (6, 11, k) holds every column's fitted intercept (and slope)."""
        raw = self.stats
        T1, T2 = raw.time_sum, raw.time_sq
        blocks = []
        for which in range(len(BLOCK_SECONDS)):
            projected = BlockSums(BLOCK_SECONDS[which], N_BLOCK_COLUMNS)
            _, sums, tsums = self._block_sums(which)
            if len(sums):  # every block, its offsets' line taken off, closed
                b = sums.copy()
                b[:, :, :N_DATA_COLUMNS] -= coef[None, :, :, 0] * sums[:, :, -1:]
                if coef.shape[2] == 2:
                    b[:, :, :N_DATA_COLUMNS] -= coef[None, :, :, 1] * tsums[:, None, None]
                projected.gram = np.einsum("bki,bkj->kij", b, b)
                projected.n_blocks = float(len(b))
            blocks.append(projected)
        out.replace_sums(gram, np.zeros_like(raw.data_sum),
                         raw.time_data - np.einsum("kia,a->ki", coef, [T1, T2][:coef.shape[2]]),
                         feature_gram, blocks)
        return out


class WindowedStatistics(RegressorStatistics):
    """:class:`RegressorStatistics` with the offsets a line per window of sample time (module docstring).

    Every read sees the closed windows' projected sums plus the open window's, projected as it stands;
    ``weight_sum`` and ``n_samples`` count every sample.

    Args:
        window_s: the windows' length in sample time, s (a multiple of the batch-means blocks).
        first_known: the offsets of the first window are known (subtracted from the samples before):
            it is taken as it is.
        line: a window removes a line (offset and drift) once it spans :data:`LINE_AFTER` of the window;
            False: its mean only.
    """

    def __init__(self, window_s: float = DEFAULT_WINDOW_S, first_known: bool = False, line: bool = True) -> None:
        if not window_s > 0.0:
            raise ValueError(f"window_s must be positive, got {window_s}")
        super().__init__()
        self.window_s = float(window_s)
        self.first_known = bool(first_known)
        self.line = bool(line)
        self._closed = RegressorStatistics()
        self._open = _OpenWindow()
        self._key: float | None = None
        self.windows_closed = 0
        self._dirty = False
        self._batches: list[np.ndarray] = []
        """Each closed window's projected data Gram (6, 11, 11), neighbours merged beyond MAX_BATCHES."""
        self._short: list[np.ndarray] = []
        """The same of the closed windows' short batches (:data:`BATCH_S`)."""
        self._open_gram: np.ndarray | None = None

    # ----------------------------------------------------------------- writes
    def reset(self) -> None:
        """Forget every sample and window."""
        super().reset()
        self._closed = RegressorStatistics()
        self._open = _OpenWindow()
        self._key = None
        self.windows_closed = 0
        self._dirty = False
        self._batches = []
        self._short = []
        self._open_gram = None

    def add(self, Y: np.ndarray | None, wrench: np.ndarray, weights: np.ndarray | None = None,
            t: np.ndarray | None = None, features: np.ndarray | None = None) -> None:
        """Accumulate a batch (as :meth:`RegressorStatistics.add`); samples without times fall in the open window."""
        n = wrench.shape[0]
        if n == 0:
            return
        if t is None or not np.all(np.isfinite(t)):
            t = np.full(n, self._open.t0 if self._open.t0 is not None else 0.0)
        t = np.asarray(t, dtype=float)
        keys = np.floor(t / self.window_s)
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        for start, stop in zip(starts, np.r_[starts[1:], n]):
            key = float(keys[start])
            if self._key is not None and key != self._key:
                self._close()
            self._key = key
            piece = slice(int(start), int(stop))
            self._open.add(None if Y is None else Y[piece], wrench[piece], None if weights is None else weights[piece],
                           t[piece], None if features is None else features[piece])
        self.n_samples += n
        self.weight_sum = self._closed.weight_sum + self._open.stats.weight_sum
        self._dirty = True

    def decay(self, factor: float) -> None:
        """Multiply every statistic by ``factor`` (exponential forgetting)."""
        self._closed.decay(factor)
        self._open.decay(factor)
        self._batches = [b * factor for b in self._batches]
        self._short = [b * factor for b in self._short]
        self.weight_sum = self._closed.weight_sum + self._open.stats.weight_sum
        self._dirty = True

    def new_window(self) -> None:
        """Start a new window with the next sample (the input broke off: the offsets may have jumped)."""
        if self._open.stats.weight_sum > 0.0:
            self._close()
        self._key = None
        self._dirty = True

    def _close(self) -> None:
        projected = self._open.projected(self._open_order(), self._timing())  # as it stood while open: no jump
        self._closed += projected
        self._batches = _bounded(self._batches + [projected.data_gram.copy()])
        self._short = _bounded(self._short + list(self._open.sub_grams))
        self._open = _OpenWindow()
        self.windows_closed += 1
        self._kept_analysis = None  # the residuals of the window closed are now projected otherwise

    def _open_order(self) -> int:
        """What the open window may remove: nothing (0), its mean (1) or a line (2, in part).

        The first window of an estimate removes nothing when its offsets are known, else its mean only
        (module docstring)."""
        if self.windows_closed == 0:
            return 0 if self.first_known else 1
        return 2 if self.line else 1

    def _timing(self) -> float:
        """How far the open window has filled towards removing a line (:meth:`_OpenWindow.line_share`)."""
        return float(np.clip((self._open.span_s() / self.window_s - LINE_AFTER) / (1.0 - LINE_AFTER), 0.0, 1.0))

    # ------------------------------------------------------------------ reads
    def _sync(self) -> None:
        """Make the inherited sums the closed windows' plus the open one's, projected."""
        if not self._dirty:
            return
        view = RegressorStatistics()
        view += self._closed
        open_window = self._open.projected(self._open_order(), self._timing())
        self._open_gram = open_window.data_gram
        view += open_window
        self.assign(view)
        self.weight_sum = view.weight_sum
        self._dirty = False

    def batch_score_covariance(self, x: np.ndarray, with_bias: bool,
                               channel_weights: np.ndarray | None = None) -> np.ndarray | None:
        """Return the (p, p) covariance of the least-squares score at ``x`` that the windows' spread shows.

        Each window (closed, or the open one) is a batch: its score ``s_w = sum_k c_k (c_wk - A_wk x)``
        from its own projected Gram; their sample covariance times their number. None before
        :data:`MIN_BATCHES` windows (module docstring). The offsets' part of the score is 0 (the
        projection leaves them out)."""
        self._sync()
        c = np.ones(6) if channel_weights is None else np.asarray(channel_weights, dtype=float)
        v = np.r_[-np.asarray(x, dtype=float)[:N_PARAMS], 1.0]
        found = None
        for closed, open_grams in ((self._batches, [self._open_gram] if self._open_gram is not None else []),
                                   (self._short, list(self._open.sub_grams))):
            batches = closed + open_grams
            if len(batches) < MIN_BATCHES:
                continue
            scores = np.array([np.einsum("k,kij,j->i", c, g[:, :N_PARAMS, :], v) for g in batches])
            centred = scores - scores.mean(axis=0)
            S = centred.T @ centred * len(scores) / (len(scores) - 1)
            found = S if found is None else _larger(found, S)
        if found is None:
            return None
        out = np.zeros((x.shape[0], x.shape[0]))
        out[:N_PARAMS, :N_PARAMS] = found
        return out

    def current_offsets(self, phi: np.ndarray) -> np.ndarray:
        """Return the (6,) offsets at the newest sample, N and N·m (zeros before any sample).

        The line (or mean) that the open window's residuals at ``phi`` follow, at its newest sample."""
        return current_offsets([self], phi)


def current_offsets_rate(statistics: list[WindowedStatistics], phi: np.ndarray) -> np.ndarray:
    """Return the (6,) slope of the line through the open windows' residuals at ``phi``, N/s and N·m/s.

    How fast the offsets drift, as the newest window shows it; zeros where its times determine no line."""
    held = [(s._open, s._open.t0) for s in statistics if s._open.stats.weight_sum > 0.0 and s._open.t0 is not None]
    if not held:
        return np.zeros(6)
    origin = min(t0 for _, t0 in held)  # as current_offsets pools them
    W = sum(w.stats.weight_sum for w, _ in held)
    mean_t = sum(w.stats.time_sum + (t0 - origin) * w.stats.weight_sum for w, t0 in held) / W
    span = max(w.span_s() + t0 - origin for w, t0 in held)
    if not span - mean_t > 1e-6:
        return np.zeros(6)
    # the line at the newest sample less the mean (the line at the mean time)
    return (current_offsets(statistics, phi, share=1.0) - current_offsets(statistics, phi, share=0.0)) / (span - mean_t)


def current_offsets_covariance(statistics: list[WindowedStatistics], phi: np.ndarray,
                               phi_covariance: np.ndarray | None) -> np.ndarray:
    """Return the (6, 6) covariance of :func:`current_offsets` at ``phi``, N² and (N·m)².

    Two parts. The offsets are the residuals' mean (or line) at ``phi``, linear in ``phi``: its
    uncertainty ``phi_covariance`` (10, 10) moves them by ``J C J^T``, ``J`` their derivative by
    ``phi``. And a window that removes only its mean (the first of an estimate, or one not yet long
    enough for a line) gives the offsets of its middle, not of its newest sample: a drifting offset has
    moved on since. The line through the same residuals, at the newest sample, shows how far; that
    difference ``d`` enters as ``d d^T`` (direction kept, as a bias)."""
    zero = np.zeros(N_PARAMS)
    base = current_offsets(statistics, zero)
    out = np.zeros((6, 6))
    if phi_covariance is not None and np.all(np.isfinite(phi_covariance)):
        J = np.stack([current_offsets(statistics, np.eye(N_PARAMS)[j]) - base for j in range(N_PARAMS)], axis=1)
        out += J @ np.asarray(phi_covariance, dtype=float)[:N_PARAMS, :N_PARAMS] @ J.T
    lag = current_offsets(statistics, phi, share=1.0) - current_offsets(statistics, phi)
    out += np.outer(lag, lag)
    return 0.5 * (out + out.T)


def _projected_sub_grams(held: list[np.ndarray], maps: list[tuple[float, np.ndarray]]) -> list[np.ndarray]:
    """The short batches' per-channel data Grams (6, 11, 11) from their extended Grams, the window's lines off."""
    P = CHANNEL_ROW_MAP
    return [P.transpose(0, 2, 1) @ sum(weight * (L @ E_b @ L.T) for weight, L in maps) @ P for E_b in held]


def _projected_blocks(held: list[np.ndarray], maps: list[tuple[float, np.ndarray]], length: float) -> BlockSums:
    """Shared block sums of the extended rows ``held`` (each (20,)), the window's lines off (closed, all of them)."""
    out = BlockSums(length, N_FEATURE_ROW, channels=None)
    if held:
        V = np.array(held)
        for weight, L in maps:
            projected = (V @ L.T)[:, :N_FEATURE_ROW]
            out.gram += weight * (projected.T @ projected)
        out.n_blocks = float(len(V))
    return out


def _line_map(E: np.ndarray, order: int) -> np.ndarray:
    """Return ``L`` (20, 20): an extended feature row less each column's fitted mean (1) or line (2) in time (0: as is).

    The fit is weighted least squares of every feature and wrench column on ``[1, tau]`` (or ``1``),
    from the window's extended Gram ``E``; the ``1`` and ``tau`` columns stay as they are (the block
    sums keep their sample count)."""
    if order == 0:
        return np.eye(E.shape[0])
    cols = [ONE_COLUMN] if order == 1 else [ONE_COLUMN, TIME_COLUMN]
    coef = E[:, cols] @ np.linalg.inv(E[np.ix_(cols, cols)])  # (20, k): each column's intercept (and slope)
    L = np.eye(E.shape[0])
    L[:ONE_COLUMN, cols] -= coef[:ONE_COLUMN]
    return L


def _blend_blocks(a: BlockSums, b: BlockSums, share: float) -> BlockSums:
    """Block sums whose Gram is ``a``'s and ``b``'s mixed, ``share`` of ``b``."""
    out = BlockSums(a.length_s, a.gram.shape[1])
    out.gram = (1.0 - share) * a.gram + share * b.gram
    out.n_blocks = a.n_blocks
    return out


def _bounded(batches: list[np.ndarray]) -> list[np.ndarray]:
    """At most :data:`MAX_BATCHES` batches: beyond, neighbours merged two by two (longer batches)."""
    if len(batches) <= MAX_BATCHES:
        return batches
    return [a + b for a, b in zip(batches[0::2], batches[1::2])] + ([batches[-1]] if len(batches) % 2 else [])


def _larger(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Of two PSD matrices, ``A`` raised to ``B`` where ``B`` exceeds it (by trace, the simpler bound)."""
    return B if np.trace(B) > np.trace(A) else A


def current_offsets(statistics: list[WindowedStatistics], phi: np.ndarray, share: float | None = None) -> np.ndarray:
    """Return the (6,) offsets at the newest sample that statistics of the same samples agree on.

    An estimator may keep its samples in several statistics (PMD: the reduced and the full model, with
    complementary weights): their open windows' residuals at ``phi`` are pooled, and the line (or the
    mean) they follow is evaluated at the newest sample, N and N·m; zeros before any sample.

    ``share``: how far the line counts rather than the mean (None: as far as the windows' projection
    goes, :meth:`_OpenWindow.line_share`; 1: the line, wherever the window's times determine one)."""
    v = np.r_[-np.asarray(phi, dtype=float)[:N_PARAMS], 1.0]
    held = [(s._open, s._open.t0) for s in statistics if s._open.stats.weight_sum > 0.0 and s._open.t0 is not None]
    W = T1 = T2 = 0.0
    S = np.zeros(6)
    U = np.zeros(6)
    origin = min((t0 for _, t0 in held), default=0.0)
    for window, t0 in held:  # pooled, times from the earliest window's first sample
        raw, d = window.stats, t0 - origin
        W += raw.weight_sum
        T1 += raw.time_sum + d * raw.weight_sum
        T2 += raw.time_sq + 2.0 * d * raw.time_sum + d * d * raw.weight_sum
        S += raw.data_sum @ v
        U += raw.time_data @ v + d * (raw.data_sum @ v)
    if share is None:
        share = min((s._open.share for s in statistics), default=0.0)
    span = max((w.span_s() + t0 - origin for w, t0 in held), default=0.0)
    if W <= 0.0:
        return np.zeros(6)
    det = W * T2 - T1 * T1
    if share <= 0.0 or not det > 1e-9 * max(W * T2, 1e-300):
        return S / W
    slope = (W * U - T1 * S) / det
    return (1.0 - share) * S / W + share * ((S - slope * T1) / W + slope * span)
