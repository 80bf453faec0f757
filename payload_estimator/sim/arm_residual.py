"""What a calibrated rigid-body model leaves of a real arm's joint torques: a structured residual.

A calibration (:mod:`payload_estimator.pipeline.arm_model`: the links' inertial parameters, viscous and
Coulomb friction, an offset) fits a real arm's torques to within 1.5-4 N·m on the shoulder and elbow and
0.3-1 N·m on the wrist, and what it leaves is not white noise: it depends on the pose and the speed and
moves over minutes, so over seconds it looks like a payload. :class:`ArmResidual` adds such a residual to
what the simulated joint-torque sensor reports (:meth:`~payload_estimator.sim.efforts.EffortModel.measure`),
on top of the arm unlike its URDF and its friction law unlike the calibration's. Per joint ``j``, with an
amplitude ``A_j`` (:attr:`ArmResidual.shoulder_nm` on the first ``n - 3`` joints, the shoulder and elbow;
:attr:`ArmResidual.wrist_nm` on the last three)::

    r_j = A_j [0.6 sin(2 q_j + a) + 0.5 sin(5 q_j + b) + 0.5 sin(3 q_k + c)]     pose: cables and hoses,
                                                                            a gearbox's error over a
                                                                            turn, a neighbour joint k's
                                                                            pose
        + A_j [0.25 sin(4 q_j + d) + 0.25 sin(2 q_k + f)] tanh(dq_j / 0.05)   friction that varies with
                                                                            the joint's and its
                                                                            neighbour's position
        + 0.1 A_j sin(N_j q_j + e)                                          torque ripple (N_j 150-250
                                                                            per turn: a harmonic drive's
                                                                            two per wave-generator turn)
        + d_j(t) tau_friction_j + o_j(t)                                     friction and zero drifting
                                                                            with temperature

``d_j`` and ``o_j`` are Ornstein-Uhlenbeck processes (stationary, time constant
:attr:`ArmResidual.drift_time_s`, std :attr:`ArmResidual.friction_drift_rel` of the friction and 0.15
``A_j`` N·m): a run later in the day finds the friction and the zero elsewhere than the calibration did.
The phases ``a..f``, the neighbour ``k`` and ``N_j`` are the physical arm's, drawn from
``default_rng([seed, RESIDUAL_STREAM])`` (the same arm in a calibration and the runs it is used on); the
drifts are each run's, drawn from the run's own effort stream.

Left out: joint elasticity (it shapes the motion, which the controller tracks, more than the torque a
link-side sensor reads) and a motor's rotor inertia (a current-based effort's ``I_r ddq``: largely
absorbed by the fitted links' inertias about their joint axes).

Units SI: N·m, rad, rad/s, s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.errors import ConfigurationError

__all__ = ["ArmResidual", "RESIDUAL_STREAM", "WRIST_JOINTS"]

RESIDUAL_STREAM = 93
"""The physical arm's residual draws from ``np.random.default_rng([its seed, RESIDUAL_STREAM])``."""
WRIST_JOINTS = 3
"""The last joints of an arm are its wrist (lightly loaded); the ones before, its shoulder and elbow."""
_POSITION_FRICTION_SPEED = 0.05  # rad/s: the smooth sign of the position-dependent friction
_RIPPLE_REL = 0.1
_OFFSET_DRIFT_REL = 0.15
_DRIFT_GRID_S = 0.5  # s: the drifts' grid (at most a tenth of their time constant)


