"""Causal low-pass filtering and phase-matched differentiation on a uniform grid.

The idea
--------
Every signal that enters the regression (joint positions, joint velocities,
the wrench, the IMU) goes through the *same* causal low-pass ``G`` (a
Butterworth filter). Derivatives are then taken on the filtered signal with
central differences centred one sample back::

    d1[n-1] = (y[n] - y[n-2]) / (2 T)
    d2[n-1] = (y[n] - 2 y[n-1] + y[n-2]) / T²

Central differences add no phase, so the filtered signal delayed by one sample,
its first and its second derivative all refer to the instant ``n-1`` and carry
the same phase lag of ``G``. A signal that is only filtered
(:class:`MatchedDelay`) is delayed by exactly one sample too. Because ``G`` is
linear and time-invariant, ``G`` applied to every term of a linear model gives
the model of the filtered signals: the lag cancels in the regression (exactly
for the terms linear in the signals, approximately for products such as
``omega x (omega x c)``).

All stateful objects take batches on a uniform grid of period ``1 / rate_hz``
(the aligner provides one), carry their state across calls (splitting a batch
anywhere gives the same output) and keep O(1) memory. Call ``reset()`` where
the grid is discontinuous (``AlignedBatch.segment_start``).

The first sample after construction or ``reset()`` initialises the filter
state to the steady state for that value, so a constant input gives a
constant output from the first sample on (no start-up transient).

Inputs must be finite: a NaN would poison the filter state, so it is refused
with a ValueError (the aligner drops non-finite samples before they get here).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import signal

from payload_estimator.errors import ConfigurationError

__all__ = [
    "butter_lowpass_sos",
    "zero_phase_lowpass",
    "LowPassFilter",
    "FilteredDerivatives",
    "DelayedSignal",
    "MatchedDifferentiator",
    "MatchedDelay",
    "PositionVelocityDifferentiator",
    "second_derivative_noise_gain",
    "settling_time_s",
    "StepResponse",
    "SETTLE_TOLERANCE",
]

SETTLE_TOLERANCE = 0.003
"""A filter restarted at rest has settled once its impulse response has decayed below this
fraction of its peak, for good (:func:`settling_time_s`)."""


def butter_lowpass_sos(cutoff_hz: float, rate_hz: float, order: int = 4) -> np.ndarray:
    """Second-order sections of a digital Butterworth low-pass, shape (n_sections, 6).

    Args:
        cutoff_hz: -3 dB frequency, Hz; must satisfy 0 < cutoff_hz < rate_hz / 2.
        rate_hz: sample rate, Hz.
        order: filter order (>= 1).

    Raises:
        ConfigurationError: if the cutoff is not below the Nyquist frequency, or an
            argument is not positive.
    """
    if not (np.isfinite(rate_hz) and rate_hz > 0):
        raise ConfigurationError(f"rate_hz must be a positive number, got {rate_hz}")
    nyquist = 0.5 * rate_hz
    if not (np.isfinite(cutoff_hz) and 0.0 < cutoff_hz < nyquist):
        raise ConfigurationError(
            f"low-pass cutoff {cutoff_hz} Hz must be in (0, {nyquist:g}) Hz, "
            f"below the Nyquist frequency of the {rate_hz:g} Hz sample rate"
        )
    if int(order) != order or order < 1:
        raise ConfigurationError(f"filter order must be a positive integer, got {order}")
    return signal.butter(int(order), cutoff_hz, btype="low", fs=rate_hz, output="sos")


def zero_phase_lowpass(
    x: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4
) -> np.ndarray:
    """Forward-backward (zero-phase) Butterworth low-pass for offline data, along axis 0.

    The magnitude response is that of ``G`` squared (so the -3 dB point of a
    single pass becomes -6 dB). ``x`` is (N,) or (N, C). Inputs shorter than
    scipy's default padding are padded with as many samples as they have
    (odd extension); inputs of fewer than 2 samples are returned unchanged.
    """
    sos = butter_lowpass_sos(cutoff_hz, rate_hz, order)
    x = np.asarray(x, dtype=float)
    n = x.shape[0] if x.ndim else 0
    if n < 2:
        return x.copy()
    # scipy.signal.sosfiltfilt's default pad length.
    n_zeros = min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    default_padlen = 3 * (2 * len(sos) + 1 - n_zeros)
    padlen = min(default_padlen, n - 1)
    return signal.sosfiltfilt(sos, x, axis=0, padlen=padlen)


def _as_rows(x: np.ndarray, channels: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1 and channels == 1:
        x = x[:, None]
    elif x.ndim == 1 and x.shape[0] == channels:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != channels:
        raise ValueError(f"{name} must have shape (N, {channels}), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or inf; drop such samples before filtering")
    return x


def _impulse_response(cutoff_hz: float, rate_hz: float, order: int) -> np.ndarray:
    """``G``'s impulse response, long enough that it has died out."""
    n = int(20 * rate_hz / cutoff_hz) + 16
    impulse = np.zeros(n)
    impulse[0] = 1.0
    return signal.sosfilt(butter_lowpass_sos(cutoff_hz, rate_hz, order), impulse)


