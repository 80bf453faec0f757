"""The Fourier-series motion of an identification: a joint trajectory that starts and ends at rest.

**The trajectory** (:class:`FourierExcitation`): every joint follows a finite Fourier series
(Swevers et al. 1997, the usual excitation in Leboutet et al.'s survey) in a warped time ``tau``::

    q_i(t) = q_start_i + sum_k  a_ik sin(k w tau(t)) + b_ik (cos(k w tau(t)) - 1),   k in H

``tau`` runs at the speed factor ``e(t) = dtau/dt`` that rises from 0 to 1 along a
minimum-jerk blend over the first ``ramp`` seconds and falls back to 0 over the last ones, so
the motion starts and ends at rest with zero acceleration and a continuous jerk. The series
is periodic in ``tau`` with period ``tau(duration) = duration - ramp`` (``w`` is 2 pi over it),
and ``sin(0) = cos(0) - 1 = 0``: the motion starts *and ends* exactly at ``q_start``. The
harmonics ``H`` reach up to :data:`MAX_FREQUENCY_HZ`, well inside the pipeline's 10 Hz low-pass
and a joint controller's tracking bandwidth; a long motion keeps :data:`MAX_HARMONICS` of them,
spread geometrically from the fundamental (the design's cost grows with their number).

Units: rad, s.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FourierExcitation", "fourier_harmonics", "MAX_FREQUENCY_HZ", "MAX_HARMONICS"]

MAX_FREQUENCY_HZ = 2.0
"""Highest harmonic of a designed motion, Hz: angular accelerations grow with the frequency
squared, a joint controller tracks a few Hz and the pipeline low-passes at 10 Hz. Against 1.2 and
1.6 Hz, 2 Hz brought the Panda's full convergence (claw hammer, PMD, 3 noise seeds) from 1.8-2.8 s
to 1.8-2.4 s at the same inertia error (``benchmarks/excitation.py``)."""
MAX_HARMONICS = 6
"""Most harmonics per joint in a designed motion."""


# ----------------------------------------------------------------- time warp
def _blend(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return minimum-jerk ``s(x) = 10x³ - 15x⁴ + 6x⁵``, its first two derivatives and its integral from 0.

    ``x`` is clipped to [0, 1]."""
    x = np.clip(x, 0.0, 1.0)
    x2 = x * x
    s = x2 * x * (10.0 + x * (-15.0 + 6.0 * x))
    ds = 30.0 * x2 * (1.0 - x) ** 2
    dds = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x)
    integral = x2 * x2 * (2.5 + x * (-3.0 + x))
    return s, ds, dds, integral


def _warp(t: np.ndarray, duration: float, ramp: float) -> tuple[np.ndarray, ...]:
    """Return the warped time and the speed factor, ``(tau, e, de/dt, d²e/dt²)`` at ``t``.

    The speed factor ``e`` rises over ``[0, ramp]``, is 1, and falls over
    ``[duration - ramp, duration]``; 0 outside ``[0, duration]``."""
    tc = np.clip(t, 0.0, duration)
    s_in, ds_in, dds_in, int_in = _blend(tc / ramp)
    s_out, ds_out, dds_out, int_out = _blend((duration - tc) / ramp)
    rising, falling = tc < ramp, tc > duration - ramp
    e = np.where(rising, s_in, np.where(falling, s_out, 1.0))
    de = np.where(rising, ds_in / ramp, np.where(falling, -ds_out / ramp, 0.0))
    dde = np.where(rising, dds_in / ramp**2, np.where(falling, dds_out / ramp**2, 0.0))
    tau_end = duration - ramp
    tau = np.where(rising, ramp * int_in,
                   np.where(falling, tau_end - ramp * int_out, tc - 0.5 * ramp))
    inside = (t >= 0.0) & (t <= duration)
    return tau, np.where(inside, e, 0.0), np.where(inside, de, 0.0), np.where(inside, dde, 0.0)