@dataclass(frozen=True)
class ArmResidual:
    """A real arm's torques beyond what a calibrated rigid-body model with friction fits (module docstring).

    Attributes:
        shoulder_nm: amplitude ``A_j`` on the shoulder and elbow joints, N·m.
        wrist_nm: amplitude on the last :data:`WRIST_JOINTS` joints, N·m.
        friction_drift_rel: std of the friction's slow drift, a fraction of the friction.
        drift_time_s: time constant of the drifts, s.
        seed: which physical arm (shared by a calibration and the runs it is used on).
    """

    shoulder_nm: float = 7.5
    wrist_nm: float = 2.0
    friction_drift_rel: float = 0.2
    drift_time_s: float = 120.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (self.shoulder_nm >= 0.0 and self.wrist_nm >= 0.0 and self.friction_drift_rel >= 0.0
                and self.drift_time_s > 0.0):
            raise ConfigurationError("an arm residual's amplitudes must not be negative, its drift time positive")

    def amplitudes(self, n: int) -> np.ndarray:
        """(n,) ``A_j``, N·m: :attr:`shoulder_nm` but on the last :data:`WRIST_JOINTS` joints."""
        out = np.full(n, self.shoulder_nm)
        out[max(n - WRIST_JOINTS, 0):] = self.wrist_nm
        return out

    def torque(self, t: np.ndarray, q: np.ndarray, dq: np.ndarray, tau_friction: np.ndarray | None,
               rng: np.random.Generator) -> np.ndarray:
        """Return the residual (N, n) N·m at times ``t`` (N,) s, positions ``q`` and speeds ``dq`` (N, n).

        ``tau_friction`` (N, n) N·m: the arm's friction torque (None: no friction to drift); ``rng``: the
        run's stream for its drifts."""
        t = np.asarray(t, dtype=float)
        q, dq = np.atleast_2d(q), np.atleast_2d(dq)
        n = q.shape[1]
        arm = np.random.default_rng([int(self.seed), RESIDUAL_STREAM])
        phase = arm.uniform(0.0, 2.0 * np.pi, (6, n))
        neighbour = np.array([j + 1 if j + 1 < n else j - 1 for j in range(n)]) if n > 1 else np.zeros(1, int)
        periods = arm.integers(150, 251, n)
        amp = self.amplitudes(n)
        pose = amp * (0.6 * np.sin(2.0 * q + phase[0]) + 0.5 * np.sin(5.0 * q + phase[1])
                      + 0.5 * np.sin(3.0 * q[:, neighbour] + phase[2]))
        sliding = np.tanh(dq / _POSITION_FRICTION_SPEED)
        position_friction = amp * (0.25 * np.sin(4.0 * q + phase[3]) + 0.25 * np.sin(2.0 * q[:, neighbour] + phase[5]))
        position_friction = position_friction * sliding
        ripple = _RIPPLE_REL * amp * np.sin(periods * q + phase[4])
        drift = self._drifts(t, n, rng, self.drift_time_s)
        out = pose + position_friction + ripple + drift[1] * _OFFSET_DRIFT_REL * amp
        if tau_friction is not None and np.size(tau_friction):
            out = out + drift[0] * self.friction_drift_rel * np.asarray(tau_friction, dtype=float)
        return out

    @staticmethod
    def _drifts(t: np.ndarray, n: int, rng: np.random.Generator, time_s: float) -> np.ndarray:
        """(2, N, n): two unit-variance stationary Ornstein-Uhlenbeck processes per joint at times ``t``.

        Their time constant is ``time_s``.

        Drawn exactly on a grid of :data:`_DRIFT_GRID_S` (far below the time constant) and interpolated."""
        if len(t) == 0:
            return np.empty((2, 0, n))
        step = min(_DRIFT_GRID_S, time_s / 10.0)
        grid = np.arange(float(t.min()), float(t.max()) + 2.0 * step, step)
        a = np.exp(-step / time_s)
        steps = rng.normal(0.0, 1.0, (len(grid), 2, n))
        state = np.empty_like(steps)
        state[0] = steps[0]
        for i in range(1, len(grid)):  # the exact discretisation of the process over each step
            state[i] = a * state[i - 1] + np.sqrt(1.0 - a * a) * steps[i]
        flat = state.reshape(len(grid), -1)
        values = np.stack([np.interp(t, grid, column) for column in flat.T], axis=-1)
        return values.reshape(len(t), 2, n).transpose(1, 0, 2)
