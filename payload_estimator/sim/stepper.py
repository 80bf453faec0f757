"""Integrating an arm under computed-torque control, with a work cycle's payload changes and contacts.

Controller
----------
Computed torque with MuJoCo's own model: ``tau = M(q) (ddq_ref + Kp e + Kd
de) + qfrc_bias(q, dq)`` (``mj_mulM``, ``qfrc_bias``), ``Kp = w²``,
``Kd = 2 zeta w``, ``w = 2 pi bandwidth_hz``, torques clipped to the vendor
limits (clipped steps are counted).

Integration: semi-implicit Euler at the model's timestep ``T`` through ``mj_step1`` /
``mj_step2``, so the controller sees the state at ``t``. That integrator moves the positions
with the step's new speed, ``q[k+1] = q[k] + T dq[k+1]``: its state's speed ``dq[k]`` is the
positions' backward difference, the speed of the motion half a step (``T / 2``) before the
positions. A robot's positions, speeds and wrench belong to one smooth motion, and a model
differentiating the positions (central differences) finds that motion's speed: recorded as
the engine reads it, the wrench would be that of a speed ``T / 2`` late, an error of the
simulator no robot has (at 1 kHz, 0.3 to 2 % in the inertia about the centre of mass of the
hand tools of ``benchmarks/real_objects.py``, least squares on otherwise exact inputs). So
every step is recorded at the speed and acceleration of the motion through the positions,
``dq_c[k] = (dq[k] + dq[k+1]) / 2`` (the positions' central difference) and ``ddq_c[k] =
(dq[k+1] - dq[k]) / T`` (their second difference; ``qacc`` itself without implicit damping),
and the sensors and the torque are those of that state: MuJoCo's inverse dynamics
(``mj_inverse``, sensors included) at ``(q, dq_c, ddq_c)``, the torque moved by the change of
the bias forces (``qfrc_inverse`` at ``dq_c`` less at ``dq``) and a friction's taken at
``dq_c``. The signals are therefore exact rigid-body dynamics of the recorded ``(q, dq, ddq)``,
and these are the derivatives of the recorded positions to second order in ``T``; integration
error only shows up as tracking error, which the controller removes.

Joint friction (opt-in, :mod:`payload_estimator.sim.efforts`)
-------------------------------------------------------------
With a friction model it acts on the joints (``qfrc_applied = -tau_friction(dq)``, set before
each step's dynamics) and the controller adds ``tau_friction(dq)`` to its torque, as a real
controller compensates friction: the tracking is unchanged and the applied torque is
``M(q) ddq + C dq + g(q) + tau_friction(dq)`` of the recorded state exactly
(:func:`~payload_estimator.sim.mujoco_model.rigid_body_torque` gives the first terms). A friction
whose Coulomb level grows with the load (:attr:`JointFriction.load`) reads the controller's torque
before the friction feed-forward (the rigid-body torque of the arm and its payload) as that load.

Angles in rad, speeds in rad/s, torques in N·m, times in s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import ConfigurationError
from payload_estimator.sim.efforts import JointFriction
from payload_estimator.sim.mujoco_model import ArmModel, set_payload

__all__ = ["computed_torque", "WorkSchedule", "ScheduleHook", "StepRecording", "ArmStepper"]


def computed_torque(
    arm: ArmModel,
    data: mujoco.MjData,
    q_ref: np.ndarray,
    dq_ref: np.ndarray,
    ddq_ref: np.ndarray,
    kp: float,
    kd: float,
) -> np.ndarray:
    """(n,) ``M(q) (ddq_ref + kp e + kd de) + qfrc_bias`` at the state in ``data``, N·m (unclipped).

    Needs ``qM`` and ``qfrc_bias`` up to date (after ``mj_step1`` or ``mj_forward``).
    """
    q = data.qpos[arm.qpos_adr]
    dq = data.qvel[arm.dof_adr]
    acc = np.zeros(arm.model.nv)
    acc[arm.dof_adr] = ddq_ref + kp * (q_ref - q) + kd * (dq_ref - dq)
    M_acc = np.empty(arm.model.nv)
    mujoco.mj_mulM(arm.model, data, M_acc, acc)
    return (M_acc + data.qfrc_bias)[arm.dof_adr]


# -------------------------------------------------------------- work cycle
@dataclass(frozen=True, eq=False)
class WorkSchedule:
    """What the gripper holds over a run, and the external forces on it: a work cycle.

    Attributes:
        changes: ``((t, params), ...)``, ``t`` increasing: from ``t`` (s) on the gripper holds
            ``params`` (inertial parameters in S; :meth:`InertialParameters.zero` is an empty
            gripper). Before the first change it holds
            :func:`~payload_estimator.sim.mujoco_sim.simulate`'s ``payload``.
        contacts: external forces on the held payload (:class:`payload_estimator.sim.cycle.Contact`:
            ``t_start``, ``t_end``, ``force_in_world`` N, constant in the world frame,
            ``point_in_sensor`` m, where it acts).

    The payload body's inertial parameters are changed in the compiled model between two
    integration steps (MuJoCo reads them anew at every step), and a contact is MuJoCo's
    ``xfrc_applied`` on that body: the F/T sensor's reading (``cfrc_int``) contains it as a real
    sensor's would, through the engine's own dynamics.
    """

    changes: tuple[tuple[float, InertialParameters], ...] = ()
    contacts: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        times = [t for t, _ in self.changes]
        if np.any(np.diff(times) <= 0.0):
            raise ValueError("the changes of a work schedule must come in increasing time")


class ScheduleHook:
    """Applies a :class:`WorkSchedule` during integration (see there)."""

    def __init__(self, arm: ArmModel, schedule: WorkSchedule) -> None:
        self.arm = arm
        self.schedule = schedule
        self._times = np.array([t for t, _ in schedule.changes])
        self._held = -1

    def before_step(self, t: float, d: mujoco.MjData) -> None:
        """Before the step's dynamics: the payload held at ``t``."""
        k = int(np.searchsorted(self._times, t + 1e-12, side="right")) - 1
        if k != self._held and k >= 0:
            set_payload(self.arm, self.schedule.changes[k][1])
        self._held = k

    def after_kinematics(self, t: float, d: mujoco.MjData) -> None:
        """After the step's kinematics: the contact forces at ``t``, at their points now."""
        b = self.arm.payload_body_id
        wrench = np.zeros(6)
        R, p = d.xmat[b].reshape(3, 3), d.xpos[b]
        for c in self.schedule.contacts:
            if c.t_start - 1e-12 <= t < c.t_end - 1e-12:
                force = np.asarray(c.force_in_world, dtype=float) * float(c.strength(np.array([t]))[0])
                point = p + R @ np.asarray(c.point_in_sensor, dtype=float)
                wrench[:3] += force
                wrench[3:] += np.cross(point - d.xipos[b], force)  # about the body's COM, world axes
        d.xfrc_applied[b] = wrench


