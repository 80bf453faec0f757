"""What a motion tells about the payload: the Fisher information of its ten parameters.

**What is optimised.** The regressor of the payload's wrench, ``w = Y(a - g, omega, alpha) phi
(+ beta)``, evaluated along the motion of the TCP frame, gives the Fisher information of the
ten parameters for white wrench noise (``sigma_f`` per force axis, ``sigma_tau`` per torque
axis)::

    M = sum_t Y_t^T W Y_t,    W = diag(1/sigma_f², 1/sigma_f², 1/sigma_f², 1/sigma_tau², ...)

With the F/T offsets ``beta`` estimated too (six more unknowns, an identity block per sample),
the information left for ``phi`` is the Schur complement ``M - N Ybar^T W Ybar`` (``Ybar`` the
mean regressor): only the *variation* of the regressor over the motion identifies the payload.
The design maximises ``log det`` of that information (D-optimality) for the parameters scaled by
a nominal payload (mass ``m0``, length ``r0``: ``phi`` divided by ``m0, m0 r0, m0 r0²``).
D-optimality is chosen over the ``k1 cond + k2 / sigma_min`` of Leboutet et al.'s survey
("Inertial Parameter Identification in Robotics: A Survey") because it does not
depend on the parameters' units (a rescaling adds a constant to ``log det``), it is smooth in
the coefficients (the condition number and the smallest singular value are not, where
singular values cross), and it rewards the weakest directions most (each enters as a
logarithm) without ignoring the others; the scaled condition number is reported beside it.

**Predicted uncertainty** (:func:`predict_uncertainty`): the Cramér–Rao bound of the least-
squares estimate for white wrench noise at the sensor's rate, ``cov(phi) = M⁻¹``, propagated
to the COM and to the inertia about the COM as the estimators propagate theirs. It ignores the
noise of the measured accelerations and the drift of the offsets, so it is a lower bound: use
it to compare motions, not as a promise.

**Through the joint torques** (no F/T sensor: ``wrench_source: joint_torques``), the payload's
wrench is seen as ``dtau = -J^T w`` (``J`` the TCP frame's Jacobian in its own axes,
:mod:`payload_estimator.pipeline.joint_torques`), each joint with its own noise: the effort noise
left by the unloaded arm's calibration (its ``residual_std``) and the uncertainty of the friction the
calibration subtracts (:class:`JointTorqueNoise`). The information is then::

    M = sum_t Y_t^T J_t S^-1 J_t^T Y_t,    S = diag(sigma_effort_i² + sigma_friction_i²)

(:func:`joint_torque_information`): a motion that turns only the wrist, however informative for a
wrist sensor, shows the payload to the joints through the wrist's small levers and the shoulder's
noisy efforts, so the best motion for joint torques is not the best one for a sensor. The
calibration knows the joints' offsets: no Schur complement unless asked.

Units: rad, s, m, kg, N, N·m. Frames: ``phi`` about the origin of the kinematics' frame (the
TCP: the flange or the sensor), in its axes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import TABLE_II
from payload_estimator.core.regressor import N_PARAMS, regressor
from payload_estimator.core.results import com_covariance, inertia_com_covariance
from payload_estimator.excitation.check import trajectory_grid

if TYPE_CHECKING:  # pinocchio comes with the kinematics a caller passes in
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "PredictedUncertainty",
    "predict_uncertainty",
    "information_matrix",
    "scaled_condition_number",
    "nominal_payload",
    "channel_weights",
    "parameter_scale",
    "log_det",
    "DESIGN_FORCE_STD",
    "DESIGN_TORQUE_STD",
    "JointTorqueNoise",
    "joint_torque_rows",
    "joint_torque_information",
    "FRICTION_UNCERTAINTY",
    "EFFORT_RATE_HZ",
]

DESIGN_FORCE_STD = TABLE_II["moderate"].force
"""Force noise per axis that weighs the information, N (Nadeau et al.'s Table II, moderate)."""
DESIGN_TORQUE_STD = TABLE_II["moderate"].torque
"""Torque noise per axis that weighs the information, N·m (Nadeau et al.'s Table II, moderate)."""
_SENSOR_RATE_HZ = 1000.0
"""Rate of the wrench samples the predicted uncertainty assumes, Hz."""
EFFORT_RATE_HZ = 100.0
"""Rate of independent effort samples the joint-torque prediction assumes, Hz (the calibration's fit
rate: the efforts are low-passed at 10 Hz, so faster samples are not independent)."""
FRICTION_UNCERTAINTY = 0.1
"""Fraction of each joint's Coulomb friction the calibration's friction model leaves uncertain (its
law is not the joint's, and friction changes with temperature and load): a noise of its own."""
DEFAULT_EFFORT_STD = 0.5
"""N·m: the effort noise assumed per joint of an arm with neither a calibration nor an effort table."""


@dataclass(frozen=True, eq=False)
class JointTorqueNoise:
    """What the joint torques' payload residual is uncertain by, per joint.

    Attributes:
        effort_std: (n,) effort noise, N·m (a calibration's ``residual_std``).
        friction_std: (n,) uncertainty of the friction subtracted, N·m.
        source: where the numbers come from (shown in summaries).
    """

    effort_std: np.ndarray
    friction_std: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        e = np.asarray(self.effort_std, dtype=float).reshape(-1)
        f = np.asarray(self.friction_std, dtype=float).reshape(-1)
        if e.shape != f.shape or not (np.all(np.isfinite(e)) and np.all(np.isfinite(f))) \
                or np.any(e <= 0.0) or np.any(f < 0.0):
            raise ValueError("effort_std must be positive and friction_std non-negative, one per joint")
        object.__setattr__(self, "effort_std", e)
        object.__setattr__(self, "friction_std", f)

    @property
    def std(self) -> np.ndarray:
        """(n,) the total std per joint, ``sqrt(effort_std² + friction_std²)``, N·m."""
        return np.sqrt(self.effort_std**2 + self.friction_std**2)

    @classmethod
    def from_calibration(cls, calibration: Any) -> JointTorqueNoise:
        """Return the noise an :class:`~payload_estimator.pipeline.arm_model.ArmCalibration` leaves.

        Its residual std per joint, and :data:`FRICTION_UNCERTAINTY` of its Coulomb levels."""
        coulomb = np.sum(np.abs(np.asarray(calibration.coulomb, dtype=float)), axis=1)
        return cls(np.asarray(calibration.residual_std, dtype=float), FRICTION_UNCERTAINTY * coulomb,
                   source="the arm calibration's residual and friction")

    @classmethod
    def for_robot(cls, spec: Any) -> JointTorqueNoise:
        """Return the noise of a robot spec's joint-torque readings (its effort table), before any calibration.

        The table's effort noise, and :data:`FRICTION_UNCERTAINTY` of its Coulomb and Stribeck
        friction; an arm without an effort table: :data:`DEFAULT_EFFORT_STD` and no friction term."""
        table = getattr(spec, "efforts", None)
        n = len(spec.joint_names)
        if table is None:
            return cls.default(n)
        friction = np.asarray(table.coulomb, dtype=float) + np.asarray(table.stribeck, dtype=float)
        return cls(np.asarray(table.noise_std, dtype=float), FRICTION_UNCERTAINTY * friction,
                   source=f"the {spec.name}'s effort noise and friction")

    @classmethod
    def default(cls, n: int) -> JointTorqueNoise:
        """:data:`DEFAULT_EFFORT_STD` on each of ``n`` joints, no friction term."""
        return cls(np.full(n, DEFAULT_EFFORT_STD), np.zeros(n), source=f"{DEFAULT_EFFORT_STD:g} N·m per joint")

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON."""
        return {"effort_std_n_m": self.effort_std.tolist(), "friction_std_n_m": self.friction_std.tolist(),
                "source": self.source}


def joint_torque_rows(kin: SensorKinematics, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                      noise: JointTorqueNoise, motion: Any = None) -> np.ndarray:
    """Return the (N, n, 10) whitened joint-torque regressor ``-S^-1/2 J_t^T Y_t`` of ``phi``.

    ``motion``: ``kin.compute(q, dq, ddq)`` when already computed."""
    motion = kin.compute(q, dq, ddq) if motion is None else motion
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    J = kin.frame_jacobian(q)  # (N, 6, n)
    if J.shape[2] != noise.std.size:
        raise ValueError(f"the joint-torque noise has {noise.std.size} joints, the kinematics {J.shape[2]}")
    return -np.einsum("nkj,nkp->njp", J, Y) / noise.std[None, :, None]


def joint_torque_information(
    kin: SensorKinematics,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    noise: JointTorqueNoise,
    estimate_offsets: bool = False,
) -> np.ndarray:
    """Return the (10, 10) Fisher information of ``phi`` from one effort sample per joint state.

    At each of the N joint states ``q, dq, ddq`` (N, n), the payload seen through the joint torques
    with ``noise`` (module docstring); with ``estimate_offsets``, what is left once a constant
    offset per joint is estimated too."""
    R = joint_torque_rows(kin, q, dq, ddq, noise)
    if estimate_offsets:
        R = R - R.mean(axis=0)
    return np.einsum("nki,nkj->ij", R, R)


def nominal_payload() -> InertialParameters:
    """Return the payload a design is scored for when none is given.

    1 kg, a uniform 10 cm cube whose centre is 5 cm out along the TCP's ``z`` axis."""
    side = 0.1
    return InertialParameters.from_mass_com_inertia(1.0, np.array([0.0, 0.0, 0.05]),
                                                    np.eye(3) * side**2 / 6.0)


def channel_weights(force_std: float, torque_std: float) -> np.ndarray:
    """Return the (6,) inverse noise variances of ``[fx, fy, fz, tx, ty, tz]``.

    For white wrench noise of ``force_std`` (N) and ``torque_std`` (N·m) per axis."""
    return np.array([force_std**-2] * 3 + [torque_std**-2] * 3)


def information_matrix(
    kin: SensorKinematics,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    force_std: float = DESIGN_FORCE_STD,
    torque_std: float = DESIGN_TORQUE_STD,
    estimate_offsets: bool = True,
) -> np.ndarray:
    """Return the (10, 10) Fisher information of ``phi`` about the origin of ``kin``'s frame.

    From one wrench sample at each of the N joint states ``q, dq, ddq`` (N, n), white wrench noise
    ``force_std`` (N) and ``torque_std`` (N·m) per axis; with ``estimate_offsets``, what is left
    once the six F/T offsets are estimated too (the Schur complement)."""
    motion = kin.compute(q, dq, ddq)
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    w = channel_weights(force_std, torque_std)
    if estimate_offsets:
        Y = Y - Y.mean(axis=0)
    WY = Y * w[None, :, None]
    return np.einsum("nki,nkj->ij", Y, WY)


def parameter_scale(payload: InertialParameters) -> np.ndarray:
    """Return the (10,) natural units of ``phi`` for ``payload``.

    ``m0, m0 r0, m0 r0²`` with ``r0`` its COM distance or radius of gyration, at least 5 cm."""
    m0 = max(payload.mass, 1e-3)
    r0 = max(float(np.linalg.norm(payload.com)) if payload.mass > 0 else 0.0,
             float(np.sqrt(max(np.mean(payload.principal_moments()), 0.0) / m0)), 0.05)
    return np.array([m0] + [m0 * r0] * 3 + [m0 * r0 * r0] * 6)


def scaled_condition_number(information: np.ndarray, payload: InertialParameters | None = None) -> float:
    """Return the condition number of the information for parameters in ``payload``'s natural units.

    ``payload`` is :func:`nominal_payload` by default; infinite when the information is singular."""
    scale = parameter_scale(payload or nominal_payload())
    M = information * np.outer(scale, scale)
    eig = np.linalg.eigvalsh(0.5 * (M + M.T))
    return float(eig[-1] / eig[0]) if eig[0] > 0.0 else float("inf")


def log_det(M: np.ndarray) -> float:
    """Return ``log det M`` of a symmetric information matrix (its symmetric part).

    For a singular or indefinite one, a large negative number that still grows with the
    eigenvalues."""
    eig = np.linalg.eigvalsh(0.5 * (M + M.T))
    if eig[0] <= 0.0:
        return -1e6 + float(np.sum(np.log(np.maximum(eig, 1e-300))))  # steers away from singular motions
    return float(np.sum(np.log(eig)))


@dataclass(frozen=True)
class PredictedUncertainty:
    """Cramér–Rao standard deviations of a least-squares estimate along a motion.

    Attributes:
        mass_std: kg. mass_rel_std: relative to the payload's mass.
        com_std: (3,) m, in the TCP frame's axes.
        inertia_rel_std: (6,) entries ``xx, yy, zz, xy, xz, yz`` of the inertia about the COM,
            relative to the mean principal moment (floored at ``m (2 cm)²``, as convergence does).
        payload: the payload it is computed for.
    """

    mass_std: float
    mass_rel_std: float
    com_std: np.ndarray
    inertia_rel_std: np.ndarray
    payload: InertialParameters = field(repr=False)

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON."""
        return {
            "mass_kg": self.payload.mass,
            "mass_std_kg": self.mass_std,
            "mass_rel_std": self.mass_rel_std,
            "com_std_m": self.com_std.tolist(),
            "inertia_rel_std": self.inertia_rel_std.tolist(),
        }


def predict_uncertainty(
    trajectory: Any,
    kin: SensorKinematics,
    payload: InertialParameters | None = None,
    force_std: float = DESIGN_FORCE_STD,
    torque_std: float = DESIGN_TORQUE_STD,
    estimate_offsets: bool = True,
    sensor_rate_hz: float = _SENSOR_RATE_HZ,
    joint_torques: JointTorqueNoise | None = None,
) -> PredictedUncertainty:
    """Return the Cramér–Rao uncertainty of ``payload`` identified along ``trajectory``.

    ``payload`` is ``phi`` about ``kin``'s frame (:func:`nominal_payload` by default); the
    wrench is sampled at ``sensor_rate_hz`` with
    white noise ``force_std`` (N), ``torque_std`` (N·m) per axis. See the module docstring.
    With ``joint_torques``, the payload is seen through the joint torques instead, with that noise,
    at :data:`EFFORT_RATE_HZ` (``force_std``, ``torque_std`` and ``sensor_rate_hz`` unused)."""
    payload = payload or nominal_payload()
    grid_hz = 100.0
    t = trajectory_grid(float(trajectory.duration), grid_hz)
    q, dq, ddq = trajectory(t)
    if joint_torques is not None:
        M = joint_torque_information(kin, q, dq, ddq, joint_torques, estimate_offsets) * (EFFORT_RATE_HZ / grid_hz)
    else:
        M = information_matrix(kin, q, dq, ddq, force_std, torque_std, estimate_offsets) * (sensor_rate_hz / grid_hz)
    try:
        cov = np.linalg.inv(0.5 * (M + M.T))
    except np.linalg.LinAlgError:
        cov = np.full((N_PARAMS, N_PARAMS), np.inf)
    phi = payload.phi
    mass_std = float(np.sqrt(max(cov[0, 0], 0.0)))
    com_std = np.sqrt(np.clip(np.diag(com_covariance(phi, cov)), 0.0, None))
    scale = max(float(np.mean(payload.principal_moments())), payload.mass * 0.02**2, 1e-12)
    inertia_std = np.sqrt(np.clip(np.diag(inertia_com_covariance(phi, cov)), 0.0, None))
    return PredictedUncertainty(mass_std, mass_std / max(payload.mass, 1e-12), com_std,
                                inertia_std / scale, payload)
