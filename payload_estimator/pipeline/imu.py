"""Motion of the force/torque sensor frame ``S`` from an IMU rigidly mounted near it.

Frames and relations
--------------------
``S`` is the F/T sensor frame, ``I`` the IMU frame, both fixed to the same
rigid body. ``R_sensor_imu`` rotates IMU components into ``S`` and
``p_sensor_imu`` is the vector from the origin of ``S`` to the IMU, in ``S``.

A ``sensor_msgs/Imu`` gives ``angular_velocity`` (rad/s, in I) and
``linear_acceleration`` (m/s², in I), which is the *specific force*
``f = a_imu - g``: it reads +9.81 m/s² upward at rest. Then, in ``S``::

    omega = R_sensor_imu @ omega_imu
    alpha = d(omega)/dt                      (central difference of filtered omega)
    a_imu = R_sensor_imu @ f + g_S           (acceleration of the IMU point, gravity excluded)
    a_S   = a_imu - alpha x p - omega x (omega x p)

with ``p = p_sensor_imu``, since the IMU point moves as
``a_imu = a_S + alpha x p + omega x (omega x p)`` on the rigid body.

Filtering
---------
All outputs go through the pipeline's low-pass ``G`` and come out one sample
behind with the same phase (see :mod:`payload_estimator.pipeline.filters`):
``omega`` and its central difference ``alpha``, the per-sample signal
``R f + g_S - omega x (omega x p)`` and ``g_S`` all go through one
:class:`MatchedDifferentiator`; then
``a_S = G(R f + g_S - omega x (omega x p)) - alpha x p``.
Filtering the centripetal term before the product keeps ``a_S`` exactly the
``G``-filtered acceleration up to the central-difference error.

Gravity
-------
With joint kinematics, pass the unfiltered per-sample ``gravity_in_sensor``
on the same grid; it is filtered and delayed here like everything else.
Without it, :class:`GravityTracker` estimates it: a complementary filter that
propagates ``g_S`` with the gyro and pulls it towards ``-R f`` (rescaled to
``|g|``) with gain ``attitude_gain`` (1/s), i.e. a time constant
``1 / attitude_gain`` for small tilt errors. A slower gain rejects the
motion's accelerations better (they leak into the tilt roughly as
``|a| / (|g| * omega_motion / attitude_gain)`` for an oscillation at
``omega_motion`` rad/s); a faster gain forgets gyro drift sooner.

Not handled here: gyro and accelerometer biases (calibrate them, or estimate
them at rest, before this stage), IMU axis misalignment beyond ``R_sensor_imu``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.filters import MatchedDifferentiator

__all__ = ["ImuMount", "ImuMotion", "GravityTracker", "ImuProcessor"]
"""m/s²."""


@dataclass(frozen=True)
class ImuMount:
    """Pose of the IMU in the sensor frame ``S``.

    Attributes:
        R_sensor_imu: (3, 3) rotation taking IMU-frame components to S components.
        p_sensor_imu: (3,) vector from the origin of S to the IMU, in S, m.
    """

    R_sensor_imu: np.ndarray
    p_sensor_imu: np.ndarray

    def __post_init__(self) -> None:
        R = np.array(self.R_sensor_imu, dtype=float)
        p = np.array(self.p_sensor_imu, dtype=float).reshape(-1)
        if R.shape != (3, 3) or not np.all(np.isfinite(R)):
            raise ConfigurationError(f"R_sensor_imu must be a finite (3, 3) matrix, got shape {R.shape}")
        if not (np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0):
            raise ConfigurationError("R_sensor_imu must be a rotation matrix (orthonormal, det +1)")
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ConfigurationError(f"p_sensor_imu must be a finite 3-vector, got shape {p.shape}")
        R.setflags(write=False)
        p.setflags(write=False)
        object.__setattr__(self, "R_sensor_imu", R)
        object.__setattr__(self, "p_sensor_imu", p)

    @classmethod
    def identity(cls) -> ImuMount:
        """An IMU at the sensor origin with the sensor's axes."""
        return cls(np.eye(3), np.zeros(3))


@dataclass(frozen=True)
class ImuMotion:
    """Filtered motion of ``S``, one sample behind the IMU input, SI units, all in S.

    Attributes:
        t: (M,) s.
        ang_vel_in_sensor: (M, 3) rad/s.
        ang_acc_in_sensor: (M, 3) rad/s².
        lin_acc_in_sensor: (M, 3) acceleration of the origin of S, gravity excluded, m/s².
        gravity_in_sensor: (M, 3) gravity acceleration in S, m/s².
    """

    t: np.ndarray
    ang_vel_in_sensor: np.ndarray
    ang_acc_in_sensor: np.ndarray
    lin_acc_in_sensor: np.ndarray
    gravity_in_sensor: np.ndarray

    def __len__(self) -> int:
        return int(self.t.shape[0])


