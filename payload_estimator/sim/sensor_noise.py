"""The simulated sensors' noise: Gaussian noise per signal, and the F/T sensor's offset and drift.

The F/T noise levels are those of :func:`~payload_estimator.core.noise.get_noise` (Table II);
joint and IMU noise are nominal. Forces in N, torques in N·m, angles in rad, times in s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from payload_estimator.core.noise import get_noise
from payload_estimator.errors import ConfigurationError

__all__ = ["SensorNoise", "FtOffset", "FT_BIAS_FRACTION", "FT_DRIFT_RATE_FRACTION", "FT_DRIFT_WALK_FRACTION"]


@dataclass(frozen=True)
class SensorNoise:
    """Standard deviations of the zero-mean Gaussian measurement noise, per axis.

    Attributes:
        force: N. torque: N·m (Nadeau et al.'s Table II).
        joint_position: rad (encoder). joint_velocity: rad/s (as reported by a
            Franka driver). joint_effort: N·m.
        gyro: rad/s. accelerometer: m/s².
    """

    force: float
    torque: float
    joint_position: float = 2e-5
    joint_velocity: float = 1e-3
    joint_effort: float = 0.05
    gyro: float = 2e-3
    accelerometer: float = 2e-2

    @classmethod
    def from_level(cls, level: str) -> SensorNoise:
        """Table II ``level`` for the F/T sensor, nominal joint and IMU noise; all 0 for "none"."""
        ft = get_noise(level)
        if level == "none":
            return cls(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return cls(ft.force, ft.torque)


FT_BIAS_FRACTION = 0.03
"""Default F/T offset: std per axis as a fraction of the payload weight (torques: times 5 cm)."""
FT_DRIFT_RATE_FRACTION = 1e-3
"""Default drift: std of the linear drift rate per axis, fraction of the weight per second."""
FT_DRIFT_WALK_FRACTION = 5e-4
"""Default drift: random-walk intensity per axis, fraction of the weight per sqrt(s)."""
_TORQUE_ARM = 0.05  # m, turns force-like bias scales into torques


@dataclass(frozen=True, eq=False)
class FtOffset:
    """The F/T sensor's offset: a constant, plus optionally a linear drift and a random walk.

    Attributes:
        constant: (6,) offset at the start [N, N·m].
        scale: (6,) the payload weight (at least 1 N) per axis, times 5 cm for the torques: the
            unit of the fractions :data:`FT_BIAS_FRACTION`, :data:`FT_DRIFT_RATE_FRACTION` and
            :data:`FT_DRIFT_WALK_FRACTION`.
        rate: (6,) linear drift, per s, or None without drift.
        drift: how many times the default drift (rate and random walk) the sensor has.
    """

    constant: np.ndarray
    scale: np.ndarray
    rate: np.ndarray | None
    drift: float = 1.0

    @classmethod
    def draw(cls, rng: np.random.Generator, weight: float, ft_bias: ArrayLike | None,
             ft_drift: bool | float) -> FtOffset:
        """Return the constant offset and the drift rate, drawn from ``rng`` in that order.

        The constant is given, or drawn with std :data:`FT_BIAS_FRACTION` of ``weight`` (N); the
        drift rate only with ``ft_drift``: True, or a multiple of the default drift (the same draws,
        scaled)."""
        scale = max(weight, 1.0) * np.array([1.0, 1.0, 1.0, _TORQUE_ARM, _TORQUE_ARM, _TORQUE_ARM])
        b0 = rng.normal(0.0, FT_BIAS_FRACTION, 6) * scale if ft_bias is None else np.asarray(ft_bias, float)
        if b0.shape != (6,):
            raise ConfigurationError("ft_bias must have 6 entries")
        drift = float(ft_drift)
        if not (np.isfinite(drift) and drift >= 0.0):
            raise ConfigurationError(f"ft_drift must be a non-negative multiple of the default drift, got {ft_drift!r}")
        rate = rng.normal(0.0, FT_DRIFT_RATE_FRACTION, 6) * scale * drift if drift > 0.0 else None
        return cls(b0, scale, rate, drift)

    def series(
        self, rng: np.random.Generator, t: np.ndarray, t_origin: float, walk: tuple[float, np.ndarray] | None = None
    ) -> tuple[np.ndarray, tuple[float, np.ndarray]]:
        """(M, 6) offset at times ``t`` (M,), s, and the random walk's state after them.

        The drift runs from ``t_origin``; ``walk`` is the state ``(t, cumulated (6,))`` returned by
        the previous call for a series continued in chunks (None: the walk starts at ``t[0]``).
        Draws the walk's (M, 6) normal increments from ``rng`` (nothing without drift).
        """
        t = np.asarray(t, dtype=float)
        bias = np.tile(self.constant, (len(t), 1))
        if self.rate is None or len(t) == 0:
            return bias, walk if walk is not None else (float(t_origin), np.zeros(6))
        t_prev, cum_prev = walk if walk is not None else (float(t[0]), np.zeros(6))
        dt = np.diff(t, prepend=t_prev)
        steps = rng.normal(0.0, 1.0, (len(t), 6)) * np.sqrt(dt)[:, None]
        cum = np.cumsum(steps, axis=0) + cum_prev if walk is not None else np.cumsum(steps, axis=0)
        bias += np.outer(t - t_origin, self.rate) + cum * (FT_DRIFT_WALK_FRACTION * self.drift) * self.scale
        return bias, (float(t[-1]), cum[-1].copy())

