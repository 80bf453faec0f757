"""MuJoCo simulation of an arm (Panda, FR3, xArm) carrying a payload on a wrist F/T sensor.

Model
-----
The arm is :func:`~payload_estimator.robots.robot_urdf` loaded into a
:class:`mujoco.MjSpec`; a body ``payload`` is added as a child of the sensor
body with the identity pose (its frame *is* ``S``) and no joint (welded). Its
``<inertial>`` is the exact truth: mass, ``ipos`` = COM in S, ``fullinertia``
= inertia about the COM in S axes. Visual-only geoms (``contype = conaffinity
= 0``, massless) show the payload's parts. Sites: ``ft_site`` on the payload
body at its origin (force and torque sensors), ``imu_site`` at the origin of
the IMU body (gyro and accelerometer). Joints are driven by torque motors
(``gear = 1``, control range the vendor torque limits). Constraints (contacts,
joint limits) are disabled: the trajectories stay inside the limits. Gravity
is ``(0, 0, -STANDARD_GRAVITY)`` m/s² in the world (= base) frame.

Integration: semi-implicit Euler at ``physics_rate_hz`` (1 kHz by default)
through ``mj_step1`` / ``mj_step2``, so the controller sees the state at
``t`` and every recorded signal (sensors, ``qacc``) belongs to that same
state and control. The signals are therefore exact rigid-body dynamics of
the recorded ``(q, dq, ddq)``; integration error only shows up as tracking
error, which the controller removes.

Sensor conventions (found and proven in ``tests/test_mujoco_sim.py``)
---------------------------------------------------------------------
* MuJoCo's ``force`` and ``torque`` sensors at a site report ``cfrc_int`` of
  the site's body: the wrench its **parent** (here the F/T sensor body)
  exerts **on** that body's subtree (the payload), components in the site
  frame, torque about the site origin. Ours is the wrench the payload exerts
  on the sensor, so :func:`wrench_from_mujoco` negates both parts (the site
  frame is S, so nothing rotates or moves). At rest: raw force ``-m g``,
  ours ``+m g``.
* ``gyro``: angular velocity of the site frame relative to the world, in the
  site frame. Used as is.
* ``accelerometer``: the specific force ``a - g`` of the site origin (the
  classical acceleration, including ``omega x v``, minus gravity), in the site
  frame: ``+9.81`` up at rest. Used as is.

Controller
----------
Computed torque with MuJoCo's own model: ``tau = M(q) (ddq_ref + Kp e + Kd
de) + qfrc_bias(q, dq)`` (``mj_mulM``, ``qfrc_bias``), ``Kp = w²``,
``Kd = 2 zeta w``, ``w = 2 pi bandwidth_hz``, torques clipped to the vendor
limits (clipped steps are counted).

Joint efforts (opt-in, :mod:`payload_estimator.sim.efforts`)
-----------------------------------------------------------
Without an effort model the arm has no friction and ``joint_effort`` is the applied torque plus
the nominal joint noise. With one, its friction acts on the joints (``qfrc_applied =
-tau_friction(dq)``, set before each step's dynamics) and the controller adds ``tau_friction(dq)``
to its torque, as a real controller compensates friction: the tracking is unchanged and the
applied torque is ``M(q) ddq + C dq + g(q) + tau_friction(dq)`` of the recorded state exactly
(:func:`rigid_body_torque` gives the first terms); the sensor reports it scaled and with noise.
With an :class:`~payload_estimator.sim.efforts.ArmMismatch` the compiled arm is a perturbed copy
of the URDF the estimator is given, and the controller's model is that true arm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import get_noise
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.core.shapes import Box, Cylinder, Mesh, Shape, Sphere, Union
from payload_estimator.robots import RobotSpec, get_robot, robot_urdf
from payload_estimator.robots.generate import DEFAULT_IMU_XYZ_IN_SENSOR
from payload_estimator.sim.efforts import EFFORT_STREAM, ArmMismatch, EffortModel, JointFriction
from payload_estimator.sim.payloads import Payload, get_payload
from payload_estimator.sim.run import SimulatedRun
from payload_estimator.sim.trajectories import JointTrajectory, make_trajectory

__all__ = [
    "ArmModel",
    "SensorNoise",
    "FtOffset",
    "ArmStepper",
    "StepRecording",
    "build_model",
    "robot_arm_model",
    "sample_stride",
    "default_physics_rate",
    "resolve_payload",
    "rigid_body_torque",
    "NO_PAYLOAD",
    "wrench_from_mujoco",
    "read_wrench_in_sensor",
    "read_imu",
    "computed_torque",
    "simulate",
    "set_payload",
    "WorkSchedule",
    "GRAVITY_IN_WORLD",
    "MIN_PRINCIPAL_INERTIA",
    "FT_BIAS_FRACTION",
    "FT_DRIFT_RATE_FRACTION",
    "FT_DRIFT_WALK_FRACTION",
    "PAYLOAD_BODY",
    "SENSOR_FRAME",
    "IMU_FRAME",
    "FT_SITE",
    "IMU_SITE",
]

GRAVITY_IN_WORLD = np.array([0.0, 0.0, -STANDARD_GRAVITY])
"""Gravity acceleration in the world (= robot base) frame, m/s²."""
PAYLOAD_BODY = "payload"
FT_SITE = "ft_site"
IMU_SITE = "imu_site"
SENSOR_FRAME = "ft_sensor"
MIN_PRINCIPAL_INERTIA = 1e-12
"""Added to the principal moments (kg·m²) of a payload that has a smaller one (a point mass, a
rod), which MuJoCo would reject; real solids are simulated exactly."""
IMU_FRAME = "imu_link"
NO_PAYLOAD = "none"
"""Payload name of an unloaded arm (:func:`resolve_payload`): nothing on the F/T sensor."""


# ------------------------------------------------------------------- model
@dataclass(frozen=True, eq=False)
class ArmModel:
    """A compiled MuJoCo model of an arm with its payload, and where to find things in it.

    Attributes:
        model: the :class:`mujoco.MjModel`.
        joint_names: the arm joints, in the column order of every joint array.
        qpos_adr: (n,) index of each joint in ``qpos``. dof_adr: (n,) in ``qvel``/``qacc``.
        actuator_ids: (n,) the motor driving each joint.
        tau_max: (n,) torque limits, N·m.
        force_adr, torque_adr: start of the F/T readings in ``sensordata``.
        gyro_adr, accelerometer_adr: start of the IMU readings (None without an IMU).
        sensor_body_id, payload_body_id, ft_site_id, imu_site_id (-1 without an IMU).
        urdf: the URDF compiled (the true arm: perturbed when simulating a model mismatch).
    """

    model: mujoco.MjModel
    joint_names: tuple[str, ...]
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray
    tau_max: np.ndarray
    force_adr: int
    torque_adr: int
    gyro_adr: int | None
    accelerometer_adr: int | None
    sensor_body_id: int
    payload_body_id: int
    ft_site_id: int
    imu_site_id: int
    urdf: str = ""


def _quat_wxyz(rpy: Sequence[float]) -> list[float]:
    x, y, z, w = Rotation.from_euler("xyz", np.asarray(rpy, dtype=float)).as_quat()
    return [float(w), float(x), float(y), float(z)]


def _add_visual(body: mujoco.MjsBody, shape: Shape, rgba: Sequence[float]) -> None:
    """Massless, non-colliding geoms drawing ``shape`` (poses in the body frame = S)."""
    common = dict(
        contype=0, conaffinity=0, mass=0.0, density=0.0, group=2, rgba=list(rgba),
        pos=list(map(float, shape.xyz)), quat=_quat_wxyz(shape.rpy),
    )
    if isinstance(shape, Union):
        for part in shape.parts:
            _add_visual(body, part, rgba)
    elif isinstance(shape, Box):
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.5 * s for s in shape.size], **common)
    elif isinstance(shape, Cylinder):
        body.add_geom(
            type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[shape.radius, 0.5 * shape.height, 0.0], **common
        )
    elif isinstance(shape, Sphere):
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[shape.radius, 0.0, 0.0], **common)
    elif isinstance(shape, Mesh):  # drawn as its bounding box in S
        lo, hi = shape.bounds()
        common.update(pos=list(0.5 * (lo + hi)), quat=[1.0, 0.0, 0.0, 0.0])
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(0.5 * (hi - lo)), **common)


def _add_site_sensor(spec: mujoco.MjSpec, name: str, kind: mujoco.mjtSensor, site: str) -> None:
    spec.add_sensor(name=name, type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site)


def build_model(
    urdf: str,
    joint_names: Sequence[str],
    payload: Payload | InertialParameters,
    tau_max: ArrayLike,
    sensor_frame: str = SENSOR_FRAME,
    imu_frame: str | None = IMU_FRAME,
    timestep: float = 1e-3,
) -> ArmModel:
    """Compile the MuJoCo model of ``urdf`` with ``payload`` welded to ``sensor_frame``.

    Args:
        urdf: a URDF from :func:`~payload_estimator.robots.robot_urdf` (with its
            ``<mujoco>`` element keeping the fixed frames as bodies).
        joint_names: the arm joints to actuate, in column order.
        payload: catalogue payload (truth + parts for the visuals) or bare
            inertial parameters in S.
        tau_max: (n,) torque limits, N·m (the motors' control range).
        sensor_frame: the F/T sensor body.
        imu_frame: the IMU body, or None for no IMU sensors.
        timestep: integration step, s.
    """
    params = payload.params if isinstance(payload, Payload) else payload
    spec = mujoco.MjSpec.from_string(urdf)
    spec.compiler.discardvisual = False  # keep the payload's visual geoms
    spec.option.timestep = float(timestep)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.gravity = GRAVITY_IN_WORLD.tolist()
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)

    sensor_body = spec.body(sensor_frame)
    if sensor_body is None:
        raise ValueError(f"the URDF has no body {sensor_frame!r}")
    body = sensor_body.add_body(name=PAYLOAD_BODY, pos=[0.0, 0.0, 0.0], quat=[1.0, 0.0, 0.0, 0.0])
    if params.mass > 0.0:
        I_c = params.inertia_com
        if np.linalg.eigvalsh(I_c)[0] < MIN_PRINCIPAL_INERTIA:  # point mass or rod: MuJoCo rejects it
            I_c = I_c + MIN_PRINCIPAL_INERTIA * np.eye(3)
        body.mass = params.mass
        body.ipos = params.com.tolist()
        body.fullinertia = [I_c[0, 0], I_c[1, 1], I_c[2, 2], I_c[0, 1], I_c[0, 2], I_c[1, 2]]
        body.explicitinertial = True
    body.add_site(name=FT_SITE, pos=[0.0, 0.0, 0.0], quat=[1.0, 0.0, 0.0, 0.0])
    if isinstance(payload, Payload):
        for i, part in enumerate(payload.parts):
            if part.mass > 0.0:
                _add_visual(body, part.shape, (0.8, 0.5, 0.2, 1.0) if i == 0 else (0.3, 0.3, 0.35, 1.0))
    kinds = mujoco.mjtSensor
    _add_site_sensor(spec, "ft_force", kinds.mjSENS_FORCE, FT_SITE)
    _add_site_sensor(spec, "ft_torque", kinds.mjSENS_TORQUE, FT_SITE)
    if imu_frame is not None:
        imu_body = spec.body(imu_frame)
        if imu_body is None:
            raise ValueError(f"the URDF has no body {imu_frame!r}")
        imu_body.add_site(name=IMU_SITE, pos=[0.0, 0.0, 0.0], quat=[1.0, 0.0, 0.0, 0.0])
        _add_site_sensor(spec, "imu_gyro", kinds.mjSENS_GYRO, IMU_SITE)
        _add_site_sensor(spec, "imu_accelerometer", kinds.mjSENS_ACCELEROMETER, IMU_SITE)
    torque_limits = np.asarray(tau_max, dtype=float)
    for name, limit in zip(joint_names, torque_limits):
        act = spec.add_actuator(name=f"motor_{name}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_motor()
        act.ctrllimited = True
        act.ctrlrange = [-float(limit), float(limit)]

    model = spec.compile()
    joint_ids = [model.joint(name).id for name in joint_names]
    return ArmModel(
        model=model,
        joint_names=tuple(joint_names),
        qpos_adr=np.array([model.jnt_qposadr[j] for j in joint_ids]),
        dof_adr=np.array([model.jnt_dofadr[j] for j in joint_ids]),
        actuator_ids=np.array([model.actuator(f"motor_{n}").id for n in joint_names]),
        tau_max=torque_limits,
        force_adr=int(model.sensor("ft_force").adr[0]),
        torque_adr=int(model.sensor("ft_torque").adr[0]),
        gyro_adr=int(model.sensor("imu_gyro").adr[0]) if imu_frame else None,
        accelerometer_adr=int(model.sensor("imu_accelerometer").adr[0]) if imu_frame else None,
        sensor_body_id=int(model.body(sensor_frame).id),
        payload_body_id=int(model.body(PAYLOAD_BODY).id),
        ft_site_id=int(model.site(FT_SITE).id),
        imu_site_id=int(model.site(IMU_SITE).id) if imu_frame else -1,
        urdf=urdf,
    )


# ----------------------------------------------------------------- sensors
def wrench_from_mujoco(force_in_site: np.ndarray, torque_in_site: np.ndarray) -> np.ndarray:
    """Our wrench from MuJoCo's ``force`` and ``torque`` sensor readings at ``ft_site``.

    MuJoCo reports the wrench the sensor body exerts on the payload (site axes,
    torque about the site origin); the site is S, so the wrench the payload
    exerts on the sensor is its opposite. Works on (3,) or (N, 3) inputs and
    returns (6,) or (N, 6): ``[f (N), tau (N·m)]`` in S.
    """
    return -np.concatenate([np.asarray(force_in_site), np.asarray(torque_in_site)], axis=-1)


def read_wrench_in_sensor(arm: ArmModel, sensordata: np.ndarray) -> np.ndarray:
    """Wrench the payload exerts on the sensor (our convention), (..., 6), from ``sensordata``.

    ``sensordata``: ``data.sensordata`` (one row) or rows of it (..., nsensordata).
    """
    s = np.asarray(sensordata)
    return wrench_from_mujoco(
        s[..., arm.force_adr : arm.force_adr + 3], s[..., arm.torque_adr : arm.torque_adr + 3]
    )


def read_imu(arm: ArmModel, sensordata: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(gyro_in_imu, specific_force_in_imu)``, rad/s and m/s², each (..., 3), from ``sensordata``.

    MuJoCo's gyro and accelerometer already follow our conventions (see the module docstring).
    """
    if arm.gyro_adr is None or arm.accelerometer_adr is None:
        raise ValueError("the model has no IMU")
    s = np.asarray(sensordata)
    gyro = s[..., arm.gyro_adr : arm.gyro_adr + 3].copy()
    specific_force = s[..., arm.accelerometer_adr : arm.accelerometer_adr + 3].copy()
    return gyro, specific_force


# -------------------------------------------------------------- controller
def computed_torque(
    arm: ArmModel,
    data: mujoco.MjData,
    q_ref: np.ndarray,
    dq_ref: np.ndarray,
    ddq_ref: np.ndarray,
    kp: float,
    kd: float,
) -> np.ndarray:
    """(n,) ``M(q) (ddq_ref + kp e + kd de) + qfrc_bias`` at the state in ``data``, N·m (unclipped).

    Needs ``qM`` and ``qfrc_bias`` up to date (after ``mj_step1`` or ``mj_forward``).
    """
    q = data.qpos[arm.qpos_adr]
    dq = data.qvel[arm.dof_adr]
    acc = np.zeros(arm.model.nv)
    acc[arm.dof_adr] = ddq_ref + kp * (q_ref - q) + kd * (dq_ref - dq)
    M_acc = np.empty(arm.model.nv)
    mujoco.mj_mulM(arm.model, data, M_acc, acc)
    return (M_acc + data.qfrc_bias)[arm.dof_adr]


def rigid_body_torque(arm: ArmModel, q: ArrayLike, dq: ArrayLike, ddq: ArrayLike) -> np.ndarray:
    """(N, n) ``M(q) ddq + C(q, dq) dq + g(q)`` of the compiled model (its payload included), N·m,
    at the states ``q``, ``dq``, ``ddq`` (N, n) rad, rad/s, rad/s² (MuJoCo's inverse dynamics)."""
    q, dq, ddq = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, dq, ddq))
    d = mujoco.MjData(arm.model)
    out = np.empty(q.shape)
    for i in range(len(q)):
        d.qpos[arm.qpos_adr], d.qvel[arm.dof_adr], d.qacc[arm.dof_adr] = q[i], dq[i], ddq[i]
        mujoco.mj_inverse(arm.model, d)
        out[i] = d.qfrc_inverse[arm.dof_adr]
    return out


