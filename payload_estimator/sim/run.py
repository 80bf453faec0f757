"""One simulated robot run: measured signals, ground truth, and NPZ save/load.

Every array is numpy, SI units (s, rad, rad/s, N·m, N, m/s²). Frames:

* ``S`` (:attr:`SimulatedRun.sensor_frame`): the force/torque sensor frame. The
  wrench is the force and the torque about the origin of ``S`` that the
  payload exerts **on the sensor**, components in ``S`` (the convention of
  :mod:`payload_estimator.core.samples`).
* ``I`` (:attr:`SimulatedRun.imu_frame`): the IMU frame. The gyro gives the
  angular velocity of ``I`` relative to the world, and the accelerometer the
  specific force ``a - g`` of its origin (``+9.81`` m/s² "up" at rest), both
  in ``I``.

Three clocks: joint states (``joint_t``), wrench (``wrench_t``, possibly a
lower rate) and IMU (``imu_t``, empty without an IMU). A file written by
:meth:`SimulatedRun.save` holds every field under its own name; strings are
0-d string arrays, ``joint_names`` a 1-d string array and a missing IMU frame
the empty string.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from os import PathLike

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import InputError
from payload_estimator.files import atomic_path

__all__ = ["SimulatedRun", "FORMAT"]

FORMAT = "payload_estimator.SimulatedRun/1"
"""Tag stored in every file under the key ``_format``."""

_STRINGS = ("robot", "urdf", "sensor_frame", "imu_frame", "payload_name", "trajectory", "noise", "effort_model",
            "true_urdf")
_FLOATS = ("rate_hz", "wrench_rate_hz", "physics_rate_hz")
_INTS = ("seed", "torque_clipped_steps")


@dataclass(frozen=True, eq=False)
class SimulatedRun:
    """Signals of one simulated run (see the module docstring for frames and units).

    Measured (noisy):
        joint_t: (N,) s. joint_q: (N, n) rad. joint_dq: (N, n) rad/s.
        joint_effort: (N, n) the joint-torque readings, N·m: ``effort_scale * true_joint_torque``
            plus noise of std ``effort_noise_std``.
        wrench_t: (M,) s. wrench_in_sensor: (M, 6) [f (N), tau (N·m)] in S,
            with noise, bias and drift.
        imu_t: (K,) s. imu_gyro_in_imu: (K, 3) rad/s.
        imu_specific_force_in_imu: (K, 3) m/s². All empty without an IMU.

    Truth:
        payload_name: catalogue name (or ``"custom"``).
        payload_phi: (10,) inertial parameters in S, in the order of :class:`InertialParameters`
            (about the origin of S).
        true_ft_bias: (M, 6) the offset added to each wrench sample.
        true_q, true_dq, true_ddq: (N, n) the simulator's joint state and
            acceleration at ``joint_t``, noise-free: the positions, and the speed and acceleration of
            the smooth motion through them (their central and second differences at the physics
            rate, :mod:`payload_estimator.sim.stepper`).
        true_wrench_in_sensor: (M, 6) noise-free, bias-free wrench.
        true_joint_torque: (N, n) the motors' torque (rigid body, payload and friction), N·m.
        true_joint_friction: (N, n) its part against friction (same sign as the speed), N·m;
            empty (0, n) for a frictionless arm.
        true_urdf: the URDF of the arm simulated when it differs from ``urdf`` (a model
            mismatch), else "".

    Metadata:
        robot, urdf (the exact URDF simulated), sensor_frame, imu_frame (None
        without an IMU), joint_names (column order of the joint arrays),
        trajectory, noise (level name), seed, rate_hz (joint and IMU rate),
        wrench_rate_hz, physics_rate_hz (integration rate),
        tracking_error_max (n,) max |q_ref - q| over the run, rad,
        torque_clipped_steps (integration steps where a torque hit its limit),
        effort_model: the joint-torque sensor's name ("" for the applied torque plus nominal
        noise), effort_noise_std (n,) N·m and effort_scale (n,) (empty when a file lacks them),
        effort_load_friction (n,) the load-dependent Coulomb coefficient ``mu`` of the simulated friction
        (empty: none).

    A work cycle (the payload changes, contacts push on it; empty otherwise):
        truth_change_t: (K,) s, when the gripper's content changes; ``payload_phi`` is what it
            holds first, ``truth_phis`` (K, 10) what it holds from each change on
            (:meth:`phi_at`; zeros: an empty gripper).
        contact_spans: (C, 2) [start, end) s of each external force on the payload (:meth:`in_contact`).
    """

    robot: str
    urdf: str
    sensor_frame: str
    imu_frame: str | None
    joint_names: tuple[str, ...]
    joint_t: np.ndarray
    joint_q: np.ndarray
    joint_dq: np.ndarray
    joint_effort: np.ndarray
    wrench_t: np.ndarray
    wrench_in_sensor: np.ndarray
    imu_t: np.ndarray
    imu_gyro_in_imu: np.ndarray
    imu_specific_force_in_imu: np.ndarray
    payload_name: str
    payload_phi: np.ndarray
    true_ft_bias: np.ndarray
    true_q: np.ndarray
    true_dq: np.ndarray
    true_ddq: np.ndarray
    true_wrench_in_sensor: np.ndarray
    trajectory: str
    noise: str
    seed: int
    rate_hz: float
    wrench_rate_hz: float
    physics_rate_hz: float = 0.0
    tracking_error_max: np.ndarray = field(default_factory=lambda: np.zeros(0))
    torque_clipped_steps: int = 0
    truth_change_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    truth_phis: np.ndarray = field(default_factory=lambda: np.zeros((0, 10)))
    contact_spans: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    true_joint_torque: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    true_joint_friction: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    effort_model: str = ""
    effort_noise_std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    effort_scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    true_urdf: str = ""
    effort_load_friction: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        object.__setattr__(self, "joint_names", tuple(str(n) for n in self.joint_names))
        for name in (*_ARRAY_SHAPES, "payload_phi", "tracking_error_max", "effort_noise_std", "effort_scale",
                     "effort_load_friction"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        object.__setattr__(self, "truth_change_t", np.asarray(self.truth_change_t, dtype=float).reshape(-1))
        object.__setattr__(self, "truth_phis", np.asarray(self.truth_phis, dtype=float).reshape(-1, 10))
        object.__setattr__(self, "contact_spans", np.asarray(self.contact_spans, dtype=float).reshape(-1, 2))
        if len(self.truth_phis) != len(self.truth_change_t) or np.any(np.diff(self.truth_change_t) <= 0):
            raise ValueError("truth_change_t must increase and have one row of truth_phis per change")
        n = len(self.joint_names)
        rows = {"N": len(self.joint_t), "M": len(self.wrench_t), "K": len(self.imu_t)}
        for name, (r, width) in _ARRAY_SHAPES.items():
            want: tuple[int, ...] = (rows[r],)
            if width is not None:
                want += (n if width == "n" else int(width),)
            if getattr(self, name).shape != want:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {want}")
        if self.payload_phi.shape != (10,):
            raise ValueError(f"payload_phi must have 10 entries, got {self.payload_phi.shape}")
        for name in ("tracking_error_max", "effort_noise_std", "effort_scale", "effort_load_friction"):
            if getattr(self, name).shape not in ((0,), (n,)):
                raise ValueError(f"{name} must be empty or have one entry per joint")
        for name in ("true_joint_torque", "true_joint_friction"):  # optional: empty when unknown
            arr = np.asarray(getattr(self, name), dtype=float)
            arr = arr.reshape(0, n) if arr.size == 0 else arr
            if arr.shape not in ((0, n), (len(self.joint_t), n)):
                raise ValueError(f"{name} has shape {arr.shape}, expected (0, {n}) or ({len(self.joint_t)}, {n})")
            object.__setattr__(self, name, arr)

    def phi_at(self, t: np.ndarray | float) -> np.ndarray:
        """Return (N, 10) true parameters of what the gripper holds at times ``t``.

        A change at ``t`` already holds the new payload."""
        k = np.searchsorted(self.truth_change_t, np.atleast_1d(np.asarray(t, dtype=float)), side="right")
        return np.vstack([self.payload_phi[None, :], self.truth_phis])[k]

    def in_contact(self, t: np.ndarray | float) -> np.ndarray:
        """(N,) whether an external force acts on the payload at times ``t``."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        mask = np.zeros(t.shape, dtype=bool)
        for start, end in self.contact_spans:
            mask |= (t >= start) & (t < end)
        return mask

    @property
    def final_payload_params(self) -> InertialParameters:
        """What the gripper holds at the end (the payload, for a run without changes)."""
        return InertialParameters(self.phi_at(np.inf)[0])

    @property
    def n_joints(self) -> int:
        """Number of arm joints."""
        return len(self.joint_names)

    @property
    def payload_params(self) -> InertialParameters:
        """True inertial parameters of the payload in S."""
        return InertialParameters(self.payload_phi)

    @property
    def simulated_urdf(self) -> str:
        """The URDF of the arm simulated: ``true_urdf``, or ``urdf`` without a model mismatch."""
        return self.true_urdf or self.urdf

    @property
    def true_rigid_body_torque(self) -> np.ndarray:
        """(N, n) ``true_joint_torque`` minus the friction, N·m.

        ``M(q) ddq + C dq + g`` of the simulated arm holding its payload (empty when the file
        lacks the joint torques)."""
        if len(self.true_joint_friction) == 0:
            return self.true_joint_torque.copy()
        return self.true_joint_torque - self.true_joint_friction

    @property
    def duration(self) -> float:
        """Time span of the joint samples, s."""
        return float(self.joint_t[-1] - self.joint_t[0]) if len(self.joint_t) else 0.0

    # ------------------------------------------------------------------- I/O
    def save(self, path: str | PathLike[str]) -> None:
        """Write every field to one ``.npz`` file (uncompressed)."""
        out: dict[str, np.ndarray] = {"_format": np.array(FORMAT)}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "imu_frame":
                out[f.name] = np.array("" if value is None else value)
            elif f.name == "joint_names":
                out[f.name] = np.array(value, dtype=str)
            else:
                out[f.name] = np.asarray(value)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            # numpy's stub also matches **arrays against savez's allow_pickle: bool
            np.savez(fh, **out)  # type: ignore[arg-type]

    @classmethod
    def load(cls, path: str | PathLike[str]) -> SimulatedRun:
        """Read a file written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as z:
            if "_format" not in z or str(z["_format"][()]) != FORMAT:
                raise InputError(f"{path} is not a {FORMAT} file")
            kw: dict[str, object] = {}
            for f in dataclasses.fields(cls):
                if f.name not in z:
                    has_default = f.default is not dataclasses.MISSING
                    if has_default or f.default_factory is not dataclasses.MISSING:
                        continue
                    raise InputError(f"{path} lacks the field {f.name!r}")
                arr = z[f.name]
                if f.name == "imu_frame":
                    kw[f.name] = str(arr[()]) or None
                elif f.name == "joint_names":
                    kw[f.name] = tuple(str(s) for s in arr)
                elif f.name in _STRINGS:
                    kw[f.name] = str(arr[()])
                elif f.name in _FLOATS:
                    kw[f.name] = float(arr[()])
                elif f.name in _INTS:
                    kw[f.name] = int(arr[()])
                else:
                    kw[f.name] = np.array(arr, dtype=float)
        return cls(**kw)  # type: ignore[arg-type]


# name -> (row count: N joint, M wrench, K IMU samples; width: None for 1-d, "n" = joint count).
_ARRAY_SHAPES: dict[str, tuple[str, int | str | None]] = {
    "joint_t": ("N", None),
    "joint_q": ("N", "n"),
    "joint_dq": ("N", "n"),
    "joint_effort": ("N", "n"),
    "true_q": ("N", "n"),
    "true_dq": ("N", "n"),
    "true_ddq": ("N", "n"),
    "wrench_t": ("M", None),
    "wrench_in_sensor": ("M", 6),
    "true_wrench_in_sensor": ("M", 6),
    "true_ft_bias": ("M", 6),
    "imu_t": ("K", None),
    "imu_gyro_in_imu": ("K", 3),
    "imu_specific_force_in_imu": ("K", 3),
}
