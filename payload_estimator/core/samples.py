"""Sensor-frame samples: the only input the estimation core consumes.

A batch of ``N`` synchronised observations of the payload's motion and of the
wrench it exerts on the force/torque sensor, all expressed in the sensor frame
``S`` (origin at the sensor's measurement point), SI units.

Conventions
-----------
* ``lin_acc_in_sensor``: acceleration of the origin of ``S`` relative to the
  world, expressed in ``S``, **gravity not included** (zero for a sensor at
  rest).
* ``gravity_in_sensor``: the gravity acceleration vector expressed in ``S``
  (``R_world_sensor.T @ [0, 0, -9.81]`` for an upright base).
* ``wrench_in_sensor``: ``[fx, fy, fz, tx, ty, tz]``, the force and the torque
  about the origin of ``S`` that the payload exerts **on the sensor**. For a
  payload at rest this is ``f = m g`` and ``tau = m c x g``.
* ``wrench_information_sqrt`` (optional): per sample a 6 x 6 ``W`` with ``W^T W`` the
  information of that sample's wrench, so that its cost is ``|W (w - Y phi)|²``. None (an F/T
  sensor): every channel alike, ``W = I``. A wrench recovered from joint torques through the
  Jacobian (:mod:`payload_estimator.pipeline.joint_torques`) carries ``W^T W = J S^-1 J^T``:
  the joint-space least-squares cost exactly, rank-deficient at a singular pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SensorSamples", "STANDARD_GRAVITY", "MAX_ABS_VALUE", "MIN_ABS_VALUE"]

STANDARD_GRAVITY = 9.80665
"""Standard acceleration of gravity, m/s²."""

MAX_ABS_VALUE = 1e6
"""Largest magnitude of a measured value, in SI units (m/s², rad/s, rad/s², N, N·m; also rad
for joint positions). No robot or sensor reports a million of any of these: beyond it a value is
a glitch or a unit error, and the statistics, which hold up to fourth powers of the kinematics,
would be swamped by it or overflow. Samples with such a value are dropped like non-finite ones."""

MIN_ABS_VALUE = 1e-30
"""Smallest non-zero magnitude a measured value is taken at, in SI units; smaller ones count as 0.
No sensor resolves 1e-30 of anything, and the solvers multiply values up to eight at a time: with
every value 0 or between this and :data:`MAX_ABS_VALUE`, those products stay within floating
point's normal range (below it they turn denormal, lose their precision and blow solutions up)."""


