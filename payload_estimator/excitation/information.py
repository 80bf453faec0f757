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
]

DESIGN_FORCE_STD = TABLE_II["moderate"].force
"""Force noise per axis that weighs the information, N (Nadeau et al.'s Table II, moderate)."""
DESIGN_TORQUE_STD = TABLE_II["moderate"].torque
"""Torque noise per axis that weighs the information, N·m (Nadeau et al.'s Table II, moderate)."""
_SENSOR_RATE_HZ = 1000.0
"""Rate of the wrench samples the predicted uncertainty assumes, Hz."""


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
) -> PredictedUncertainty:
    """Return the Cramér–Rao uncertainty of ``payload`` identified along ``trajectory``.

    ``payload`` is ``phi`` about ``kin``'s frame (:func:`nominal_payload` by default); the
    wrench is sampled at ``sensor_rate_hz`` with
    white noise ``force_std`` (N), ``torque_std`` (N·m) per axis. See the module docstring."""
    payload = payload or nominal_payload()
    grid_hz = 100.0
    t = trajectory_grid(float(trajectory.duration), grid_hz)
    q, dq, ddq = trajectory(t)
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
