"""The payload's wrench from joint torques: no force/torque sensor needed.

With the unloaded arm's own torques known (:class:`~payload_estimator.pipeline.arm_dynamics.ArmDynamics`),
the rest of the reported effort is the payload's (Lambert's "Method 2" equation with a model of the arm
in place of an unloaded run)::

    dtau = s * tau_meas - tau_arm(q, dq, ddq) = -J_S(q)^T w,      w = Y(a - g, omega, alpha) phi

``J_S`` is the Jacobian of the sensor frame ``S`` in ``S`` (``pinocchio.LOCAL``: rows ``[v; omega]``),
``w`` the payload's wrench on ``S`` (:mod:`payload_estimator.core.samples`). The joint-space residual,
each joint weighted by its effort noise ``sigma_i`` (the calibration's residual),
``|Sigma^-1/2 (dtau + J^T Y phi)|²``, is what the estimators should minimise. With the SVD
``-Sigma^-1/2 J^T = U diag(sv) V^T`` (n x 6) it equals, up to a constant, ``|W (w_hat - Y phi)|²`` with
``W = diag(sv) V^T`` and ``w_hat = V diag(1/sv) U^T Sigma^-1/2 dtau`` (directions with ``sv`` below
:data:`SINGULAR_RCOND` of the largest dropped): a wrench sample with its own information
(``SensorSamples.wrench_information_sqrt``), so every estimator takes it unchanged. At a singular pose
the wrench direction no joint feels gets no weight instead of the noise a plain pseudo-inverse would
amplify into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.arm_dynamics import ArmDynamics
from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = ["JointTorqueWrench", "TorqueWrench", "SINGULAR_RCOND", "DEFAULT_EFFORT_STD", "torques_from_efforts",
           "payload_torques"]

SINGULAR_RCOND = 1e-6
"""Wrench directions whose singular value is below this fraction of the largest carry no information."""
DEFAULT_EFFORT_STD = 0.5
"""N·m: the effort noise assumed per joint without a calibration (which measures it)."""


@dataclass(frozen=True, eq=False)
class TorqueWrench:
    """Wrenches recovered from joint torques for ``N`` samples.

    Attributes:
        wrench_in_sensor: (N, 6) the least-squares wrench ``w_hat`` on S, N and N·m.
        information_sqrt: (N, 6, 6) ``W``, with ``W^T W`` the information of ``w_hat`` (None: plain
            pseudo-inverse wrenches, ``joint_space_rows=False``).
        payload_torques: (N, n) ``dtau``, the joint torques attributed to the payload, N·m.
        min_singular: (N,) the smallest singular value of ``Sigma^-1/2 J^T`` over the largest (0: singular).
    """

    wrench_in_sensor: np.ndarray
    information_sqrt: np.ndarray | None
    payload_torques: np.ndarray
    min_singular: np.ndarray


class JointTorqueWrench:
    """Joint states and efforts -> the payload's wrench on the sensor frame, with its information.

    Args:
        dynamics: the unloaded arm's torques (and the kinematics whose sensor frame is ``S``).
        effort_std: (n,) effort noise per joint, N·m; None: the calibration's residual, else
            :data:`DEFAULT_EFFORT_STD`.
        joint_space_rows: True: the samples carry ``W`` (the module docstring). False, for comparison
            only: the plain pseudo-inverse wrench ``pinv(-J^T) dtau``, every channel alike, as if an F/T
            sensor had measured it (``benchmarks/joint_torques.py`` shows what that costs near a
            singular pose).
    """

    def __init__(self, dynamics: ArmDynamics, effort_std: np.ndarray | None = None,
                 joint_space_rows: bool = True) -> None:
        self.dynamics = dynamics
        self.joint_space_rows = bool(joint_space_rows)
        n = dynamics.n_joints
        if effort_std is None:
            cal = dynamics.calibration
            effort_std = cal.residual_std if cal is not None else np.full(n, DEFAULT_EFFORT_STD)
        std = np.asarray(effort_std, dtype=float).reshape(-1)
        if std.shape != (n,) or np.any(~np.isfinite(std)) or np.any(std <= 0.0):
            raise ConfigurationError(f"effort_std must be {n} positive numbers (N·m)")
        self.effort_std = std

    def __call__(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, effort: np.ndarray) -> TorqueWrench:
        """For joint states ``q, dq, ddq`` and reported ``effort`` (N, n) (filtered alike)."""
        dyn = self.dynamics
        dtau = dyn.corrected_effort(effort) - dyn.torques(q, dq, ddq, effort)
        J = dyn.kinematics.frame_jacobian(q)  # (N, 6, n)
        A = -np.transpose(J, (0, 2, 1)) / self.effort_std[None, :, None]  # (N, n, 6)
        b = dtau / self.effort_std
        U, sv, Vt = np.linalg.svd(A, full_matrices=False)  # U (N, n, k), sv (N, k), Vt (N, k, 6), k = min(n, 6)
        top = np.maximum(sv[:, :1], 1e-300)
        keep = sv > SINGULAR_RCOND * top
        inv = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
        proj = np.einsum("nik,ni->nk", U, b)  # U^T b
        w_hat = np.einsum("nkj,nk->nj", Vt, inv * proj)
        k = sv.shape[1]
        W = np.zeros((len(q), 6, 6))
        W[:, :k, :] = np.where(keep, sv, 0.0)[:, :, None] * Vt
        min_sv = np.where(keep.all(axis=1) & (k == 6), sv[:, -1] / top[:, 0], 0.0)
        if not self.joint_space_rows:
            w_plain = np.einsum("nij,nj->ni", np.linalg.pinv(-np.transpose(J, (0, 2, 1)), rcond=SINGULAR_RCOND), dtau)
            return TorqueWrench(w_plain, None, dtau, min_sv)
        return TorqueWrench(w_hat, W, dtau, min_sv)


def torques_from_efforts(effort: np.ndarray, effort_unit: str = "torque", torque_constants: Sequence[float] = (),
                         *, scale_calibrated: bool = False) -> np.ndarray:
    """Return the joint states' efforts (N, n) as torques at the joints, N·m: the one place efforts are converted.

    ``effort_unit`` "torque": times ``torque_constants`` if given (a correction, e.g. -1 for a joint whose sign
    is flipped), else as they are. "current" (A): times ``torque_constants`` (N·m/A at the joint, the gear
    ratio included); without them the currents pass unchanged, which only a calibration that found each joint's
    effort scale (``scale_calibrated``: ``calibrate --effort-scale``, whose scale is then the torque constant)
    can read.

    Raises:
        ConfigurationError: torque constants not one per joint, or currents with neither constants nor a
            calibrated scale (one line).
    """
    effort = np.asarray(effort, dtype=float)
    n = effort.shape[-1] if effort.ndim else 0
    if len(torque_constants):
        k = np.asarray(torque_constants, dtype=float).reshape(-1)
        if k.shape != (n,):
            raise ConfigurationError(f"torque_constants has {k.size} values for {n} joints")
        return effort * k
    if effort_unit == "current" and not scale_calibrated:
        raise ConfigurationError("effort_unit is current but torque_constants is empty: set the joints' torque "
                                 "constants (N m/A at the joint), or calibrate with --effort-scale")
    return effort


def payload_torques(kinematics: SensorKinematics, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                    phi: np.ndarray) -> np.ndarray:
    """(N, n) the joint torques a payload of inertial parameters ``phi`` (10,) in the sensor frame adds, N·m.

    ``-J_S^T Y(a - g, omega, alpha) phi`` (module docstring): what the corrected efforts hold beyond the
    unloaded arm's torques, for a known payload (a calibration with a known mass)."""
    from payload_estimator.core.regressor import regressor

    motion = kinematics.compute(q, dq, ddq)
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    w = Y @ np.asarray(phi, dtype=float)
    J = kinematics.frame_jacobian(q)  # (N, 6, n)
    return -np.einsum("nki,nk->ni", J, w)
