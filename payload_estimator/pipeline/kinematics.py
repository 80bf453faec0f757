"""Motion of the force/torque sensor frame from joint states, through pinocchio.

Frames
------
* ``B``: the URDF root (base) link frame; the base is fixed.
* ``W``: the world frame, ``B`` rotated by ``R_world_base`` about the common
  origin, so that a tilted, wall- or ceiling-mounted base sees gravity right.
* ``S``: the sensor frame (or any other frame asked for), fixed to a link.

Units: m, rad, s; ``q`` in rad (revolute, continuous) or m (prismatic).

Relations used
--------------
pinocchio's forward kinematics gives, for frame ``S``, its placement
``(R_base_sensor, p_base_sensor)``, its spatial velocity and its spatial
acceleration, both expressed in ``S`` (``pinocchio.LOCAL``). With ``v`` and
``omega`` the linear and angular parts of the velocity (``v`` is the velocity of
the origin of ``S``) and ``a_sp`` the linear part of the spatial acceleration:

* classical acceleration of the origin: ``a = a_sp + omega x v``
  (R. Featherstone, *Rigid Body Dynamics Algorithms*, 2008, §2.11; this is what
  ``pinocchio.getFrameClassicalAcceleration`` returns);
* angular acceleration in ``S``: the angular part of the spatial acceleration,
  equal to ``R_world_sensor.T @ d(omega_world)/dt`` because
  ``d(R.T omega_world)/dt = R.T d(omega_world)/dt - omega x omega``;
* ``R_world_sensor = R_world_base @ R_base_sensor``,
  ``p_world_sensor = R_world_base @ p_base_sensor``,
  ``gravity_in_sensor = R_world_sensor.T @ gravity_in_world``.

Velocities and accelerations relative to ``B`` are relative to ``W`` too, since
``B`` is fixed in ``W``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.errors import ConfigurationError, InputError
from payload_estimator.robots.description import parse_description

__all__ = ["SensorMotion", "SensorKinematics", "STANDARD_GRAVITY_IN_WORLD"]

STANDARD_GRAVITY_IN_WORLD: tuple[float, float, float] = (0.0, 0.0, -STANDARD_GRAVITY)
"""Gravity acceleration in a z-up world frame, m/s²."""


@dataclass(frozen=True)
class SensorMotion:
    """Motion of the sensor frame ``S`` for ``N`` samples, SI units.

    Attributes:
        R_world_sensor: (N, 3, 3) orientation of S in the world frame.
        p_world_sensor: (N, 3) position of the origin of S in the world frame, m.
        lin_vel_in_sensor: (N, 3) velocity of the origin of S, expressed in S, m/s.
        ang_vel_in_sensor: (N, 3) angular velocity of S, expressed in S, rad/s.
        ang_acc_in_sensor: (N, 3) angular acceleration of S, expressed in S, rad/s².
        lin_acc_in_sensor: (N, 3) classical acceleration of the origin of S
            (``d²p/dt²`` expressed in S), gravity excluded, m/s².
        gravity_in_sensor: (N, 3) ``R_world_sensor.T @ gravity_in_world``, m/s².
    """

    R_world_sensor: np.ndarray
    p_world_sensor: np.ndarray
    lin_vel_in_sensor: np.ndarray
    ang_vel_in_sensor: np.ndarray
    ang_acc_in_sensor: np.ndarray
    lin_acc_in_sensor: np.ndarray
    gravity_in_sensor: np.ndarray

    def __len__(self) -> int:
        return int(self.p_world_sensor.shape[0])


def _rotation_matrix(R: np.ndarray, what: str) -> np.ndarray:
    R = np.array(R, dtype=float)  # a copy: later changes to the caller's array do not leak in
    if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        raise ConfigurationError(f"{what} must be a 3x3 rotation matrix")
    return R


def _vector3(x: Sequence[float], what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float).reshape(-1)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{what} must be 3 finite numbers, got {x!r}")
    return arr


class SensorKinematics:
    """Batch forward kinematics of a sensor frame from joint states.

    Args:
        urdf_xml: the robot description (any URDF: meshes, grippers and extra
            frames are fine; geometry is not loaded).
        sensor_frame: name of the sensor link (or any frame of the URDF).
        joint_names: the joints whose positions are given, in the column order
            of ``q``/``dq``/``ddq``. ``None``: every 1-DoF joint (revolute,
            continuous, prismatic) in model order. Every other joint is locked
            at its neutral position (zero; identity for multi-DoF joints).
        R_world_base: (3, 3) orientation of the URDF root frame in the world (None: identity).
        gravity_in_world: (3,) gravity acceleration in the world frame, m/s².
        extra_frames: frames the URDF lacks, ``(name, parent, xyz, rpy)`` each
            (m, rad), added before the sensor frame is looked up.

    Raises:
        InputError: unparsable URDF, or one without a 1-DoF joint.
        ConfigurationError: unknown sensor frame, unknown or repeated joint names, or requested
            joints that are not 1-DoF.
    """

    def __init__(
        self,
        urdf_xml: str,
        sensor_frame: str,
        joint_names: Sequence[str] | None = None,
        R_world_base: np.ndarray | None = None,
        gravity_in_world: Sequence[float] = STANDARD_GRAVITY_IN_WORLD,
        extra_frames: Sequence[tuple[str, str, Sequence[float], Sequence[float]]] = (),
    ) -> None:
        self._base_frame = parse_description(urdf_xml).root_link
        try:
            full = pin.buildModelFromXML(urdf_xml)
        except (RuntimeError, ValueError) as exc:
            raise InputError(f"pinocchio could not build a model from the URDF: {exc}") from None
        self._R_world_base = _rotation_matrix(np.eye(3) if R_world_base is None else R_world_base, "R_world_base")
        self._gravity_in_world = _vector3(gravity_in_world, "gravity_in_world")

        one_dof = [
            name
            for jid, name in enumerate(full.names)
            if jid > 0 and full.joints[jid].nv == 1
        ]
        if joint_names is None:
            chosen = list(one_dof)
        else:
            chosen = [str(n) for n in joint_names]
            repeated = sorted({n for n in chosen if chosen.count(n) > 1})
            if repeated:
                raise ConfigurationError(f"joint names given more than once: {repeated}")
            unknown = [n for n in chosen if not full.existJointName(n)]
            if unknown:
                raise ConfigurationError(
                    f"joints not in the robot description: {unknown}; "
                    f"its 1-DoF joints are {one_dof}"
                )
            multi = [n for n in chosen if n not in one_dof]
            if multi:
                raise ConfigurationError(
                    "only 1-DoF joints (revolute, continuous, prismatic) are supported, "
                    f"got {multi}"
                )
        if not chosen:
            raise InputError("the robot description has no 1-DoF joint to drive")
        locked = [jid for jid, name in enumerate(full.names) if jid > 0 and name not in chosen]
        model = pin.buildReducedModel(full, locked, pin.neutral(full)) if locked else full

        self._model = model
        self._data = model.createData()
        self._joint_names = tuple(chosen)
        self._neutral = pin.neutral(model)
        idx_q, idx_v, continuous = [], [], []
        for name in chosen:
            joint = model.joints[model.getJointId(name)]
            idx_q.append(joint.idx_q)
            idx_v.append(joint.idx_v)
            continuous.append(joint.nq == 2)  # unbounded revolute: q = (cos, sin)
        self._idx_q = np.array(idx_q, dtype=int)
        self._idx_v = np.array(idx_v, dtype=int)
        self._continuous = np.array(continuous, dtype=bool)
        for name, parent, xyz, rpy in extra_frames:
            if not self.has_frame(name):
                self.add_frame(name, parent, xyz, rpy)
        self._sensor_frame = sensor_frame
        self._sensor_fid = self._frame_id(sensor_frame)

    # ----------------------------------------------------------------- properties
    @property
    def joint_names(self) -> tuple[str, ...]:
        """The order in which ``q``/``dq``/``ddq`` columns are expected."""
        return self._joint_names

    @property
    def n_joints(self) -> int:
        """Number of driven joints (the columns of ``q``)."""
        return len(self._joint_names)

    @property
    def sensor_frame(self) -> str:
        """The force/torque sensor frame ``S`` the motion is computed for."""
        return self._sensor_frame

    @property
    def base_frame(self) -> str:
        """The URDF root link (frame ``B``)."""
        return self._base_frame

    @property
    def R_world_base(self) -> np.ndarray:
        """(3, 3) orientation of the base frame ``B`` in the world (a copy)."""
        return self._R_world_base.copy()

    @property
    def gravity_in_world(self) -> np.ndarray:
        """(3,) gravity in the world frame, m/s² (a copy)."""
        return self._gravity_in_world.copy()

    @property
    def model(self) -> pin.Model:
        """The (reduced) pinocchio model; treat as read-only."""
        return self._model

    # ------------------------------------------------------------------- helpers
    def has_frame(self, name: str) -> bool:
        """Whether the model (URDF or :meth:`add_frame`) has a frame called ``name``."""
        return bool(self._model.existFrame(name))

    def _frame_id(self, name: str) -> int:
        """Id of frame ``name``, preferring the link (BODY) frame over a joint of that name."""
        if self._model.existFrame(name, pin.FrameType.BODY):
            return int(self._model.getFrameId(name, pin.FrameType.BODY))
        if self._model.existFrame(name):
            return int(self._model.getFrameId(name))
        links = [f.name for f in self._model.frames if f.type == pin.FrameType.BODY]
        raise ConfigurationError(f"frame {name!r} is not in the robot description; its links are {links}")

    def _batch(self, x: np.ndarray, what: str) -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.n_joints:
            raise ValueError(f"{what} must have shape (N, {self.n_joints}), got {np.shape(x)}")
        return arr

    def _configurations(self, q: np.ndarray) -> np.ndarray:
        """(N, n_joints) joint positions -> (N, model.nq) pinocchio configurations."""
        Q = np.tile(self._neutral, (q.shape[0], 1))
        plain = ~self._continuous
        Q[:, self._idx_q[plain]] = q[:, plain]
        Q[:, self._idx_q[self._continuous]] = np.cos(q[:, self._continuous])
        Q[:, self._idx_q[self._continuous] + 1] = np.sin(q[:, self._continuous])
        return Q

    def _tangent(self, dq: np.ndarray) -> np.ndarray:
        V = np.zeros((dq.shape[0], self._model.nv))
        V[:, self._idx_v] = dq
        return V

    # ----------------------------------------------------------------------- API
    def pinocchio_state(
        self, q: np.ndarray, dq: np.ndarray | None = None, ddq: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(Q (N, model.nq), V (N, model.nv), A (N, model.nv))`` for pinocchio's :attr:`model`.

        The joint states, in :attr:`joint_names` column order, as pinocchio's configuration and
        tangent vectors (None: zero)."""
        q = self._batch(q, "q")
        zero = np.zeros_like(q)
        dq = zero if dq is None else self._batch(dq, "dq")
        ddq = zero if ddq is None else self._batch(ddq, "ddq")
        return self._configurations(q), self._tangent(dq), self._tangent(ddq)

    @property
    def velocity_index(self) -> np.ndarray:
        """(n_joints,) the index in pinocchio's tangent vectors of each joint, :attr:`joint_names` order."""
        return self._idx_v.copy()

    def frame_jacobian(self, q: np.ndarray, frame: str | None = None) -> np.ndarray:
        """Return the (N, 6, n_joints) Jacobian of the sensor frame (or ``frame``) expressed in itself.

        ``pinocchio.LOCAL``: rows ``[v; omega]`` of the frame's origin, columns :attr:`joint_names`.
        Its transpose maps a wrench ``[f; tau]`` on the frame (in the frame, torque about its origin) to
        joint torques."""
        q = self._batch(q, "q")
        fid = self._sensor_fid if frame is None else self._frame_id(frame)
        Q = self._configurations(q)
        out = np.empty((q.shape[0], 6, self.n_joints))
        model, data, local = self._model, self._data, pin.ReferenceFrame.LOCAL
        for k in range(q.shape[0]):
            out[k] = pin.computeFrameJacobian(model, data, Q[k], fid, local)[:, self._idx_v]
        return out

    def compute(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, frame: str | None = None
    ) -> SensorMotion:
        """Motion of the sensor frame (or of ``frame``) for ``N`` joint states.

        Args:
            q: (N, n_joints) joint positions, columns in :attr:`joint_names` order.
            dq: (N, n_joints) joint velocities.
            ddq: (N, n_joints) joint accelerations.
            frame: another frame of the model to report instead of the sensor frame.

        Returns:
            A :class:`SensorMotion` (see the module docstring for the relations).
        """
        q = self._batch(q, "q")
        dq = self._batch(dq, "dq")
        ddq = self._batch(ddq, "ddq")
        if not q.shape[0] == dq.shape[0] == ddq.shape[0]:
            raise ValueError("q, dq and ddq must have the same number of rows")
        fid = self._sensor_fid if frame is None else self._frame_id(frame)
        Q, V, A = self._configurations(q), self._tangent(dq), self._tangent(ddq)

        n = q.shape[0]
        R_base_sensor = np.empty((n, 3, 3))
        p_base_sensor = np.empty((n, 3))
        vel = np.empty((n, 6))
        acc = np.empty((n, 6))
        model, data, local = self._model, self._data, pin.ReferenceFrame.LOCAL
        for k in range(n):
            pin.forwardKinematics(model, data, Q[k], V[k], A[k])
            placement = pin.updateFramePlacement(model, data, fid)
            R_base_sensor[k] = placement.rotation
            p_base_sensor[k] = placement.translation
            vel[k] = pin.getFrameVelocity(model, data, fid, local).vector
            acc[k] = pin.getFrameAcceleration(model, data, fid, local).vector

        lin_vel, ang_vel = vel[:, :3], vel[:, 3:]
        lin_acc = acc[:, :3] + np.cross(ang_vel, lin_vel)  # classical = spatial + omega x v
        R_world_sensor = np.einsum("ij,njk->nik", self._R_world_base, R_base_sensor)
        return SensorMotion(
            R_world_sensor=R_world_sensor,
            p_world_sensor=p_base_sensor @ self._R_world_base.T,
            lin_vel_in_sensor=lin_vel,
            ang_vel_in_sensor=ang_vel,
            ang_acc_in_sensor=acc[:, 3:].copy(),
            lin_acc_in_sensor=lin_acc,
            gravity_in_sensor=np.einsum("nji,j->ni", R_world_sensor, self._gravity_in_world),
        )

    def add_frame(
        self,
        name: str,
        parent_frame: str,
        xyz: Sequence[float],
        rpy: Sequence[float] = (0.0, 0.0, 0.0),
    ) -> None:
        """Add a frame rigidly attached to ``parent_frame`` (e.g. from tf2 or a config file).

        Args:
            name: new frame name (must not exist yet).
            parent_frame: existing frame it is fixed to.
            xyz: origin of the new frame in the parent frame, m.
            rpy: orientation in the parent frame, URDF roll/pitch/yaw
                (``R = Rz(yaw) Ry(pitch) Rx(roll)``), rad.
        """
        if self._model.existFrame(name):
            raise ConfigurationError(f"frame {name!r} already exists")
        parent_id = self._frame_id(parent_frame)
        parent = self._model.frames[parent_id]
        R_parent_new = Rotation.from_euler("xyz", _vector3(rpy, "rpy")).as_matrix()
        parent_T_new = pin.SE3(R_parent_new, _vector3(xyz, "xyz"))
        frame = pin.Frame(
            name,
            parent.parentJoint if hasattr(parent, "parentJoint") else parent.parent,  # pinocchio 3 / 2
            parent_id,
            parent.placement * parent_T_new,
            pin.FrameType.OP_FRAME,
        )
        self._model.addFrame(frame, False)
        self._data = self._model.createData()

    def frame_pose(
        self, q: np.ndarray, frame: str, relative_to: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pose of ``frame`` in ``relative_to`` for ``N`` joint configurations.

        Args:
            q: (N, n_joints) or (n_joints,) joint positions.
            frame: the frame whose pose is wanted.
            relative_to: the frame it is expressed in (e.g. :attr:`base_frame`).

        Returns:
            ``(R, p)``: (N, 3, 3) orientation and (N, 3) origin of ``frame`` in
            ``relative_to``, m.
        """
        q = self._batch(q, "q")
        fid, rid = self._frame_id(frame), self._frame_id(relative_to)
        Q = self._configurations(q)
        n = q.shape[0]
        R_b_f, p_b_f = np.empty((n, 3, 3)), np.empty((n, 3))
        R_b_r, p_b_r = np.empty((n, 3, 3)), np.empty((n, 3))
        model, data = self._model, self._data
        for k in range(n):
            pin.forwardKinematics(model, data, Q[k])
            M_f = pin.updateFramePlacement(model, data, fid)
            M_r = pin.updateFramePlacement(model, data, rid)
            R_b_f[k], p_b_f[k] = M_f.rotation, M_f.translation
            R_b_r[k], p_b_r[k] = M_r.rotation, M_r.translation
        R = np.einsum("nji,njk->nik", R_b_r, R_b_f)
        p = np.einsum("nji,nj->ni", R_b_r, p_b_f - p_b_r)
        return R, p

    def map_joint_names(self, names: Sequence[str]) -> np.ndarray:
        """Column indices that reorder a ``JointState``-like name list into :attr:`joint_names`.

        ``q = np.asarray(msg.position)[sk.map_joint_names(msg.name)]``. Extra
        names (e.g. gripper fingers) are ignored.

        Raises:
            InputError: if one of :attr:`joint_names` is missing or repeated in ``names``.
        """
        names = [str(n) for n in names]
        missing = [n for n in self._joint_names if n not in names]
        if missing:
            raise InputError(f"joint states lack the joints {missing}")
        repeated = [n for n in self._joint_names if names.count(n) > 1]
        if repeated:
            raise InputError(f"joint states name the joints {repeated} more than once")
        return np.array([names.index(n) for n in self._joint_names], dtype=int)

    def rigid_pose(self, frame: str, relative_to: str) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(R, p)``: pose of ``frame`` in ``relative_to`` (3x3, (3,) m), two frames fixed to each other.

        ``ConfigurationError`` if either frame is unknown or the joints move one relative to the other.
        """
        n = self.n_joints
        R0, p0 = self.frame_pose(np.zeros((1, n)), frame, relative_to)
        q1 = np.linspace(0.3, -0.4, n)[None, :]
        R1, p1 = self.frame_pose(q1, frame, relative_to)
        if not (np.allclose(R0, R1, atol=1e-9) and np.allclose(p0, p1, atol=1e-9)):
            raise ConfigurationError(
                f"frame {frame!r} moves relative to {relative_to!r}; choose a frame fixed to the flange")
        return R0[0], p0[0]