# ------------------------------------------------------------------- noise
@dataclass(frozen=True)
class SensorNoise:
    """Standard deviations of the zero-mean Gaussian measurement noise, per axis.

    Attributes:
        force: N. torque: N·m (paper 004 Table II).
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
    """

    constant: np.ndarray
    scale: np.ndarray
    rate: np.ndarray | None

    @classmethod
    def draw(cls, rng: np.random.Generator, weight: float, ft_bias: ArrayLike | None, ft_drift: bool) -> FtOffset:
        """The constant (given, or drawn with std :data:`FT_BIAS_FRACTION` of ``weight``, N) and the
        drift rate (when ``ft_drift``), drawn from ``rng`` in that order."""
        scale = max(weight, 1.0) * np.array([1.0, 1.0, 1.0, _TORQUE_ARM, _TORQUE_ARM, _TORQUE_ARM])
        b0 = rng.normal(0.0, FT_BIAS_FRACTION, 6) * scale if ft_bias is None else np.asarray(ft_bias, float)
        if b0.shape != (6,):
            raise ValueError("ft_bias must have 6 entries")
        rate = rng.normal(0.0, FT_DRIFT_RATE_FRACTION, 6) * scale if ft_drift else None
        return cls(b0, scale, rate)

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
        bias += np.outer(t - t_origin, self.rate) + cum * FT_DRIFT_WALK_FRACTION * self.scale
        return bias, (float(t[-1]), cum[-1].copy())