# -------------------------------------------------------------- stepping
@dataclass(frozen=True, eq=False)
class StepRecording:
    """Integration steps: the state at ``t``, the torque applied, the acceleration and sensors at ``t``.

    Attributes:
        t: (N,) s. q_ref: (N, n) the reference position, rad. q: (N, n) rad. dq: (N, n) rad/s.
        ddq: (N, n) rad/s². tau: (N, n) applied torque (clipped), N·m.
        sensordata: (N, nsensordata) MuJoCo's sensors (read by
            :func:`~payload_estimator.sim.mujoco_model.read_wrench_in_sensor` and
            :func:`~payload_estimator.sim.mujoco_model.read_imu`).
        clipped_steps: steps where a torque hit its limit.
        tau_friction: (N, n) the friction torque the motors supplied (included in ``tau``), N·m, or
            None for a frictionless arm.
    """

    t: np.ndarray
    q_ref: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau: np.ndarray
    sensordata: np.ndarray
    clipped_steps: int
    tau_friction: np.ndarray | None = None


class ArmStepper:
    """Integrates an arm under computed-torque control, step by step (see the module docstring).

    The one place where the simulation steps: :func:`~payload_estimator.sim.mujoco_sim.simulate`
    runs a whole trajectory through it, :class:`payload_estimator.sim.live_arm.LiveArm` runs it
    chunk by chunk.

    Args:
        arm: the compiled model.
        kp, kd: computed-torque gains, 1/s², 1/s.
        hook: a work schedule applied during the steps, or None.
        friction: the joints' friction, or None: applied to the joints (``qfrc_applied =
            -tau_friction(dq)``) and fed forward by the controller (``+tau_friction(dq)``, at the
            true speed), so the tracking is that of a frictionless arm.

    Attributes:
        data: the :class:`mujoco.MjData` (the state between calls).
    """

    def __init__(self, arm: ArmModel, kp: float, kd: float, hook: ScheduleHook | None = None,
                 friction: JointFriction | None = None) -> None:
        self.arm = arm
        self.kp, self.kd = float(kp), float(kd)
        self.hook = hook
        if friction is not None and friction.n_joints != len(arm.joint_names):
            raise ConfigurationError(
                f"the friction is for {friction.n_joints} joints, the arm has {len(arm.joint_names)}")
        self.friction = friction
        self.data = mujoco.MjData(arm.model)
        self._scratch = mujoco.MjData(arm.model)
        """Inverse dynamics at the recorded state (module docstring), beside :attr:`data`."""

    def _record_smooth(self, q: np.ndarray, dq_before: np.ndarray, dq_after: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(dq_c, ddq_c, d_tau, sensordata)`` of a step from ``dq_before`` to ``dq_after`` (module docstring).

        ``d_tau``: the change of the torque the rigid arm needs, from the engine's state speed to ``dq_c``
        (the same positions and acceleration: the change of the bias forces less the passive ones, which
        :attr:`data` still holds at the engine's speed after ``mj_step2``). The contact forces
        (``xfrc_applied``) are the step's, still in :attr:`data`."""
        arm, s, d = self.arm, self._scratch, self.data
        m, dadr = arm.model, arm.dof_adr
        dq_c = 0.5 * (dq_before + dq_after)
        ddq_c = (dq_after - dq_before) / m.opt.timestep
        s.qpos[:] = d.qpos  # every other coordinate (none on a plain arm) as the engine has it
        s.qpos[arm.qpos_adr] = q
        s.qvel[:] = 0.0
        s.qacc[:] = 0.0
        s.xfrc_applied[:] = d.xfrc_applied
        s.qvel[dadr], s.qacc[dadr] = dq_c, ddq_c
        mujoco.mj_inverse(m, s)
        d_tau = (s.qfrc_bias[dadr] - s.qfrc_passive[dadr]) - (d.qfrc_bias[dadr] - d.qfrc_passive[dadr])
        return dq_c, ddq_c, d_tau, s.sensordata.copy()

    def reset(self, q: np.ndarray, dq: np.ndarray) -> None:
        """Put the arm at ``q`` (n,) rad with speed ``dq`` (n,) rad/s."""
        self.data.qpos[self.arm.qpos_adr] = q
        self.data.qvel[self.arm.dof_adr] = dq

    def run(
        self,
        t: np.ndarray,
        q_ref: np.ndarray,
        dq_ref: np.ndarray,
        ddq_ref: np.ndarray,
        progress: Callable[[float], None] | None = None,
    ) -> StepRecording:
        """Integrate one step per entry of ``t`` (N,), s, tracking the reference.

        The step length is the model's timestep; the reference is ``(q_ref, dq_ref, ddq_ref)``
        (N, n) rad, rad/s, rad/s²."""
        arm, d = self.arm, self.data
        m, hook, kp, kd = arm.model, self.hook, self.kp, self.kd
        n_steps, n = q_ref.shape
        qadr, dadr, act, tau_lim = arm.qpos_adr, arm.dof_adr, arm.actuator_ids, arm.tau_max
        rec_q, rec_dq, rec_ddq, rec_tau = (np.empty((n_steps, n)) for _ in range(4))
        rec_sens = np.empty((n_steps, m.nsensordata))
        friction = self.friction
        rec_friction = np.empty((n_steps, n)) if friction is not None else None
        clipped = 0
        report_every = max(n_steps // 100, 1)
        for i in range(n_steps):
            if hook is not None:
                hook.before_step(float(t[i]), d)
            mujoco.mj_step1(m, d)  # kinematics, M(q), qfrc_bias and gyro at the state at t
            if hook is not None:
                hook.after_kinematics(float(t[i]), d)
            tau = computed_torque(arm, d, q_ref[i], dq_ref[i], ddq_ref[i], kp, kd)
            tau_ctrl, tau_f = tau, None
            if friction is not None:
                # the load-dependent part on the torque the joint transmits: the controller's, before friction
                tau_f = friction.torque(d.qvel[dadr], tau if friction.load_dependent else None)
                d.qfrc_applied[dadr] = -tau_f  # the joints' friction, used by mj_step2
                tau = tau + tau_f  # fed forward
            if np.any(np.abs(tau) > tau_lim):
                clipped += 1
                tau = np.clip(tau, -tau_lim, tau_lim)
            d.ctrl[act] = tau
            rec_q[i] = d.qpos[qadr]
            dq_engine = d.qvel[dadr].copy()
            mujoco.mj_step2(m, d)  # qacc, F/T and accelerometer at t; then integrates to t + dt
            # recorded: the state of the smooth motion through the positions (module docstring)
            rec_dq[i], rec_ddq[i], d_tau, rec_sens[i] = self._record_smooth(rec_q[i], dq_engine, d.qvel[dadr])
            rec_tau[i] = tau + d_tau
            if friction is not None and rec_friction is not None and tau_f is not None:
                rec_friction[i] = friction.torque(rec_dq[i], tau_ctrl + d_tau if friction.load_dependent else None)
                rec_tau[i] += rec_friction[i] - tau_f
            if progress is not None and (i + 1) % report_every == 0:
                progress((i + 1) / n_steps)
        if progress is not None:
            progress(1.0)
        return StepRecording(np.asarray(t, dtype=float), q_ref, rec_q, rec_dq, rec_ddq, rec_tau, rec_sens, clipped,
                             rec_friction)