def _as_rows(x: np.ndarray, width: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1 and x.shape[0] == width:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != width:
        raise ValueError(f"{name} must have shape (N, {width}), got {x.shape}")
    return x


@dataclass(frozen=True)
class SensorSamples:
    """``N`` samples in the sensor frame ``S`` (see the module docstring).

    Attributes:
        t: (N,) sample times, s.
        lin_acc_in_sensor: (N, 3) linear acceleration of the origin of S, gravity excluded, m/s².
        ang_vel_in_sensor: (N, 3) angular velocity of S, rad/s.
        ang_acc_in_sensor: (N, 3) angular acceleration of S, rad/s².
        gravity_in_sensor: (N, 3) gravity acceleration vector in S, m/s².
        wrench_in_sensor: (N, 6) force (N) and torque about the origin of S (N·m)
            exerted by the payload on the sensor.
    """

    t: np.ndarray
    lin_acc_in_sensor: np.ndarray
    ang_vel_in_sensor: np.ndarray
    ang_acc_in_sensor: np.ndarray
    gravity_in_sensor: np.ndarray
    wrench_in_sensor: np.ndarray
    wrench_information_sqrt: np.ndarray | None = None

    def __post_init__(self) -> None:
        t = np.atleast_1d(np.asarray(self.t, dtype=float))
        object.__setattr__(self, "t", t)
        for name, width in (
            ("lin_acc_in_sensor", 3),
            ("ang_vel_in_sensor", 3),
            ("ang_acc_in_sensor", 3),
            ("gravity_in_sensor", 3),
            ("wrench_in_sensor", 6),
        ):
            arr = _as_rows(getattr(self, name), width, name)
            if arr.shape[0] != t.shape[0]:
                raise ValueError(
                    f"{name} has {arr.shape[0]} rows but t has {t.shape[0]} samples"
                )
            object.__setattr__(self, name, arr)
        if self.wrench_information_sqrt is not None:
            W = np.asarray(self.wrench_information_sqrt, dtype=float)
            if W.shape != (t.shape[0], 6, 6):
                raise ValueError(f"wrench_information_sqrt must have shape ({t.shape[0]}, 6, 6), got {W.shape}")
            object.__setattr__(self, "wrench_information_sqrt", W)

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @classmethod
    def empty(cls) -> SensorSamples:
        """A batch with no samples."""
        z3 = np.zeros((0, 3))
        return cls(np.zeros(0), z3, z3, z3, z3, np.zeros((0, 6)))

    @classmethod
    def at_rest(
        cls, t: np.ndarray, gravity_in_sensor: np.ndarray, wrench_in_sensor: np.ndarray
    ) -> SensorSamples:
        """Samples of a sensor held still: zero velocity and acceleration."""
        g = _as_rows(gravity_in_sensor, 3, "gravity_in_sensor")
        z = np.zeros_like(g)
        return cls(t, z, z, z, g, wrench_in_sensor)

    def finite_mask(self) -> np.ndarray:
        """(N,) True where every value of the sample is finite."""
        ok = np.isfinite(self.t) & np.isfinite(self._values()).all(axis=1)
        if self.wrench_information_sqrt is not None:
            ok &= np.isfinite(self.wrench_information_sqrt).all(axis=(1, 2))
        return ok

    def usable_mask(self) -> np.ndarray:
        """Return (N,) True for the samples an estimator may take.

        Those whose stamp is finite and every value finite and at most :data:`MAX_ABS_VALUE`
        in magnitude."""
        in_range = (np.abs(self._values()) <= MAX_ABS_VALUE).all(axis=1)  # False for NaN too
        if self.wrench_information_sqrt is not None:
            in_range &= (np.abs(self.wrench_information_sqrt) <= MAX_ABS_VALUE).all(axis=(1, 2))
        return np.isfinite(self.t) & in_range

    def _arrays(self) -> list[np.ndarray]:
        """Every array of values (not the stamps)."""
        arrays = [self.lin_acc_in_sensor, self.ang_vel_in_sensor, self.ang_acc_in_sensor, self.gravity_in_sensor,
                  self.wrench_in_sensor]
        if self.wrench_information_sqrt is not None:
            arrays.append(self.wrench_information_sqrt)
        return arrays

    def all_usable(self) -> bool:
        """Whether every sample is usable (:meth:`usable_mask`), from whole-array extremes: no per-sample mask."""
        if len(self.t) == 0:
            return True
        # max and min are NaN where a NaN is: the comparisons fail for it too
        return bool(np.isfinite(self.t).all()) and all(
            a.max() <= MAX_ABS_VALUE and a.min() >= -MAX_ABS_VALUE for a in self._arrays())

    def usable(self) -> tuple[SensorSamples, int]:
        """Return the usable samples (:meth:`usable_mask`), tiny values zeroed (:meth:`with_tiny_values_zeroed`).

        And how many were dropped. Whole-array tests first (extremes, counts): the per-sample masks are
        formed only when a value is out of range or tiny."""
        if len(self.t) == 0:
            return self, 0
        arrays = self._arrays()
        if self.all_usable():
            kept, dropped = self, 0
        else:
            ok = self.usable_mask()
            kept, dropped = self.select(ok), int(ok.size - np.count_nonzero(ok))
        # every value below the smallest magnitude is an exact 0, or some are tiny
        if all(np.count_nonzero(np.abs(a) < MIN_ABS_VALUE) == np.count_nonzero(a == 0.0) for a in arrays[:5]):
            return kept, dropped
        return kept.with_tiny_values_zeroed(), dropped

    def with_tiny_values_zeroed(self) -> SensorSamples:
        """Return the same samples with every value smaller than :data:`MIN_ABS_VALUE` in magnitude set to 0.

        Returns ``self`` when there is none."""
        values = self._values()
        tiny = (np.abs(values) < MIN_ABS_VALUE) & (values != 0.0)
        if not tiny.any():
            return self
        v = np.where(tiny, 0.0, values)
        return SensorSamples(self.t, v[:, 0:3], v[:, 3:6], v[:, 6:9], v[:, 9:12], v[:, 12:18],
                             self.wrench_information_sqrt)

    def _values(self) -> np.ndarray:
        """(N, 18) every value but the stamp."""
        return np.hstack(
            (
                self.lin_acc_in_sensor,
                self.ang_vel_in_sensor,
                self.ang_acc_in_sensor,
                self.gravity_in_sensor,
                self.wrench_in_sensor,
            )
        )

    def select(self, index: np.ndarray | slice) -> SensorSamples:
        """A new batch holding the samples picked by a boolean mask, indices or a slice."""
        return SensorSamples(
            self.t[index],
            self.lin_acc_in_sensor[index],
            self.ang_vel_in_sensor[index],
            self.ang_acc_in_sensor[index],
            self.gravity_in_sensor[index],
            self.wrench_in_sensor[index],
            None if self.wrench_information_sqrt is None else self.wrench_information_sqrt[index],
        )

    def whitened(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """Return ``(W Y, W w, weighted)``: the regressor and the wrench, whitened.

        The regressor ``Y`` (N, 6, k) of these samples and their wrench are each multiplied by
        the sample's :attr:`wrench_information_sqrt` (unchanged without one; ``weighted`` says
        whether there is one). The rows then have independent, equal noise."""
        W = self.wrench_information_sqrt
        if W is None:
            return Y, self.wrench_in_sensor, False
        return W @ Y, np.einsum("nij,nj->ni", W, self.wrench_in_sensor), True

    @staticmethod
    def concatenate(batches: list[SensorSamples]) -> SensorSamples:
        """Join batches in the order given."""
        if not batches:
            return SensorSamples.empty()
        info = None
        if any(b.wrench_information_sqrt is not None for b in batches):
            info = np.concatenate([np.broadcast_to(np.eye(6), (len(b), 6, 6)) if b.wrench_information_sqrt is None
                                   else b.wrench_information_sqrt for b in batches])
        return SensorSamples(
            np.concatenate([b.t for b in batches]),
            np.concatenate([b.lin_acc_in_sensor for b in batches]),
            np.concatenate([b.ang_vel_in_sensor for b in batches]),
            np.concatenate([b.ang_acc_in_sensor for b in batches]),
            np.concatenate([b.gravity_in_sensor for b in batches]),
            np.concatenate([b.wrench_in_sensor for b in batches]),
            info,
        )

    def dynamism(self, n1: float = 1.0, n2: float = 1.0, n3: float = 0.5) -> np.ndarray:
        """Dynamism ``nu`` of each sample, Nadeau et al.'s eq. (4).

        ``nu = || [|a|/n1, |alpha|/n2, |omega|/n3] ||²`` with Nadeau et al.'s
        defaults (n1 = n2 = 1, n3 = 0.5). Returns an (N,) array.
        """
        def sq(v: np.ndarray) -> np.ndarray:
            return np.einsum("ij,ij->i", v, v)

        return (
            sq(self.lin_acc_in_sensor) / n1**2
            + sq(self.ang_acc_in_sensor) / n2**2
            + sq(self.ang_vel_in_sensor) / n3**2
        )
