"""A motion designed for calibrating the unloaded arm: its inertial parameters and joint friction.

:func:`~payload_estimator.pipeline.arm_dynamics.calibrate_arm` fits, to a recording of the arm
without payload, the ten inertial parameters of every body and, per joint, a viscous term, Coulomb
levels (one per transition speed of ``COULOMB_VELOCITIES``, ``k`` of them) and an offset, as a
maximum a posteriori estimate around the robot description (prior
:class:`~payload_estimator.pipeline.arm_dynamics.ArmPrior`). What the fit can learn depends on the
motion: friction needs every joint moving in both directions over a wide range of speeds (the
viscous term against the Coulomb term, the Coulomb term against the offset), the bodies' gravity
parameters need poses spread over the workspace, their inertia parameters accelerations.

**What is optimised.** For effort noise ``sigma`` per joint (white, at the calibration's fit rate
:data:`FIT_RATE_HZ`), the information the motion gives about the parameters
``x = [pi (10 b), f_v (n), f_c (n k), f_o (n)]`` is ``M = sum_t A_t^T A_t / sigma²`` with
``A_t = [Y(q_t, dq_t, ddq_t), F(dq_t)]`` the (n, 10 b + (2 + k) n) regressor of calibrate_arm's model.
A fixed-base arm leaves many combinations of ``pi`` unidentifiable (``M`` is singular whatever the
motion); calibrate_arm keeps them at the description through its prior. The criterion does the same:
in the units of the prior's standard deviations ``D`` (``x = x0 + D z``, ``z ~ N(0, I)``) it is::

    log det(I + D M D)

the information the motion adds to the prior (twice the expected information gain of the fit).
Directions the motion cannot excite contribute ``log 1 = 0`` instead of making the criterion
singular, every identifiable one counts in proportion to the log of how much better than the
description the fit will know it, and a change of the parameters' units changes nothing.

**The motion** is the payload design's (:class:`~payload_estimator.excitation.design.FourierExcitation`:
a Fourier series in warped time, at rest at the start pose at both ends), longer
(:data:`CALIBRATION_DURATION_S`) and with more, slower harmonics (:data:`CALIBRATION_MAX_FREQUENCY_HZ`,
:data:`CALIBRATION_HARMONICS`: the speeds and the pose spread matter here more than the
accelerations), every candidate scaled to the largest admissible motion as there
(:class:`~payload_estimator.excitation.design.FourierSearch`), under the same
:class:`~payload_estimator.excitation.limits.MotionLimits`, and checked on the 1 kHz sampled result.
Each joint's coefficients are drawn in units of the speed it may reach alone (its share of the speed
limit, or the TCP speed limit over its lever arm to the TCP), so that the wrist joints, which hardly
move the TCP, turn faster than the shoulder's; the best of seeded random sets is refined by a (1+1)
evolution strategy (the TCP speed limit, the largest of many samples, stalls gradient steps).
The clearances are the payload motion's (a sphere of ``payload_radius``, 0.1 m by default, about
the flange: a bare flange or a small tool).

**Predicted figures** (:func:`arm_information`): the posterior standard deviations (``(M + D⁻²)⁻¹``)
of each joint's viscous coefficient and Coulomb torque (its levels summed), how many parameter
directions the data determine better than the description, the joint speed ranges. Like the payload
design's, they ignore the friction the model does not describe and the filtering of the recording:
use them to compare motions, not as a promise.

Units SI: rad, rad/s, s, N·m, N·m·s/rad.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.excitation.check import TrajectoryCheck, trajectory_grid
from payload_estimator.excitation.design import (
    FourierExcitation,
    FourierSearch,
    check_start,
    fit_to_limits,
    fourier_harmonics,
    motion_summary,
)
from payload_estimator.excitation.limits import ArmLimits, ExcitationError, MotionLimits

if TYPE_CHECKING:  # pinocchio (arm_dynamics, kinematics) comes with the kinematics a caller passes in
    from payload_estimator.pipeline.arm_dynamics import ArmPrior
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "ArmInformation",
    "CalibrationMotion",
    "arm_information",
    "calibration_limits",
    "design_calibration_motion",
    "CALIBRATION_DURATION_S",
    "CALIBRATION_MAX_FREQUENCY_HZ",
    "CALIBRATION_HARMONICS",
    "DESIGN_EFFORT_STD",
    "FIT_RATE_HZ",
]

CALIBRATION_DURATION_S = 30.0
"""Default length of a calibration motion, s: every joint through many speed reversals and poses."""
CALIBRATION_MAX_FREQUENCY_HZ = 1.0
"""Highest harmonic of a calibration motion, Hz (the payload design's is 2 Hz): within the joint
speed and acceleration limits, lower harmonics move each joint further and through more speeds."""
CALIBRATION_HARMONICS = 8
"""Harmonics per joint of a calibration motion (spread geometrically from the fundamental)."""
DESIGN_EFFORT_STD = 0.5
"""Effort noise per joint that weighs the information against the prior, N·m (an xArm's
current-based efforts: about 0.3 N·m of noise plus the friction the model does not describe)."""
FIT_RATE_HZ = 100.0
"""Rate of the samples calibrate_arm fits (joint_recording's ``fit_rate_hz``), Hz."""
_DESIGN_RATE_HZ = 8.0
"""The criterion and the TCP speed are evaluated at this rate during the search, Hz (eight samples
per period of the highest harmonic)."""
_CANDIDATES = 24
"""Seeded random coefficient sets scored first; the best one starts the refinement."""
_REFINEMENTS = 250
"""Steps of the (1+1) evolution strategy that refines it."""
_INITIAL_STEP = 0.3
"""First step of the refinement, relative to the coefficients' RMS."""


def calibration_limits(**overrides: float | None) -> MotionLimits:
    """Return the :class:`MotionLimits` of a calibration motion.

    :data:`CALIBRATION_DURATION_S`, the rest the settings' defaults; ``overrides`` as
    :meth:`MotionLimits.with_overrides` (None or 0 keep the default)."""
    return MotionLimits(duration=CALIBRATION_DURATION_S).with_overrides(**overrides)


class _ArmModel:
    """The arm's regressor in the prior's units, weighted by the effort noise."""

    def __init__(self, kin: SensorKinematics, effort_std: float, prior: ArmPrior | None) -> None:
        from payload_estimator.pipeline.arm_dynamics import ArmDynamics, ArmPrior, friction_regressor

        prior = prior or ArmPrior()
        self._friction = friction_regressor
        if not effort_std > 0.0:
            raise ExcitationError(f"the effort noise must be positive, got {effort_std}")
        self.dynamics = ArmDynamics(kin)
        n = kin.n_joints
        self.n_bodies = len(self.dynamics.body_joints)
        self.n_friction = self._friction(np.zeros((1, n))).shape[2]
        self.std = np.concatenate([prior.body_std(self.dynamics.nominal).ravel(),
                                   np.full(self.n_friction, prior.friction)])
        self.effort_std = float(effort_std)

    @property
    def n_parameters(self) -> int:
        return int(self.std.size)

    def scaled_regressor(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, weight: float) -> np.ndarray:
        """(N, n, p) ``sqrt(weight) A D / sigma``: each sample counts ``weight`` fit samples."""
        A = np.concatenate([self.dynamics.regressor(q, dq, ddq), self._friction(dq)], axis=2)
        return A * (self.std * (np.sqrt(weight) / self.effort_std))

    @staticmethod
    def gain(A: np.ndarray) -> tuple[float, np.ndarray]:
        """(log det(I + sum A^T A), I + sum A^T A) of a scaled regressor (N, n, p)."""
        # einsum's single-threaded loop, not a threaded GEMM: a few ms either way, and a design's hundreds of
        # small products stay as fast on a loaded machine (a threaded BLAS was 10x slower there)
        P = np.eye(A.shape[2]) + np.einsum("kip,kiq->pq", A, A)
        L = np.linalg.cholesky(0.5 * (P + P.T))
        return 2.0 * float(np.sum(np.log(np.diag(L)))), P


class _CalibrationSearch(FourierSearch):
    """Coefficients -> the largest admissible scaling -> log det(I + D M D)."""

    speed_slack = 0.998  # the criterion grows with the scaling: a 2 % slack would cost what a step gains

    def __init__(self, kin: SensorKinematics, arm: ArmLimits, q_start: np.ndarray, limits: MotionLimits,
                 ramp: float, harmonics: np.ndarray, model: _ArmModel) -> None:
        super().__init__(kin, arm, q_start, limits, ramp, harmonics, _DESIGN_RATE_HZ)
        self.model = model
        # each joint's coefficients in units of the speed it may reach alone: its share of the joint speed
        # limit, or what moves the TCP at the speed limit from the start pose (a wrist joint that hardly
        # moves the TCP may turn much faster than a shoulder joint: friction wants every joint's speed range)
        lever = np.linalg.norm(kin.compute(np.repeat(q_start[None], self.n, axis=0), np.eye(self.n),
                                           np.zeros((self.n, self.n))).lin_vel_in_sensor, axis=1)
        speed = np.minimum(self.allowed[0], limits.max_tcp_speed / np.maximum(lever, 1e-3))
        self.unit = self.unit * (speed / np.max(speed))
        self.weight = FIT_RATE_HZ / _DESIGN_RATE_HZ

    def score(self, x: np.ndarray) -> tuple[float, np.ndarray | None]:
        found = self.admissible(x)
        if found is None:
            return -1e9, None
        C = found[0]
        return self.model.gain(self.model.scaled_regressor(*self.design_states(C), self.weight))[0], C

    def evolve(self, seed: int, candidates: int = _CANDIDATES, iterations: int = _REFINEMENTS) -> np.ndarray | None:
        """Return the best of ``candidates`` seeded random coefficient sets, refined by a (1+1) evolution strategy.

        ``iterations`` random steps, each kept if it scores better once scaled to the limits,
        the step grown by half after a success and shrunk after a failure (the one-fifth rule).
        Every step's candidate is admissible, so the search moves along the binding limit (the TCP
        speed, a joint's range) where gradient steps stall: that limit is the largest of many samples."""
        rng = np.random.default_rng(seed)
        drawn = rng.normal(size=(candidates, 2 * self.H * self.n))
        scored = [self.score(x) for x in drawn]
        k = int(np.argmax([v for v, _ in scored]))
        best, C = scored[k]
        if C is None:
            return None
        x = (C / self.unit).reshape(-1)
        sigma = _INITIAL_STEP
        for _ in range(iterations):
            step = rng.normal(size=x.shape) * (sigma * float(np.linalg.norm(x)) / np.sqrt(x.size))
            value, moved = self.score(x + step)
            if moved is not None and value > best:
                best, x, sigma = value, (moved / self.unit).reshape(-1), sigma * 1.5
            else:
                sigma *= 1.5 ** -0.25
        return x.reshape(2 * self.H, self.n) * self.unit


@dataclass(frozen=True, eq=False)
class ArmInformation:
    """What a motion tells a calibration (module docstring), for effort noise ``effort_std``.

    Attributes:
        log_det_gain: ``log det(I + D M D)``, the criterion.
        parameters: number of parameters (10 per body, 3 per joint).
        identifiable: directions the motion excites at all (numerical rank of ``M``).
        better_than_prior: directions the data determine better than the description (eigenvalues
            of ``D M D`` above 1).
        viscous_std: (n,) N·m·s/rad. coulomb_std: (n,) N·m, of the Coulomb torque at speed (the levels
            summed). offset_std: (n,) N·m. Posterior stds.
        speed_min: (n,) most negative joint speed, rad/s. speed_max: (n,) most positive, rad/s.
        speed_limit: (n,) the joints' speed limits, rad/s (NaN when not given).
        effort_std: N·m. duration_s: s.
    """

    log_det_gain: float
    parameters: int
    identifiable: int
    better_than_prior: int
    viscous_std: np.ndarray
    coulomb_std: np.ndarray
    offset_std: np.ndarray
    speed_min: np.ndarray
    speed_max: np.ndarray
    speed_limit: np.ndarray
    effort_std: float
    duration_s: float

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON."""
        return {
            "log_det_gain": self.log_det_gain,
            "parameters": self.parameters,
            "identifiable_directions": self.identifiable,
            "directions_better_than_prior": self.better_than_prior,
            "viscous_std": self.viscous_std.tolist(),
            "coulomb_std": self.coulomb_std.tolist(),
            "offset_std": self.offset_std.tolist(),
            "speed_min_rad_s": self.speed_min.tolist(),
            "speed_max_rad_s": self.speed_max.tolist(),
            "speed_limit_rad_s": self.speed_limit.tolist(),
            "effort_std": self.effort_std,
            "duration_s": self.duration_s,
        }


def arm_information(
    trajectory: Any,
    kin: SensorKinematics,
    effort_std: float = DESIGN_EFFORT_STD,
    prior: ArmPrior | None = None,
    arm: ArmLimits | None = None,
    fit_rate_hz: float = FIT_RATE_HZ,
) -> ArmInformation:
    """Return what ``trajectory`` tells a calibration of the unloaded arm.

    ``trajectory`` has ``duration`` and ``__call__(t) -> (q, dq, ddq)`` in ``kin``'s joint
    order; the efforts are sampled at ``fit_rate_hz`` with white noise ``effort_std`` (N·m) per
    joint, around the description with ``prior`` (default :class:`ArmPrior`); ``arm`` gives the
    speed limits reported beside the speed ranges."""
    model = _ArmModel(kin, effort_std, prior)
    t = trajectory_grid(float(trajectory.duration), fit_rate_hz)
    q, dq, ddq = (np.asarray(x, dtype=float) for x in trajectory(t))
    A = np.concatenate([model.scaled_regressor(q[k:k + 500], dq[k:k + 500], ddq[k:k + 500], 1.0)
                        for k in range(0, len(t), 500)])
    gain, P = model.gain(A)
    data = P - np.eye(model.n_parameters)
    eig = np.linalg.eigvalsh(0.5 * (data + data.T))
    top = max(float(eig[-1]), 1e-300)
    cov_z = np.linalg.inv(0.5 * (P + P.T))
    n = kin.n_joints
    friction = slice(10 * model.n_bodies, None)
    cov = cov_z[friction, friction] * np.outer(model.std[friction], model.std[friction])
    from payload_estimator.pipeline.arm_model import COULOMB_VELOCITIES

    levels = len(COULOMB_VELOCITIES)  # Coulomb levels per joint, after the n viscous columns (then their asymmetry)
    coulomb = np.zeros((n, model.n_friction))  # each joint's levels summed: its Coulomb torque at speed
    for i in range(n):
        coulomb[i, n + i * levels:n + (i + 1) * levels] = 1.0
    viscous_var, offset_var = np.diag(cov)[:n], np.diag(cov)[n + 2 * n * levels:]
    coulomb_var = np.einsum("ip,pq,iq->i", coulomb, cov, coulomb)
    limit = np.asarray(arm.dq_max, dtype=float) if arm is not None else np.full(n, np.nan)
    return ArmInformation(
        log_det_gain=gain,
        parameters=model.n_parameters,
        identifiable=int(np.sum(eig > 1e-9 * top)),
        better_than_prior=int(np.sum(eig > 1.0)),
        viscous_std=np.sqrt(np.clip(viscous_var, 0.0, None)), coulomb_std=np.sqrt(np.clip(coulomb_var, 0.0, None)),
        offset_std=np.sqrt(np.clip(offset_var, 0.0, None)),
        speed_min=np.min(dq, axis=0), speed_max=np.max(dq, axis=0), speed_limit=limit,
        effort_std=float(effort_std), duration_s=float(trajectory.duration),
    )


@dataclass(frozen=True, eq=False)
class CalibrationMotion:
    """A designed calibration motion and what it promises.

    Attributes:
        trajectory: the motion (JointTrajectory protocol).
        joint_names: its joints, in column order. q_start: (n,) rad.
        limits: the motion's bounds. arm: the joint limits.
        check: the sampled trajectory against every constraint (``ok`` for a returned design).
        information: :func:`arm_information` of the motion.
        seed: the seed of the search's starting points. design_time_s: wall time of the design, s.
    """

    trajectory: FourierExcitation
    joint_names: tuple[str, ...]
    q_start: np.ndarray
    limits: MotionLimits
    arm: ArmLimits
    check: TrajectoryCheck
    information: ArmInformation
    seed: int
    design_time_s: float = field(default=0.0)

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON."""
        return {
            "purpose": "calibration",
            **motion_summary(self.trajectory, self.joint_names, self.q_start, self.check, self.limits),
            "payload_radius_m": self.limits.payload_radius,
            "information": self.information.summary(),
            "seed": self.seed,
            "design_time_s": self.design_time_s,
        }


def design_calibration_motion(
    kin: SensorKinematics,
    arm: ArmLimits,
    q_start: np.ndarray,
    limits: MotionLimits | None = None,
    seed: int = 0,
    effort_std: float = DESIGN_EFFORT_STD,
    prior: ArmPrior | None = None,
) -> CalibrationMotion:
    """Design the motion that tells a calibration of the unloaded arm the most (module docstring).

    Args:
        kin: kinematics of the arm's flange (or TCP), joints in ``arm.joint_names`` order; its
            model's inertias are the description the calibration starts from.
        arm: the joint limits.
        q_start: (n,) the current configuration: start and end of the motion, rad.
        limits: the motion's bounds (default :func:`calibration_limits`).
        seed: seeds the starting points (the same seed gives the same motion).
        effort_std: effort noise per joint that weighs the data against the prior, N·m.
        prior: the calibration's prior (default :class:`ArmPrior`).

    Raises:
        ExcitationError: the start is outside the limits or within their margin, the duration is
            shorter than the shortest motion, the start itself violates a clearance, or no
            admissible motion was found (one line each).
    """
    started = time.perf_counter()
    limits = calibration_limits() if limits is None else limits
    q0 = check_start(kin, arm, q_start, limits)
    model = _ArmModel(kin, effort_std, prior)
    ramp = min(1.0, 0.2 * limits.duration)
    harmonics = fourier_harmonics(limits.duration, ramp, CALIBRATION_MAX_FREQUENCY_HZ, CALIBRATION_HARMONICS)
    search = _CalibrationSearch(kin, arm, q0, limits, ramp, harmonics, model)
    best = search.evolve(seed)
    if best is None:
        raise ExcitationError("no admissible motion was found: relax the limits (TCP speed, clearances)")
    trajectory, check = fit_to_limits(FourierExcitation(q0, best, limits.duration, ramp, harmonics,
                                                        arm.joint_names), kin, arm, q0, limits)
    return CalibrationMotion(
        trajectory=trajectory, joint_names=arm.joint_names, q_start=q0, limits=limits, arm=arm, check=check,
        information=arm_information(trajectory, kin, effort_std, prior, arm), seed=int(seed),
        design_time_s=time.perf_counter() - started,
    )
