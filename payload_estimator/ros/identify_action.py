"""``~/identify`` (``payload_estimator/action/Identify``) on the estimator node.

This module holds the action server, the client of the arm's
``control_msgs/action/FollowJointTrajectory``, and their messages. What the
goal does, and when, is decided ROS-free by an
:class:`~payload_estimator.supervision.identify_run.IdentifyRun` (and the
:class:`~payload_estimator.supervision.identify.IdentifySession` it runs); this
module only converts messages and talks to the controller. Goals run in threads of
their own (a reentrant group: they wait for the whole motion); the node's
processing loop ticks the run (:meth:`IdentifyAction.tick`); the trajectory
client's answers come in a callback group of their own. ``control_msgs`` is
imported when first needed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup

from payload_estimator.action import Identify
from payload_estimator.supervision.estimate_handover import ApplyDecision
from payload_estimator.supervision.identify import ABORTED, CANCELED, SUCCEEDED, Feedback, Outcome
from payload_estimator.supervision.identify_plan import IdentifyGoal
from payload_estimator.supervision.identify_run import IdentifyRun, trajectory_outcome
from payload_estimator.supervision.node_outputs import Outputs

__all__ = ["IdentifyAction", "TRAJECTORY_SERVER_WAIT_S"]

TRAJECTORY_SERVER_WAIT_S = 2.0
"""How long ~/identify waits for the FollowJointTrajectory server before refusing, s."""


class IdentifyAction:
    """Serves ``~/identify`` on ``node`` (an :class:`~payload_estimator.ros.estimator_node.EstimatorNode`).

    It is also the :class:`~payload_estimator.supervision.identify_run.Controller`
    of its run: the client of the arm's trajectory action.

    Args:
        node: the node (its supervisor, context and logger; the action server and clients are its own).
        apply: ``~/apply`` (not forced, not a dry run): its decision, with the robot's answer.
        report: ``report(what, exc)`` for an internal error.
    """

    def __init__(self, node: Any, apply: Callable[[], ApplyDecision],
                 report: Callable[[str, Exception], None]) -> None:
        self._node = node
        self._report = report
        self._clients: dict[str, Any] = {}
        self._client: Any = None  # the client of the running identification
        self._group = MutuallyExclusiveCallbackGroup()
        self._token = 0  # which trajectory the client's answers are about
        self._goal: Any = None  # its goal handle once accepted
        self._cancel_pending = False
        self.run = IdentifyRun(node.supervisor, self, self._feedback_msg, apply, node.context.ok, node.get_logger())
        self._server = ActionServer(
            node, Identify, "~/identify", execute_callback=self._execute,
            goal_callback=lambda goal: GoalResponse.ACCEPT, cancel_callback=self._cancel,
            callback_group=ReentrantCallbackGroup())

    def tick(self, now: float, items: list[tuple[str, Any, float]], published: Outputs | None) -> None:
        """One turn of the node's loop (:meth:`IdentifyRun.tick`)."""
        self.run.tick(now, items, published)

    # ------------------------------------------------------------ the action
    def _execute(self, goal_handle: Any) -> Any:
        try:
            request = goal_handle.request
            goal = IdentifyGoal(float(request.duration), float(request.max_tcp_speed), bool(request.apply),
                                bool(request.dry_run), str(getattr(request, "motion", "")))
            outcome = self.run.execute(goal, goal_handle)
        except Exception as exc:  # noqa: BLE001 - a bug must not take the node down
            self._report("running ~/identify", exc)
            outcome = Outcome(ABORTED, f"internal error: {type(exc).__name__}: {exc}")
        return self._finish(goal_handle, outcome)

    def _cancel(self, goal_handle: Any) -> CancelResponse:
        self.run.cancel(goal_handle)
        return CancelResponse.ACCEPT

    def _finish(self, goal_handle: Any, outcome: Outcome) -> Any:
        """End the goal with ``outcome``; returns its result."""
        result = Identify.Result(converged=outcome.converged, applied=outcome.applied, message=outcome.message,
                                 motion_time=float(outcome.motion_time), motion_summary=outcome.summary_yaml,
                                 planned_duration=float(outcome.planned_duration))
        if outcome.estimate is not None:
            result.mass_com_converged = bool(outcome.estimate.mass_com_converged)
            published = self.run.last_published
            if published is not None:
                result.estimate = published.estimate
        state = self.run.finish(outcome, goal_handle.is_cancel_requested)
        if state == SUCCEEDED:
            goal_handle.succeed()
        elif state == CANCELED:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return result

    def _feedback_msg(self, feedback: Feedback) -> Any:
        msg = Identify.Feedback(phase=feedback.phase, progress=float(feedback.progress),
                                elapsed=float(feedback.elapsed), tracking_error=float(feedback.tracking_error))
        out = feedback.estimate
        if out is not None:
            params = out.estimate.params
            msg.has_estimate = True
            msg.mass = params.mass
            msg.com.x, msg.com.y, msg.com.z = (float(v) for v in params.com)
            stream = self._node.supervisor.stream
            msg.com_frame = stream.config.sensor_frame if stream is not None else ""
            msg.converged, msg.mass_com_converged = bool(out.converged), bool(out.mass_com_converged)
            msg.status = "converged" if out.converged else out.reason
        return msg

    # ------------------------------------------------- the trajectory client
    def connect(self, action: str) -> bool:
        """Use the FollowJointTrajectory server ``action``; its client is made once per name.

        Args:
            action: the action's name.

        Returns:
            False when the server does not answer within :data:`TRAJECTORY_SERVER_WAIT_S`.
        """
        client = self._clients.get(action)
        if client is None:
            from control_msgs.action import FollowJointTrajectory

            client = ActionClient(self._node, FollowJointTrajectory, action, callback_group=self._group)
            self._clients[action] = client
        if not client.wait_for_server(timeout_sec=TRAJECTORY_SERVER_WAIT_S):
            return False
        self._client = client
        return True

    def send(self, names: tuple[str, ...], t: Any, q: Any, dq: Any, ddq: Any) -> None:
        """Send the points as a FollowJointTrajectory goal that starts at once; the answers go to the run."""
        from control_msgs.action import FollowJointTrajectory
        from trajectory_msgs.msg import JointTrajectoryPoint

        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(names)
        for k in range(len(t)):
            point = JointTrajectoryPoint(positions=[float(v) for v in q[k]], velocities=[float(v) for v in dq[k]],
                                         accelerations=[float(v) for v in ddq[k]])
            sec, nanosec = divmod(int(round(float(t[k]) * 1e9)), 1_000_000_000)
            point.time_from_start.sec, point.time_from_start.nanosec = sec, nanosec
            goal.trajectory.points.append(point)
        self._token += 1
        token = self._token
        self._goal, self._cancel_pending = None, False
        future = self._client.send_goal_async(goal, feedback_callback=functools.partial(self._on_feedback, token))
        future.add_done_callback(functools.partial(self._on_response, token))

    def cancel(self) -> None:
        """Cancel the trajectory sent last (once accepted, when it is not yet)."""
        goal = self._goal
        if goal is not None:
            goal.cancel_goal_async()
        else:  # not accepted yet: cancelled as soon as it is
            self._cancel_pending = True

    def _on_response(self, token: int, future: Any) -> None:
        if token != self._token:
            return
        try:
            handle = future.result()
            accepted, why = bool(handle.accepted), ""
        except Exception as exc:  # noqa: BLE001
            handle, accepted, why = None, False, f"{type(exc).__name__}: {exc}"
        self.run.on_trajectory_response(accepted, why)
        if not accepted:
            return
        self._goal = handle
        if self._cancel_pending:
            handle.cancel_goal_async()
        handle.get_result_async().add_done_callback(functools.partial(self._on_result, token))

    def _on_feedback(self, token: int, feedback: Any) -> None:
        if token == self._token:
            self.run.on_trajectory_feedback(feedback.feedback.error.positions)

    def _on_result(self, token: int, future: Any) -> None:
        if token != self._token:
            return
        try:
            response = future.result()
            result = response.result
            succeeded, message = trajectory_outcome(int(response.status), result.error_code, result.error_string)
        except Exception as exc:  # noqa: BLE001
            succeeded, message = False, f"{type(exc).__name__}: {exc}"
        self.run.on_trajectory_result(succeeded, message)
