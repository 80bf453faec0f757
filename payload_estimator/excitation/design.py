"""An identification motion designed for the payload's ten inertial parameters.

**The trajectory** (:class:`FourierExcitation`): every joint follows a finite Fourier series
(Swevers et al. 1997, the usual excitation of survey 001) in a warped time ``tau``::

    q_i(t) = q_start_i + sum_k  a_ik sin(k w tau(t)) + b_ik (cos(k w tau(t)) - 1),   k in H

``tau`` runs at the speed factor ``e(t) = dtau/dt`` that rises from 0 to 1 along a
minimum-jerk blend over the first ``ramp`` seconds and falls back to 0 over the last ones, so
the motion starts and ends at rest with zero acceleration and a continuous jerk. The series
is periodic in ``tau`` with period ``tau(duration) = duration - ramp`` (``w`` is 2 pi over it),
and ``sin(0) = cos(0) - 1 = 0``: the motion starts *and ends* exactly at ``q_start``. The
harmonics ``H`` reach up to :data:`MAX_FREQUENCY_HZ`, well inside the pipeline's 10 Hz low-pass
and a joint controller's tracking bandwidth; a long motion keeps :data:`MAX_HARMONICS` of them,
spread geometrically from the fundamental (the design's cost grows with their number).

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
D-optimality is chosen over survey 001's ``k1 cond + k2 / sigma_min`` because it does not
depend on the parameters' units (a rescaling adds a constant to ``log det``), it is smooth in
the coefficients (the condition number and the smallest singular value are not, where
singular values cross), and it rewards the weakest directions most (each enters as a
logarithm) without ignoring the others; the scaled condition number is reported beside it.

**Constraints.** For every candidate the coefficients are scaled down by the largest factor
``s <= 1`` that keeps the joint positions (margin, excursion), speeds, accelerations and jerks
within their limits (exact: these are linear in the coefficients), then the TCP speed and the
payload's clearance of the floor and the base (re-scaled until they hold). The optimiser (the
eight best of 64 seeded random coefficient sets, each refined by gradient ascent along the limit
that binds) therefore only ever sees admissible motions, and the result is checked once more
on the 1 kHz sampled trajectory (:func:`~payload_estimator.excitation.check.check_trajectory`),
shrunk if a peak between the design grid's samples exceeded a limit. The same seed gives the same motion.

**Predicted uncertainty** (:func:`predict_uncertainty`): the Cramér–Rao bound of the least-
squares estimate for white wrench noise at the sensor's rate, ``cov(phi) = M⁻¹``, propagated
to the COM and to the inertia about the COM as the estimators propagate theirs. It ignores the
noise of the measured accelerations and the drift of the offsets, so it is a lower bound: use
it to compare motions, not as a promise.

Units: rad, s, m, kg, N, N·m. Frames: ``phi`` about the origin of the kinematics' frame (the
TCP: the flange or the sensor), in its axes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import TABLE_II
from payload_estimator.core.regressor import FEATURE_MATRIX, N_PARAMS, regressor, regressor_features
from payload_estimator.core.results import com_covariance, inertia_com_covariance
from payload_estimator.excitation.check import TrajectoryCheck, check_trajectory, trajectory_grid
from payload_estimator.excitation.limits import ArmLimits, ExcitationError, MotionLimits

if TYPE_CHECKING:  # pinocchio comes with the kinematics a caller passes in
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "FourierExcitation",
    "ExcitationDesign",
    "PredictedUncertainty",
    "design_excitation",
    "FourierSearch",
    "check_start",
    "fit_to_limits",
    "fourier_harmonics",
    "motion_summary",
    "predict_uncertainty",
    "information_matrix",
    "scaled_condition_number",
    "nominal_payload",
    "MAX_FREQUENCY_HZ",
    "MIN_DURATION_S",
    "DESIGN_FORCE_STD",
    "DESIGN_TORQUE_STD",
]

MAX_FREQUENCY_HZ = 2.0
"""Highest harmonic of a designed motion, Hz: angular accelerations grow with the frequency
squared, a joint controller tracks a few Hz and the pipeline low-passes at 10 Hz. Against 1.2 and
1.6 Hz, 2 Hz brought the Panda's full convergence (claw hammer, PMD, 3 noise seeds) from 1.8-2.8 s
to 1.8-2.4 s at the same inertia error (``benchmarks/excitation.py``)."""
MAX_HARMONICS = 6
"""Most harmonics per joint in a designed motion."""
MIN_DURATION_S = 2.0
"""Shortest motion designed, s: two start/stop blends and at least one period of the series."""
DESIGN_FORCE_STD = TABLE_II["moderate"].force
"""Force noise per axis that weighs the information, N (paper 004 Table II, moderate)."""
DESIGN_TORQUE_STD = TABLE_II["moderate"].torque
"""Torque noise per axis that weighs the information, N·m (paper 004 Table II, moderate)."""
_DESIGN_RATE_HZ = 15.0
"""The information and the TCP speed are evaluated at this rate during the optimisation, Hz
(the highest harmonic is sampled more than 12 times per period)."""
_LIMIT_RATE_HZ = 200.0
"""The joint limits are evaluated at this rate during the optimisation, Hz."""
_SENSOR_RATE_HZ = 1000.0
"""Rate of the wrench samples the predicted uncertainty assumes, Hz."""
_WINDOWS = ((1.0, 0.5), (0.5, 0.5))
"""(fraction of the motion from its start, weight) of the information windows the score adds up:
the whole motion, and its first half, so that the information comes early (the node stops the
motion as soon as the estimate has converged)."""
_MASS_COM_WEIGHT = 0.5
"""Extra weight of the information about mass and first moment (the inertia a nuisance: ``log det M
- log det M_inertia``) in each window's score: it favours the reorientations that tell the mass
from the F/T offsets, which matter most for light payloads."""
_CANDIDATES = 64
"""Seeded random coefficient sets scored first; the best ones start the local optimisation."""
_STARTS = 8
"""Local optimisations, from the best random sets (the problem has many local optima)."""
_ITERATIONS = 20
"""Gradient steps of each local optimisation."""


# ----------------------------------------------------------------- time warp
def _blend(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-jerk ``s(x) = 10x³ - 15x⁴ + 6x⁵``, its first two derivatives and its integral from 0,
    ``x`` clipped to [0, 1]."""
    x = np.clip(x, 0.0, 1.0)
    x2 = x * x
    s = x2 * x * (10.0 + x * (-15.0 + 6.0 * x))
    ds = 30.0 * x2 * (1.0 - x) ** 2
    dds = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x)
    integral = x2 * x2 * (2.5 + x * (-3.0 + x))
    return s, ds, dds, integral