def settling_time_s(cutoff_hz: float, rate_hz: float, order: int = 4,
                    tolerance: float = SETTLE_TOLERANCE) -> float:
    """How long after a restart the filtered derivatives are trustworthy, s.

    A restart initialises ``G`` to steady state at the first sample (:meth:`LowPassFilter.reset`):
    right for a joint at rest, wrong by its lag for a moving one. For a joint moving at ``v`` the
    error of the second derivative is ``v`` times the impulse response of ``G`` (per second):
    24 rad/s² at 1 rad/s and 10 Hz at first. It is negligible once the impulse response's envelope
    stays below ``tolerance`` of its peak (0.28 s for the 4th-order 10 Hz default).
    """
    h = np.abs(_impulse_response(cutoff_hz, rate_hz, order))
    envelope = np.maximum.accumulate(h[::-1])[::-1]  # largest |h| from each sample on
    above = np.flatnonzero(envelope > tolerance * h.max())
    return float((above[-1] + 1) / rate_hz) if above.size else 0.0


class StepResponse:
    """``s(tau)``: what the pipeline's filtered output shows ``tau`` s after a unit step of its input.

    0 before the step, 1 once settled: ``G``'s step response delayed by the one sample of
    :class:`MatchedDelay`. A change of payload reaches the samples through it.

    Attributes:
        period_s: the grid's sample period.
        rise_s: first time ``s`` reaches 1 (a change crosses any gate by then).
        settled_s: time after which ``|s - 1|`` stays within ``tolerance`` (1 %).
    """

    def __init__(self, cutoff_hz: float, rate_hz: float, order: int = 4, tolerance: float = 0.01) -> None:
        self._s = np.concatenate([[0.0], np.cumsum(_impulse_response(cutoff_hz, rate_hz, order))])
        self.period_s = 1.0 / float(rate_hz)
        self.rise_s = float(np.argmax(self._s >= 1.0) * self.period_s)
        outside = np.flatnonzero(np.abs(self._s - 1.0) > tolerance)
        self.settled_s = float((outside[-1] + 1) * self.period_s) if outside.size else 0.0

    def __call__(self, tau: np.ndarray) -> np.ndarray:
        """Return ``s(tau)`` for times ``tau`` (s) after the step, any shape."""
        k = np.floor(np.asarray(tau, dtype=float) / self.period_s + 1e-9)
        return np.where(k < 0, 0.0, self._s[np.clip(k, 0, len(self._s) - 1).astype(int)])


def second_derivative_noise_gain(cutoff_hz: float, rate_hz: float, order: int = 4) -> float:
    """Variance of :class:`MatchedDifferentiator`'s second derivative per unit variance of white input noise.

    The chain is linear: ``ddx = d2 * (G x)`` with ``d2`` the central second difference over
    ``T²``, so white noise of variance ``s²`` comes out with variance ``s² sum_n k[n]²``, ``k`` the
    impulse response of the chain (s^-4).
    """
    h = _impulse_response(cutoff_hz, rate_hz, order)
    T = 1.0 / rate_hz
    k = (h[2:] - 2.0 * h[1:-1] + h[:-2]) / (T * T)
    return float(np.sum(k * k) + (h[1] - 2.0 * h[0]) ** 2 / T**4 + h[0] ** 2 / T**4)


