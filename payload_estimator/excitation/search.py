"""The search over a Fourier motion's coefficients for the most informative admissible motion.

**Constraints.** For every candidate the coefficients are scaled down by the largest factor
``s <= 1`` that keeps the joint positions (margin, excursion), speeds, accelerations and jerks
within their limits (exact: these are linear in the coefficients), then the speed of the TCP and
of the payload's outermost points (``MotionLimits.payload_points``) and the payload's clearance of
the floor and the base (re-scaled until they hold). The optimiser (the eight best of 64 seeded
random coefficient sets, each refined by gradient ascent along the limit that binds) therefore
only ever sees admissible motions, and the result is checked once more on the 1 kHz sampled
trajectory (:func:`~payload_estimator.excitation.check.check_trajectory`), shrunk if a peak
between the design grid's samples exceeded a limit. The same seed gives the same motion.

:class:`FourierSearch` is that search; a subclass says what is maximised (the payload's
information: :mod:`~payload_estimator.excitation.design`; the unloaded arm's:
:mod:`~payload_estimator.excitation.calibration`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.excitation.check import trajectory_grid
from payload_estimator.excitation.fourier import FourierExcitation
from payload_estimator.excitation.limits import ArmLimits, MotionLimits, point_speeds

if TYPE_CHECKING:  # pinocchio comes with the kinematics a caller passes in
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = ["FourierSearch"]

_DESIGN_RATE_HZ = 15.0
"""The information and the TCP speed are evaluated at this rate during the optimisation, Hz
(the highest harmonic is sampled more than 12 times per period)."""
_LIMIT_RATE_HZ = 200.0
"""The joint limits are evaluated at this rate during the optimisation, Hz."""
_CANDIDATES = 64
"""Seeded random coefficient sets scored first; the best ones start the local optimisation."""
_STARTS = 8
"""Local optimisations, from the best random sets (the problem has many local optima)."""
_ITERATIONS = 20
"""Gradient steps of each local optimisation."""


class FourierSearch:
    """The search over the coefficients of a :class:`FourierExcitation`.

    It finds the largest admissible scaling of any coefficients (the joint limits exactly, then
    the TCP speed and the clearances),
    gradient ascent along the limit that binds, from the best of seeded random starts. A subclass
    says what is maximised (:meth:`score`, :meth:`gradient`): the payload's information in
    :mod:`~payload_estimator.excitation.design`, the arm's in :mod:`~payload_estimator.excitation.calibration`.

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
        self.speed_points = limits.speed_points  # the TCP and the payload's outermost points

    def score(self, x: np.ndarray) -> tuple[float, np.ndarray | None]:
        """Score the largest admissible scaling of the normalised coefficients ``x``.

        Returns (criterion, admissible coefficients); ``(-1e9, None)`` when there is none."""
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
        """Return the best admissible coefficients found, or None if none is admissible.

        ``candidates`` seeded random sets are scored, the best ``starts`` of them refined by
        :meth:`ascend` (``iterations`` steps)."""
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
        """(2H, n) the coefficients of the normalised variables ``x`` (a harmonic's by its number)."""
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
            speed = float(np.max(point_speeds(motion.lin_vel_in_sensor, motion.ang_vel_in_sensor, self.speed_points)))
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
        """Return the (2H, n) gradient of the ratio ``r`` of the limit ``C`` comes nearest (``r = 1``: on it).

        ``r`` is a function of degree 1 in ``C``: so moving along ``g - (g . C) grad r`` keeps ``r`` while
        the log det changes as the gradient ``g`` says. Joint limits are linear in ``C``; the speed of
        the fastest point (the TCP or a payload's point) is taken as linear too (its Jacobian at the
        fastest sample)."""
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
        m = self.kin.compute(q, dq, np.zeros_like(dq))
        speeds = point_speeds(m.lin_vel_in_sensor, m.ang_vel_in_sensor, self.speed_points)
        fastest, j = np.unravel_index(int(np.argmax(speeds)), speeds.shape)
        target = 0.97 * self.limits.max_tcp_speed
        if speeds[fastest, j] / target > worst:
            worst = float(speeds[fastest, j] / target)
            p = self.speed_points[j]
            v = m.lin_vel_in_sensor[fastest] + np.cross(m.ang_vel_in_sensor[fastest], p)
            J = self.kin.compute(np.repeat(q[fastest:fastest + 1], self.n, axis=0), np.eye(self.n),
                                 np.zeros((self.n, self.n)))
            Jv = J.lin_vel_in_sensor + np.cross(J.ang_vel_in_sensor, p)  # (n, 3): the point's velocity per joint
            grad = np.outer(Bd1[fastest], Jv @ (v / speeds[fastest, j])) / target
        return grad / max(worst, 1e-300)

    def ascend(self, x: np.ndarray, iterations: int) -> tuple[float, np.ndarray | None]:
        """Ascend the gradient from ``x``; return (score, admissible coefficients).

        Step along the gradient with the part that only scales the
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
