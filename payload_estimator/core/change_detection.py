"""The test behind the payload tracker: does the current payload explain a sample, or a change?

Conventions: every vector in the sensor frame S; the wrench is the one the payload exerts on the
sensor (at rest ``f = m g``), SI units; ``phi`` in the order of
:class:`~payload_estimator.core.inertia.InertialParameters`.

**The gate.** A reference estimate predicts each sample's wrench, ``w_hat = Y phi_hat + beta_hat
+ drift`` (``drift`` is the running mean of the accepted residuals over :data:`DRIFT_TIME_S`, the
F/T offsets' slow drift), and the residual ``r = w - w_hat`` has the covariance
``R = S + Y C Y^T``: ``S`` the residuals' own covariance, measured from the accepted samples (the
sensor's noise and what the model leaves; the estimate's residual RMS until :data:`MIN_RESIDUALS`
are in), and ``C`` the estimate's covariance with a physical spread for what the data do not yet
determine (:func:`prediction_covariance`: an estimate from little data predicts loosely). Without
a change or a contact, ``d² = r^T R^-1 r`` follows a chi-square with six degrees of freedom; a
sample above :data:`GATE_CHI2` (its 0.999 quantile) is *suspect*.

**The change.** The residuals of a run of suspect samples are fitted, the generalised likelihood
ratio way, by a change of mass and first moment, ``r = s(t - t0) Y_red(g - a) [dm; d(mc)]`` (what
a new payload does in slow motion, seen through the pipeline's filter whose step response is
``s``, from the onset ``t0`` that fits best: :meth:`ChangeDetector.fit_change`). It explains them
when their mean ``d²`` falls to :data:`EXPLAINED_CHI2`, to a quarter of what it was at most, and
the mass change is :data:`MIN_MASS_CHANGE_Z` standard deviations from zero
(:attr:`ChangeFit.explains`). A load that transfers over time (a gripper closing, a part lifted off
a table that carries part of its weight meanwhile, a part set down) follows no step: whatever the
wrench does while the load moves over, once it has moved over the samples hold the new payload.
:meth:`ChangeDetector.fit_transfer` fits the change to the samples after the earliest end of the
transfer that leaves them explained, at most :data:`MAX_TRANSFER_S` after its onset, with at least
:data:`MIN_AFTER_S` of them; the transfer itself is never data. A constant step of all six channels
is an offset shift (:meth:`ChangeDetector.fit_offset_shift`).

**The offsets.** Estimated anew beside offsets kept across a change, the mass and first moment
differ from those found with the kept offsets beyond their uncertainty when the kept offsets have
moved (:func:`offsets_moved`, :data:`OFFSETS_MOVED_CHI2`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from payload_estimator.core.regressor import samples_regressor
from payload_estimator.core.results import IDENTIFIED, Estimate
from payload_estimator.core.samples import SensorSamples

__all__ = [
    "ChangeDetector",
    "ChangeFit",
    "StepFilter",
    "prediction_covariance",
    "offsets_moved",
    "mass_known",
    "GATE_CHI2",
    "EXPLAINED_CHI2",
    "MIN_MASS_CHANGE_Z",
    "NEGATIVE_MASS_Z",
    "ResidualCorrelation",
    "REFERENCE_MASS_STD_KG",
    "EARLY_NOISE_FACTOR",
    "MIN_RESIDUALS",
    "RESIDUAL_MEMORY",
    "MAX_PAYLOAD_SIZE_M",
    "DRIFT_TIME_S",
    "MAX_TRANSFER_S",
    "MIN_AFTER_S",
    "STILL_MOVING_CHI2",
    "OFFSETS_MOVED_CHI2",
    "TAKEOVER_MASS_REL_STD",
    "TAKEOVER_MASS_STD_KG",
]

GATE_CHI2 = 22.46
"""A sample whose ``d²`` exceeds this (chi-square, 6 dof, 0.999 quantile) is held out."""
EXPLAINED_CHI2 = 18.0
"""A change of mass and first moment explains an episode when its residuals' mean ``d²`` falls to
this (3x the noise's 6) and to a quarter of what it was at most."""
MIN_MASS_CHANGE_Z = 5.0
"""... and the mass change is this many standard deviations from zero."""
NEGATIVE_MASS_Z = 2.0
"""... and the payload after it not lighter than nothing by more than this many of its standard deviations."""
REFERENCE_MASS_STD_KG = 0.01
"""... or its mass known this well in kg (an empty gripper: 0 kg, never "identified" relatively)."""
EARLY_NOISE_FACTOR = 4.0
"""Until :data:`MIN_RESIDUALS` samples are in, the estimate's residual variance times this (a fit
of 16 unknowns to a few dozen filtered samples leaves residuals well below the noise)."""
MIN_RESIDUALS = 200
"""Accepted samples before the residual covariance is measured rather than taken as diagonal."""
RESIDUAL_MEMORY = 3000
"""Samples the running residual covariance remembers (30 s at 100 Hz)."""
MAX_PAYLOAD_SIZE_M = 0.4
"""Largest payload size the gate allows for what the data do not yet determine."""
MAX_TRANSFER_S = 1.2
"""Longest load transfer fitted as one change, s (a gripper closing, a lift-off: 0 to 1 s)."""
MIN_AFTER_S = 0.2
"""Samples after a transfer that a change must explain before it is decided, s."""
STILL_MOVING_CHI2 = 92.0
"""The load is still moving over when a change that also grows in time explains the samples after a
candidate end better by this much (chi-square, 4 dof, 0.999 quantile, times the ~5 samples that count as
one behind the pipeline's low-pass): the transfer has not ended there."""
DRIFT_TIME_S = 2.0
"""Time constant of the gate's running mean of the accepted residuals: the F/T offsets' slow
drift (a strain gauge warming up, Franka's model-based external wrench changing with the pose)
is followed, not taken for a contact."""
OFFSETS_MOVED_CHI2 = 18.47
"""The kept F/T offsets are taken to have moved when the mass and first moment found with the
offsets estimated anew differ from those found with the kept ones by more than this (chi-square,
4 degrees of freedom, 0.999 quantile)."""
CORRELATION_BLOCK_S = 1.0
"""Blocks of accepted residuals whose sums measure how long they stay correlated, s
(:class:`ResidualCorrelation`)."""
CORRELATION_MEMORY_BLOCKS = 30
"""... the mean over the last this many blocks ..."""
MIN_CORRELATION_BLOCKS = 5
"""... believed from this many blocks on."""
TAKEOVER_MASS_REL_STD = 0.005
TAKEOVER_MASS_STD_KG = 0.003
"""... and only once it knows the mass to 0.5 % (or 3 g for an empty gripper or a light part)."""


class StepFilter(Protocol):
    """What the detector needs of :class:`~payload_estimator.pipeline.filters.StepResponse`."""

    period_s: float
    rise_s: float
    settled_s: float

    def __call__(self, tau: np.ndarray) -> np.ndarray:
        """The samples' response to a unit step of the wrench ``tau`` s after it."""
        ...


@dataclass(frozen=True, eq=False)
class ChangeFit:
    """The best fit of a change of mass and first moment to a run of samples' residuals.

    Attributes:
        residuals: (n, 6) the samples' residuals against the reference.
        weights: (n, 6, 6) the inverses of their covariances.
        before: their mean ``d²``.
        after: the mean ``d²`` left once the change is fitted.
        delta: (4,) the change of ``[m, m c]`` (kg, kg·m).
        covariance: (4, 4) its covariance.
        onset: s, when the change began (the best of :meth:`ChangeDetector.onsets`).
        data_from: s, where the new payload's data begin: the filter settled after a step, the
            transfer's end after a transfer (NaN: from ``onset`` plus the filter's settling).
    """

    residuals: np.ndarray
    weights: np.ndarray
    before: float
    after: float
    delta: np.ndarray
    covariance: np.ndarray
    onset: float
    data_from: float = float("nan")
    reference_mass: float = float("nan")

    @property
    def explains(self) -> bool:
        """Whether the change explains the residuals, its mass is significant, and its payload can exist.

        As the module docstring says; the payload it leads to, ``reference_mass`` (kg, the payload's before;
        NaN: unknown) plus the change, not below zero by more than :data:`NEGATIVE_MASS_Z` standard deviations."""
        std = np.sqrt(max(self.covariance[0, 0], 1e-300))
        possible = not self.reference_mass + self.delta[0] < -NEGATIVE_MASS_Z * std
        return bool(self.after <= EXPLAINED_CHI2 and self.after <= 0.25 * self.before
                    and abs(self.delta[0]) / std >= MIN_MASS_CHANGE_Z and possible)


class ChangeDetector:
    """The gate and the change test of a payload tracker, against a reference estimate.

    The module docstring describes both tests; the tracker sets the reference
    (:meth:`set_reference`) and refreshes it.

    Attributes:
        step_response: how a step of the wrench shows in the samples (the pipeline's filter sets
            it; None: at once, as in unfiltered samples). A change is fitted through it, from an
            onset it finds, and a new payload's data start where it has settled.
        reference: ``(phi (10,), bias (6,), C (10, 10), s2 (6,))`` of the reference estimate: its
            parameters, offsets, :func:`prediction_covariance` and residual variances; None while
            there is none to judge by.
        residual_cov: (6, 6) running covariance of the accepted samples' residuals.
        residual_n: accepted samples folded into it since the last :meth:`restart`.
        drift: (6,) running mean of the accepted residuals (:data:`DRIFT_TIME_S`).
    """

    def __init__(self) -> None:
        self.step_response: StepFilter | None = None
        self.reference: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.residual_cov = np.zeros((6, 6))
        self.residual_n = 0
        self.drift = np.zeros(6)
        self.correlation = ResidualCorrelation()
        self.model_error = False

    def restart(self) -> None:
        """A new payload: no reference, and the residuals' statistics start again."""
        self.reference = None
        self.residual_n = 0
        self.drift = np.zeros(6)
        self.correlation = ResidualCorrelation()

    def set_reference(self, est: Estimate | None) -> None:
        """Judge the following samples by ``est``.

        None, or an estimate without a covariance or whose mass is not known
        (:func:`mass_known`), leaves nothing to judge by."""
        # Only the predicted wrench matters here, and its uncertainty enters R: the mass must be
        # determined (in kg: an empty gripper's is 0 +- a few grams), the COM need not be.
        if est is None or est.covariance is None or not mass_known(est):
            self.reference = None
            return
        bias = np.zeros(6) if est.bias is None else np.asarray(est.bias, dtype=float)
        s2 = np.maximum(np.asarray(est.residual_rms, dtype=float) ** 2, 1e-12)
        self.reference = (np.asarray(est.phi, dtype=float), bias, prediction_covariance(est), s2)

    # ------------------------------------------------------------------ the gate
    def noise_covariance(self) -> np.ndarray:
        """Return the (6, 6) covariance of a sample's residual at a known payload.

        It is measured from the accepted samples (the channels are correlated through the
        accelerations' noise); until enough are in, it is the estimate's residual RMS."""
        assert self.reference is not None
        if self.residual_n >= MIN_RESIDUALS:
            return self.residual_cov
        # An early estimate fits its few samples too well: its residuals understate the noise.
        return EARLY_NOISE_FACTOR * np.diag(self.reference[3])

    def residuals(self, samples: SensorSamples) -> tuple[np.ndarray, np.ndarray]:
        """``(r (n, 6), R (n, 6, 6))``: residuals against the reference and their covariance."""
        assert self.reference is not None
        phi, bias, C, _ = self.reference
        Y = samples_regressor(samples)
        r = samples.wrench_in_sensor - Y @ phi - bias - self.drift
        return r, (Y @ C) @ Y.transpose(0, 2, 1) + self.noise_covariance()  # Y C Y^T per sample

    def d2(self, samples: SensorSamples) -> np.ndarray | None:
        """(n,) each sample's ``d² = r^T R^-1 r`` (0 for a non-finite one), or None without a reference.

        With :attr:`model_error`, also None until the residuals' correlation is measured
        (:attr:`ResidualCorrelation.measured`): before, an episode could not be judged against it."""
        if self.reference is None or (self.model_error and not self.correlation.measured):
            return None
        r, R = self.residuals(samples)
        finite = np.all(np.isfinite(r), axis=1) & np.all(np.isfinite(R), axis=(1, 2))
        d2 = np.zeros(len(samples))  # a non-finite sample is the estimator's to drop (and count), not a contact
        if np.any(finite):
            d2[finite] = np.einsum("nk,nk->n", r[finite], np.linalg.solve(R[finite], r[finite][:, :, None])[:, :, 0])
        return d2

    def learn(self, samples: SensorSamples) -> None:
        """Fold accepted samples' residuals into the running residual covariance and drift.

        The drift follows the residuals' slow mean (:data:`DRIFT_TIME_S`); with :attr:`model_error`, the
        residuals' correlation is measured too (:class:`ResidualCorrelation`)."""
        if self.reference is None or len(samples) == 0:
            return
        phi, bias, _, _ = self.reference
        keep = np.all(np.isfinite(samples.wrench_in_sensor), axis=1)
        r = samples.wrench_in_sensor[keep] - samples_regressor(samples.select(keep)) @ phi - bias
        finite = np.all(np.isfinite(r), axis=1) & np.all(np.abs(r) < 1e6, axis=1)
        r = r[finite]
        n = len(r)
        if n == 0:
            return
        step = float(np.median(np.diff(samples.t))) if len(samples) > 1 else 0.01
        decay = np.exp(-max(step, 0.0) / DRIFT_TIME_S)
        weights = (1.0 - decay) * decay ** np.arange(n - 1, -1, -1)  # exponential mean, newest last
        drift = decay**n * self.drift + weights @ r
        r = r - self.drift
        self.drift = drift
        if self.model_error and self.residual_n >= MIN_RESIDUALS:  # whitened: 1 for white residuals
            self.correlation.add(samples.t[keep][finite], r, self.residual_cov)
        if self.residual_n == 0:
            self.residual_cov = np.zeros((6, 6))
        a = n / min(self.residual_n + n, RESIDUAL_MEMORY)
        self.residual_cov = (1.0 - a) * self.residual_cov + a * (r.T @ r) / n
        self.residual_n += n

    # ---------------------------------------------------------- changes and shifts
    def fit_change(self, samples: SensorSamples, t_start: float) -> ChangeFit | None:
        """Fit a change of mass and first moment to the residuals of a suspect run.

        ``samples`` is a run first suspect at ``t_start`` (s); the change is fitted from the
        onset that fits it best. None when no onset gives a fit."""
        r, R = self.residuals(samples)
        W = np.linalg.inv(R)
        before = float(np.mean(np.einsum("nk,nkl,nl->n", r, W, r)))
        Y4 = _change_regressor(samples)
        best = None
        for onset in self.onsets(t_start):
            # the change reaches the samples through the pipeline's filter: scaled by its step response
            Ys = Y4 * self.step(samples.t - onset)[:, None, None]
            A = np.einsum("nki,nkl,nlj->ij", Ys, W, Ys)
            c = np.einsum("nki,nkl,nl->i", Ys, W, r)
            try:
                delta = np.linalg.solve(A, c)
                cov = np.linalg.inv(A)
            except np.linalg.LinAlgError:
                continue
            fit = r - Ys @ delta
            after = float(np.mean(np.einsum("nk,nkl,nl->n", fit, W, fit)))
            if best is None or after < best[0]:
                best = (after, delta, cov, onset)
        if best is None:
            return None
        after, delta, cov, onset = best
        return ChangeFit(r, W, before, after, delta, cov * self._correlation_factor(), onset,
                         reference_mass=self._reference_mass())

    def _change_terms(self, samples: SensorSamples) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per sample, the residuals and the normal equations' terms of a change of mass and first moment.

        Returns ``r`` (N, 6), its weights ``W`` (N, 6, 6), ``Y^T W Y`` (N, 4, 4) and ``Y^T W r`` (N, 4)."""
        r, R = self.residuals(samples)
        W = np.linalg.inv(R)
        Y4 = _change_regressor(samples)
        WY = np.einsum("nkl,nlj->nkj", W, Y4)
        return r, W, np.einsum("nki,nkj->nij", Y4, WY), np.einsum("nki,nk->ni", WY, r)

    def settled_on_step(self, samples: SensorSamples, fit: ChangeFit) -> bool:
        """Whether the samples after a step ``fit`` has settled hold still: no load still moving over.

        A transfer that has just begun looks like a step for a few tenths of a second; a change that
        still grows in time explaining the settled samples better (:data:`STILL_MOVING_CHI2`) says it
        is not one."""
        later = samples.t >= fit.onset + self.settled_s - 1e-9
        if np.count_nonzero(later) < 3:
            return True
        after = samples.select(later)
        _, _, Gj, bj = self._change_terms(after)
        tau = after.t - after.t[-1]
        G, b = Gj.sum(axis=0), bj.sum(axis=0)
        try:
            delta = np.linalg.solve(G, b)
        except np.linalg.LinAlgError:
            return True
        return not _still_moving(G, np.einsum("n,nij->ij", tau, Gj), np.einsum("n,nij->ij", tau * tau, Gj), b,
                                 tau @ bj, delta)

    def fit_transfer(self, samples: SensorSamples, t_start: float) -> ChangeFit | None:
        """Fit a change whose load transferred over time to the samples after the transfer (module docstring).

        ``samples`` is a run first suspect at ``t_start`` (s), the change's reported onset. Each sample
        from the filter's rise time before it on is a candidate end of the transfer; the earliest whose
        later samples (at least :data:`MIN_AFTER_S` of them) a change of mass and first moment explains
        wins. None when none does."""
        t = samples.t
        onset = t_start - (0.0 if self.step_response is None else self.step_response.rise_s)
        r, W, Gj, bj = self._change_terms(samples)
        # sums over the samples from each candidate end on: the normal equations of the change after it,
        # and of a change that still grows linearly in time (the load still moving over)
        tau = t - t[-1]
        G = np.cumsum(Gj[::-1], axis=0)[::-1]
        b = np.cumsum(bj[::-1], axis=0)[::-1]
        e = np.cumsum(np.einsum("nk,nkl,nl->n", r, W, r)[::-1])[::-1]
        G1 = np.cumsum((Gj * tau[:, None, None])[::-1], axis=0)[::-1]
        G2 = np.cumsum((Gj * (tau * tau)[:, None, None])[::-1], axis=0)[::-1]
        b1 = np.cumsum((bj * tau[:, None])[::-1], axis=0)[::-1]
        count = np.arange(len(t), 0, -1, dtype=float)
        step = float(np.median(np.diff(t))) if len(t) > 1 else 0.01
        ends = np.flatnonzero((t >= onset) & (t - onset <= MAX_TRANSFER_S + self.settled_s)
                              & (t[-1] - t + step >= MIN_AFTER_S - 1e-9))
        for k in ends:
            try:
                delta = np.linalg.solve(G[k], b[k])
                cov = np.linalg.inv(G[k])
            except np.linalg.LinAlgError:
                continue
            before, after = e[k] / count[k], (e[k] - b[k] @ delta) / count[k]
            cov = cov * self._correlation_factor()
            fit = ChangeFit(r[k:], W[k:], float(before), float(after), delta, cov, float(t_start), float(t[k]),
                            self._reference_mass())
            if fit.explains and not _still_moving(G[k], G1[k], G2[k], b[k], b1[k], delta):
                return fit
        return None

    def fit_offset_shift(self, samples: SensorSamples, fit: ChangeFit,
                         t_start: float) -> tuple[np.ndarray, float] | None:
        """Fit a constant step of the wrench to the residuals a change fit left unexplained.

        Returns ``(shift (6,), onset)`` from the best onset, when the step explains the
        residuals ``fit`` left (as :attr:`ChangeFit.explains` asks, the mass aside); None when
        none does."""
        r, W, before = fit.residuals, fit.weights, fit.before
        best = None
        for onset in self.onsets(t_start):
            step = self.step(samples.t - onset)
            A = np.einsum("n,nkl,n->kl", step, W, step)
            c = np.einsum("n,nkl,nl->k", step, W, r)
            try:
                shift = np.linalg.solve(A, c)
            except np.linalg.LinAlgError:
                continue
            shifted = r - step[:, None] * shift
            after = float(np.mean(np.einsum("nk,nkl,nl->n", shifted, W, shifted)))
            if best is None or after < best[0]:
                best = (after, shift, onset)
        if best is None or not (best[0] <= EXPLAINED_CHI2 and best[0] <= 0.25 * before):
            return None
        _, shift, onset = best
        return shift, onset

    def _reference_mass(self) -> float:
        """kg, the reference's mass, which a change must leave a possible payload (:attr:`ChangeFit.explains`).

        Only with :attr:`model_error` (NaN otherwise, and without a reference): a sensor's change fit right after
        a release may overshoot the payload's mass by more than its small uncertainty, the filter's and the
        transfer's doing, yet the release is real."""
        if self.reference is None or not self.model_error:
            return float("nan")
        return float(self.reference[0][0])

    def _correlation_factor(self) -> float:
        """How much less certain a change is than independent samples make it.

        1 without :attr:`model_error` (the threshold :data:`MIN_MASS_CHANGE_Z` holds for a sensor's filtered
        noise); with it, the residuals' long-run variance factor (:class:`ResidualCorrelation`), whatever the
        change's length: a change seen for less than a block is judged as if it had lasted a block."""
        return self.correlation.factor() if self.model_error else 1.0

    def onsets(self, t_start: float) -> np.ndarray:
        """Return the candidate instants (s) of a change first seen at ``t_start``.

        They reach up to the filter's rise time before it (the residual crosses the gate partway
        up the step), in steps of its grid, and far enough before it that the filter has settled
        (a step while the input was silent)."""
        if self.step_response is None:
            return np.array([t_start])
        f = self.step_response
        return np.r_[t_start - f.period_s * np.arange(int(np.ceil(f.rise_s / f.period_s)) + 1), t_start - f.settled_s]

    def step(self, tau: np.ndarray) -> np.ndarray:
        """The samples' response to a unit step of the wrench ``tau`` s after it (0 before)."""
        if self.step_response is None:
            return (tau >= -1e-9).astype(float)
        return self.step_response(tau)

    @property
    def settled_s(self) -> float:
        """Seconds after a step until the samples have settled on it (0 without a filter)."""
        return 0.0 if self.step_response is None else self.step_response.settled_s


class ResidualCorrelation:
    """How much longer than white noise the accepted residuals stay correlated: batch means of blocks.

    The whitened residuals (by the measured covariance) are summed over consecutive blocks of
    :data:`CORRELATION_BLOCK_S`; ``sum² / count`` averaged over blocks and channels is the long-run
    variance in units of the per-sample one (1 for white noise; an arm model's error, correlated with
    the pose and the speed over seconds, gives tens to hundreds). The mean remembers
    :data:`CORRELATION_MEMORY_BLOCKS` blocks. A change fitted to ``n`` samples is that much less
    certain than independent samples would make it (:meth:`factor`).
    """

    def __init__(self) -> None:
        self._sum = np.zeros(6)
        self._count = 0
        self._t_block: float | None = None
        self.value = 1.0
        self.blocks = 0

    def add(self, t: np.ndarray, r: np.ndarray, cov: np.ndarray) -> None:
        """Fold residuals ``r`` (n, 6) at times ``t`` (n,), whitened by ``cov`` (6, 6), into the blocks."""
        try:
            white = np.linalg.solve(np.linalg.cholesky(cov + 1e-12 * np.eye(6)), r.T).T
        except np.linalg.LinAlgError:
            return
        for ti, wi in zip(t, white):
            if self._t_block is None:
                self._t_block = float(ti)
            elif ti - self._t_block >= CORRELATION_BLOCK_S:
                self._close()
                self._t_block = float(ti)
            self._sum += wi
            self._count += 1

    def _close(self) -> None:
        if self._count >= 2:
            block = float(np.mean(self._sum**2) / self._count)
            a = 1.0 / min(self.blocks + 1, CORRELATION_MEMORY_BLOCKS)
            self.value = block if self.blocks == 0 else (1.0 - a) * self.value + a * block
            self.blocks += 1
        self._sum = np.zeros(6)
        self._count = 0

    @property
    def measured(self) -> bool:
        """Whether enough blocks are in (:data:`MIN_CORRELATION_BLOCKS`)."""
        return self.blocks >= MIN_CORRELATION_BLOCKS

    def factor(self) -> float:
        """The long-run variance factor of the residuals' mean over a block: 1 until measured, never below 1."""
        return float(max(self.value, 1.0)) if self.measured else 1.0


def _change_regressor(samples: SensorSamples) -> np.ndarray:
    """(N, 6, 4): the regressor of a change of mass and first moment (its columns of ``[m, m c]``)."""
    apparent = samples.gravity_in_sensor - samples.lin_acc_in_sensor
    return samples_regressor(_with_gravity(samples, apparent), reduced=True)[:, :, :4]


def _still_moving(G: np.ndarray, G1: np.ndarray, G2: np.ndarray, b: np.ndarray, b1: np.ndarray,
                  delta: np.ndarray) -> bool:
    """Whether a change growing in time (``delta + gamma tau``) explains samples much better than ``delta``.

    ``G, G1, G2`` (4, 4) and ``b, b1`` (4,) are the weighted sums over the samples of ``Y^T W Y`` times
    ``1, tau, tau²`` and of ``Y^T W r`` times ``1, tau`` (:data:`STILL_MOVING_CHI2`)."""
    A = np.block([[G, G1], [G1, G2]])
    c = np.r_[b, b1]
    try:
        x = np.linalg.solve(A, c)
    except np.linalg.LinAlgError:
        return False
    return bool(c @ x - b @ delta > STILL_MOVING_CHI2)


def prediction_covariance(est: Estimate) -> np.ndarray:
    """Return the estimate's covariance of ``phi``, with what the data do not determine made uncertain.

    A least-squares covariance gives a direction the data never saw no variance at all, and a
    motion that then explores it (the inertia, early on) would look like a contact. A COM axis or
    the inertia not identified gets the spread of a body of this mass and ``L`` = the larger of
    0.1 m and twice its COM's distance when that is known (at most :data:`MAX_PAYLOAD_SIZE_M`):
    ``(m L)²`` per first moment, ``(m L²)²`` per inertia entry."""
    C = np.array(est.covariance, dtype=float)
    m = max(abs(est.params.mass), 0.05)
    size = 0.1
    if est.params.mass > 1e-6 and est.identification.com == (IDENTIFIED,) * 3:
        size = min(max(size, 2.0 * float(np.linalg.norm(est.params.com))), MAX_PAYLOAD_SIZE_M)
    for axis, status in enumerate(est.identification.com):
        if status != IDENTIFIED:
            C[1 + axis, 1 + axis] += (m * size) ** 2
    if est.identification.inertia != IDENTIFIED:
        C[4:, 4:] += np.eye(6) * (m * size * size) ** 2
    return C


def offsets_moved(found: Estimate, kept: Estimate) -> bool:
    """Tell whether the sensor's offsets moved, judged by two estimates of the same data.

    True when ``found`` (offsets estimated anew) knows the mass and differs from ``kept``
    (offsets kept) in mass and first moment beyond their uncertainty
    (:data:`OFFSETS_MOVED_CHI2`)."""
    if found.covariance is None or kept.covariance is None:
        return False
    if not found.mass_std <= max(TAKEOVER_MASS_REL_STD * abs(found.mass), TAKEOVER_MASS_STD_KG):
        return False  # the motion has not yet told the offsets from the mass well enough
    delta = np.asarray(found.phi[:4]) - np.asarray(kept.phi[:4])
    C = np.asarray(found.covariance)[:4, :4] + np.asarray(kept.covariance)[:4, :4]
    return bool(np.all(np.isfinite(C)) and float(delta @ np.linalg.pinv(C) @ delta) > OFFSETS_MOVED_CHI2)


def mass_known(est: Estimate) -> bool:
    """Tell whether the estimate determines the mass (and with it the offsets).

    Only the mass's motion tells it apart from the offsets. Determined means relatively, or to
    :data:`REFERENCE_MASS_STD_KG` (an empty gripper's 0 kg)."""
    return est.identification.mass == IDENTIFIED or est.mass_std <= REFERENCE_MASS_STD_KG


def _with_gravity(samples: SensorSamples, gravity_in_sensor: np.ndarray) -> SensorSamples:
    return replace(samples, gravity_in_sensor=gravity_in_sensor)