class LowPassFilter:
    """Causal Butterworth low-pass ``G`` over ``channels`` signals, state carried across calls.

    Args:
        cutoff_hz: -3 dB frequency, Hz (< rate_hz / 2).
        rate_hz: sample rate of the uniform grid, Hz.
        order: Butterworth order.
        channels: number of signals filtered side by side.
    """

    def __init__(self, cutoff_hz: float, rate_hz: float, order: int = 4, channels: int = 1) -> None:
        self.cutoff_hz = float(cutoff_hz)
        self.rate_hz = float(rate_hz)
        self.order = int(order)
        self.channels = int(channels)
        if self.channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        self.sos = butter_lowpass_sos(cutoff_hz, rate_hz, order)
        self._zi_unit = signal.sosfilt_zi(self.sos)  # (n_sections, 2), steady state for input 1
        self._zi: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the state; the next sample initialises it to steady state."""
        self._zi = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Filter ``x`` (N, C) (or (N,) when C == 1); returns (N, C)."""
        x = _as_rows(x, self.channels, "x")
        if x.shape[0] == 0:
            return np.zeros((0, self.channels))
        if self._zi is None:
            self._zi = self._zi_unit[:, :, None] * x[0][None, None, :]
        y, self._zi = signal.sosfilt(self.sos, x, axis=0, zi=self._zi)
        return y


class FilteredDerivatives(NamedTuple):
    """Filtered signal and its derivatives, one sample behind the input.

    Attributes:
        t: (M,) times the rows refer to, s.
        x: (M, C) ``G``-filtered signal.
        dx: (M, C) its first derivative, per s.
        ddx: (M, C) its second derivative, per s².
    """

    t: np.ndarray
    x: np.ndarray
    dx: np.ndarray
    ddx: np.ndarray


class DelayedSignal(NamedTuple):
    """A ``G``-filtered signal delayed by one sample.

    Attributes:
        t: (M,) times the rows refer to, s.
        x: (M, C) filtered values.
    """

    t: np.ndarray
    x: np.ndarray


