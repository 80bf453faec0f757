"""``~/identify``'s session without ROS: run the identification motion, stop when converged, go back, hand over.

The rclpy node (:mod:`payload_estimator.ros.estimator_node`, with
:mod:`payload_estimator.ros.identify_action`) serves the
``payload_estimator/action/Identify`` action and is a client of the arm's
``control_msgs/action/FollowJointTrajectory``; everything it decides is decided
here and in :mod:`payload_estimator.supervision.identify_plan` (whether a goal may
start, the motion) and :mod:`payload_estimator.supervision.identify_run` (the
goal between the node's threads), so that it can be tested without ROS.

:class:`IdentifySession` is the state machine the node's processing loop ticks
(:meth:`IdentifySession.tick`) and the action callbacks inform (the
controller's answer, feedback and result, a cancel, the hand-over's answer).
Each tick returns a :class:`Step`: what the node must do now (reset the
estimator, send or cancel the trajectory, apply, publish feedback, finish).

Phases: ``starting`` (reset, send) -> ``moving`` (until the estimate has
converged, the motion ends, or something goes wrong) -> ``stopping`` (the
trajectory is cancelled: the controller holds the arm) -> ``returning`` (a
minimum-jerk rest-to-rest motion back to the start, within every limit:
:func:`~payload_estimator.supervision.identify_plan.return_move`) ->
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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from payload_estimator.excitation.trajectory import JointTrajectory, sample_points
from payload_estimator.pipeline.stream import StreamEstimate
from payload_estimator.settings import Settings
from payload_estimator.supervision.identify_plan import IdentifyGoal, IdentifyPlan, JointReading, return_move

__all__ = [
    "Feedback",
    "Outcome",
    "Step",
    "IdentifySession",
    "dry_run_outcome",
    "SUCCEEDED",
    "ABORTED",
    "CANCELED",
    "DESIGNING",
    "SETTLE_S",
    "STOP_TIMEOUT_S",
    "STOP_SETTLE_S",
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


# ------------------------------------------------------------------ values
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


# ------------------------------------------------------------------ session
class IdentifySession:
    """One identification at a time, ticked by the node's loop (module docstring).

    Use: :func:`~payload_estimator.supervision.identify_plan.refusal`, then
    :func:`~payload_estimator.supervision.identify_plan.plan_identification`, then :meth:`start`; every tick
    :meth:`tick`; the trajectory action's answers go to :meth:`on_trajectory_response`,
    :meth:`on_trajectory_feedback` and :meth:`on_trajectory_result`, ``~/apply``'s to :meth:`on_applied`,
    a cancel of the goal to :meth:`cancel`. Not thread-safe:
    :class:`~payload_estimator.supervision.identify_run.IdentifyRun` holds a lock around every call.
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
        self._applied_estimate: StreamEstimate | None = None
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

    def on_applied(self, success: bool, message: str, estimate: StreamEstimate | None = None) -> None:
        """``~/apply``'s answer, and the estimate it handed over: the one the result reports."""
        if self.phase == APPLYING:
            self._apply_answer = (bool(success), message)
            if estimate is not None:
                self._applied_estimate = estimate

    # ------------------------------------------------------------- tick
    def tick(self, now: float, reading: JointReading | None, estimate: StreamEstimate | None,
             saturated: int, paused: bool) -> Step:
        """One turn of the node's loop at ``now``.

        Args:
            now: s on the receive clock.
            reading: the arm's newest joint state.
            estimate: the newest estimate since the reset (None: none yet).
            saturated: wrench samples counted ``saturated`` by the stream's health so far.
            paused: the estimator is paused.

        Returns:
            What the node must do now (an empty :class:`Step` while no identification runs).
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
        if estimate is not None and self.phase != APPLYING:  # the result is the estimate handed over
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
        """The tracking error at ``now``, rad.

        It is the controller's own when it reported one within the last 2 :data:`LATENCY_S`, else the
        measured joints against the reference up to :data:`LATENCY_S` before (the smallest largest-joint
        error).
        """
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
        if self._applied_estimate is not None:
            self._estimate = self._applied_estimate
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
    fastest = plan.fastest or f"the flange: {plan.peak_tcp_speed:.2f} m/s"
    return Outcome(SUCCEEDED, f"dry run: a {plan.duration:.1f} s motion designed and checked (fastest: "
                              f"{fastest}; every limit kept); nothing moved",
                   summary_yaml=plan.summary_yaml, planned_duration=plan.duration)