# -------------------------------------------------------------- work cycle
@dataclass(frozen=True, eq=False)
class WorkSchedule:
    """What the gripper holds over a run, and the external forces on it: a work cycle.

    Attributes:
        changes: ``((t, params), ...)``, ``t`` increasing: from ``t`` (s) on the gripper holds
            ``params`` (inertial parameters in S; :meth:`InertialParameters.zero` is an empty
            gripper). Before the first change it holds :func:`simulate`'s ``payload``.
        contacts: external forces on the held payload (:class:`payload_estimator.sim.cycle.Contact`:
            ``t_start``, ``t_end``, ``force_in_world`` N, constant in the world frame,
            ``point_in_sensor`` m, where it acts).

    The payload body's inertial parameters are changed in the compiled model between two
    integration steps (MuJoCo reads them anew at every step), and a contact is MuJoCo's
    ``xfrc_applied`` on that body: the F/T sensor's reading (``cfrc_int``) contains it as a real
    sensor's would, through the engine's own dynamics.
    """

    changes: tuple[tuple[float, InertialParameters], ...] = ()
    contacts: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        times = [t for t, _ in self.changes]
        if np.any(np.diff(times) <= 0.0):
            raise ValueError("the changes of a work schedule must come in increasing time")


def set_payload(arm: ArmModel, params: InertialParameters) -> None:
    """Put ``params`` (in S) on the compiled model's payload body (zero: nothing held)."""
    m, b = arm.model, arm.payload_body_id
    if params.mass <= 0.0:
        m.body_mass[b] = 0.0
        m.body_ipos[b] = 0.0
        m.body_inertia[b] = 0.0
        m.body_iquat[b] = [1.0, 0.0, 0.0, 0.0]
        return
    moments, axes = np.linalg.eigh(params.inertia_com)
    if np.linalg.det(axes) < 0.0:
        axes[:, 0] = -axes[:, 0]
    x, y, z, w = Rotation.from_matrix(axes).as_quat()
    m.body_sameframe[b] = 0  # the compiler's shortcut for a body whose inertial frame is its own
    m.body_mass[b] = params.mass
    m.body_ipos[b] = params.com
    m.body_inertia[b] = np.maximum(moments, MIN_PRINCIPAL_INERTIA)
    m.body_iquat[b] = [w, x, y, z]


