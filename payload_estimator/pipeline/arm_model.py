"""The unloaded arm's own joint torques: the model, and the calibrated parameters it reads.

A joint-torque sensor (Franka's link-side ``tau_J``) or a current-based estimate (xArm) reports,
for joint ``i`` (Lambert's "Method 1"; Khalil & Dombre, *Modeling, Identification and Control of
Robots*, 2002, ch. 12)::

    s_i tau_meas_i = [Y(q, dq, ddq) pi]_i + f_v,i dq_i + f_c,i sgn_e(dq_i) + f_o,i - [J_S^T w]_i

* ``Y pi``: rigid-body dynamics of the arm, linear in the ten inertial parameters of every body
  (pinocchio's ``computeJointTorqueRegressor``; ``pi`` in pinocchio's order, per body
  ``[m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` about the joint frame's origin, in that frame);
  gravity ``R_world_base^T g_world`` in the base frame.
* friction: viscous ``f_v``, Coulomb ``f_c`` through the smooth sign
  ``sgn_e(v) = tanh(v / v_k)`` at each of the :data:`COULOMB_VELOCITIES` (a Coulomb level that sets
  in at several speeds: real joints' transition from sticking to sliding, and Stribeck's dip, differ from
  joint to joint and robot to robot; ``f_c`` is (n, k)), each with a direction-dependent part
  ``f_a |tanh(v / v_k)|`` (``f_a`` (n, k)): real joints' Coulomb levels differ with the direction (Gaz et
  al.'s sigmoids for the Panda, "Dynamic Identification of the Franka Emika Panda Robot With Retrieval of
  Feasible Parameters Using Penalty-Based Optimization": a direction-dependent part of 2-23 % of the
  level), and a constant offset ``f_o`` (the sensor's zero). The offset holds at rest too, the
  direction's part only in motion: a model without it reads the asymmetry as an offset, wrong at low
  speed, and by how much depends on the motion's share of slow samples.
* load-dependent Coulomb friction (opt-in, ``mu`` 0 unless calibrated with it)::

      |tau_load,i| sum_k mu_i,k tanh(dq_i / v_k)

  the dry-friction law of Hamon, Gautier and Garrec ("Dynamic identification of robots with a dry
  friction model depending on load and velocity", IROS 2010): a gearbox's Coulomb level grows with
  the torque it transmits, by ``mu_i = sum_k mu_i,k`` N·m per N·m at speed. The calibration makes
  the levels ``mu_i`` times the joint's own Coulomb levels' shape (``f_c,i,k / sum_k f_c,i,k``): the
  load scales the joint's Coulomb friction, and a load that does not vary is exactly a Coulomb level,
  so only the load's variation along the motion tells ``mu``. The load ``tau_load`` is read from the
  effort itself (the corrected effort minus the rest of the friction is ``tau_load`` plus this term:
  the rigid-body torque of the arm *and its payload*), so the same term holds with a payload the
  model does not know; linear in ``mu`` given the load (the calibration takes the rigid-body torques
  it fits as the load).
* ``s_i``: the effort's scale (1 unless calibrated: a current-to-torque constant that is off).
* ``J_S^T w``: the payload (:mod:`payload_estimator.pipeline.joint_torques`).

:class:`ArmDynamics` evaluates the model for the description's bodies (no friction) or for an
:class:`ArmCalibration` (saved as YAML), which :mod:`~payload_estimator.pipeline.arm_calibration`
fits to a recording of the arm.

Units SI: N·m, rad, rad/s, N·m·s/rad, kg, m, kg·m².
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from payload_estimator.core.inertia import InertialParameters, phi_from_pinocchio
from payload_estimator.errors import CalibrationError
from payload_estimator.files import atomic_path
from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "ArmCalibration",
    "ArmDynamics",
    "ArmPrior",
    "friction_regressor",
    "body_is_consistent",
    "body_from_pinocchio",
    "COULOMB_VELOCITIES",
    "CALIBRATION_FORMAT",
    "FRICTION_TERMS",
    "load_friction_regressor",
]

COULOMB_VELOCITIES = (0.02, 0.1, 0.4)
"""rad/s: the Coulomb terms ``tanh(v / v_k)``: a sharp step, and transitions over 0.1 and 0.4 rad/s."""
CALIBRATION_FORMAT = "payload_estimator.ArmCalibration/1"
FRICTION_TERMS = 2 + 2 * len(COULOMB_VELOCITIES)
"""Friction columns per joint: viscous, the Coulomb levels, their direction-dependent parts, the offset."""


def body_from_pinocchio(p: np.ndarray) -> InertialParameters:
    """A body's ten parameters in pinocchio's order as :class:`InertialParameters` (about the same origin)."""
    return InertialParameters(phi_from_pinocchio(p))


def body_is_consistent(pi_body: np.ndarray) -> bool:
    """Tell whether ten parameters are those of a real body.

    The parameters are in pinocchio's order, about the body frame's origin; see
    :meth:`InertialParameters.is_physically_consistent`."""
    return body_from_pinocchio(pi_body).is_physically_consistent()


@dataclass(frozen=True, eq=False)
class ArmCalibration:
    """What a calibration found (:func:`calibrate_arm`); saved as YAML (:meth:`save`, :meth:`load`).

    Attributes:
        robot: the preset it was made for ("" for an arm known from its URDF only).
        joint_names: (n,) the arm joints, in the column order of every per-joint array.
        body_joints: (b,) the joint each body of :attr:`body_parameters` moves with (pinocchio's reduced model).
        body_parameters: (b, 10) each body's inertial parameters, pinocchio order, about its joint frame.
        viscous: (n,) N·m·s/rad. coulomb: (n, k) N·m, one column per :data:`COULOMB_VELOCITIES`.
        offset: (n,) N·m.
        effort_scale: (n,) the factor the reported effort is multiplied by (1: not calibrated).
        residual_std: (n,) N·m, the effort residual per joint on the calibration data: the joint-torque
            noise the payload estimate weights the joints by.
        consistent: (b,) whether each body's fitted parameters are physically consistent.
        info: provenance (source recording, samples, date, the fit's figures) as plain strings/numbers.
        load_friction: (n, k) ``mu``, N·m of Coulomb friction per N·m of load torque, one column per
            :data:`COULOMB_VELOCITIES` (module docstring; their sum is the coefficient at speed); zeros when
            not calibrated.
        coulomb_asymmetry: (n, k) N·m, the Coulomb levels' direction-dependent parts ``f_a`` (module docstring):
            a level is ``f_c + f_a`` moving forwards, ``f_c - f_a`` backwards; zeros for files without them.
        speed_range: (2, n) rad/s, each joint's slowest (most negative) and fastest speed in the recording: the
            Coulomb terms are evaluated within it (:meth:`ArmDynamics.friction`); empty for files without it.
    """

    robot: str
    joint_names: tuple[str, ...]
    body_joints: tuple[str, ...]
    body_parameters: np.ndarray
    viscous: np.ndarray
    coulomb: np.ndarray
    offset: np.ndarray
    effort_scale: np.ndarray
    residual_std: np.ndarray
    consistent: tuple[bool, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    load_friction: np.ndarray = field(default_factory=lambda: np.zeros(0))
    coulomb_asymmetry: np.ndarray = field(default_factory=lambda: np.zeros(0))
    speed_range: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        n, b = len(self.joint_names), len(self.body_joints)
        k = len(COULOMB_VELOCITIES)
        if np.size(self.load_friction) == 0:
            object.__setattr__(self, "load_friction", np.zeros((n, k)))
        if np.size(self.coulomb_asymmetry) == 0:
            object.__setattr__(self, "coulomb_asymmetry", np.zeros((n, k)))
        Ca = np.asarray(self.coulomb_asymmetry, dtype=float)
        if Ca.shape != (n, k):
            raise CalibrationError(f"arm calibration: coulomb_asymmetry must be {n} rows of {k} levels")
        object.__setattr__(self, "coulomb_asymmetry", Ca)
        if np.size(self.speed_range):
            V = np.asarray(self.speed_range, dtype=float)
            if V.shape != (2, n) or not np.all(np.isfinite(V)) or np.any(V[0] > 0.0) or np.any(V[1] < 0.0):
                raise CalibrationError(f"arm calibration: speed_range must be {n} speeds at or below 0 and {n} at or "
                                       "above 0 (rad/s)")
            object.__setattr__(self, "speed_range", V)
        M = np.asarray(self.load_friction, dtype=float)
        if M.shape != (n, k):
            raise CalibrationError(f"arm calibration: load_friction must be {n} rows of {k} levels")
        object.__setattr__(self, "load_friction", M)
        object.__setattr__(self, "joint_names", tuple(str(x) for x in self.joint_names))
        object.__setattr__(self, "body_joints", tuple(str(x) for x in self.body_joints))
        P = np.asarray(self.body_parameters, dtype=float).reshape(b, 10)
        object.__setattr__(self, "body_parameters", P)
        C = np.asarray(self.coulomb, dtype=float)
        if C.shape != (n, len(COULOMB_VELOCITIES)):
            raise CalibrationError(f"arm calibration: coulomb must be {n} rows of {len(COULOMB_VELOCITIES)} levels "
                                   f"(one per velocity {list(COULOMB_VELOCITIES)} rad/s)")
        object.__setattr__(self, "coulomb", C)
        for name in ("viscous", "offset", "effort_scale", "residual_std"):
            v = np.asarray(getattr(self, name), dtype=float).reshape(-1)
            if v.shape != (n,):
                raise CalibrationError(f"arm calibration: {name} has {v.size} values for {n} joints")
            object.__setattr__(self, name, v)
        values = np.concatenate([P.ravel(), self.viscous, C.ravel(), self.offset, self.effort_scale,
                                 self.residual_std, M.ravel(), Ca.ravel()])
        if not np.all(np.isfinite(values)):
            raise CalibrationError("arm calibration: a value is not finite")
        if np.any(self.effort_scale <= 0.0) or np.any(self.residual_std <= 0.0):
            raise CalibrationError("arm calibration: effort_scale and residual_std must be positive")
        if np.any(M.sum(axis=1) < 0.0) or np.any(np.abs(M).sum(axis=1) >= 0.5):
            raise CalibrationError("arm calibration: each joint's load_friction must sum to 0 or more, its "
                                   "levels' magnitudes to less than 0.5")
        if not self.consistent:
            object.__setattr__(self, "consistent", tuple(body_is_consistent(p) for p in P))

    # ------------------------------------------------------------------ checks
    def check_matches(self, robot: str, joint_names: Sequence[str]) -> None:
        """Check that this calibration is for ``robot`` ("" for any) and these joints.

        Raises:
            CalibrationError: it is for another robot or other joints (one line).
        """
        if robot and self.robot and robot != self.robot:
            raise CalibrationError(f"the arm calibration is for the {self.robot}, not the {robot}")
        if tuple(joint_names) != self.joint_names:
            raise CalibrationError(f"the arm calibration is for joints {list(self.joint_names)}, "
                                   f"the arm has {list(joint_names)}")

    def caveats(self) -> list[str]:
        """One line per part of this calibration its recording did not determine, for every estimate that uses it.

        The effort scales the fit kept near their first guess (``info["effort_scale_determined"]``): the mass
        read through those joints carries their error; the load-dependent friction kept at 0
        (``info["load_friction_determined"]``). Empty when the recording determined everything it was asked."""
        lines = []
        # what to do next: a known payload, unless the calibration already had one (then one that loads more)
        if self.info.get("known_payload_bag") or "known_payload_mass" in self.info:
            known = ("calibrate again with a known payload that loads these joints more (heavier, or farther "
                     "from the flange) on a motion that moves them")
        else:
            known = ("calibrate again with a known payload too (calibrate --known-payload-bag, or ~/calibrate "
                     "with known_payload_mass)")
        determined = self.info.get("effort_scale_determined")
        if determined and not all(determined):
            std = self.info.get("effort_scale_std", [float("nan")] * len(self.joint_names))
            bad = [f"{name} (std {100 * s:.0f} %)" for name, ok, s in zip(self.joint_names, determined, std) if not ok]
            lines.append(f"the effort scale of {', '.join(bad)} is not determined by the calibration's recording (its "
                         "own link hardly loads it beyond friction, or the fit left the first guess by more than "
                         "30 %): kept near its first guess, and a payload's torques read through it carry its error; "
                         + known)
        determined = self.info.get("load_friction_determined")
        if determined and not all(determined):
            names = [n for n, ok in zip(self.joint_names, determined) if not ok]
            which = "" if self.info.get("load_friction_shared", True) else f" of {', '.join(names)}"
            lines.append(f"the load-dependent friction{which} is not determined by the calibration's recording (the "
                         "joints' loads hardly vary along the motion): kept at 0; move the shoulder and elbow "
                         "through their range, or " + known)
        return lines

    # ---------------------------------------------------------------- file I/O
    def to_dict(self) -> dict[str, Any]:
        """Plain values for YAML (:meth:`save`): the friction, scales, residuals and bodies, and the info."""
        def floats(v: np.ndarray) -> list[float]:
            return [float(x) for x in v]

        friction: dict[str, Any] = {
            "viscous": floats(self.viscous), "coulomb": [floats(row) for row in self.coulomb],
            "offset": floats(self.offset), "coulomb_velocities": list(COULOMB_VELOCITIES)}
        if np.any(self.load_friction != 0.0):  # written only when calibrated: older readers see the same file
            friction["load"] = [floats(row) for row in self.load_friction]
        if np.any(self.coulomb_asymmetry != 0.0):  # likewise: files without them read as symmetric levels
            friction["coulomb_asymmetry"] = [floats(row) for row in self.coulomb_asymmetry]
        if np.size(self.speed_range):
            friction["speed_range"] = [floats(row) for row in self.speed_range]
        return {
            "format": CALIBRATION_FORMAT,
            "robot": self.robot,
            "joint_names": list(self.joint_names),
            "friction": friction,
            "effort_scale": floats(self.effort_scale),
            "residual_std": floats(self.residual_std),
            "bodies": [
                {"joint": j, "consistent": bool(ok), "parameters": floats(p)}
                for j, p, ok in zip(self.body_joints, self.body_parameters, self.consistent)
            ],
            "info": dict(self.info),
        }

    def save(self, path: str | Path) -> None:
        """Write the calibration as YAML (atomically)."""
        import yaml

        header = ("# payload_estimator arm calibration (payload-estimator calibrate). Units SI; body parameters in\n"
                  "# pinocchio's order [m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about each joint frame.\n")
        with atomic_path(path) as tmp:
            Path(tmp).write_text(header + yaml.safe_dump(self.to_dict(), sort_keys=False, width=120))

    @classmethod
    def from_dict(cls, data: Any, source: str = "arm calibration") -> ArmCalibration:
        """The calibration of :meth:`to_dict`'s values; ``source`` names them in an error.

        Raises:
            CalibrationError: not an arm calibration of this format, or a value missing or wrong (one line).
        """
        if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
            raise CalibrationError(f"{source}: not an arm calibration (no 'format: {CALIBRATION_FORMAT}')")
        try:
            friction = data["friction"]
            if list(friction.get("coulomb_velocities", [])) != list(COULOMB_VELOCITIES):
                raise ValueError(f"friction model of coulomb_velocities {friction.get('coulomb_velocities')}, this "
                                 f"version fits {list(COULOMB_VELOCITIES)}: calibrate again")
            bodies = data["bodies"]
            return cls(
                robot=str(data.get("robot", "")),
                joint_names=tuple(data["joint_names"]),
                body_joints=tuple(b["joint"] for b in bodies),
                body_parameters=np.array([b["parameters"] for b in bodies], dtype=float),
                viscous=friction["viscous"], coulomb=friction["coulomb"], offset=friction["offset"],
                effort_scale=data["effort_scale"], residual_std=data["residual_std"],
                consistent=tuple(bool(b.get("consistent", True)) for b in bodies),
                info=dict(data.get("info") or {}),
                load_friction=np.asarray(friction.get("load", []), dtype=float),
                coulomb_asymmetry=np.asarray(friction.get("coulomb_asymmetry", []), dtype=float),
                speed_range=np.asarray(friction.get("speed_range", []), dtype=float),
            )
        except KeyError as exc:
            raise CalibrationError(f"{source}: no {exc.args[0]!r} in it, an arm calibration's part: calibrate the "
                                   "arm again (payload-estimator calibrate)") from None
        except (AttributeError, TypeError, ValueError) as exc:  # a value of the wrong kind
            raise CalibrationError(f"{source}: {' '.join(str(exc).split())}") from None

    @classmethod
    def load(cls, path: str | Path) -> ArmCalibration:
        """Read a file written by :meth:`save`.

        Raises:
            CalibrationError: the file cannot be read, is not YAML or not an arm calibration (one line).
        """
        import yaml

        from payload_estimator.errors import InputError
        from payload_estimator.files import read_text_file

        try:
            data = yaml.safe_load(read_text_file(path, "an arm calibration (YAML, payload-estimator calibrate)"))
        except InputError as exc:
            raise CalibrationError(str(exc)) from None
        except yaml.YAMLError as exc:
            raise CalibrationError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
        return cls.from_dict(data, str(path))


class ArmDynamics:
    """Joint torques of the unloaded arm (module docstring), from its description and a calibration.

    Args:
        kinematics: the arm's :class:`SensorKinematics` (its reduced model, joints and gravity).
        calibration: fitted parameters and friction; None: the description's inertias, no friction.

    Raises:
        CalibrationError: a calibration for other joints, or for a model with other bodies.
    """

    def __init__(self, kinematics: SensorKinematics, calibration: ArmCalibration | None = None) -> None:
        self.kinematics = kinematics
        self.model = kinematics.model.copy()  # gravity is set here
        self.model.gravity.linear = kinematics.R_world_base.T @ kinematics.gravity_in_world
        self._data = self.model.createData()
        self.body_joints = tuple(self.model.names[j] for j in range(1, self.model.njoints))
        self.nominal = np.array([self.model.inertias[j].toDynamicParameters() for j in range(1, self.model.njoints)])
        self._v_index = kinematics.velocity_index
        n = kinematics.n_joints
        self.calibration = calibration
        if calibration is None:
            self.parameters = self.nominal.ravel().copy()
            self.viscous = self.offset = np.zeros(n)
            self.coulomb = np.zeros((n, len(COULOMB_VELOCITIES)))
            self.coulomb_asymmetry = np.zeros((n, len(COULOMB_VELOCITIES)))
            self.speed_range: np.ndarray | None = None
            self.effort_scale = np.ones(n)
            self.load_friction = np.zeros((n, len(COULOMB_VELOCITIES)))
        else:
            calibration.check_matches("", kinematics.joint_names)
            if calibration.body_joints != self.body_joints:
                raise CalibrationError(f"the arm calibration has bodies on joints {list(calibration.body_joints)}, the "
                                       f"description {list(self.body_joints)}")
            self.parameters = calibration.body_parameters.ravel().copy()
            self.viscous, self.coulomb, self.offset = calibration.viscous, calibration.coulomb, calibration.offset
            self.coulomb_asymmetry = calibration.coulomb_asymmetry
            self.speed_range = calibration.speed_range if np.size(calibration.speed_range) else None
            self.effort_scale = calibration.effort_scale
            self.load_friction = calibration.load_friction

    @property
    def n_joints(self) -> int:
        """The arm's joints, in the column order of every per-joint array."""
        return self.kinematics.n_joints

    def regressor(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, 10 b) the rigid-body regressor ``Y`` of the joints (rows in joint order)."""
        Q, V, A = self.kinematics.pinocchio_state(q, dq, ddq)
        out = np.empty((Q.shape[0], self.n_joints, 10 * len(self.body_joints)))
        for k in range(Q.shape[0]):
            out[k] = pin.computeJointTorqueRegressor(self.model, self._data, Q[k], V[k], A[k])[self._v_index]
        return out

    def rigid_body_torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n) ``Y pi``: inverse dynamics of the arm with the calibrated (or described) bodies, N·m."""
        if self.calibration is None:
            Q, V, A = self.kinematics.pinocchio_state(q, dq, ddq)
            out = np.empty((Q.shape[0], self.n_joints))
            for k in range(Q.shape[0]):
                out[k] = pin.rnea(self.model, self._data, Q[k], V[k], A[k])[self._v_index]
            return out
        return self.regressor(q, dq, ddq) @ self.parameters

    @property
    def load_dependent(self) -> bool:
        """Whether the friction has a load-dependent Coulomb term (``mu`` not all 0)."""
        return bool(np.any(self.load_friction != 0.0))

    def friction(self, dq: np.ndarray, effort: np.ndarray | None = None) -> np.ndarray:
        """(N, n) friction and offset torques at joint velocities ``dq`` (N, n), N·m.

        With the reported ``effort`` (N, n) the load-dependent term too (:meth:`load_friction_torques`). Beyond the
        speeds the calibration saw (:attr:`ArmCalibration.speed_range`) the Coulomb terms keep their value at its
        edge and only the viscous term grows: the levels at three speeds, fitted over the speeds seen, would
        otherwise extrapolate their mix (a level still rising at 0.4 rad/s, an asymmetry) to speeds no data
        showed."""
        dq = np.atleast_2d(np.asarray(dq, dtype=float))
        seen = dq if self.speed_range is None else np.clip(dq, self.speed_range[0], self.speed_range[1])
        steps = np.tanh(seen[:, :, None] / np.asarray(COULOMB_VELOCITIES))  # (N, n, k)
        out = (self.viscous * dq + np.einsum("nik,ik->ni", steps, self.coulomb)
               + np.einsum("nik,ik->ni", np.abs(steps), self.coulomb_asymmetry) + self.offset)
        if effort is not None and self.load_dependent:
            # what the effort shows beyond the rest of the friction is E = L + m |L| (m = sum_k mu_k tanh(dq / v_k)):
            # the load L itself, |L| = |E| / (1 + m sgn(E)), so the term is not off by mu² |L|
            shown = self.corrected_effort(effort) - out
            m = np.einsum("nik,ik->ni", steps, self.load_friction)
            load = np.abs(shown) / (1.0 + m * np.sign(shown))
            out = out + m * load
        return out

    def load_friction_torques(self, dq: np.ndarray, effort: np.ndarray) -> np.ndarray:
        """(N, n) the load-dependent Coulomb friction, N·m (zeros without it).

        The load is read from the corrected ``effort`` (N, n) less the rest of the friction (module docstring):
        ``E = L + m |L|``, so ``|L| = |E| / (1 + m sgn(E))``, ``m = sum_k mu_k tanh(dq / v_k)``."""
        dq = np.atleast_2d(np.asarray(dq, dtype=float))
        return self.friction(dq, effort) - self.friction(dq)

    def torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                effort: np.ndarray | None = None) -> np.ndarray:
        """Return (N, n) what the joints report for the unloaded arm, N·m.

        In the units of the corrected effort (:meth:`corrected_effort`). With the reported ``effort``
        (N, n), the load-dependent friction of the load it shows (the payload's included)."""
        return self.rigid_body_torques(q, dq, ddq) + self.friction(dq, effort)

    def corrected_effort(self, effort: np.ndarray) -> np.ndarray:
        """(N, n) the reported efforts times the calibrated scale, N·m."""
        return np.asarray(effort, dtype=float) * self.effort_scale


def friction_regressor(dq: np.ndarray) -> np.ndarray:
    """(N, n, (2 + 2 k) n) columns ``[viscous (n), Coulomb (n, k), asymmetry (n, k), offset (n)]`` per joint row.

    The Coulomb columns ``tanh(dq / v_k)`` and their direction-dependent parts ``|tanh(dq / v_k)|``, each
    (n, k) row-major."""
    N, n = dq.shape
    k = len(COULOMB_VELOCITIES)
    F = np.zeros((N, n, FRICTION_TERMS * n))
    idx = np.arange(n)
    F[:, idx, idx] = dq
    for j, v in enumerate(COULOMB_VELOCITIES):
        step = np.tanh(dq / v)
        F[:, idx, n + idx * k + j] = step
        F[:, idx, (1 + k) * n + idx * k + j] = np.abs(step)
    F[:, idx, (1 + 2 * k) * n + idx] = 1.0
    return F


def load_friction_regressor(dq: np.ndarray, load: np.ndarray) -> np.ndarray:
    """(N, n, k) each joint's load-dependent Coulomb columns ``|tau_load| tanh(dq / v_k)``.

    ``dq`` (N, n) rad/s, ``load`` (N, n) N·m, ``v_k`` the :data:`COULOMB_VELOCITIES`: summed with ``mu`` (n, k)
    it is the term's torque."""
    dq = np.asarray(dq, dtype=float)
    return np.abs(np.asarray(load, dtype=float))[:, :, None] * np.tanh(dq[:, :, None] / np.asarray(COULOMB_VELOCITIES))


@dataclass(frozen=True)
class ArmPrior:
    """How far the description's parameters may be from the truth.

    The prior of :func:`~payload_estimator.pipeline.arm_calibration.calibrate_arm`, and the error
    :mod:`~payload_estimator.pipeline.effort_check` allows each joint's torque. Standard deviations (1 sigma)
    of the robot description's inertial parameters, and of the friction (zero-mean, weak).

    Attributes:
        mass_rel: relative std of each body's mass. mass_floor: kg, added in quadrature.
        com: m, std of each COM coordinate (the first moment's std is ``m com``, plus ``mass_rel`` of it).
        inertia_rel: relative std of each inertia entry about the joint frame; inertia_floor: kg·m².
        friction: std of every friction coefficient (N·m, N·m·s/rad) and offset (N·m). The friction columns
            are strongly correlated (Coulomb levels at three speeds, viscous): a weak prior keeps them from
            trading noise with the inertias; 1 was measured best against 10 (``benchmarks/joint_torques.py``
            --friction-prior), on a Franka's 0.3-1.3 N·m and an xArm's 1-3 N·m friction alike.
        effort_scale: std of the log of each effort scale about its first guess (when calibrated): 15 %, a
            vendor's torque constant. It decides a joint whose own rows the motion hardly moves beyond friction
            (a wrist joint whose link's gravity and inertia barely load it): nothing else can.
        load_friction: std of each of a joint's load-dependent Coulomb levels ``mu`` (dimensionless, prior
            mean 0, their sum kept not negative), when calibrated: 0.1, above the few per cent of load that
            gearboxes lose to it, so the data decide where the motion varies the joint's load.
    """

    mass_rel: float = 0.2
    mass_floor: float = 0.05
    com: float = 0.02
    inertia_rel: float = 0.3
    inertia_floor: float = 1e-3
    friction: float = 1.0
    effort_scale: float = 0.15
    load_friction: float = 0.1

    def body_std(self, nominal: np.ndarray) -> np.ndarray:
        """(b, 10) the std of each body's ten parameters around ``nominal`` (b, 10)."""
        m = np.abs(nominal[:, 0])
        std = np.empty_like(nominal)
        std[:, 0] = np.hypot(self.mass_rel * m, self.mass_floor)
        lever = np.maximum(m, self.mass_floor)[:, None] * self.com
        std[:, 1:4] = np.sqrt((self.mass_rel * nominal[:, 1:4]) ** 2 + lever**2)
        std[:, 4:10] = np.sqrt((self.inertia_rel * nominal[:, 4:10]) ** 2 + self.inertia_floor**2)
        return std
