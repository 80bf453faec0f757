"""``~/identify`` without ROS: design the identification motion, run it, stop when converged, hand over.

The rclpy node (:mod:`payload_estimator.ros.estimator_node`) serves the
``payload_estimator/action/Identify`` action and is a client of the arm's
``control_msgs/action/FollowJointTrajectory``; everything it decides is decided
here, so that it can be tested without ROS:

* :func:`refusal`: why a goal cannot start (no robot model or stream yet, the
  estimator paused, no joint state or a stale one, no trajectory action
  configured, another identification running). A start within the position
  margin of a joint limit is refused by the design itself
  (:class:`~payload_estimator.excitation.ExcitationError`);
* :func:`plan_identification`: the motion from the current joint state
  (:func:`~payload_estimator.excitation.design_excitation`; arm limits from the
  robot preset when the joints are the preset's, else from the URDF), with the
  settings' motion limits and the goal's overrides, sampled into the points sent
  to the controller. Slow (an optimisation): the node runs it in the action's
  own thread, never in its processing loop;
* :class:`IdentifySession`: the state machine the node's processing loop ticks
  (:meth:`IdentifySession.tick`) and the action callbacks inform (the
  controller's answer, feedback and result, a cancel, the hand-over's answer).
  Each tick returns a :class:`Step`: what the node must do now (reset the
  estimator, send or cancel the trajectory, apply, publish feedback, finish).

Phases: ``starting`` (reset, send) -> ``moving`` (until the estimate has
converged, the motion ends, or something goes wrong) -> ``stopping`` (the
trajectory is cancelled: the controller holds the arm) -> ``returning`` (a
minimum-jerk rest-to-rest motion back to the start, within every limit) ->
``applying`` (``~/apply``, when asked and converged) -> done. A motion that
ends without convergence waits :data:`SETTLE_S` for the filters' delay, then
finishes unconverged with the estimate's reason.

Aborts (the trajectory is cancelled first, so the controller stops the arm):
the controller rejects or aborts the trajectory (its error string), a joint
lags its reference by more than ``identify_max_tracking_error``, the wrench
saturates (the stream's health counts ``saturated`` samples), the joint states
go stale, the estimator is paused meanwhile.

Times: ``now`` is the clock of the inputs' receive times (the node's monotonic
clock), s; motion times are s from the start of a trajectory. Joint vectors are
in the stream's joint order (:attr:`IdentifyPlan.joint_names`), rad.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import yaml
from scipy.spatial.transform import Rotation

from payload_estimator.excitation import (
    ArmLimits,
    ExcitationError,
    MotionLimits,
    design_excitation,
)
from payload_estimator.excitation.trajectory import JointTrajectory, MinJerkSegments, sample_points
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.stream import StreamEstimate
from payload_estimator.robots import ROBOTS
from payload_estimator.settings import Settings

__all__ = [
    "IdentifyGoal",
    "JointReading",
    "IdentifyPlan",
    "Feedback",
    "Outcome",
    "Step",
    "IdentifySession",
    "refusal",
    "dry_run_outcome",
    "plan_identification",
    "motion_limits",
    "joint_reading",
    "return_move",
    "SUCCEEDED",
    "ABORTED",
    "CANCELED",
    "SETTLE_S",
    "STOP_TIMEOUT_S",
    "FEEDBACK_PERIOD_S",
]

SUCCEEDED, ABORTED, CANCELED = "succeeded", "aborted", "canceled"
"""How an identification ends (the action goal's terminal state)."""
DESIGNING, STARTING, MOVING, SETTLING, STOPPING, RETURNING, APPLYING, DONE = (
    "designing", "starting", "moving", "settling", "stopping", "returning", "applying", "done")
"""The phases the feedback names (``designing``: before the session starts, in the action's thread)."""

SETTLE_S = 1.0
"""After a motion that ended unconverged, how long to wait for the estimate (the filters' delay), s."""
STOP_TIMEOUT_S = 2.0
"""How long the controller may take to confirm a cancelled trajectory, s."""
STOP_SETTLE_S = 0.3
"""After the controller confirmed the stop, how long to let the arm come to rest before returning, s."""
FEEDBACK_PERIOD_S = 0.1
"""Feedback is published at most this often, s."""
LATENCY_S = 0.1
"""The tracking error compares the measured joints with the reference up to this long before, s (the joint
states' latency and the controller's start)."""
MIN_RETURN_S = 0.5
"""Shortest motion back to the start, s."""
_TCP_TARGET_FRACTION = 0.95  # the motion back keeps this fraction of max_tcp_speed


# ------------------------------------------------------------------ values
@dataclass(frozen=True)
class IdentifyGoal:
    """An ``Identify`` goal: ``duration`` (s) and ``max_tcp_speed`` (m/s), 0 for the settings' value;
    ``apply``: hand a converged estimate over (``~/apply``); ``dry_run``: design and check only."""

    duration: float = 0.0
    max_tcp_speed: float = 0.0
    apply: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class JointReading:
    """The arm's measured joint positions: ``positions`` (n,) rad in the stream's joint order,
    ``received`` s on the receive clock."""

    positions: np.ndarray
    received: float


def joint_reading(names: Sequence[str], positions: Sequence[float], received: float,
                  joint_names: Sequence[str]) -> JointReading | None:
    """The reading of ``joint_names`` in a ``sensor_msgs/JointState`` (``names``, ``positions``), or None
    when the message lacks one of them or is malformed (a gripper's own message, say)."""
    if len(names) != len(positions):
        return None
    index = {str(n): i for i, n in enumerate(names)}
    try:
        q = np.array([float(positions[index[j]]) for j in joint_names])
    except KeyError:
        return None
    return JointReading(q, float(received)) if np.all(np.isfinite(q)) else None


@dataclass(frozen=True)
class IdentifyPlan:
    """A designed identification motion, ready to send.

    Attributes:
        joint_names: (n,) the arm joints, the columns of every array.
        q_start: (n,) where the motion starts and ends, rad.
        trajectory: the designed :class:`JointTrajectory`.
        t, q, dq, ddq: the points sent to the controller: (K,) s from the start, (K, n) rad, rad/s, rad/s².
        limits: the motion limits it was designed for.
        arm_limits: the arm's limits.
        kinematics: the flange kinematics it was designed with.
        summary: the design's summary (peaks as fractions of the limits, information ...).
        peak_tcp_speed: the flange's top linear speed along the motion, m/s.
    """

    joint_names: tuple[str, ...]
    q_start: np.ndarray
    trajectory: JointTrajectory
    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    limits: MotionLimits
    arm_limits: ArmLimits
    kinematics: SensorKinematics = field(repr=False)
    summary: Mapping[str, Any] = field(default_factory=dict)
    peak_tcp_speed: float = math.nan

    @property
    def duration(self) -> float:
        return float(self.trajectory.duration)

    @property
    def summary_yaml(self) -> str:
        """:attr:`summary` as YAML (numbers as plain floats)."""
        return yaml.safe_dump(_plain(dict(self.summary)), sort_keys=False, default_flow_style=None).strip()


@dataclass(frozen=True)
class Feedback:
    """What an ``Identify`` feedback message carries.

    Attributes:
        phase: designing, moving, stopping, returning, applying.
        progress: fraction of the identification motion done, 0 to 1.
        elapsed: s since the motion started.
        tracking_error: largest joint lag behind the reference now, rad (NaN when not moving).
        estimate: the current estimate (None before the first one since the reset).
    """

    phase: str
    progress: float
    elapsed: float
    tracking_error: float
    estimate: StreamEstimate | None


@dataclass(frozen=True)
class Outcome:
    """How an identification ended.

    Attributes:
        status: :data:`SUCCEEDED`, :data:`ABORTED` or :data:`CANCELED`.
        message: why, in one sentence.
        converged: the final estimate converged (per ``converge_on``).
        applied: it was handed over through ``~/apply``.
        estimate: the final estimate (None: none was made).
        motion_time: s of identification motion run (0 for a dry run).
        summary_yaml: the designed motion's summary ("" when there was no design).
        planned_duration: s, the designed motion's length (0 when there was no design).
    """

    status: str
    message: str
    converged: bool = False
    applied: bool = False
    estimate: StreamEstimate | None = None
    motion_time: float = 0.0
    summary_yaml: str = ""
    planned_duration: float = 0.0


@dataclass(frozen=True)
class Step:
    """What the node must do after a tick, in this order.

    Attributes:
        reset: reset the estimator (``~/reset``).
        send: points to send as a FollowJointTrajectory goal: (joint names, t (K,), q, dq, ddq (K, n)).
        cancel_trajectory: cancel the trajectory goal sent last (the controller stops the arm).
        apply: call ``~/apply`` (not forced) and report with :meth:`IdentifySession.on_applied`.
        feedback: publish it.
        outcome: finish the goal with it.
    """

    reset: bool = False
    send: tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    cancel_trajectory: bool = False
    apply: bool = False
    feedback: Feedback | None = None
    outcome: Outcome | None = None


# ------------------------------------------------------------ preconditions
def refusal(settings: Settings | None, running: bool, status: str, paused: bool, reading: JointReading | None,
            now: float, busy: bool, dry_run: bool = False) -> str | None:
    """Why an identification cannot start now (one sentence), or None.

    Args:
        settings: the node's settings (None: invalid parameters).
        running: the estimator has its stream (robot model and frames known); ``status`` says why not.
        paused: the estimator is paused (``~/pause``).
        reading: the newest joint state of the arm (None: none yet).
        now: s on the receive clock.
        busy: another identification is running.
        dry_run: the goal only designs (needs neither the controller nor the arm to itself).
    """
    if busy and not dry_run:
        return "refused: another identification is running"
    if settings is None or not running:
        return f"refused: the estimator is not running ({status})"
    if not settings.trajectory_action and not dry_run:
        return "refused: no trajectory controller configured (parameter trajectory_action is empty)"
    if paused:
        return "refused: the estimator is paused (~/pause false resumes it)"
    if reading is None:
        return "refused: no joint state of the arm received yet"
    age = now - reading.received
    if age > settings.stale_after_s:
        return f"refused: the joint states are stale (the last one is {age:.2f} s old, stale_after_s " \
               f"{settings.stale_after_s:g} s)"
    return None


# ------------------------------------------------------------------- design
def motion_limits(settings: Settings, goal: IdentifyGoal) -> MotionLimits:
    """The motion limits of the settings (``identify_*``), with the goal's duration and speed when non-zero.

    Raises:
        ExcitationError: a negative or non-finite value.
    """
    configured = MotionLimits.from_settings(settings)
    return configured.with_overrides(duration=goal.duration, max_tcp_speed=goal.max_tcp_speed)


def _arm(settings: Settings, urdf: str, flange: str, joint_names: tuple[str, ...]
         ) -> tuple[SensorKinematics, ArmLimits]:
    """The flange kinematics of the robot description in use, mounted as the settings say (``base_rpy``,
    ``gravity``: a wall-mounted arm's floor and gravity are not an upright one's), and the arm limits:
    the preset's vendor limits when the joints are its own, else the URDF's."""
    kin = SensorKinematics(urdf, flange, joint_names=joint_names,
                           R_world_base=Rotation.from_euler("xyz", settings.base_rpy).as_matrix(),
                           gravity_in_world=(0.0, 0.0, -settings.gravity))
    spec = ROBOTS.get(settings.robot)
    if spec is not None and tuple(spec.joint_names) == joint_names and spec.flange_frame == flange:
        return kin, ArmLimits.from_robot(spec)
    return kin, ArmLimits.from_kinematics(kin)


def plan_identification(settings: Settings, goal: IdentifyGoal, urdf: str, flange: str,
                        joint_names: Sequence[str], q_start: np.ndarray) -> IdentifyPlan:
    """Design and check the identification motion from ``q_start`` (module docstring).

    Raises:
        ExcitationError: why no safe motion can be designed (a start outside or within the margin of a
            limit, a duration too short ...), or which check the designed motion fails.
    """
    names = tuple(joint_names)
    kin, arm = _arm(settings, urdf, flange, names)
    limits = motion_limits(settings, goal)
    design = design_excitation(kin, arm, np.asarray(q_start, dtype=float), limits=limits, seed=0,
                               estimate_offsets=settings.estimate_bias)
    if not design.check.ok:
        raise ExcitationError("the designed motion fails its checks: " + "; ".join(design.check.violations))
    t, q, dq, ddq = sample_points(design.trajectory, settings.identify_point_spacing)
    return IdentifyPlan(names, np.asarray(q_start, dtype=float).copy(), design.trajectory, t, q, dq, ddq,
                        limits, arm, kin, design.summary(), float(design.check.peak_tcp_speed))


# -------------------------------------------------------- the way back
def return_move(plan: IdentifyPlan, q_from: np.ndarray) -> MinJerkSegments:
    """The shortest minimum-jerk motion from ``q_from`` back to the plan's start that keeps every joint's
    speed, acceleration and jerk within the plan's fractions of the arm's limits and the flange below
    ``max_tcp_speed`` (peaks of the blend: 1.875 d/T, 5.77 d/T², 60 d/T³ for a joint moving d)."""
    lim, arm = plan.limits, plan.arm_limits
    d = np.abs(plan.q_start - q_from)
    T = max(MIN_RETURN_S,
            float(np.max(1.875 * d / (lim.velocity_fraction * arm.dq_max))),
            float(np.max(np.sqrt(10.0 / math.sqrt(3.0) * d / (lim.acceleration_fraction * arm.ddq_max)))),
            float(np.max(np.cbrt(60.0 * d / (lim.jerk_fraction * arm.dddq_max)))))
    ends = np.array([q_from, plan.q_start], dtype=float)
    q, dq, _ = MinJerkSegments(ends, np.array([T]))(np.linspace(0.0, T, 201))
    motion = plan.kinematics.compute(q, dq, np.zeros_like(dq))
    peak = float(np.max(np.linalg.norm(motion.lin_vel_in_sensor, axis=1)))
    target = _TCP_TARGET_FRACTION * lim.max_tcp_speed
    if peak > target:  # every speed scales with 1/T
        T *= peak / target
    return MinJerkSegments(ends, np.array([T]))


# ------------------------------------------------------------------ session
class IdentifySession:
    """One identification at a time, ticked by the node's loop (module docstring).

    Use: :func:`refusal`, then :func:`plan_identification`, then :meth:`start`; every tick
    :meth:`tick`; the trajectory action's answers go to :meth:`on_trajectory_response`,
    :meth:`on_trajectory_feedback` and :meth:`on_trajectory_result`, ``~/apply``'s to :meth:`on_applied`,
    a cancel of the goal to :meth:`cancel`. Not thread-safe: the node holds a lock around every call.
    """

    def __init__(self) -> None:
        self.phase = DONE
        self._clear()

    def _clear(self) -> None:
        self.plan: IdentifyPlan | None = None
        self.goal = IdentifyGoal()
        self.settings: Settings | None = None
        self._reference: JointTrajectory | None = None  # what the controller follows now
        self._ref_t0: float | None = None  # when it started (receive clock)
        self._motion_t0: float | None = None
        self._motion_time = 0.0
        self._pending_send = False
        self._trajectory_done: tuple[bool, str] | None = None  # (succeeded, why not)
        self._phase_t0 = 0.0
        self._saturated0: int | None = None
        self._estimate: StreamEstimate | None = None
        self._controller_error: tuple[float, float] | None = None  # (rad, when)
        self._tracking_error = math.nan
        self._next_feedback = -math.inf
        self._cancel_requested = False
        self._converged_at_stop = False
        self._abort_after_stop: str | None = None
        self._apply_answer: tuple[bool, str] | None = None

    @property
    def busy(self) -> bool:
        """Whether an identification is running."""
        return self.phase != DONE

    # ----------------------------------------------------------- events
    def start(self, plan: IdentifyPlan, goal: IdentifyGoal, settings: Settings, now: float) -> None:
        """Run ``plan``: the next tick resets the estimator and sends the motion."""
        if self.busy:
            raise RuntimeError("an identification is running")
        self._clear()
        self.plan, self.goal, self.settings = plan, goal, settings
        self.phase, self._phase_t0 = STARTING, now

    def cancel(self) -> None:
        """The goal was cancelled: the next tick cancels the trajectory (the controller stops the arm)."""
        if self.busy:
            self._cancel_requested = True

    def on_trajectory_response(self, accepted: bool, now: float, message: str = "") -> None:
        """The controller accepted (or rejected) the trajectory sent last, at ``now``."""
        if not self.busy:
            return
        if not accepted:
            self._trajectory_done = (False, "the controller rejected the motion" + (f": {message}" if message else ""))
            return
        self._ref_t0 = now
        if self.phase == MOVING:
            self._motion_t0 = now

    def on_trajectory_feedback(self, error_positions: Sequence[float], now: float) -> None:
        """The controller's feedback: its position error per joint, rad."""
        err = np.abs(np.asarray(error_positions, dtype=float))
        if err.size and np.all(np.isfinite(err)):
            self._controller_error = (float(np.max(err)), now)

    def on_trajectory_result(self, succeeded: bool, message: str = "") -> None:
        """The trajectory sent last ended: it ran to its end (``succeeded``), or why not."""
        if self.busy:
            self._trajectory_done = (bool(succeeded), message)

    def on_applied(self, success: bool, message: str) -> None:
        """``~/apply``'s answer."""
        if self.phase == APPLYING:
            self._apply_answer = (bool(success), message)

    # ------------------------------------------------------------- tick
    def tick(self, now: float, reading: JointReading | None, estimate: StreamEstimate | None,
             saturated: int, paused: bool) -> Step:
        """One turn of the node's loop at ``now``.

        Args:
            reading: the arm's newest joint state.
            estimate: the newest estimate since the reset (None: none yet).
            saturated: wrench samples counted ``saturated`` by the stream's health so far.
            paused: the estimator is paused.
        """
        if not self.busy:
            return Step()
        assert self.plan is not None and self.settings is not None
        if self.phase == STARTING:
            self.phase, self._phase_t0 = MOVING, now
            self._reference, self._ref_t0, self._saturated0 = self.plan.trajectory, None, saturated
            self._trajectory_done = None
            p = self.plan
            return Step(reset=True, send=(p.joint_names, p.t, p.q, p.dq, p.ddq),
                        feedback=self._feedback(now, force=True))
        if estimate is not None:
            self._estimate = estimate
        if self._motion_t0 is not None and self.phase in (MOVING, SETTLING, STOPPING):
            self._motion_time = min(now - self._motion_t0, self.plan.duration)

        if self._cancel_requested and self.phase not in (STOPPING, APPLYING):
            return self._stop(now, CANCELED, "identification cancelled: the robot was stopped")
        step = self._checks(now, reading, saturated, paused)
        if step is not None:
            return step
        handler = {MOVING: self._moving, SETTLING: self._settling, STOPPING: self._stopping,
                   RETURNING: self._returning, APPLYING: self._applying}[self.phase]
        return handler(now, reading)

    # --------------------------------------------------------- internals
    def _checks(self, now: float, reading: JointReading | None, saturated: int, paused: bool) -> Step | None:
        """Abort when the controller gave up, the joints are stale or lag, the wrench saturated, or paused."""
        settings = self.settings
        assert settings is not None
        moving = self.phase in (MOVING, RETURNING)
        if self._trajectory_done is not None and not self._trajectory_done[0] and self.phase in (MOVING, RETURNING):
            why = self._trajectory_done[1] or "no reason given"
            if not why.startswith("the controller"):
                why = f"the controller aborted the motion: {why}"
            return self._finish(ABORTED, why)
        if self.phase in (MOVING, SETTLING, RETURNING):
            age = math.inf if reading is None else now - reading.received
            if age > settings.stale_after_s:
                return self._stop(now, ABORTED, f"the joint states went stale (none for {min(age, 1e3):.2f} s): "
                                                "the robot was stopped")
            if self._saturated0 is not None and saturated > self._saturated0:
                return self._stop(now, ABORTED, f"the wrench saturated ({saturated - self._saturated0} samples at "
                                                "the sensor's range): the robot was stopped")
            if paused:
                return self._stop(now, ABORTED, "the estimator was paused: the robot was stopped")
        self._tracking_error = self._lag(now, reading) if moving else math.nan
        if moving and self._tracking_error > settings.identify_max_tracking_error:
            return self._stop(now, ABORTED, f"a joint lags its reference by {self._tracking_error:.3f} rad, more than "
                                            f"identify_max_tracking_error ({settings.identify_max_tracking_error:g}"
                                            " rad): the robot was stopped")
        return None

    def _lag(self, now: float, reading: JointReading | None) -> float:
        """The tracking error: the controller's own when it reports one, else the measured joints against the
        reference up to :data:`LATENCY_S` before (the smallest largest-joint error), rad."""
        if self._controller_error is not None and now - self._controller_error[1] <= 2 * LATENCY_S:
            return self._controller_error[0]
        if reading is None or self._reference is None or self._ref_t0 is None:
            return math.nan
        t = now - self._ref_t0
        times = np.clip(np.linspace(t - LATENCY_S, t, 11), 0.0, None)
        q, _, _ = self._reference(times)
        return float(np.min(np.max(np.abs(q - reading.positions), axis=1)))

    def _converged(self) -> bool:
        return self._estimate is not None and self._estimate.converged

    def _moving(self, now: float, reading: JointReading | None) -> Step:
        if self._converged():
            if self.settings is not None and not self.settings.identify_return_to_start:
                return self._stop(now, SUCCEEDED, "", converged=True)
            self._converged_at_stop = True
            return self._stop(now, None, "")
        if self._trajectory_done is not None and self._trajectory_done[0]:
            self.phase, self._phase_t0 = SETTLING, now
            self._motion_time = self.plan.duration if self.plan is not None else 0.0
        return Step(feedback=self._feedback(now))

    def _settling(self, now: float, reading: JointReading | None) -> Step:
        if self._converged():
            return self._after_converged(now)
        if now - self._phase_t0 >= SETTLE_S:
            why = self._estimate.reason if self._estimate is not None else "no estimate was made"
            return self._finish(ABORTED, f"the motion ended without convergence: {why}")
        return Step(feedback=self._feedback(now))

    def _stop(self, now: float, status: str | None, message: str, converged: bool = False) -> Step:
        """Cancel the trajectory; then finish with ``status`` (None: return to the start)."""
        cancel = self.phase in (MOVING, RETURNING, SETTLING) and self._trajectory_done is None
        if status is not None:
            if status == SUCCEEDED and converged:
                if self.goal.apply:
                    self.phase, self._phase_t0 = APPLYING, now
                    return Step(cancel_trajectory=cancel, apply=True, feedback=self._feedback(now, force=True))
                return self._finish(SUCCEEDED, "converged" + self._where(), cancel)
            return self._finish(status, message, cancel)
        self.phase, self._phase_t0 = STOPPING, now
        if not cancel:  # the motion already ended (at the start)
            return self._after_stop(now, None)
        self._trajectory_done = None
        return Step(cancel_trajectory=True, feedback=self._feedback(now, force=True))

    def _stopping(self, now: float, reading: JointReading | None) -> Step:
        if self._trajectory_done is None:
            if now - self._phase_t0 > STOP_TIMEOUT_S:
                return self._finish(ABORTED, "the controller did not confirm that it stopped the motion "
                                             f"within {STOP_TIMEOUT_S:g} s")
            return Step(feedback=self._feedback(now))
        if now - self._phase_t0 < STOP_SETTLE_S:
            return Step(feedback=self._feedback(now))
        return self._after_stop(now, reading)

    def _after_stop(self, now: float, reading: JointReading | None) -> Step:
        """The arm is held where it stopped: go back to the start (or finish, when already there)."""
        plan = self.plan
        assert plan is not None
        if self._cancel_requested:
            return self._finish(CANCELED, "identification cancelled: the robot was stopped")
        if reading is None:
            return self._finish(ABORTED, "no joint state to plan the way back to the start from")
        if float(np.max(np.abs(reading.positions - plan.q_start))) < 1e-3:
            return self._after_converged(now)
        move = return_move(plan, reading.positions)
        self.phase, self._phase_t0 = RETURNING, now
        self._reference, self._ref_t0, self._trajectory_done = move, None, None
        self._controller_error = None
        assert self.settings is not None
        t, q, dq, ddq = sample_points(move, self.settings.identify_point_spacing)
        return Step(send=(plan.joint_names, t, q, dq, ddq), feedback=self._feedback(now, force=True))

    def _returning(self, now: float, reading: JointReading | None) -> Step:
        if self._trajectory_done is not None and self._trajectory_done[0]:
            return self._after_converged(now)
        return Step(feedback=self._feedback(now))

    def _after_converged(self, now: float) -> Step:
        if self.goal.apply:
            self.phase, self._phase_t0 = APPLYING, now
            return Step(apply=True, feedback=self._feedback(now, force=True))
        return self._finish(SUCCEEDED, "converged" + self._where())

    def _applying(self, now: float, reading: JointReading | None) -> Step:
        if self._apply_answer is None:
            return Step(feedback=self._feedback(now))
        ok, message = self._apply_answer
        text = f"converged{self._where()} and applied ({message})" if ok else \
            f"converged{self._where()} but not applied: {message}"
        return self._finish(SUCCEEDED, text, applied=ok)

    def _where(self) -> str:
        back = self._converged_at_stop and self.settings is not None and self.settings.identify_return_to_start
        return f" after {self._motion_time:.2f} s of motion" + (", back at the start" if back else "")

    def _finish(self, status: str, message: str, cancel: bool = False, applied: bool = False) -> Step:
        plan = self.plan
        outcome = Outcome(status, message, converged=self._converged(), applied=applied, estimate=self._estimate,
                          motion_time=self._motion_time, summary_yaml=plan.summary_yaml if plan else "",
                          planned_duration=plan.duration if plan else 0.0)
        self.phase = DONE
        self._clear()
        return Step(cancel_trajectory=cancel, outcome=outcome)

    def _feedback(self, now: float, force: bool = False) -> Feedback | None:
        if not force and now < self._next_feedback:
            return None
        self._next_feedback = now + FEEDBACK_PERIOD_S
        duration = self.plan.duration if self.plan is not None else 0.0
        progress = 1.0 if self.phase in (STOPPING, RETURNING, APPLYING, SETTLING) else \
            (min(1.0, self._motion_time / duration) if duration > 0 else 0.0)
        return Feedback(self.phase, progress, self._motion_time, self._tracking_error, self._estimate)


def dry_run_outcome(plan: IdentifyPlan) -> Outcome:
    """The answer to a dry run: the motion is designed and checked, nothing moves."""
    return Outcome(SUCCEEDED, f"dry run: a {plan.duration:.1f} s motion designed and checked (flange up to "
                              f"{plan.peak_tcp_speed:.2f} m/s, every limit kept); nothing moved",
                   summary_yaml=plan.summary_yaml, planned_duration=plan.duration)


def _plain(value: Any) -> Any:
    """Numpy scalars and arrays as plain Python numbers and lists (for YAML)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value