class _ScheduleHook:
    """Applies a :class:`WorkSchedule` during integration (see there)."""

    def __init__(self, arm: ArmModel, schedule: WorkSchedule) -> None:
        self.arm = arm
        self.schedule = schedule
        self._times = np.array([t for t, _ in schedule.changes])
        self._held = -1

    def before_step(self, t: float, d: mujoco.MjData) -> None:
        """Before the step's dynamics: the payload held at ``t``."""
        k = int(np.searchsorted(self._times, t + 1e-12, side="right")) - 1
        if k != self._held and k >= 0:
            set_payload(self.arm, self.schedule.changes[k][1])
        self._held = k

    def after_kinematics(self, t: float, d: mujoco.MjData) -> None:
        """After the step's kinematics: the contact forces at ``t``, at their points now."""
        b = self.arm.payload_body_id
        wrench = np.zeros(6)
        R, p = d.xmat[b].reshape(3, 3), d.xpos[b]
        for c in self.schedule.contacts:
            if c.t_start - 1e-12 <= t < c.t_end - 1e-12:
                force = np.asarray(c.force_in_world, dtype=float)
                point = p + R @ np.asarray(c.point_in_sensor, dtype=float)
                wrench[:3] += force
                wrench[3:] += np.cross(point - d.xipos[b], force)  # about the body's COM, world axes
        d.xfrc_applied[b] = wrench


