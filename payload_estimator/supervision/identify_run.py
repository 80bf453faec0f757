"""``~/identify`` between the estimator node's threads, without ROS: one goal from its preconditions to its outcome.

An identification involves three of the node's threads, and :class:`IdentifyRun` is where they meet:

* the goal's own (:meth:`IdentifyRun.execute`): the preconditions
  (:func:`~payload_estimator.supervision.identify_plan.refusal`; one goal that moves the arm at a
  time, dry runs beside it), the design (slow:
  :func:`~payload_estimator.supervision.identify_plan.plan_identification`), the controller's action
  server, then waiting for the outcome and calling ``~/apply`` when the session asks;
* the processing loop (:meth:`IdentifyRun.tick`, every turn): the arm's newest joint state, one tick
  of the :class:`~payload_estimator.supervision.identify.IdentifySession`, and what its
  :class:`~payload_estimator.supervision.identify.Step` asks for (reset the estimator, cancel or send
  the trajectory, publish feedback), before the goal's thread is told to apply or finish;
* the trajectory client's (the controller's answer, feedback and result:
  :meth:`IdentifyRun.on_trajectory_response` ...).

Every call into the session holds one lock, and none waits for anything under it. What needs ROS
the node does through a :class:`Controller` (its ``FollowJointTrajectory`` client), a
:class:`GoalHandle` (rclpy's) and a function that makes the feedback message.

Times: the clock of the inputs' receive times (the node's monotonic clock), s.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from payload_estimator.errors import ExcitationError
from payload_estimator.pipeline.build import flange_frame
from payload_estimator.pipeline.health import SATURATED
from payload_estimator.pipeline.stream import WRENCH
from payload_estimator.settings import Settings
from payload_estimator.supervision.estimate_handover import ApplyDecision
from payload_estimator.supervision.identify import (
    ABORTED,
    CANCELED,
    DESIGNING,
    SUCCEEDED,
    Feedback,
    IdentifySession,
    Outcome,
    dry_run_outcome,
)
from payload_estimator.supervision.identify_plan import (
    IdentifyGoal,
    JointReading,
    newest_joint_reading,
    plan_identification,
    refusal,
)
from payload_estimator.supervision.node_outputs import Outputs

if TYPE_CHECKING:  # the supervisor is the node's; this module needs only its attributes
    from payload_estimator.supervision.supervisor import Supervisor

__all__ = ["IdentifyRun", "Controller", "GoalHandle", "trajectory_outcome", "GOAL_SUCCEEDED", "WAIT_PERIOD_S"]

WAIT_PERIOD_S = 0.02
"""How often the goal's thread looks whether to apply, or whether the node shuts down, s."""
GOAL_SUCCEEDED = 4
"""``action_msgs/GoalStatus`` of a trajectory that ran to its end."""
_GOAL_STATUS = {4: "succeeded", 5: "canceled", 6: "aborted"}  # action_msgs/GoalStatus terminal states


class Controller(Protocol):
    """The arm's ``FollowJointTrajectory`` action, as the node's client reaches it."""

    def connect(self, action: str) -> bool:
        """Use the action server ``action`` from now on; False when it does not answer."""

    def send(self, joint_names: tuple[str, ...], t: np.ndarray, q: np.ndarray, dq: np.ndarray,
             ddq: np.ndarray) -> None:
        """Send the points as a trajectory that starts at once (the answers come to :class:`IdentifyRun`)."""

    def cancel(self) -> None:
        """Cancel the trajectory sent last (the controller stops the arm)."""


class GoalHandle(Protocol):
    """An ``Identify`` goal as the action server hands it over (rclpy's ``ServerGoalHandle``)."""

    @property
    def is_cancel_requested(self) -> bool:
        """Whether the client asked to cancel the goal."""

    def publish_feedback(self, feedback: Any) -> None:
        """Publish a feedback message of the goal."""