# ---------------------------------------------------------------- trajectory
class FourierExcitation:
    """Finite Fourier series in warped time about ``q_start`` (see the module docstring).

    Args:
        q_start: (n,) start and end configuration, rad.
        coefficients: (2H, n) ``[a_k for k in H, b_k for k in H]`` per joint, rad.
        duration: s. ramp: start/stop blend length, s (at most half the duration).
        harmonics: (H,) the harmonic numbers ``k`` (positive integers; default ``1..H``).
        joint_names: the joints, in column order.
    """

    name = "optimal"

    def __init__(self, q_start: np.ndarray, coefficients: np.ndarray, duration: float, ramp: float,
                 harmonics: np.ndarray | None = None, joint_names: tuple[str, ...] = ()) -> None:
        self.q_start = np.array(q_start, dtype=float).reshape(-1)
        self.coefficients = np.array(coefficients, dtype=float)
        if self.coefficients.ndim != 2 or self.coefficients.shape[1] != self.q_start.size \
                or self.coefficients.shape[0] % 2:
            raise ValueError("coefficients must be (2H, n) for n joints")
        if not 0.0 < ramp <= 0.5 * duration:
            raise ValueError("the ramp must be positive and at most half the duration")
        H = self.coefficients.shape[0] // 2
        k = np.arange(1, H + 1) if harmonics is None else np.asarray(harmonics, dtype=int).reshape(-1)
        if k.shape != (H,) or np.any(k < 1):
            raise ValueError(f"harmonics must be {H} positive integers")
        self.harmonics = k
        self._duration = float(duration)
        self.ramp = float(ramp)
        self.omega = 2.0 * np.pi / (self._duration - self.ramp)
        self.joint_names = tuple(joint_names)

    @property
    def duration(self) -> float:
        """End of the motion, s."""
        return self._duration

    def basis(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return the (N, 2K) matrices ``B0..B3`` that map the coefficients to the motion at ``t``.

        ``q - q_start = B0 C``, ``dq = B1 C``, ``ddq = B2 C``, jerk ``= B3 C`` for the coefficients
        ``C`` (2K, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        tau, e, de, dde = _warp(t, self._duration, self.ramp)
        kw = self.omega * self.harmonics
        phase = np.outer(tau, kw)
        sin, cos = np.sin(phase), np.cos(phase)
        # derivatives in tau of [sin(kw tau), cos(kw tau) - 1]
        f0 = np.hstack([sin, cos - 1.0])
        f1 = np.hstack([kw * cos, -kw * sin])
        f2 = np.hstack([-(kw**2) * sin, -(kw**2) * cos])
        f3 = np.hstack([-(kw**3) * cos, (kw**3) * sin])
        e_, de_, dde_ = e[:, None], de[:, None], dde[:, None]
        return (f0, f1 * e_, f2 * e_**2 + f1 * de_,
                f3 * e_**3 + 3.0 * f2 * e_ * de_ + f1 * dde_)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n)."""
        B0, B1, B2, _ = self.basis(t)
        C = self.coefficients
        return self.q_start + B0 @ C, B1 @ C, B2 @ C

    def jerk(self, t: np.ndarray) -> np.ndarray:
        """(N, n) joint jerks at ``t``, rad/s³."""
        return self.basis(t)[3] @ self.coefficients

    def scaled(self, factor: float) -> FourierExcitation:
        """The same motion with every excursion multiplied by ``factor``."""
        return FourierExcitation(self.q_start, factor * self.coefficients, self._duration, self.ramp,
                                 self.harmonics, self.joint_names)


def fourier_harmonics(duration: float, ramp: float, max_frequency_hz: float = MAX_FREQUENCY_HZ,
                      max_harmonics: int = MAX_HARMONICS) -> np.ndarray:
    """Return the harmonic numbers up to ``max_frequency_hz`` for a series of period ``duration - ramp``.

    All of them, or ``max_harmonics`` spread geometrically from the fundamental."""
    top = max(1, int(np.floor(max_frequency_hz * (duration - ramp))))
    if top <= max_harmonics:
        return np.arange(1, top + 1)
    k = np.unique(np.round(np.geomspace(1, top, max_harmonics)).astype(int))
    while len(k) < max_harmonics:  # rounding merged low ones: add the next free numbers
        k = np.unique(np.append(k, np.setdiff1d(np.arange(1, top + 1), k)[0]))
    return k
