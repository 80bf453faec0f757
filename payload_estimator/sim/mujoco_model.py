"""The MuJoCo model of an arm carrying a payload on a wrist F/T sensor, and how its sensors read.

Model
-----
The arm is :func:`~payload_estimator.robots.robot_urdf` (a built-in arm's table, or any arm's
own URDF: :meth:`~payload_estimator.robots.RobotSpec.from_urdf`) loaded into a
:class:`mujoco.MjSpec`; a body ``payload`` is added as a child of the sensor
body with the identity pose (its frame *is* ``S``) and no joint (welded). Its
``<inertial>`` is the exact truth: mass, ``ipos`` = COM in S, ``fullinertia``
= inertia about the COM in S axes. Visual-only geoms (``contype = conaffinity
= 0``, massless) show the payload's parts. Sites: ``ft_site`` on the payload
body at its origin (force and torque sensors), ``imu_site`` at the origin of
the IMU body (gyro and accelerometer). Joints are driven by torque motors
(``gear = 1``, control range the vendor torque limits); movable joints that are
not the arm's (a gripper's fingers) are welded. Constraints (contacts,
joint limits) are disabled: the trajectories stay inside the limits. Gravity
is ``(0, 0, -STANDARD_GRAVITY)`` m/s² in the world (= base) frame.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree import ElementTree

import mujoco
import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.core.shapes import Box, Cylinder, Mesh, Shape, Sphere, Union
from payload_estimator.errors import ConfigurationError
from payload_estimator.robots import RobotSpec, resolve_robot, robot_urdf
from payload_estimator.robots.generate import DEFAULT_IMU_XYZ_IN_SENSOR
from payload_estimator.sim.efforts import ArmMismatch
from payload_estimator.sim.payloads import Payload

__all__ = [
    "ArmModel",
    "build_model",
    "robot_arm_model",
    "rigid_body_torque",
    "wrench_from_mujoco",
    "read_wrench_in_sensor",
    "read_imu",
    "set_payload",
    "GRAVITY_IN_WORLD",
    "MIN_PRINCIPAL_INERTIA",
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
        joint_names: the arm joints to actuate, in column order (other movable joints are welded).
        payload: catalogue payload (truth + parts for the visuals) or bare
            inertial parameters in S.
        tau_max: (n,) torque limits, N·m (the motors' control range).
        sensor_frame: the F/T sensor body.
        imu_frame: the IMU body, or None for no IMU sensors.
        timestep: integration step, s.
    """
    spec = _arm_spec(urdf, joint_names, timestep)
    _add_payload(spec, sensor_frame, payload)
    _add_sensors(spec, imu_frame)
    torque_limits = np.asarray(tau_max, dtype=float)
    _add_motors(spec, joint_names, torque_limits)
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


def _arm_spec(urdf: str, joint_names: Sequence[str], timestep: float) -> mujoco.MjSpec:
    """The URDF's arm with the simulation's options, the movable joints not in ``joint_names`` welded."""
    spec = mujoco.MjSpec.from_string(_welded(urdf, joint_names))
    spec.compiler.discardvisual = False  # keep the payload's visual geoms
    spec.option.timestep = float(timestep)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.gravity = GRAVITY_IN_WORLD.tolist()
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return spec


def _welded(urdf: str, joint_names: Sequence[str]) -> str:
    """The URDF with every movable joint not in ``joint_names`` (a gripper's fingers) made fixed.

    Done in the URDF's text, not in the MjSpec: MuJoCo 3.3.3, the oldest the package supports, cannot
    delete a joint from a spec."""
    root = ElementTree.fromstring(urdf)
    arm = set(joint_names)
    welded = 0
    for joint in root.iter("joint"):
        if joint.get("name") not in arm and joint.get("type") != "fixed":
            joint.set("type", "fixed")
            welded += 1
    return ElementTree.tostring(root, encoding="unicode") if welded else urdf