def _rows3(x: np.ndarray, name: str, n: int | None = None) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1 and x.shape[0] == 3:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != 3 or (n is not None and x.shape[0] != n):
        want = f"({n}, 3)" if n is not None else "(N, 3)"
        raise ValueError(f"{name} must have shape {want}, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or inf")
    return x


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (N, 3) arrays (either may be a single (3,) vector).

    ``np.cross`` costs ~10 us of overhead per call on small batches."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


class GravityTracker:
    """Complementary filter for the gravity vector in a body frame from gyro and specific force.

    Propagation: ``dg/dt = -omega x g`` (gravity is fixed in the world, the body
    turns with ``omega``), integrated exactly over each step for the mean of
    the two angular velocities. Correction: blend towards ``-f |g| / |f|`` with
    weight ``1 - exp(-attitude_gain T)`` per step, then rescale to ``|g|``.
    The state starts from the first specific-force sample (``-f`` rescaled).

    Args:
        rate_hz: sample rate of the uniform grid, Hz.
        gravity_magnitude: ``|g|``, m/s².
        attitude_gain: correction rate, 1/s (time constant ``1/attitude_gain`` s); 0 = gyro only.
    """

    _MIN_SPECIFIC_FORCE = 1e-3  # m/s²; below this a sample says nothing about the vertical

    def __init__(
        self, rate_hz: float, gravity_magnitude: float = STANDARD_GRAVITY, attitude_gain: float = 0.2
    ) -> None:
        if not rate_hz > 0:
            raise ConfigurationError(f"rate_hz must be positive, got {rate_hz}")
        if not gravity_magnitude > 0:
            raise ConfigurationError(f"gravity_magnitude must be positive, got {gravity_magnitude}")
        if not attitude_gain >= 0:
            raise ConfigurationError(f"attitude_gain must be >= 0 (1/s), got {attitude_gain}")
        self.period_s = 1.0 / float(rate_hz)
        self.gravity_magnitude = float(gravity_magnitude)
        self.attitude_gain = float(attitude_gain)
        self._blend = 1.0 - np.exp(-self.attitude_gain * self.period_s)
        self._g: np.ndarray | None = None
        self._omega_prev: np.ndarray | None = None

    @property
    def time_constant_s(self) -> float:
        """``1 / attitude_gain``, s (inf for a gyro-only tracker)."""
        return np.inf if self.attitude_gain == 0 else 1.0 / self.attitude_gain

    def reset(self) -> None:
        """Forget the gravity estimate and the last angular velocity."""
        self._g = None
        self._omega_prev = None

    def set_state(self, gravity_in_body: np.ndarray, ang_vel_in_body: np.ndarray) -> None:
        """Overwrite the state with a known gravity vector and the latest angular velocity."""
        self._g = np.array(gravity_in_body, dtype=float).reshape(3)
        self._omega_prev = np.array(ang_vel_in_body, dtype=float).reshape(3)

    def _measured(self, f: np.ndarray) -> np.ndarray | None:
        norm = float(np.linalg.norm(f))
        if norm < self._MIN_SPECIFIC_FORCE:
            return None
        return f * (-self.gravity_magnitude / norm)

    def __call__(self, ang_vel_in_body: np.ndarray, specific_force_in_body: np.ndarray) -> np.ndarray:
        """Return gravity in the body frame (N, 3), m/s², one row per sample.

        Args:
            ang_vel_in_body: (N, 3) angular velocity ``omega`` in the body frame, rad/s.
            specific_force_in_body: (N, 3) specific force ``f`` in the body frame, m/s².
        """
        omega = _rows3(ang_vel_in_body, "ang_vel_in_body")
        f = _rows3(specific_force_in_body, "specific_force_in_body", omega.shape[0])
        n = omega.shape[0]
        out = np.empty((n, 3))
        if n == 0:
            return out
        start = 0
        if self._g is None or self._omega_prev is None:  # set and reset together
            g0 = self._measured(f[0])
            self._g = g0 if g0 is not None else np.array([0.0, 0.0, -self.gravity_magnitude])
            self._omega_prev = omega[0].copy()
            out[0] = self._g
            start = 1
        prev = np.vstack([self._omega_prev[None, :], omega[:-1]])
        rotvecs = -0.5 * (prev[start:] + omega[start:]) * self.period_s
        # SciPy < 1.11 has no empty Rotation (a first batch of one sample leaves no step)
        A = Rotation.from_rotvec(rotvecs).as_matrix() if len(rotvecs) else np.empty((0, 3, 3))
        # The recursion is sequential; plain floats are ~4x faster than numpy on 3-vectors.
        beta, mag = self._blend, self.gravity_magnitude
        f_norm = np.linalg.norm(f, axis=1)
        # measured gravity direction, scaled by the blend weight (0 where |f| is too small)
        weight = np.where(f_norm >= self._MIN_SPECIFIC_FORCE, beta, 0.0)
        m = f * (-mag * weight / np.maximum(f_norm, self._MIN_SPECIFIC_FORCE))[:, None]
        gx, gy, gz = (float(c) for c in self._g)
        rows = []
        for a, (mx, my, mz), w in zip(A.tolist(), m[start:].tolist(), weight[start:].tolist()):
            (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = a
            gx, gy, gz = (
                a00 * gx + a01 * gy + a02 * gz,
                a10 * gx + a11 * gy + a12 * gz,
                a20 * gx + a21 * gy + a22 * gz,
            )
            keep = 1.0 - w
            gx, gy, gz = keep * gx + mx, keep * gy + my, keep * gz + mz
            scale = mag / math.sqrt(gx * gx + gy * gy + gz * gz)
            gx, gy, gz = gx * scale, gy * scale, gz * scale
            rows.append((gx, gy, gz))
        if rows:
            out[start:] = rows
        self._g = np.array([gx, gy, gz])
        self._omega_prev = omega[-1].copy()
        return out


class ImuProcessor:
    """IMU samples on a uniform grid -> filtered motion of the sensor frame ``S``.

    Args:
        mount: pose of the IMU in S.
        rate_hz: rate of the uniform grid, Hz.
        cutoff_hz: cutoff of the pipeline low-pass ``G``, Hz.
        order: Butterworth order of ``G``.
        gravity_magnitude: ``|g|`` for the gravity tracker, m/s².
        attitude_gain: gravity tracker correction rate, 1/s (time constant 1/gain).
    """

    def __init__(
        self,
        mount: ImuMount,
        rate_hz: float,
        cutoff_hz: float,
        order: int = 4,
        gravity_magnitude: float = STANDARD_GRAVITY,
        attitude_gain: float = 0.2,
    ) -> None:
        self.mount = mount
        self.rate_hz = float(rate_hz)
        # One filter for [omega, R f + g - omega x (omega x p), g]: the derivative of the
        # first three columns is alpha; the others are only filtered and delayed (the
        # same rows as a MatchedDelay would give, for one scipy call instead of two).
        self._filter = MatchedDifferentiator(cutoff_hz, rate_hz, channels=9, order=order)
        self.gravity_tracker = GravityTracker(rate_hz, gravity_magnitude, attitude_gain)

    def reset(self) -> None:
        """Forget filter and attitude state (call at a discontinuity of the grid)."""
        self._filter.reset()
        self.gravity_tracker.reset()

    def process(
        self,
        t: np.ndarray,
        gyro_in_imu: np.ndarray,
        specific_force_in_imu: np.ndarray,
        gravity_in_sensor: np.ndarray | None = None,
    ) -> ImuMotion:
        """Filter a batch of IMU samples.

        Args:
            t: (N,) grid times, s.
            gyro_in_imu: (N, 3) angular velocity in the IMU frame, rad/s.
            specific_force_in_imu: (N, 3) accelerometer reading (``a - g``) in the IMU frame, m/s².
            gravity_in_sensor: (N, 3) unfiltered gravity in S at ``t`` (from joint
                kinematics), m/s²; None to estimate it with the gravity tracker.

        Returns:
            The motion of S one sample behind, ``G``-filtered (rows appear once
            three samples have been seen since the last reset).
        """
        t = np.atleast_1d(np.asarray(t, dtype=float))
        n = t.shape[0]
        gyro = _rows3(gyro_in_imu, "gyro_in_imu", n)
        f_imu = _rows3(specific_force_in_imu, "specific_force_in_imu", n)
        R = self.mount.R_sensor_imu
        p = self.mount.p_sensor_imu
        omega = gyro @ R.T
        f = f_imu @ R.T
        if gravity_in_sensor is None:
            g = self.gravity_tracker(omega, f)
        else:
            g = _rows3(gravity_in_sensor, "gravity_in_sensor", n)
            if n:
                self.gravity_tracker.set_state(g[-1], omega[-1])
        centripetal = _cross(omega, _cross(omega, p))
        d = self._filter(t, np.hstack([omega, f + g - centripetal, g]))
        ang_acc = d.dx[:, :3]
        lin_acc = d.x[:, 3:6] - _cross(ang_acc, p)
        return ImuMotion(d.t, d.x[:, :3], ang_acc, lin_acc, d.x[:, 6:])