class _ThreePointWindow:
    """Keeps the last two filtered samples so a batch can be extended to the left.

    Given the filtered rows of a new batch, returns the rows of
    ``[previous two; new]`` so that every row ``n >= 2`` of it has its two
    predecessors: outputs refer to ``n - 1`` and exist once three filtered
    samples have been seen.
    """

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self._t = np.zeros(0)
        self._y: np.ndarray | None = None

    def reset(self) -> None:
        self._t = np.zeros(0)
        self._y = None

    def extend(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t_all = np.concatenate([self._t, t]) if self._t.size else t
        y_all = np.concatenate([self._y, y]) if self._y is not None else y
        _check_grid(t_all, self.period_s)
        self._t = t_all[-2:].copy()
        self._y = y_all[-2:].copy()
        return t_all, y_all


def _check_grid(t: np.ndarray, period_s: float) -> None:
    if t.size < 2:
        return
    steps = np.diff(t)
    # Stamps like ROS times (~1.7e9 s) carry a rounding error of a few 1e-7 s.
    tol = 1e-3 * period_s + 8.0 * np.finfo(float).eps * float(np.max(np.abs(t)))
    if np.any(np.abs(steps - period_s) > tol):
        raise ValueError(
            f"samples are not on a uniform {period_s:g} s grid (steps from {steps.min():g} "
            f"to {steps.max():g} s); call reset() where the grid is discontinuous"
        )


def _as_times(t: np.ndarray, n: int) -> np.ndarray:
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(f"t must have shape ({n},) to match the signal, got {t.shape}")
    return t


class _CentredFilter:
    """``G`` plus a two-sample memory, so every output row has both neighbours (shared state)."""

    def __init__(self, cutoff_hz: float, rate_hz: float, channels: int, order: int = 4) -> None:
        self.lowpass = LowPassFilter(cutoff_hz, rate_hz, order, channels)
        self.period_s = 1.0 / float(rate_hz)
        self._window = _ThreePointWindow(self.period_s)

    @property
    def channels(self) -> int:
        return self.lowpass.channels

    def reset(self) -> None:
        """Forget all state (call at a discontinuity of the grid)."""
        self.lowpass.reset()
        self._window.reset()

    def _filtered(self, t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Times and ``G``-filtered rows of ``[previous two; this batch]``."""
        x = _as_rows(x, self.channels, "x")
        t = _as_times(t, x.shape[0])
        return self._window.extend(t, self.lowpass(x))


class MatchedDifferentiator(_CentredFilter):
    """``G``-filtered signal with its first and second derivatives, phase-matched.

    For input samples ``x[n]`` on a uniform grid, with ``y = G x``, the output
    row for instant ``n-1`` is ``(t[n-1], y[n-1], (y[n]-y[n-2])/(2T),
    (y[n]-2y[n-1]+y[n-2])/T²)``. Rows appear once three filtered samples exist
    (so the first input sample after a reset never gets a row of its own); the
    state carries across calls, and splitting a batch anywhere gives the same rows.

    Args:
        cutoff_hz: -3 dB frequency of ``G``, Hz.
        rate_hz: sample rate of the uniform grid, Hz.
        channels: number of signals.
        order: Butterworth order of ``G``.
    """

    def __call__(self, t: np.ndarray, x: np.ndarray) -> FilteredDerivatives:
        """Filter and differentiate a batch: ``t`` (N,) s, ``x`` (N, C)."""
        t_all, y = self._filtered(t, x)
        if t_all.shape[0] < 3:
            z = np.zeros((0, self.channels))
            return FilteredDerivatives(np.zeros(0), z, z.copy(), z.copy())
        T = self.period_s
        dx = (y[2:] - y[:-2]) * (0.5 / T)
        ddx = (y[2:] - 2.0 * y[1:-1] + y[:-2]) * (1.0 / (T * T))
        return FilteredDerivatives(t_all[1:-1], y[1:-1], dx, ddx)


class MatchedDelay(_CentredFilter):
    """``G``-filtered signal delayed by one sample, row for row aligned with :class:`MatchedDifferentiator`.

    Fed the same batches, both give rows for the same instants.

    Args:
        cutoff_hz: -3 dB frequency of ``G``, Hz.
        rate_hz: sample rate of the uniform grid, Hz.
        channels: number of signals.
        order: Butterworth order of ``G``.
    """

    def __call__(self, t: np.ndarray, x: np.ndarray) -> DelayedSignal:
        """Filter a batch and delay it one sample: ``t`` (N,) s, ``x`` (N, C)."""
        t_all, y = self._filtered(t, x)
        if t_all.shape[0] < 3:
            return DelayedSignal(np.zeros(0), np.zeros((0, self.channels)))
        return DelayedSignal(t_all[1:-1], y[1:-1])


class PositionVelocityDifferentiator:
    """Positions and measured velocities, both through ``G``; acceleration from the velocity.

    For drivers whose joint velocities are usable: outputs the filtered
    position and filtered measured velocity (each delayed one sample) and the
    acceleration as the central difference of the filtered velocity,
    ``(v[n] - v[n-2]) / (2T)``, all referring to instant ``n-1`` like
    :class:`MatchedDifferentiator`.

    Args:
        cutoff_hz: -3 dB frequency of ``G``, Hz.
        rate_hz: sample rate of the uniform grid, Hz.
        channels: number of joints.
        order: Butterworth order of ``G``.
    """

    def __init__(self, cutoff_hz: float, rate_hz: float, channels: int, order: int = 4) -> None:
        self._channels = int(channels)
        self.lowpass = LowPassFilter(cutoff_hz, rate_hz, order, 2 * self._channels)
        self.period_s = 1.0 / float(rate_hz)
        self._window = _ThreePointWindow(self.period_s)

    @property
    def channels(self) -> int:
        """Number of signals filtered (``q`` and ``dq`` each have this many columns)."""
        return self._channels

    def reset(self) -> None:
        """Forget all state (call at a discontinuity of the grid)."""
        self.lowpass.reset()
        self._window.reset()

    def __call__(self, t: np.ndarray, q: np.ndarray, dq: np.ndarray) -> FilteredDerivatives:
        """Filter ``q`` (N, C) and ``dq`` (N, C) at times ``t`` (N,), s."""
        c = self._channels
        q = _as_rows(q, c, "q")
        dq = _as_rows(dq, c, "dq")
        if q.shape[0] != dq.shape[0]:
            raise ValueError(f"q has {q.shape[0]} rows but dq has {dq.shape[0]}")
        t = _as_times(t, q.shape[0])
        t_all, y = self._window.extend(t, self.lowpass(np.hstack([q, dq])))
        if t_all.shape[0] < 3:
            z = np.zeros((0, c))
            return FilteredDerivatives(np.zeros(0), z, z.copy(), z.copy())
        v = y[:, c:]
        ddx = (v[2:] - v[:-2]) * (0.5 / self.period_s)
        return FilteredDerivatives(t_all[1:-1], y[1:-1, :c], v[1:-1], ddx)