def _add_payload(spec: mujoco.MjSpec, sensor_frame: str, payload: Payload | InertialParameters) -> None:
    """The payload body (its inertial the truth), the F/T site at its origin, and its visuals."""
    params = payload.params if isinstance(payload, Payload) else payload
    sensor_body = spec.body(sensor_frame)
    if sensor_body is None:
        raise ConfigurationError(f"the URDF has no body {sensor_frame!r}")
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


def _add_sensors(spec: mujoco.MjSpec, imu_frame: str | None) -> None:
    """Force and torque at the F/T site; the IMU's site, gyro and accelerometer on ``imu_frame``."""
    kinds = mujoco.mjtSensor
    _add_site_sensor(spec, "ft_force", kinds.mjSENS_FORCE, FT_SITE)
    _add_site_sensor(spec, "ft_torque", kinds.mjSENS_TORQUE, FT_SITE)
    if imu_frame is not None:
        imu_body = spec.body(imu_frame)
        if imu_body is None:
            raise ConfigurationError(f"the URDF has no body {imu_frame!r}")
        imu_body.add_site(name=IMU_SITE, pos=[0.0, 0.0, 0.0], quat=[1.0, 0.0, 0.0, 0.0])
        _add_site_sensor(spec, "imu_gyro", kinds.mjSENS_GYRO, IMU_SITE)
        _add_site_sensor(spec, "imu_accelerometer", kinds.mjSENS_ACCELEROMETER, IMU_SITE)


def _add_motors(spec: mujoco.MjSpec, joint_names: Sequence[str], torque_limits: np.ndarray) -> None:
    """A torque motor on each arm joint (``gear = 1``), its control range the torque limit."""
    for name, limit in zip(joint_names, torque_limits):
        act = spec.add_actuator(name=f"motor_{name}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_motor()
        act.ctrllimited = True
        act.ctrlrange = [-float(limit), float(limit)]


def robot_arm_model(
    robot: str | RobotSpec,
    payload: Payload | InertialParameters,
    physics_rate_hz: float = 1000.0,
    imu: bool = True,
    sensor_xyz_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    sensor_rpy_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    imu_xyz_in_sensor: Sequence[float] = DEFAULT_IMU_XYZ_IN_SENSOR,
    imu_rpy_in_sensor: Sequence[float] = (0.0, 0.0, 0.0),
    arm_mismatch: ArmMismatch | None = None,
) -> tuple[str, ArmModel]:
    """Return (URDF, compiled model) of ``robot`` holding ``payload`` on its F/T sensor.

    ``robot`` is a built-in robot's name, or any arm's spec
    (:meth:`~payload_estimator.robots.RobotSpec.from_urdf`); the sensor frame is
    :data:`SENSOR_FRAME`, with the IMU frame :data:`IMU_FRAME` when ``imu``; the model is
    integrated at ``physics_rate_hz``; mounts in m and rad as for
    :func:`~payload_estimator.sim.mujoco_sim.simulate`.

    With ``arm_mismatch`` the model is compiled from the URDF perturbed by it (its links but the
    sensor and IMU frames; ``ArmModel.urdf``), and the URDF returned stays the nominal one: what
    the estimator is given."""
    spec = resolve_robot(robot)
    urdf = robot_urdf(
        spec,
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


# ------------------------------------------------------------ dynamics and the payload held
def rigid_body_torque(arm: ArmModel, q: ArrayLike, dq: ArrayLike, ddq: ArrayLike) -> np.ndarray:
    """Return (N, n) ``M(q) ddq + C(q, dq) dq + g(q)`` of the compiled model (its payload included), N·m.

    At the states ``q``, ``dq``, ``ddq`` (N, n) rad, rad/s, rad/s² (MuJoCo's inverse dynamics)."""
    q, dq, ddq = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, dq, ddq))
    d = mujoco.MjData(arm.model)
    out = np.empty(q.shape)
    for i in range(len(q)):
        d.qpos[arm.qpos_adr], d.qvel[arm.dof_adr], d.qacc[arm.dof_adr] = q[i], dq[i], ddq[i]
        mujoco.mj_inverse(arm.model, d)
        out[i] = d.qfrc_inverse[arm.dof_adr]
    return out


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