def _warp(t: np.ndarray, duration: float, ramp: float) -> tuple[np.ndarray, ...]:
    """``(tau, e, de/dt, d²e/dt²)`` at ``t``: the speed factor ``e`` rises over ``[0, ramp]``,
    is 1, and falls over ``[duration - ramp, duration]``; 0 outside ``[0, duration]``."""
    tc = np.clip(t, 0.0, duration)
    s_in, ds_in, dds_in, int_in = _blend(tc / ramp)
    s_out, ds_out, dds_out, int_out = _blend((duration - tc) / ramp)
    rising, falling = tc < ramp, tc > duration - ramp
    e = np.where(rising, s_in, np.where(falling, s_out, 1.0))
    de = np.where(rising, ds_in / ramp, np.where(falling, -ds_out / ramp, 0.0))
    dde = np.where(rising, dds_in / ramp**2, np.where(falling, dds_out / ramp**2, 0.0))
    tau_end = duration - ramp
    tau = np.where(rising, ramp * int_in,
                   np.where(falling, tau_end - ramp * int_out, tc - 0.5 * ramp))
    inside = (t >= 0.0) & (t <= duration)
    return tau, np.where(inside, e, 0.0), np.where(inside, de, 0.0), np.where(inside, dde, 0.0)


# ---------------------------------------------------------------- trajectory
class FourierExcitation:
    """Finite Fourier series in warped time about ``q_start`` (see the module docstring).

    Args:
        q_start: (n,) start and end configuration, rad.
        coefficients: (2H, n) ``[a_k for k in H, b_k for k in H]`` per joint, rad.
        duration: s. ramp: start/stop blend length, s (at most half the duration).
        harmonics: (H,) the harmonic numbers ``k`` (positive integers; default ``1..H``).
        joint_names: the joints, in column order.
    """

    name = "optimal"

    def __init__(self, q_start: np.ndarray, coefficients: np.ndarray, duration: float, ramp: float,
                 harmonics: np.ndarray | None = None, joint_names: tuple[str, ...] = ()) -> None:
        self.q_start = np.array(q_start, dtype=float).reshape(-1)
        self.coefficients = np.array(coefficients, dtype=float)
        if self.coefficients.ndim != 2 or self.coefficients.shape[1] != self.q_start.size \
                or self.coefficients.shape[0] % 2:
            raise ValueError("coefficients must be (2H, n) for n joints")
        if not 0.0 < ramp <= 0.5 * duration:
            raise ValueError("the ramp must be positive and at most half the duration")
        H = self.coefficients.shape[0] // 2
        k = np.arange(1, H + 1) if harmonics is None else np.asarray(harmonics, dtype=int).reshape(-1)
        if k.shape != (H,) or np.any(k < 1):
            raise ValueError(f"harmonics must be {H} positive integers")
        self.harmonics = k
        self._duration = float(duration)
        self.ramp = float(ramp)
        self.omega = 2.0 * np.pi / (self._duration - self.ramp)
        self.joint_names = tuple(joint_names)

    @property
    def duration(self) -> float:
        """End of the motion, s."""
        return self._duration

    def basis(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(N, 2K) matrices ``B0..B3`` with ``q - q_start = B0 C``, ``dq = B1 C``, ``ddq = B2 C``,
        jerk ``= B3 C`` for the coefficients ``C`` (2K, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        tau, e, de, dde = _warp(t, self._duration, self.ramp)
        kw = self.omega * self.harmonics
        phase = np.outer(tau, kw)
        sin, cos = np.sin(phase), np.cos(phase)
        # derivatives in tau of [sin(kw tau), cos(kw tau) - 1]
        f0 = np.hstack([sin, cos - 1.0])
        f1 = np.hstack([kw * cos, -kw * sin])
        f2 = np.hstack([-(kw**2) * sin, -(kw**2) * cos])
        f3 = np.hstack([-(kw**3) * cos, (kw**3) * sin])
        e_, de_, dde_ = e[:, None], de[:, None], dde[:, None]
        return (f0, f1 * e_, f2 * e_**2 + f1 * de_,
                f3 * e_**3 + 3.0 * f2 * e_ * de_ + f1 * dde_)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n)."""
        B0, B1, B2, _ = self.basis(t)
        C = self.coefficients
        return self.q_start + B0 @ C, B1 @ C, B2 @ C

    def jerk(self, t: np.ndarray) -> np.ndarray:
        """(N, n) joint jerks at ``t``, rad/s³."""
        return self.basis(t)[3] @ self.coefficients

    def scaled(self, factor: float) -> FourierExcitation:
        """The same motion with every excursion multiplied by ``factor``."""
        return FourierExcitation(self.q_start, factor * self.coefficients, self._duration, self.ramp,
                                 self.harmonics, self.joint_names)


# --------------------------------------------------------------- information
def nominal_payload() -> InertialParameters:
    """The payload a design is scored for when none is given: 1 kg, a uniform 10 cm cube whose
    centre is 5 cm out along the TCP's ``z`` axis."""
    side = 0.1
    return InertialParameters.from_mass_com_inertia(1.0, np.array([0.0, 0.0, 0.05]),
                                                    np.eye(3) * side**2 / 6.0)


def _channel_weights(force_std: float, torque_std: float) -> np.ndarray:
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
    """(10, 10) Fisher information of ``phi`` (about the origin of ``kin``'s frame) from one wrench
    sample at each of the N joint states ``q, dq, ddq`` (N, n), white wrench noise
    ``force_std`` (N) and ``torque_std`` (N·m) per axis; with ``estimate_offsets``, what is left
    once the six F/T offsets are estimated too (the Schur complement)."""
    motion = kin.compute(q, dq, ddq)
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    w = _channel_weights(force_std, torque_std)
    if estimate_offsets:
        Y = Y - Y.mean(axis=0)
    WY = Y * w[None, :, None]
    return np.einsum("nki,nkj->ij", Y, WY)


def _parameter_scale(payload: InertialParameters) -> np.ndarray:
    """(10,) natural units of ``phi`` for ``payload``: ``m0, m0 r0, m0 r0²`` with ``r0`` its COM
    distance or radius of gyration, at least 5 cm."""
    m0 = max(payload.mass, 1e-3)
    r0 = max(float(np.linalg.norm(payload.com)) if payload.mass > 0 else 0.0,
             float(np.sqrt(max(np.mean(payload.principal_moments()), 0.0) / m0)), 0.05)
    return np.array([m0] + [m0 * r0] * 3 + [m0 * r0 * r0] * 6)


def scaled_condition_number(information: np.ndarray, payload: InertialParameters | None = None) -> float:
    """Condition number of the information for parameters in ``payload``'s natural units
    (:func:`nominal_payload` by default); infinite when it is singular."""
    scale = _parameter_scale(payload or nominal_payload())
    M = information * np.outer(scale, scale)
    eig = np.linalg.eigvalsh(0.5 * (M + M.T))
    return float(eig[-1] / eig[0]) if eig[0] > 0.0 else float("inf")


def _log_det(M: np.ndarray) -> float:
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
    """Cramér–Rao uncertainty of ``payload`` (``phi`` about ``kin``'s frame; :func:`nominal_payload`
    by default) identified along ``trajectory`` from a wrench sampled at ``sensor_rate_hz`` with
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


# -------------------------------------------------------------------- design
@dataclass(frozen=True, eq=False)
class ExcitationDesign:
    """A designed identification motion and what it promises.

    Attributes:
        trajectory: the motion (JointTrajectory protocol).
        joint_names: its joints, in column order.
        q_start: (n,) rad.
        limits: the motion's bounds. arm: the joint limits.
        check: the sampled trajectory against every constraint (``ok`` for a returned design).
        log_det: D-optimality criterion of the scaled information.
        condition_number: scaled condition number of the information.
        predicted: Cramér–Rao uncertainty for the nominal payload.
        seed: the seed of the optimisation's starting points.
        design_time_s: wall time of the design, s.
    """

    trajectory: FourierExcitation
    joint_names: tuple[str, ...]
    q_start: np.ndarray
    limits: MotionLimits
    arm: ArmLimits
    check: TrajectoryCheck
    log_det: float
    condition_number: float
    predicted: PredictedUncertainty
    seed: int
    design_time_s: float

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON."""
        return {
            **motion_summary(self.trajectory, self.joint_names, self.q_start, self.check, self.limits),
            "log_det_information": self.log_det,
            "scaled_condition_number": self.condition_number,
            "predicted_nominal": self.predicted.summary(),
            "seed": self.seed,
            "design_time_s": self.design_time_s,
        }


def motion_summary(trajectory: FourierExcitation, joint_names: Sequence[str], q_start: np.ndarray,
                   check: TrajectoryCheck, limits: MotionLimits) -> dict[str, Any]:
    """What every designed motion's ``summary()`` starts with: its length, joints, start, harmonics, the limit
    check and the TCP speed limit (plain values)."""
    return {
        "duration_s": trajectory.duration,
        "joints": list(joint_names),
        "q_start": q_start.tolist(),
        "harmonics": trajectory.harmonics.tolist(),
        "base_frequency_hz": trajectory.omega / (2.0 * np.pi),
        **check.summary(),
        "max_tcp_speed_m_s": limits.max_tcp_speed,
    }


class FourierSearch:
    """The search over the coefficients of a :class:`FourierExcitation`: the largest admissible
    scaling of any coefficients (the joint limits exactly, then the TCP speed and the clearances),
    gradient ascent along the limit that binds, from the best of seeded random starts. A subclass
    says what is maximised (:meth:`score`, :meth:`gradient`): the payload's information here
    (``_Problem``), the arm's in :mod:`~payload_estimator.excitation.calibration`.

    Args:
        kin, arm, q_start, limits: as :func:`design_excitation`'s.
        ramp: start/stop blend, s. harmonics: (H,) the harmonic numbers.
        design_rate_hz: rate of the grid the score and the TCP checks use, Hz.
    """

    speed_slack = 0.98
    """A TCP speed above the limit scales the motion to this fraction of the limit's ratio (a slack
    of 2 %: the speed is not exactly proportional to the scaling)."""

    def __init__(self, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits,
                 ramp: float, harmonics: np.ndarray, design_rate_hz: float = _DESIGN_RATE_HZ) -> None:
        self.kin, self.arm, self.q_start, self.limits = kin, arm, q_start, limits
        self.n = arm.n_joints
        self.H = len(harmonics)
        self.ramp = ramp
        probe = FourierExcitation(q_start, np.zeros((2 * self.H, self.n)), limits.duration, ramp, harmonics)
        t_lim = trajectory_grid(limits.duration, _LIMIT_RATE_HZ)
        self.B = probe.basis(t_lim)
        t_design = trajectory_grid(limits.duration, design_rate_hz)
        self.Bd = probe.basis(t_design)[:3]
        # the normalised variables x: a_k = x_k / k (each harmonic's speed ~ x w)
        k = np.asarray(harmonics, dtype=float)
        self.unit = np.concatenate([1.0 / k, 1.0 / k])[:, None]
        self.room_up = arm.q_max - limits.position_margin - q_start
        self.room_down = q_start - (arm.q_min + limits.position_margin)
        self.allowed = (limits.velocity_fraction * arm.dq_max, limits.acceleration_fraction * arm.ddq_max,
                        limits.jerk_fraction * arm.dddq_max)
        self.up = -kin.gravity_in_world / np.linalg.norm(kin.gravity_in_world)

    def score(self, x: np.ndarray) -> tuple[float, np.ndarray | None]:
        """(criterion, admissible coefficients) of the largest admissible scaling of the normalised
        coefficients ``x``; ``(-1e9, None)`` when there is none."""
        raise NotImplementedError

    def gradient(self, C: np.ndarray) -> np.ndarray:
        """(2H, n) gradient of the criterion by the coefficients ``C`` (no re-scaling)."""
        raise NotImplementedError

    def design_states(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` (N, n) on the design grid for the coefficients ``C``."""
        B0, B1, B2 = self.Bd
        return self.q_start + B0 @ C, B1 @ C, B2 @ C

    def search(self, seed: int, candidates: int = _CANDIDATES, starts: int = _STARTS,
               iterations: int = _ITERATIONS) -> np.ndarray | None:
        """The best admissible coefficients found: ``candidates`` seeded random sets scored, the best
        ``starts`` of them refined by :meth:`ascend` (``iterations`` steps); None if none is admissible."""
        rng = np.random.default_rng(seed)
        drawn = rng.normal(size=(candidates, 2 * self.H * self.n))
        scores = [self.score(x)[0] for x in drawn]
        best_score, best_C = -np.inf, None
        for k in np.argsort(scores)[::-1][:starts]:
            score, C = self.ascend(drawn[k], iterations)
            if C is not None and score > best_score:
                best_score, best_C = score, C
        return best_C

    def coefficients(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(2 * self.H, self.n) * self.unit

    def linear_scale(self, C: np.ndarray) -> float:
        """Largest s with s C inside the position, excursion, speed, acceleration and jerk limits."""
        B0, B1, B2, B3 = self.B
        D = B0 @ C
        ratios = [np.max(D, axis=0) / np.minimum(self.room_up, self.limits.max_excursion),
                  np.max(-D, axis=0) / np.minimum(self.room_down, self.limits.max_excursion)]
        for Bi, allowed in zip((B1, B2, B3), self.allowed):
            ratios.append(np.max(np.abs(Bi @ C), axis=0) / allowed)
        worst = float(np.max(ratios))
        return 1.0 if worst <= 0.0 else min(1.0, 1.0 / worst)

    def admissible(self, x: np.ndarray) -> tuple[np.ndarray, Any] | None:
        """(scaled coefficients, motion on the design grid) of the largest admissible scaling.

        The TCP speed is nearly proportional to the scaling: one proportional step (with
        :attr:`speed_slack`) usually lands below the limit; a clearance violated shrinks the motion by 30 %."""
        C = self.coefficients(x)
        s = self.linear_scale(C)
        B0, B1, B2 = self.Bd
        target = 0.97 * self.limits.max_tcp_speed
        for _ in range(8):
            Cs = s * C
            q, dq, ddq = self.q_start + B0 @ Cs, B1 @ Cs, B2 @ Cs
            motion = self.kin.compute(q, dq, ddq)
            speed = float(np.max(np.linalg.norm(motion.lin_vel_in_sensor, axis=1)))
            p = motion.p_world_sensor
            height = p @ self.up
            floor = float(np.min(height - self.limits.payload_radius - self.limits.floor_height))
            base = float(np.min(np.linalg.norm(p - np.outer(height, self.up), axis=1)
                                - self.limits.payload_radius - self.limits.base_clearance))
            if speed <= target and floor >= 0.0 and base >= 0.0:
                return Cs, motion
            s *= min(self.speed_slack * target / speed if speed > target else 1.0,
                     0.7 if min(floor, base) < 0.0 else 1.0)
        return None

    def active_gradient(self, C: np.ndarray) -> np.ndarray:
        """(2H, n) gradient of the ratio ``r`` of the limit ``C`` comes nearest (``r = 1``: on it),
        a function of degree 1 in ``C``: so moving along ``g - (g . C) grad r`` keeps ``r`` while
        the log det changes as the gradient ``g`` says. Joint limits are linear in ``C``; the TCP
        speed is taken as linear too (its Jacobian at the fastest sample)."""
        B0, B1, B2, B3 = self.B
        D = B0 @ C
        cap_up = np.minimum(self.room_up, self.limits.max_excursion)
        cap_down = np.minimum(self.room_down, self.limits.max_excursion)
        terms = [(D / cap_up, B0, 1.0 / cap_up), (-D / cap_down, B0, -1.0 / cap_down)]
        for Bi, allowed in zip((B1, B2, B3), self.allowed):
            X = Bi @ C
            terms.append((np.abs(X) / allowed, Bi, np.sign(X) / allowed))
        worst, grad = -np.inf, np.zeros_like(C)
        for ratio, Bi, weight in terms:
            k, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            if ratio[k, j] > worst:
                worst = float(ratio[k, j])
                grad = np.zeros_like(C)
                grad[:, j] = Bi[k] * weight[k, j] if np.ndim(weight) == 2 else Bi[k] * weight[j]
        Bd0, Bd1, _ = self.Bd
        q, dq = self.q_start + Bd0 @ C, Bd1 @ C
        v = self.kin.compute(q, dq, np.zeros_like(dq)).lin_vel_in_sensor
        speed = np.linalg.norm(v, axis=1)
        fastest = int(np.argmax(speed))
        if speed[fastest] / (0.97 * self.limits.max_tcp_speed) > worst:
            worst = float(speed[fastest] / (0.97 * self.limits.max_tcp_speed))
            Jv = self.kin.compute(np.repeat(q[fastest:fastest + 1], self.n, axis=0), np.eye(self.n),
                                  np.zeros((self.n, self.n))).lin_vel_in_sensor.T  # (3, n)
            grad = np.outer(Bd1[fastest], Jv.T @ (v[fastest] / speed[fastest])) / (0.97 * self.limits.max_tcp_speed)
        return grad / max(worst, 1e-300)

    def ascend(self, x: np.ndarray, iterations: int) -> tuple[float, np.ndarray | None]:
        """Gradient ascent from ``x``: step along the gradient with the part that only scales the
        motion removed (the scaling takes it back), re-scale, keep improvements; the step grows
        after a success and shrinks after a failure. Returns (score, admissible coefficients)."""
        best, C = self.score(x)
        if C is None:
            return best, None
        eta = None
        for _ in range(iterations):
            g = self.gradient(C)
            g -= np.sum(g * C) * self.active_gradient(C)  # along the active limit's surface
            norm = float(np.linalg.norm(g))
            if norm == 0.0:
                break
            eta = 0.2 * float(np.linalg.norm(C)) / norm if eta is None else eta
            while eta * norm > 1e-6 * float(np.linalg.norm(C)):
                score, moved = self.score(((C + eta * g) / self.unit).reshape(-1))
                if moved is not None and score > best:
                    best, C, eta = score, moved, 1.5 * eta
                    break
                eta *= 0.4
            else:
                break
        return best, C



class _Problem(FourierSearch):
    """The payload design: coefficients -> the largest admissible scaling -> score."""

    def __init__(self, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits,
                 ramp: float, harmonics: np.ndarray, force_std: float, torque_std: float,
                 estimate_offsets: bool, payload: InertialParameters) -> None:
        super().__init__(kin, arm, q_start, limits, ramp, harmonics)
        self.w = _channel_weights(force_std, torque_std)
        self.estimate_offsets = estimate_offsets
        self.scale = _parameter_scale(payload)

    def score(self, x: np.ndarray) -> tuple[float, np.ndarray | None]:
        """(log det of the scaled information, admissible coefficients) of the largest admissible
        scaling of the normalised coefficients ``x``; ``(-1e9, None)`` when there is none."""
        found = self.admissible(x)
        if found is None:
            return -1e9, None
        C, motion = found
        features = regressor_features(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor,
                                      motion.ang_acc_in_sensor, motion.gravity_in_sensor)
        return sum(weight * _log_det(M) + _MASS_COM_WEIGHT * (_log_det(M) - _log_det(M[4:, 4:]))
                   for weight, _, _, M in self._information(features)), C

    def _information(self, features: np.ndarray) -> list[tuple[float, slice, np.ndarray, np.ndarray]]:
        """(weight, samples, scaled and centred regressors (k, 6, 10), their weighted Gram (10, 10))
        of each window the score adds up (:data:`_WINDOWS`)."""
        Y_all = (features @ FEATURE_MATRIX).reshape(-1, 6, N_PARAMS) * self.scale
        out = []
        for fraction, weight in _WINDOWS:
            window = slice(0, max(int(round(fraction * len(Y_all))), 2))
            Y = Y_all[window]
            if self.estimate_offsets:
                Y = Y - Y.mean(axis=0)
            out.append((weight, window, Y, np.einsum("nki,nkj->ij", Y, Y * self.w[None, :, None])))
        return out

    def gradient(self, C: np.ndarray) -> np.ndarray:
        """(2H, n) gradient of the log det by the coefficients ``C`` (no re-scaling).

        ``d log det M = tr(M⁻¹ dM)`` gives the derivative by every sample's regressor; the
        regressor is a fixed linear map of 12 motion features (``FEATURE_MATRIX``), whose
        derivatives by each sample's ``q``, ``dq`` and ``ddq`` are finite differences of the
        kinematics (3 n evaluations of the whole grid at once, against one per coefficient for a
        plain finite-difference gradient); ``q``, ``dq``, ``ddq`` are linear in ``C``.
        """
        B0, B1, B2 = self.Bd
        states = [self.q_start + B0 @ C, B1 @ C, B2 @ C]

        def features(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
            m = self.kin.compute(q, dq, ddq)
            return regressor_features(m.lin_acc_in_sensor, m.ang_vel_in_sensor, m.ang_acc_in_sensor,
                                      m.gravity_in_sensor)

        f = features(*states)
        E = np.zeros((len(f), 6, N_PARAMS))  # d score / d Y_t (the centring included)
        for weight, window, Y, M in self._information(f):
            try:
                G = (weight + _MASS_COM_WEIGHT) * np.linalg.inv(M)
                G[4:, 4:] -= _MASS_COM_WEIGHT * np.linalg.inv(M[4:, 4:])
            except np.linalg.LinAlgError:
                return np.zeros_like(C)
            E[window] += 2.0 * (Y * self.w[None, :, None]) @ G * self.scale
        d_features = E.reshape(len(f), -1) @ FEATURE_MATRIX.T  # (N, 12)
        grad = np.zeros_like(C)
        step = 1e-6
        for which, basis in enumerate((B0, B1, B2)):
            by_state = np.empty((len(f), self.n))
            for j in range(self.n):
                moved = [x.copy() if i == which else x for i, x in enumerate(states)]
                moved[which][:, j] += step
                by_state[:, j] = np.sum((features(*moved) - f) / step * d_features, axis=1)
            grad += basis.T @ by_state
        return grad


def fourier_harmonics(duration: float, ramp: float, max_frequency_hz: float = MAX_FREQUENCY_HZ,
                      max_harmonics: int = MAX_HARMONICS) -> np.ndarray:
    """Harmonic numbers up to ``max_frequency_hz`` for a series of period ``duration - ramp``:
    all of them, or ``max_harmonics`` spread geometrically from the fundamental."""
    top = max(1, int(np.floor(max_frequency_hz * (duration - ramp))))
    if top <= max_harmonics:
        return np.arange(1, top + 1)
    k = np.unique(np.round(np.geomspace(1, top, max_harmonics)).astype(int))
    while len(k) < max_harmonics:  # rounding merged low ones: add the next free numbers
        k = np.unique(np.append(k, np.setdiff1d(np.arange(1, top + 1), k)[0]))
    return k


def _validate_start(arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits) -> np.ndarray:
    """(n,) the start as an array; ``ExcitationError`` if it is not a finite pose inside the limits' margin."""
    q = np.asarray(q_start, dtype=float).reshape(-1)
    if q.shape != (arm.n_joints,):
        raise ExcitationError(f"the start has {q.size} joint positions, the arm {arm.n_joints} "
                              f"({', '.join(arm.joint_names)})")
    if not np.all(np.isfinite(q)):
        raise ExcitationError("the start has non-finite joint positions")
    lo, hi = arm.q_min + limits.position_margin, arm.q_max - limits.position_margin
    bad = [j for j in range(arm.n_joints) if not lo[j] <= q[j] <= hi[j]]
    if bad:
        j = bad[0]
        where = "outside" if not arm.q_min[j] <= q[j] <= arm.q_max[j] else "within the margin of"
        raise ExcitationError(
            f"the start of {arm.joint_names[j]} ({q[j]:.3f} rad) is {where} its limits "
            f"[{arm.q_min[j]:.3f}, {arm.q_max[j]:.3f}] rad (margin {limits.position_margin} rad): "
            "move the robot away from the limit first")
    return q


def check_start(kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits) -> np.ndarray:
    """(n,) the start of a motion to design, checked: the kinematics and the limits name the same
    joints, the start is inside the limits' margin, the duration at least :data:`MIN_DURATION_S`, and
    the start pose itself keeps the clearances. ``ExcitationError`` (one line) otherwise."""
    if tuple(kin.joint_names) != tuple(arm.joint_names):
        raise ExcitationError("the kinematics and the limits must name the same joints in the same order")
    q0 = _validate_start(arm, q_start, limits)
    if limits.duration < MIN_DURATION_S:
        raise ExcitationError(f"a motion of {limits.duration:g} s is too short to move safely: "
                              f"at least {MIN_DURATION_S:g} s")
    rest = check_trajectory(FourierExcitation(q0, np.zeros((2, arm.n_joints)), limits.duration, 0.5),
                            kin, arm, q0, limits, rate_hz=10.0)
    if not rest.ok:
        raise ExcitationError(f"the start pose itself is unsafe: {rest.violations[0]}")
    return q0


def fit_to_limits(trajectory: FourierExcitation, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray,
                  limits: MotionLimits) -> tuple[FourierExcitation, TrajectoryCheck]:
    """A designed motion checked on the 1 kHz sampled trajectory (:func:`check_trajectory`), shrunk by
    3 % steps while a peak between the design grid's samples exceeds a limit; ``ExcitationError``
    if 30 steps do not make it pass."""
    check = check_trajectory(trajectory, kin, arm, q_start, limits)
    for _ in range(30):
        if check.ok:
            break
        trajectory = trajectory.scaled(0.97)
        check = check_trajectory(trajectory, kin, arm, q_start, limits)
    if not check.ok:
        raise ExcitationError(f"the designed motion violates a limit: {check.violations[0]}")
    return trajectory, check


def design_excitation(
    kin: SensorKinematics,
    arm: ArmLimits,
    q_start: np.ndarray,
    limits: MotionLimits | None = None,
    seed: int = 0,
    estimate_offsets: bool = True,
    force_std: float = DESIGN_FORCE_STD,
    torque_std: float = DESIGN_TORQUE_STD,
    payload: InertialParameters | None = None,
) -> ExcitationDesign:
    """Design the most informative admissible motion from ``q_start`` (see the module docstring).

    Args:
        kin: kinematics of the TCP frame (flange or sensor), joints in ``arm.joint_names`` order.
        arm: the joint limits.
        q_start: (n,) the current configuration: start and end of the motion, rad.
        limits: the motion's bounds (``duration`` included; default :class:`MotionLimits`).
        seed: seeds the starting points (the same seed gives the same motion).
        estimate_offsets: the F/T offsets are estimated with the payload (they are, by default,
            in every estimator of this package).
        force_std, torque_std: wrench noise that weighs the information, N, N·m.
        payload: what the design is scored and predicted for (:func:`nominal_payload`).

    Raises:
        ExcitationError: the start is outside the limits or within their margin, the duration is
            shorter than :data:`MIN_DURATION_S`, the start itself violates a clearance, or no
            admissible motion was found (one line each).
    """
    started = time.perf_counter()
    limits = MotionLimits() if limits is None else limits
    q0 = check_start(kin, arm, q_start, limits)
    payload = payload or nominal_payload()
    ramp = min(0.5, 0.2 * limits.duration)
    harmonics = fourier_harmonics(limits.duration, ramp)
    problem = _Problem(kin, arm, q0, limits, ramp, harmonics, force_std, torque_std, estimate_offsets,
                       payload)

    best_C = problem.search(seed)
    if best_C is None:
        raise ExcitationError("no admissible motion was found: relax the limits (TCP speed, clearances)")
    trajectory, check = fit_to_limits(FourierExcitation(q0, best_C, limits.duration, ramp, harmonics,
                                                        arm.joint_names), kin, arm, q0, limits)
    t = trajectory_grid(limits.duration, 100.0)
    M = information_matrix(kin, *trajectory(t), force_std, torque_std, estimate_offsets)
    scale = _parameter_scale(payload)
    return ExcitationDesign(
        trajectory=trajectory,
        joint_names=arm.joint_names,
        q_start=q0,
        limits=limits,
        arm=arm,
        check=check,
        log_det=_log_det(M * np.outer(scale, scale)),
        condition_number=scaled_condition_number(M, payload),
        predicted=predict_uncertainty(trajectory, kin, payload, force_std, torque_std, estimate_offsets),
        seed=int(seed),
        design_time_s=time.perf_counter() - started,
    )