def trajectory_outcome(status: int, error_code: int, error_string: str) -> tuple[bool, str]:
    """Whether a ``FollowJointTrajectory`` goal ran to its end, and what its result says.

    The message is the error string, else the error code, else the goal's terminal state.

    Args:
        status: the goal's ``action_msgs/GoalStatus``.
        error_code: the result's ``error_code`` (0: successful).
        error_string: the result's ``error_string``.
    """
    succeeded = status == GOAL_SUCCEEDED and error_code == 0
    message = error_string or (f"error code {error_code}" if error_code
                               else _GOAL_STATUS.get(status, f"status {status}"))
    return succeeded, message


class IdentifyRun:
    """One ``~/identify`` goal at a time between the node's threads (module docstring).

    Args:
        supervisor: the node's supervisor (read for the preconditions and the design; reset by the loop).
        controller: the arm's trajectory action.
        feedback_message: makes the goal's feedback message of a
            :class:`~payload_estimator.supervision.identify.Feedback`.
        apply: ``~/apply`` (not forced, not a dry run): its decision, with the robot's answer.
        running: whether the node still runs.
        log: where a goal's start and end are logged (``info``, ``warning``).
        clock: the receive-time clock, s.

    Attributes:
        session: the state machine.
        reading: the arm's newest joint state (replaced whole), for the preconditions and the design.
        last_published: the outputs the node published last since the estimator's reset (their estimate
            message goes into the goal's result).
    """

    def __init__(self, supervisor: Supervisor, controller: Controller, feedback_message: Callable[[Feedback], Any],
                 apply: Callable[[], ApplyDecision], running: Callable[[], bool], log: Any,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._supervisor = supervisor
        self._controller = controller
        self._feedback_message = feedback_message
        self._apply_estimate = apply
        self._running = running
        self.log = log
        self._clock = clock
        self.session = IdentifySession()
        self.reading: JointReading | None = None
        self.last_published: Outputs | None = None
        self._lock = threading.Lock()
        self._claimed = False  # a goal is past its preconditions (designing or running)
        self._handle: GoalHandle | None = None  # the running goal's
        self._done = threading.Event()
        self._apply = threading.Event()
        self._outcome: Outcome | None = None

    # --------------------------------------------------------- the goal's thread
    def execute(self, goal: IdentifyGoal, handle: GoalHandle) -> Outcome:
        """Run ``goal`` (in its own thread: it waits for the whole motion) and return how it ended."""
        supervisor = self._supervisor
        settings, stream, reading = supervisor.settings, supervisor.stream, self.reading
        with self._lock:
            why = refusal(settings, stream is not None, supervisor.status.message, supervisor.paused, reading,
                          self._clock(), self._claimed, goal.dry_run)
            claimed = why is None and not goal.dry_run
            if claimed:
                self._claimed = True
        if why is not None:
            return Outcome(ABORTED, why)
        assert settings is not None and stream is not None and reading is not None
        try:
            return self._design_and_run(goal, handle, settings, stream.joint_names, reading,
                                        (stream.R_flange_sensor, stream.p_flange_sensor))
        finally:
            with self._lock:
                if claimed:
                    self._claimed = False
                if self._handle is handle:
                    self._handle = None
                    self.session.cancel()  # left early (an error, shutdown): the loop stops the arm

    def _design_and_run(self, goal: IdentifyGoal, handle: GoalHandle, settings: Settings,
                        joint_names: Sequence[str], reading: JointReading,
                        sensor_pose: tuple[np.ndarray, np.ndarray]) -> Outcome:
        handle.publish_feedback(self._feedback_message(Feedback(DESIGNING, 0.0, 0.0, math.nan, None)))
        try:
            plan = plan_identification(settings, goal, self._supervisor.description or "", flange_frame(settings),
                                       joint_names, reading.positions, sensor_pose)
        except ExcitationError as exc:
            return Outcome(ABORTED, f"refused: {exc}")
        if goal.dry_run:
            return dry_run_outcome(plan)
        if handle.is_cancel_requested:
            return Outcome(CANCELED, "identification cancelled before the robot moved")
        if not self._controller.connect(settings.trajectory_action):
            return Outcome(ABORTED, f"refused: no FollowJointTrajectory server at {settings.trajectory_action} "
                                    "(parameter trajectory_action)")
        self._done.clear()
        self._apply.clear()
        self._outcome = None
        with self._lock:
            self._handle = handle
            self.session.start(plan, goal, settings, self._clock())
        self.log.info(f"~/identify: a {plan.duration:.1f} s identification motion through "
                      f"{settings.trajectory_action} (fastest: {plan.fastest})")
        while not self._done.wait(WAIT_PERIOD_S):
            if self._apply.is_set():
                self._apply.clear()
                done = self._apply_estimate()
                with self._lock:
                    self.session.on_applied(done.success, done.message, done.estimate)
            if not self._running():
                return Outcome(ABORTED, "the node is shutting down")
        outcome = self._outcome
        assert outcome is not None
        return outcome

    def finish(self, outcome: Outcome, cancel_requested: bool) -> str:
        """The goal's terminal state for ``outcome``, logged with its message.

        It is SUCCEEDED, CANCELED (only when the client asked: ``cancel_requested``), or else ABORTED.
        """
        if outcome.status == SUCCEEDED:
            self.log.info(f"~/identify: {outcome.message}")
            return SUCCEEDED
        if outcome.status == CANCELED and cancel_requested:
            self.log.info(f"~/identify: {outcome.message}")
            return CANCELED
        self.log.warning(f"~/identify: {outcome.message}")
        return ABORTED

    def cancel(self, handle: GoalHandle) -> None:
        """The client cancels ``handle``'s goal: the next tick stops the arm (when it is the running one)."""
        with self._lock:
            if handle is self._handle:
                self.session.cancel()

    # ------------------------------------------------------------------ the loop
    def tick(self, now: float, items: Sequence[tuple[str, Any, float]], published: Outputs | None) -> None:
        """One turn of the node's loop at ``now``.

        Args:
            now: s on the receive clock.
            items: the ``(kind, msg, receive time)`` that arrived since the last turn.
            published: the outputs the node published on this turn (None: none).
        """
        supervisor = self._supervisor
        if published is not None:
            self.last_published = published
        stream = supervisor.stream
        if stream is not None:
            reading = newest_joint_reading(items, stream.joint_names)
            if reading is not None:
                self.reading = reading
        if not self.session.busy:
            return
        saturated = stream.health.counts_for(WRENCH).get(SATURATED, 0) if stream is not None else 0
        with self._lock:
            step = self.session.tick(now, self.reading, supervisor.last_output, saturated, supervisor.paused)
        if step.reset:
            supervisor.reset()
            self.last_published = None
        if step.cancel_trajectory:
            self._controller.cancel()
        if step.send is not None:
            self._controller.send(*step.send)
        handle = self._handle
        if step.feedback is not None and handle is not None:
            handle.publish_feedback(self._feedback_message(step.feedback))
        if step.apply:
            self._apply.set()
        if step.outcome is not None:
            self._outcome = step.outcome
            self._done.set()

    # --------------------------------------------------- the controller's answers
    def on_trajectory_response(self, accepted: bool, why: str = "") -> None:
        """The controller accepted the trajectory sent last, or not (``why``)."""
        with self._lock:
            self.session.on_trajectory_response(accepted, self._clock(), why)

    def on_trajectory_feedback(self, error_positions: Sequence[float]) -> None:
        """The controller's position error per joint, rad."""
        with self._lock:
            self.session.on_trajectory_feedback(error_positions, self._clock())

    def on_trajectory_result(self, succeeded: bool, message: str) -> None:
        """The trajectory sent last ended (:func:`trajectory_outcome`)."""
        with self._lock:
            self.session.on_trajectory_result(succeeded, message)