# -------------------------------------------------------------- simulation
@dataclass(frozen=True, eq=False)
class StepRecording:
    """Integration steps: the state at ``t``, the torque applied, the acceleration and sensors at ``t``.

    Attributes:
        t: (N,) s. q_ref: (N, n) the reference position, rad. q: (N, n) rad. dq: (N, n) rad/s.
        ddq: (N, n) rad/s². tau: (N, n) applied torque (clipped), N·m.
        sensordata: (N, nsensordata) MuJoCo's sensors (:func:`read_wrench_in_sensor`, :func:`read_imu`).
        clipped_steps: steps where a torque hit its limit.
        tau_friction: (N, n) the friction torque the motors supplied (included in ``tau``), N·m, or
            None for a frictionless arm.
    """

    t: np.ndarray
    q_ref: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau: np.ndarray
    sensordata: np.ndarray
    clipped_steps: int
    tau_friction: np.ndarray | None = None


class ArmStepper:
    """Integrates an arm under computed-torque control, step by step (see the module docstring).

    The one place where the simulation steps: :func:`simulate` runs a whole trajectory through it,
    :class:`payload_estimator.sim.live_arm.LiveArm` runs it chunk by chunk.

    Args:
        arm: the compiled model.
        kp, kd: computed-torque gains, 1/s², 1/s.
        hook: a work schedule applied during the steps, or None.
        friction: the joints' friction, or None: applied to the joints (``qfrc_applied =
            -tau_friction(dq)``) and fed forward by the controller (``+tau_friction(dq)``, at the
            true speed), so the tracking is that of a frictionless arm.

    Attributes:
        data: the :class:`mujoco.MjData` (the state between calls).
    """

    def __init__(self, arm: ArmModel, kp: float, kd: float, hook: _ScheduleHook | None = None,
                 friction: JointFriction | None = None) -> None:
        self.arm = arm
        self.kp, self.kd = float(kp), float(kd)
        self.hook = hook
        if friction is not None and friction.n_joints != len(arm.joint_names):
            raise ValueError(f"the friction is for {friction.n_joints} joints, the arm has {len(arm.joint_names)}")
        self.friction = friction
        self.data = mujoco.MjData(arm.model)

    def reset(self, q: np.ndarray, dq: np.ndarray) -> None:
        """Put the arm at ``q`` (n,) rad with speed ``dq`` (n,) rad/s."""
        self.data.qpos[self.arm.qpos_adr] = q
        self.data.qvel[self.arm.dof_adr] = dq

    def run(
        self,
        t: np.ndarray,
        q_ref: np.ndarray,
        dq_ref: np.ndarray,
        ddq_ref: np.ndarray,
        progress: Callable[[float], None] | None = None,
    ) -> StepRecording:
        """One step per entry of ``t`` (N,), s (the step length is the model's timestep), tracking
        the reference ``(q_ref, dq_ref, ddq_ref)`` (N, n) rad, rad/s, rad/s²."""
        arm, d = self.arm, self.data
        m, hook, kp, kd = arm.model, self.hook, self.kp, self.kd
        n_steps, n = q_ref.shape
        qadr, dadr, act, tau_lim = arm.qpos_adr, arm.dof_adr, arm.actuator_ids, arm.tau_max
        rec_q, rec_dq, rec_ddq, rec_tau = (np.empty((n_steps, n)) for _ in range(4))
        rec_sens = np.empty((n_steps, m.nsensordata))
        friction = self.friction
        rec_friction = np.empty((n_steps, n)) if friction is not None else None
        clipped = 0
        report_every = max(n_steps // 100, 1)
        for i in range(n_steps):
            if hook is not None:
                hook.before_step(float(t[i]), d)
            mujoco.mj_step1(m, d)  # kinematics, M(q), qfrc_bias and gyro at the state at t
            if hook is not None:
                hook.after_kinematics(float(t[i]), d)
            tau = computed_torque(arm, d, q_ref[i], dq_ref[i], ddq_ref[i], kp, kd)
            if friction is not None and rec_friction is not None:
                tau_f = friction.torque(d.qvel[dadr])
                d.qfrc_applied[dadr] = -tau_f  # the joints' friction, used by mj_step2
                tau = tau + tau_f  # fed forward
                rec_friction[i] = tau_f
            if np.any(np.abs(tau) > tau_lim):
                clipped += 1
                tau = np.clip(tau, -tau_lim, tau_lim)
            d.ctrl[act] = tau
            rec_q[i] = d.qpos[qadr]
            rec_dq[i] = d.qvel[dadr]
            rec_tau[i] = tau
            mujoco.mj_step2(m, d)  # qacc, F/T and accelerometer at t; then integrates to t + dt
            rec_ddq[i] = d.qacc[dadr]
            rec_sens[i] = d.sensordata
            if progress is not None and (i + 1) % report_every == 0:
                progress((i + 1) / n_steps)
        if progress is not None:
            progress(1.0)
        return StepRecording(np.asarray(t, dtype=float), q_ref, rec_q, rec_dq, rec_ddq, rec_tau, rec_sens, clipped,
                             rec_friction)


def sample_stride(physics_hz: float, rate_hz: float, what: str) -> int:
    """Physics steps per sample of a ``rate_hz`` stream; ValueError naming ``what`` if it does not divide."""
    ratio = physics_hz / rate_hz
    stride = int(round(ratio))
    if stride < 1 or abs(ratio - stride) > 1e-9 * ratio:
        raise ValueError(f"{what} ({rate_hz} Hz) must divide the physics rate ({physics_hz} Hz)")
    return stride


def default_physics_rate(rates_hz: Sequence[float], at_least_hz: float = 1000.0) -> float:
    """The smallest common multiple of the sample rates that is at least ``at_least_hz``."""
    if all(float(r).is_integer() for r in rates_hz):
        base = float(math.lcm(*(int(r) for r in rates_hz)))
    else:
        base = float(rates_hz[0])
    return base * max(1, math.ceil(at_least_hz / base - 1e-9))


def resolve_payload(
    payload: str | Payload | InertialParameters,
) -> tuple[str, Payload | InertialParameters, InertialParameters]:
    """(name, object for the model, inertial parameters in S).

    :data:`NO_PAYLOAD` ("none") or inertial parameters of zero mass: the unloaded arm (name "none",
    nothing on the payload body), e.g. for an arm calibration run.
    """
    if isinstance(payload, str):
        if payload == NO_PAYLOAD:
            return NO_PAYLOAD, InertialParameters.zero(), InertialParameters.zero()
        payload = get_payload(payload)
    if isinstance(payload, Payload):
        return payload.name, payload, payload.params
    if payload.mass <= 0.0:
        if np.any(payload.phi != 0.0):
            raise ValueError("a payload of zero mass must have all its inertial parameters zero")
        return NO_PAYLOAD, payload, payload
    return "custom", payload, payload


def _resolve_trajectory(
    trajectory: str | JointTrajectory, spec: RobotSpec, duration: float, seed: int
) -> tuple[str, JointTrajectory]:
    """(name, trajectory); a kind is built for ``duration`` (and ``seed`` for "thesis")."""
    if not isinstance(trajectory, str):
        return str(getattr(trajectory, "name", type(trajectory).__name__)), trajectory
    kw: dict[str, object] = {"duration": duration}
    if trajectory == "thesis":
        kw["seed"] = seed
    return trajectory, make_trajectory(trajectory, spec, **kw)


def robot_arm_model(
    robot: str,
    payload: Payload | InertialParameters,
    physics_rate_hz: float = 1000.0,
    imu: bool = True,
    sensor_xyz_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    sensor_rpy_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    imu_xyz_in_sensor: Sequence[float] = DEFAULT_IMU_XYZ_IN_SENSOR,
    imu_rpy_in_sensor: Sequence[float] = (0.0, 0.0, 0.0),
    arm_mismatch: ArmMismatch | None = None,
) -> tuple[str, ArmModel]:
    """(URDF, compiled model) of catalogue robot ``robot`` holding ``payload`` on its F/T sensor
    (frame :data:`SENSOR_FRAME`, and IMU frame :data:`IMU_FRAME` with ``imu``), integrated at
    ``physics_rate_hz``; mounts in m and rad as for :func:`simulate`.

    With ``arm_mismatch`` the model is compiled from the URDF perturbed by it (its links but the
    sensor and IMU frames; ``ArmModel.urdf``), and the URDF returned stays the nominal one: what
    the estimator is given."""
    spec = get_robot(robot)
    urdf = robot_urdf(
        robot,
        sensor_xyz_in_flange=sensor_xyz_in_flange,
        sensor_rpy_in_flange=sensor_rpy_in_flange,
        sensor_frame=SENSOR_FRAME,
        imu_xyz_in_sensor=imu_xyz_in_sensor if imu else None,
        imu_rpy_in_sensor=imu_rpy_in_sensor,
        imu_frame=IMU_FRAME,
    )
    true_urdf = urdf if arm_mismatch is None else arm_mismatch.apply(urdf, keep=(SENSOR_FRAME, IMU_FRAME))
    arm = build_model(true_urdf, spec.joint_names, payload, spec.tau_max, SENSOR_FRAME,
                      IMU_FRAME if imu else None, timestep=1.0 / physics_rate_hz)
    return urdf, arm


def simulate(
    robot: str = "panda",
    payload: str | Payload | InertialParameters = "hammer",
    trajectory: str | JointTrajectory = "paper004",
    duration: float = 10.0,
    rate_hz: float = 1000.0,
    wrench_rate_hz: float | None = None,
    noise: str = "moderate",
    seed: int = 0,
    ft_bias: Sequence[float] | None = None,
    ft_drift: bool = True,
    sensor_xyz_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    sensor_rpy_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    imu: bool = True,
    progress: Callable[[float], None] | None = None,
    imu_xyz_in_sensor: Sequence[float] = DEFAULT_IMU_XYZ_IN_SENSOR,
    imu_rpy_in_sensor: Sequence[float] = (0.0, 0.0, 0.0),
    physics_rate_hz: float | None = None,
    bandwidth_hz: float = 12.0,
    damping_ratio: float = 1.0,
    schedule: WorkSchedule | None = None,
    efforts: EffortModel | None = None,
    arm_mismatch: ArmMismatch | None = None,
) -> SimulatedRun:
    """Simulate ``robot`` carrying ``payload`` along ``trajectory``; returns a :class:`SimulatedRun`.

    Args:
        robot: one of :data:`~payload_estimator.robots.ROBOT_NAMES`.
        payload: catalogue name, :class:`Payload`, or inertial parameters in S; :data:`NO_PAYLOAD`
            ("none") or zero inertial parameters for the unloaded arm.
        trajectory: a kind for :func:`~payload_estimator.sim.trajectories.make_trajectory`
            (built with ``duration``; ``"thesis"`` also with ``seed``) or a trajectory.
        duration: simulated time, s (a shorter trajectory's last pose is held).
        rate_hz: joint-state and IMU sample rate, Hz.
        wrench_rate_hz: F/T sample rate, Hz (default ``rate_hz``; e.g. 100 for
            the xArm's sensor). Plain decimation: samples coincide with joint
            samples, with no anti-aliasing filter.
        noise: F/T noise level of paper 004 Table II (none/low/moderate/high);
            joint and IMU noise are nominal (:class:`SensorNoise`), and zero for "none".
        seed: seeds every random draw (``np.random.default_rng(seed)``).
        ft_bias: (6,) constant F/T offset [N, N·m]; None draws one with std
            :data:`FT_BIAS_FRACTION` of the payload weight per axis (times 5 cm for torques).
        ft_drift: add a slow drift to the offset (random linear trend plus random walk).
        sensor_xyz_in_flange, sensor_rpy_in_flange: sensor mount on the flange, m, rad.
        imu: include an IMU (frame ``imu_link``).
        progress: called with the completed fraction (0 to 1) about 100 times.
        imu_xyz_in_sensor, imu_rpy_in_sensor: IMU mount in S, m, rad.
        physics_rate_hz: integration rate (default: the smallest common
            multiple of the sample rates of at least 1 kHz).
        bandwidth_hz, damping_ratio: computed-torque gains (``Kp = w²``, ``Kd = 2 zeta w``).
        schedule: a work cycle: payload changes and contacts (:class:`WorkSchedule`); the
            controller knows the payload held at every instant (its model is the simulated one).
        efforts: a joint-torque sensor (:class:`~payload_estimator.sim.efforts.EffortModel`, e.g.
            ``EffortModel.for_robot(robot)``): its friction acts on the joints (the controller
            compensates it) and ``joint_effort`` is ``scale * tau + noise`` with its noise (zero
            for ``noise="none"``), drawn from ``default_rng([seed, EFFORT_STREAM])``. None: no
            friction, ``joint_effort`` is the applied torque plus the nominal joint noise.
        arm_mismatch: simulate an arm whose links differ from the URDF
            (:class:`~payload_estimator.sim.efforts.ArmMismatch`; the run's ``urdf`` stays the
            nominal one, ``true_urdf`` is the one simulated; the controller knows the true arm).
            None: the arm is its URDF.

    Enabling ``efforts`` or ``arm_mismatch`` leaves every other signal's noise draws unchanged
    (the states differ only by the rounding of the compensated friction, or by the true arm's
    tracking).
    """
    spec = get_robot(robot)
    payload_name, payload_model, params = resolve_payload(payload)
    traj_name, traj = _resolve_trajectory(trajectory, spec, duration, seed)
    levels = SensorNoise.from_level(noise)
    wrench_rate_hz = float(rate_hz if wrench_rate_hz is None else wrench_rate_hz)
    if physics_rate_hz is None:
        physics_rate_hz = default_physics_rate([rate_hz, wrench_rate_hz])
    joint_stride = sample_stride(physics_rate_hz, rate_hz, "rate_hz")
    wrench_stride = sample_stride(physics_rate_hz, wrench_rate_hz, "wrench_rate_hz")

    imu_frame = IMU_FRAME if imu else None
    urdf, arm = robot_arm_model(robot, payload_model, physics_rate_hz, imu, sensor_xyz_in_flange,
                                sensor_rpy_in_flange, imu_xyz_in_sensor, imu_rpy_in_sensor, arm_mismatch)
    if efforts is not None and efforts.n_joints != spec.n_joints:
        raise ValueError(f"the effort model is for {efforts.n_joints} joints, the {robot} has {spec.n_joints}")
    n_steps = int(round(duration * rate_hz)) * joint_stride
    t_steps = np.arange(n_steps) / physics_rate_hz
    w = 2.0 * np.pi * bandwidth_hz
    hook = _ScheduleHook(arm, schedule) if schedule is not None else None
    stepper = ArmStepper(arm, kp=w * w, kd=2.0 * damping_ratio * w, hook=hook,
                         friction=efforts.friction if efforts is not None else None)
    q_ref, dq_ref, ddq_ref = traj(t_steps)
    stepper.reset(q_ref[0], dq_ref[0])  # from rest at traj(0)
    rec = stepper.run(t_steps, q_ref, dq_ref, ddq_ref, progress=progress)
    if hook is not None:
        set_payload(arm, params)  # the model as built
    schedule = schedule or WorkSchedule()
    heaviest = max([params.mass] + [p.mass for _, p in schedule.changes])

    # ---- sample and corrupt; the order of the random draws is part of the seed's contract
    rng = np.random.default_rng(seed)
    js = slice(0, n_steps, joint_stride)
    ws = slice(0, n_steps, wrench_stride)
    wrench_t = rec.t[ws]
    true_wrench = read_wrench_in_sensor(arm, rec.sensordata[ws])
    offset = FtOffset.draw(rng, heaviest * STANDARD_GRAVITY, ft_bias, ft_drift and len(wrench_t) > 0)
    bias, _ = offset.series(rng, wrench_t, float(wrench_t[0]) if len(wrench_t) else 0.0)
    ft_std = np.array([levels.force] * 3 + [levels.torque] * 3)
    wrench = true_wrench + bias + rng.normal(0.0, 1.0, true_wrench.shape) * ft_std
    true_q, true_dq = rec.q[js], rec.dq[js]
    joint_q = true_q + rng.normal(0.0, levels.joint_position, true_q.shape)
    joint_dq = true_dq + rng.normal(0.0, levels.joint_velocity, true_dq.shape)
    joint_effort = rec.tau[js] + rng.normal(0.0, levels.joint_effort, true_q.shape)
    if efforts is not None:  # its own stream: the draw above stays, so later draws do not move
        sensor = efforts if noise != "none" else efforts.without_noise()
        joint_effort = sensor.measure(rec.tau[js], np.random.default_rng([int(seed), EFFORT_STREAM]))
    if imu:
        imu_t = rec.t[js]
        gyro, specific_force = read_imu(arm, rec.sensordata[js])
        gyro += rng.normal(0.0, levels.gyro, gyro.shape)
        specific_force += rng.normal(0.0, levels.accelerometer, specific_force.shape)
    else:
        imu_t, gyro, specific_force = np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3))

    return SimulatedRun(
        robot=robot,
        urdf=urdf,
        sensor_frame=SENSOR_FRAME,
        imu_frame=imu_frame,
        joint_names=spec.joint_names,
        joint_t=rec.t[js],
        joint_q=joint_q,
        joint_dq=joint_dq,
        joint_effort=joint_effort,
        wrench_t=wrench_t,
        wrench_in_sensor=wrench,
        imu_t=imu_t,
        imu_gyro_in_imu=gyro,
        imu_specific_force_in_imu=specific_force,
        payload_name=payload_name,
        payload_phi=params.phi,
        true_ft_bias=bias,
        true_q=true_q,
        true_dq=true_dq,
        true_ddq=rec.ddq[js],
        true_wrench_in_sensor=true_wrench,
        trajectory=traj_name,
        noise=noise,
        seed=int(seed),
        rate_hz=float(rate_hz),
        wrench_rate_hz=wrench_rate_hz,
        physics_rate_hz=float(physics_rate_hz),
        tracking_error_max=(
            np.max(np.abs(rec.q_ref - rec.q), axis=0) if n_steps else np.zeros(spec.n_joints)
        ),
        torque_clipped_steps=rec.clipped_steps,
        truth_change_t=np.array([t for t, _ in schedule.changes]),
        truth_phis=np.array([p.phi for _, p in schedule.changes]).reshape(-1, 10),
        contact_spans=np.array([[c.t_start, c.t_end] for c in schedule.contacts]).reshape(-1, 2),
        true_joint_torque=rec.tau[js],
        true_joint_friction=rec.tau_friction[js] if rec.tau_friction is not None else np.zeros((0, spec.n_joints)),
        effort_model=efforts.name if efforts is not None else "",
        effort_noise_std=(
            (efforts.noise_std if noise != "none" else np.zeros(spec.n_joints)) if efforts is not None
            else np.full(spec.n_joints, levels.joint_effort)
        ),
        effort_scale=efforts.scale if efforts is not None else np.ones(spec.n_joints),
        true_urdf=arm.urdf if arm_mismatch is not None else "",
    )
