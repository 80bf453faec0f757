"""An identification motion designed for the payload's ten inertial parameters.

:func:`design_excitation` searches the Fourier-series motions from the robot's current pose
(:class:`~payload_estimator.excitation.fourier.FourierExcitation`) for the one whose information
about the payload is largest (:mod:`~payload_estimator.excitation.information`), within every
limit (:class:`~payload_estimator.excitation.search.FourierSearch`), and checks the result on the
sampled trajectory. The score adds up the information of windows of the motion (:data:`_WINDOWS`:
the whole, and its first half so that the information comes early) and weighs the mass and first
moment beyond the inertia (:data:`_MASS_COM_WEIGHT`). The names of the three modules it is made
of are importable from here.

**For joint torques** (``joint_torques=``: a :class:`~payload_estimator.excitation.information.JointTorqueNoise`),
the information is the payload's as the joint torques see it, ``-S^-1/2 J^T Y`` per sample (see
:mod:`~payload_estimator.excitation.information`), and the motion is drawn from another family: every joint
in a sinusoid of its own frequency, Lambert's all-joint sinusoids (his MIT M.Eng thesis on payload
identification with a Franka Panda), at the frequencies his motion has once scaled to the TCP's speed limit
(:data:`_SINUSOID_OMEGA_RANGE`), all scaled together to the largest admissible motion; the joint-torque
criterion picks among :data:`_SINUSOID_DRAWS` assignments of the frequencies to the joints (from a start where
none keeps the payload clear of the floor and the base, the criterion's optimum instead). Not the optimum
of the criterion: what limits a payload seen through the joint torques is the error of the calibrated arm's
own model, which the effort noise the criterion weighs does not show, and which a motion concentrated on a
few joints at high accelerations brings out (the optimised motion's worst COM error on the xArm 7 was 19.6 mm
against 4.0 mm for these sinusoids; see :data:`_SINUSOID_OMEGA_RANGE`). A short shake for joint torques is
still optimised (mass and first moment weighing ``_JOINT_TORQUE_MASS_COM_WEIGHT``): half a second leaves no
room for slow sinusoids.

**A short shake** (:func:`design_shake`, :data:`SHAKE_DURATIONS`): the same family cut to half a second
or one second, the lowest harmonics only (up to :data:`SHAKE_MAX_FREQUENCY_HZ`), a start/stop blend
of a quarter of the motion: a fixed-length primitive (as Baek et al.'s, "Online Learning-Based
Inertial Parameter Identification of Unknown Object for Model-Based Control of Wheeled Humanoids",
shake an object for 0.5 s), designed for the information like any motion and within the same limits.

Units: rad, s, m, kg, N, N·m. Frames: ``phi`` about the origin of the kinematics' frame (the
TCP: the flange or the sensor), in its axes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import FEATURE_MATRIX, N_PARAMS, regressor_features
from payload_estimator.excitation.check import TrajectoryCheck, check_trajectory, trajectory_grid
from payload_estimator.excitation.fourier import MAX_FREQUENCY_HZ, FourierExcitation, fourier_harmonics
from payload_estimator.excitation.information import (
    DESIGN_FORCE_STD,
    DESIGN_TORQUE_STD,
    JointTorqueNoise,
    PredictedUncertainty,
    channel_weights,
    information_matrix,
    joint_torque_information,
    joint_torque_rows,
    log_det,
    nominal_payload,
    parameter_scale,
    predict_uncertainty,
    scaled_condition_number,
)
from payload_estimator.excitation.limits import ArmLimits, ExcitationError, MotionLimits
from payload_estimator.excitation.search import FourierSearch

if TYPE_CHECKING:  # pinocchio comes with the kinematics a caller passes in
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "FourierExcitation",
    "ExcitationDesign",
    "PredictedUncertainty",
    "design_excitation",
    "design_shake",
    "JointTorqueNoise",
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
    "SHAKE_DURATIONS",
    "SHAKE_MAX_FREQUENCY_HZ",
    "DESIGN_FORCE_STD",
    "DESIGN_TORQUE_STD",
]

MIN_DURATION_S = 2.0
"""Shortest motion designed, s: two start/stop blends and at least one period of the series."""
_JOINT_TORQUE_MASS_COM_WEIGHT = 5.0
"""The same weight for a shake designed for joint torques: through them the inertia is hardly identifiable
(the arm's own inertia errors mask it), mass and COM are what counts. (When it also designed the 15 s
motion, on the xArm 6 (3 calibrated arms unlike their URDF, club hammer, WLS) the worst COM error was
12.3 mm with 0.5 and 2.9 mm with 5; the xArm 7's 6.8 mm with 0.5 and 19 mm with 5.)"""
_SINUSOID_OMEGA_RANGE = (0.4, 2.3)
"""Frequencies of the all-joint sinusoids a motion for joint torques has, rad/s: Lambert's 1 to 5 rad/s
(at 0.3 rad) once his motion is scaled to the 0.25 m/s TCP limit (amplitude and frequency by ``sqrt(s)``,
``s`` about 0.2 on the Panda and the xArms), rounded to the series' harmonics. Slow on purpose: higher
frequencies excite the arm's own inertia, which the calibration knows least. Measured (``python
benchmarks/short_shake.py --identify-only --identify-seeds 6``: 6 calibrated arms unlike their URDF, club
hammer, 15 s from home, WLS), COM error mean (worst), mm: with 1 to 5 rad/s the xArm 7's 5.0 (10.3) and
the Panda's 2.1 (6.8); with these, 2.0 (4.0) and 1.9 (3.0)."""
_SINUSOID_AMPLITUDE = 0.3
"""Their amplitude before the scaling to the limits, rad (Lambert's); a joint nearer a limit moves less."""
_SINUSOID_DRAWS = 8
"""Assignments of the frequencies to the joints the joint-torque criterion picks from."""
SHAKE_DURATIONS = (0.5, 1.0)
"""Lengths of the short shakes :func:`design_shake` designs, s."""
SHAKE_MAX_FREQUENCY_HZ = 3.0
"""Highest harmonic of a shake, Hz: one harmonic (2.7 Hz) in half a second, two (1.3 and 2.7 Hz) in one."""
_SHAKE_DESIGN_RATE_HZ = 60.0
"""A shake's information is evaluated at this rate during the search, Hz (30 samples in half a second)."""
_WINDOWS = ((1.0, 0.5), (0.5, 0.5))
"""(fraction of the motion from its start, weight) of the information windows the score adds up:
the whole motion, and its first half, so that the information comes early (the node stops the
motion as soon as the estimate has converged)."""
_MASS_COM_WEIGHT = 0.5
"""Extra weight of the information about mass and first moment (the inertia a nuisance: ``log det M
- log det M_inertia``) in each window's score: it favours the reorientations that tell the mass
from the F/T offsets, which matter most for light payloads."""


def _window_terms(rows: np.ndarray, estimate_offsets: bool, channel_weights: np.ndarray | None = None,
                  ) -> list[tuple[float, slice, np.ndarray, np.ndarray]]:
    """Each window's terms (:data:`_WINDOWS`), for the F/T and the joint-torque designs alike.

    Each is (weight, samples, the rows (N, k, 10), centred when the offsets are unknowns, and their Gram
    with ``channel_weights`` (k,), default 1)."""
    out = []
    for fraction, weight in _WINDOWS:
        window = slice(0, max(int(round(fraction * len(rows))), 2))
        R = rows[window]
        if estimate_offsets:
            R = R - R.mean(axis=0)
        weighted = R if channel_weights is None else R * channel_weights[None, :, None]
        out.append((weight, window, R, np.einsum("nki,nkj->ij", R, weighted)))
    return out


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
        joint_torques: designed for the payload seen through the joint torques with this noise (None: an
            F/T sensor).
        kind: "designed" (:func:`design_excitation`) or "shake" (:func:`design_shake`).
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
    joint_torques: JointTorqueNoise | None = None
    kind: str = "designed"

    @property
    def wrench_source(self) -> str:
        """What the motion is designed for: "ft_sensor" or "joint_torques"."""
        return "ft_sensor" if self.joint_torques is None else "joint_torques"

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON."""
        return {
            "motion": self.kind,
            "designed_for": self.wrench_source,
            **({} if self.joint_torques is None else {"joint_torque_noise": self.joint_torques.summary()}),
            **motion_summary(self.trajectory, self.joint_names, self.q_start, self.check, self.limits),
            "log_det_information": self.log_det,
            "scaled_condition_number": self.condition_number,
            "predicted_nominal": self.predicted.summary(),
            "seed": self.seed,
            "design_time_s": self.design_time_s,
        }


def motion_summary(trajectory: FourierExcitation, joint_names: Sequence[str], q_start: np.ndarray,
                   check: TrajectoryCheck, limits: MotionLimits) -> dict[str, Any]:
    """Return what every designed motion's ``summary()`` starts with (plain values).

    Its length, joints, start, harmonics, the limit check and the TCP speed limit."""
    return {
        "duration_s": trajectory.duration,
        "joints": list(joint_names),
        "q_start": q_start.tolist(),
        "harmonics": trajectory.harmonics.tolist(),
        "base_frequency_hz": trajectory.omega / (2.0 * np.pi),
        **check.summary(),
        "max_tcp_speed_m_s": limits.max_tcp_speed,
    }


class _PayloadInformationSearch(FourierSearch):
    """The payload design: coefficients -> the largest admissible scaling -> score."""

    def __init__(self, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits,
                 ramp: float, harmonics: np.ndarray, force_std: float, torque_std: float,
                 estimate_offsets: bool, payload: InertialParameters, design_rate_hz: float | None = None) -> None:
        if design_rate_hz is None:
            super().__init__(kin, arm, q_start, limits, ramp, harmonics)
        else:
            super().__init__(kin, arm, q_start, limits, ramp, harmonics, design_rate_hz)
        self.w = channel_weights(force_std, torque_std)
        self.estimate_offsets = estimate_offsets
        self.scale = parameter_scale(payload)

    def score(self, x: np.ndarray) -> tuple[float, np.ndarray | None]:
        """Score the largest admissible scaling of the normalised coefficients ``x``.

        Returns (log det of the scaled information, admissible coefficients); ``(-1e9, None)``
        when there is none."""
        found = self.admissible(x)
        if found is None:
            return -1e9, None
        C, motion = found
        features = regressor_features(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor,
                                      motion.ang_acc_in_sensor, motion.gravity_in_sensor)
        return sum(weight * log_det(M) + _MASS_COM_WEIGHT * (log_det(M) - log_det(M[4:, 4:]))
                   for weight, _, _, M in self._information(features)), C

    def _information(self, features: np.ndarray) -> list[tuple[float, slice, np.ndarray, np.ndarray]]:
        """Return the terms of each window the score adds up (:data:`_WINDOWS`).

        Each is (weight, samples, scaled and centred regressors (k, 6, 10), their weighted Gram
        (10, 10))."""
        Y_all = (features @ FEATURE_MATRIX).reshape(-1, 6, N_PARAMS) * self.scale
        return _window_terms(Y_all, self.estimate_offsets, self.w)

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


class _JointTorqueInformationSearch(_PayloadInformationSearch):
    """The payload design for joint torques: the rows ``-S^-1/2 J^T Y`` in place of the wrench's."""

    def __init__(self, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits,
                 ramp: float, harmonics: np.ndarray, noise: JointTorqueNoise, estimate_offsets: bool,
                 payload: InertialParameters, design_rate_hz: float | None = None) -> None:
        super().__init__(kin, arm, q_start, limits, ramp, harmonics, DESIGN_FORCE_STD, DESIGN_TORQUE_STD,
                         estimate_offsets, payload, design_rate_hz)
        if noise.std.size != arm.n_joints:
            raise ExcitationError(f"the joint-torque noise has {noise.std.size} joints, the arm {arm.n_joints}")
        self.noise = noise

    mass_com_weight = _JOINT_TORQUE_MASS_COM_WEIGHT

    def rows(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, motion: Any = None) -> np.ndarray:
        """(N, n, 10) the whitened rows of the scaled parameters."""
        return joint_torque_rows(self.kin, q, dq, ddq, self.noise, motion) * self.scale

    def windows(self, R: np.ndarray) -> list[tuple[float, slice, np.ndarray, np.ndarray]]:
        """Each window's (weight, samples, (centred) rows, Gram) (:data:`_WINDOWS`)."""
        return _window_terms(R, self.estimate_offsets)

    def score(self, x: np.ndarray) -> tuple[float, np.ndarray | None]:
        """As the F/T design's, with the joint-torque rows."""
        found = self.admissible(x)
        if found is None:
            return -1e9, None
        C, motion = found
        R = self.rows(*self.design_states(C), motion)
        return sum(weight * log_det(M) + self.mass_com_weight * (log_det(M) - log_det(M[4:, 4:]))
                   for weight, _, _, M in self.windows(R)), C

    def gradient(self, C: np.ndarray) -> np.ndarray:
        """(2H, n) gradient of the score by ``C``: by the rows, then finite differences of the rows by each state."""
        states = list(self.design_states(C))
        R = self.rows(*states)
        E = np.zeros_like(R)
        for weight, window, Rw, M in self.windows(R):
            try:
                G = (weight + self.mass_com_weight) * np.linalg.inv(M)
                G[4:, 4:] -= self.mass_com_weight * np.linalg.inv(M[4:, 4:])
            except np.linalg.LinAlgError:
                return np.zeros_like(C)
            E[window] += 2.0 * Rw @ G
        grad = np.zeros_like(C)
        step = 1e-6
        for which, basis in enumerate(self.Bd):
            by_state = np.empty((len(R), self.n))
            for j in range(self.n):
                moved = [x.copy() if i == which else x for i, x in enumerate(states)]
                moved[which][:, j] += step
                by_state[:, j] = np.sum((self.rows(*moved) - R) / step * E, axis=(1, 2))
            grad += basis.T @ by_state
        return grad


def _joint_sinusoids(kin: SensorKinematics, arm: ArmLimits, q0: np.ndarray, limits: MotionLimits, seed: int,
                     estimate_offsets: bool, payload: InertialParameters, noise: JointTorqueNoise, ramp: float,
                     ) -> tuple[np.ndarray | None, np.ndarray]:
    """The best of :data:`_SINUSOID_DRAWS` all-joint sinusoids for the joint torques: (coefficients, harmonics).

    Each draw gives every joint a sinusoid of its own harmonic (distinct numbers, drawn among those whose
    frequencies are in :data:`_SINUSOID_OMEGA_RANGE`, or ``n`` consecutive ones from its lowest when fewer
    are) and the amplitude
    :data:`_SINUSOID_AMPLITUDE` (less where a joint's room to its limits is smaller), all scaled together to
    the largest admissible motion; the joint-torque criterion picks among the draws. Every joint sets off
    upwards; only when no such draw is admissible (a start near the floor or the base, say) as many more
    draws set each joint off either way. None: no draw is admissible (the caller then optimises)."""
    rng = np.random.default_rng(seed)
    omega = 2.0 * np.pi / (limits.duration - ramp)
    lo = max(1, int(np.ceil(_SINUSOID_OMEGA_RANGE[0] / omega)))
    hi = max(lo + arm.n_joints - 1, int(np.floor(_SINUSOID_OMEGA_RANGE[1] / omega)))
    room = np.minimum.reduce([arm.q_max - limits.position_margin - q0, q0 - arm.q_min - limits.position_margin,
                              np.full(arm.n_joints, limits.max_excursion)])
    amplitude = np.clip(np.minimum(_SINUSOID_AMPLITUDE, 0.95 * room), 0.0, None)  # a joint near a limit moves less
    best: tuple[float, np.ndarray | None, np.ndarray] = (-np.inf, None, np.arange(1, arm.n_joints + 1))
    signs = np.random.default_rng([seed, 1])
    for draw in range(2 * _SINUSOID_DRAWS):
        if draw == _SINUSOID_DRAWS and best[1] is not None:
            break  # the rest (each joint setting off either way) only when no draw going up is admissible
        drawn = rng.choice(np.arange(lo, hi + 1), size=arm.n_joints, replace=False)
        order = np.argsort(drawn)
        harmonics = drawn[order]
        direction = np.ones(arm.n_joints) if draw < _SINUSOID_DRAWS else signs.choice([-1.0, 1.0], arm.n_joints)
        C = np.zeros((2 * arm.n_joints, arm.n_joints))
        C[np.arange(arm.n_joints), order] = (direction * amplitude)[order]  # joint order[i] moves with harmonics[i]
        problem = _JointTorqueInformationSearch(kin, arm, q0, limits, ramp, harmonics, noise, estimate_offsets,
                                                payload)
        score, admissible = problem.score((C / problem.unit).reshape(-1))
        if admissible is not None and score > best[0]:
            best = (score, admissible, harmonics)
    return best[1], best[2]


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


def check_start(kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits,
                min_duration: float = MIN_DURATION_S) -> np.ndarray:
    """Return the (n,) start of a motion to design, checked.

    The kinematics and the limits name the same joints, the start is inside the limits'
    margin, the duration at least ``min_duration`` (:data:`MIN_DURATION_S`), and the start pose
    itself keeps the clearances.

    Raises:
        ExcitationError: one of those fails (one line).
    """
    if tuple(kin.joint_names) != tuple(arm.joint_names):
        raise ExcitationError("the kinematics and the limits must name the same joints in the same order")
    q0 = _validate_start(arm, q_start, limits)
    if limits.duration < min_duration:
        shakes = " or ".join(f"{d:g}" for d in SHAKE_DURATIONS)
        raise ExcitationError(f"a motion of {limits.duration:g} s is too short to move safely: "
                              f"at least {min_duration:g} s (or a shake of {shakes} s)")
    rest = check_trajectory(FourierExcitation(q0, np.zeros((2, arm.n_joints)), limits.duration,
                                              min(0.5, 0.5 * limits.duration)),
                            kin, arm, q0, limits, rate_hz=10.0)
    if not rest.ok:
        raise ExcitationError(f"the start pose itself is unsafe: {rest.violations[0]}")
    return q0


def fit_to_limits(trajectory: FourierExcitation, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray,
                  limits: MotionLimits) -> tuple[FourierExcitation, TrajectoryCheck]:
    """Check a designed motion on the 1 kHz sampled trajectory, shrinking it until it passes.

    :func:`check_trajectory` on the sampled trajectory; the motion shrinks by 3 % steps while a
    peak between the design grid's samples exceeds a limit.

    Raises:
        ExcitationError: 30 steps do not make it pass.
    """
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
    joint_torques: JointTorqueNoise | None = None,
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
        force_std: force noise per axis that weighs the information, N.
        torque_std: torque noise per axis that weighs the information, N·m.
        payload: what the design is scored and predicted for (:func:`nominal_payload`).
        joint_torques: design for the payload seen through the joint torques with this noise per joint:
            all-joint sinusoids (module docstring; ``estimate_offsets`` then means an offset per joint; the
            node's joint-torque mode has none: the calibration knows them). None: for an F/T sensor.

    Raises:
        ExcitationError: the start is outside the limits or within their margin, the duration is
            shorter than :data:`MIN_DURATION_S`, the start itself violates a clearance, or no
            admissible motion was found (one line each).
    """
    started = time.perf_counter()
    limits = MotionLimits() if limits is None else limits
    q0 = check_start(kin, arm, q_start, limits)
    ramp = min(0.5, 0.2 * limits.duration)
    return _design(kin, arm, q0, limits, seed, estimate_offsets, force_std, torque_std, payload, joint_torques,
                   ramp, fourier_harmonics(limits.duration, ramp), None, "designed", started)


def design_shake(
    kin: SensorKinematics,
    arm: ArmLimits,
    q_start: np.ndarray,
    duration: float = SHAKE_DURATIONS[0],
    limits: MotionLimits | None = None,
    seed: int = 0,
    estimate_offsets: bool = True,
    payload: InertialParameters | None = None,
    joint_torques: JointTorqueNoise | None = None,
) -> ExcitationDesign:
    """Design a short shake of ``duration`` (one of :data:`SHAKE_DURATIONS`) from ``q_start``.

    The motion family of :func:`design_excitation` cut short (module docstring): it starts and
    ends at rest at ``q_start``, within every limit of ``limits`` (whose own duration is replaced),
    and is the most informative such shake for an F/T sensor or, with ``joint_torques``, for the
    joint torques. Arguments as :func:`design_excitation`'s.

    Raises:
        ExcitationError: ``duration`` is not a shake's, or as :func:`design_excitation`.
    """
    started = time.perf_counter()
    if not any(abs(duration - d) < 1e-9 for d in SHAKE_DURATIONS):
        raise ExcitationError(f"a shake lasts {' or '.join(f'{d:g}' for d in SHAKE_DURATIONS)} s, got {duration:g}")
    limits = (MotionLimits() if limits is None else limits).with_overrides(duration=float(duration))
    q0 = check_start(kin, arm, q_start, limits, min_duration=min(SHAKE_DURATIONS))
    ramp = 0.25 * limits.duration
    harmonics = fourier_harmonics(limits.duration, ramp, SHAKE_MAX_FREQUENCY_HZ)
    return _design(kin, arm, q0, limits, seed, estimate_offsets, DESIGN_FORCE_STD, DESIGN_TORQUE_STD, payload,
                   joint_torques, ramp, harmonics, _SHAKE_DESIGN_RATE_HZ, "shake", started)


def _design(kin: SensorKinematics, arm: ArmLimits, q0: np.ndarray, limits: MotionLimits, seed: int,
            estimate_offsets: bool, force_std: float, torque_std: float, payload: InertialParameters | None,
            joint_torques: JointTorqueNoise | None, ramp: float, harmonics: np.ndarray,
            design_rate_hz: float | None, kind: str, started: float) -> ExcitationDesign:
    """The search, the check on the sampled motion and the design's figures (a checked start ``q0``)."""
    payload = payload or nominal_payload()
    problem: _PayloadInformationSearch
    if joint_torques is None:
        problem = _PayloadInformationSearch(kin, arm, q0, limits, ramp, harmonics, force_std, torque_std,
                                            estimate_offsets, payload, design_rate_hz)
    else:
        problem = _JointTorqueInformationSearch(kin, arm, q0, limits, ramp, harmonics, joint_torques,
                                                estimate_offsets, payload, design_rate_hz)

    best_C = None
    if joint_torques is not None and kind == "designed":
        found, sinusoids = _joint_sinusoids(kin, arm, q0, limits, seed, estimate_offsets, payload, joint_torques,
                                            ramp)
        if found is not None:
            best_C, harmonics = found, sinusoids
    if best_C is None:  # for an F/T sensor, a shake, or no admissible sinusoids from this start: the optimum
        best_C = problem.search(seed)
    if best_C is None:
        raise ExcitationError("no admissible motion was found: relax the limits (TCP speed, clearances)")
    trajectory, check = fit_to_limits(FourierExcitation(q0, best_C, limits.duration, ramp, harmonics,
                                                        arm.joint_names), kin, arm, q0, limits)
    t = trajectory_grid(limits.duration, 100.0)
    if joint_torques is None:
        M = information_matrix(kin, *trajectory(t), force_std, torque_std, estimate_offsets)
    else:
        M = joint_torque_information(kin, *trajectory(t), joint_torques, estimate_offsets)
    scale = parameter_scale(payload)
    return ExcitationDesign(
        trajectory=trajectory,
        joint_names=arm.joint_names,
        q_start=q0,
        limits=limits,
        arm=arm,
        check=check,
        log_det=log_det(M * np.outer(scale, scale)),
        condition_number=scaled_condition_number(M, payload),
        predicted=predict_uncertainty(trajectory, kin, payload, force_std, torque_std, estimate_offsets,
                                      joint_torques=joint_torques),
        seed=int(seed),
        design_time_s=time.perf_counter() - started,
        joint_torques=joint_torques,
        kind=kind,
    )
