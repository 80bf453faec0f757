"""The simulator's FollowJointTrajectory server: the Panda in scenario identify, moved by goals.

Launched by ``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_sim_follow_trajectory_launch.py``. Checks that the arm holds still
at home, that a small wrist motion sent as a goal (positions, velocities, accelerations every
20 ms, as ~/identify sends them) succeeds with feedback and that the published joint states
follow it, that a goal with the wrong joints is aborted with INVALID_JOINTS and the reason, and
that a cancelled goal brakes to rest and reports canceled. The arm is judged on the simulator's own time
(its joint states' stamps); the wall-time limits on the answers are stretched by how much slower than real
time the simulator runs (ros_helpers.StampMonitor).
"""

from __future__ import annotations

import os
import sys
import threading
import unittest

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("control_msgs.action", reason="control_msgs is not built")
pytest.importorskip("launch_testing")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test does not add it
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from control_msgs.action import FollowJointTrajectory  # noqa: E402
from launch_ros.actions import Node  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from ros_helpers import SpinningTestCase, StampMonitor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: E402

import launch  # noqa: E402
from payload_estimator.robots import get_robot  # noqa: E402
from payload_estimator.settings import settings_for_robot  # noqa: E402

ROBOT = "panda"
SETTINGS = settings_for_robot(ROBOT)
ACTION = SETTINGS.trajectory_action
WRIST = np.array([0.0, 0.0, 0.0, 0.0, 0.25, -0.3, 0.4])
"""Peak excursion of the wrist motion, rad."""
STEP_S = 0.02


@pytest.mark.launch_test
def generate_test_description():
    sim = Node(package="payload_estimator", executable="sim_node", name="payload_sim",
               parameters=[{"robot": ROBOT, "payload": "claw_hammer", "scenario": "identify", "noise": "low"}],
               output="screen")
    return launch.LaunchDescription([sim, launch_testing.actions.ReadyToTest()])


def wrist_motion(q0: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Out to ``q0 + WRIST`` and back, at rest at both ends: (t, q, dq, ddq)."""
    t = np.arange(0.0, duration + 1e-9, STEP_S)
    w = np.pi / duration
    s, ds, dds = np.sin(w * t) ** 2, w * np.sin(2 * w * t), 2 * w * w * np.cos(2 * w * t)
    return t, q0 + np.outer(s, WRIST), np.outer(ds, WRIST), np.outer(dds, WRIST)


def goal_msg(names, t, q, dq, ddq) -> FollowJointTrajectory.Goal:
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = list(names)
    for k in range(len(t)):
        point = JointTrajectoryPoint()
        point.positions, point.velocities, point.accelerations = q[k].tolist(), dq[k].tolist(), ddq[k].tolist()
        point.time_from_start = Duration(nanoseconds=int(round(t[k] * 1e9))).to_msg()
        goal.trajectory.points.append(point)
    return goal


class TestFollowJointTrajectory(SpinningTestCase, unittest.TestCase):
    NODE_NAME = "follow_trajectory_test"
    SPIN_PERIOD_S = 0.02

    @classmethod
    def set_up_node(cls):
        cls.states: list[tuple[float, np.ndarray, np.ndarray]] = []
        cls.lock = threading.Lock()
        cls.node.create_subscription(JointState, SETTINGS.joint_states_topic, cls._on_joints, qos_profile_sensor_data)
        cls.client = ActionClient(cls.node, FollowJointTrajectory, ACTION)
        cls.clock = StampMonitor(cls.node, JointState, SETTINGS.joint_states_topic)

    @classmethod
    def _on_joints(cls, msg):
        with cls.lock:
            cls.states.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
                               np.array(msg.position), np.array(msg.velocity)))

    def _current(self) -> np.ndarray:
        self.assertTrue(self.wait(lambda: len(self.states) > 10, 30.0), "no joint states")
        with self.lock:
            return self.states[-1][1].copy()

    def _send(self, goal, feedback=None):
        self.assertTrue(self.client.wait_for_server(timeout_sec=30.0), f"no action server on {ACTION}")
        future = self.client.send_goal_async(goal, feedback_callback=feedback)
        self.assertTrue(self.wait(future.done, self.clock.stretch(10.0)), "the goal got no answer")
        handle = future.result()
        self.assertTrue(handle.accepted)
        return handle

    def _result(self, handle, timeout):
        future = handle.get_result_async()
        self.assertTrue(self.wait(future.done, self.clock.stretch(timeout)), "no result")
        return future.result()

    def _latest_stamp(self) -> float:
        with self.lock:
            return self.states[-1][0]

    def _wait_stamp(self, stamp: float) -> None:
        """Wait until the simulator has published joint states stamped ``stamp`` (s) or later."""
        self.assertTrue(self.wait(lambda: self._latest_stamp() >= stamp,
                                  self.clock.stretch(stamp - self._latest_stamp() + 10.0)), "no joint states")

    def _states_since(self, t0: float):
        with self.lock:
            return [s for s in self.states if s[0] >= t0]

    def test_1_holds_still_at_home(self):
        self._current()
        self._wait_stamp(self._latest_stamp() + 0.5)
        with self.lock:
            q = np.array([s[1] for s in self.states[-300:]])
        np.testing.assert_allclose(q, np.tile(get_robot(ROBOT).q_home, (len(q), 1)), atol=2e-4)

    def test_2_a_wrist_motion_succeeds_and_the_arm_follows_it(self):
        q0 = self._current()
        t, q, dq, ddq = wrist_motion(q0, 2.0)
        feedback = []
        with self.lock:
            t_sent = self.states[-1][0]
        handle = self._send(goal_msg(get_robot(ROBOT).joint_names, t, q, dq, ddq), feedback.append)
        wrapped = self._result(handle, 15.0)
        self.assertEqual(wrapped.status, GoalStatus.STATUS_SUCCEEDED, wrapped.result.error_string)
        self.assertEqual(wrapped.result.error_code, FollowJointTrajectory.Result.SUCCESSFUL)
        self.assertGreater(len(feedback), 10)
        errors = np.array([f.feedback.error.positions for f in feedback])
        self.assertLess(np.max(np.abs(errors)), 5e-3)
        self.assertEqual(list(feedback[-1].feedback.joint_names), list(get_robot(ROBOT).joint_names))
        # the published joint states: out to the peak and back, as planned
        states = self._states_since(t_sent)
        positions = np.array([s[1] for s in states])
        excursion = positions - q0
        peak = excursion[np.argmax(np.abs(excursion[:, 6]))]
        np.testing.assert_allclose(peak, WRIST, atol=5e-3)
        np.testing.assert_allclose(positions[-1], q[-1], atol=2e-3)
        # and they follow the plan in time: shift the plan to the measured start and compare
        stamps = np.array([s[0] for s in states])
        moving = np.nonzero(np.abs(excursion[:, 6]) > 0.01)[0]
        t0 = stamps[moving[0]] - t[np.argmax(np.abs(q[:, 6] - q0[6]) > 0.01)]
        planned = np.interp(stamps - t0, t, q[:, 6])
        self.assertLess(np.max(np.abs(planned - positions[:, 6])), 0.02)

    def test_3_wrong_joints_are_aborted_with_the_reason(self):
        q0 = self._current()
        t, q, dq, ddq = wrist_motion(q0, 1.0)
        names = list(get_robot(ROBOT).joint_names)
        names[2] = "elbow"
        wrapped = self._result(self._send(goal_msg(names, t, q, dq, ddq)), 10.0)
        self.assertEqual(wrapped.status, GoalStatus.STATUS_ABORTED)
        self.assertEqual(wrapped.result.error_code, FollowJointTrajectory.Result.INVALID_JOINTS)
        self.assertIn("elbow", wrapped.result.error_string)
        empty = FollowJointTrajectory.Goal()
        empty.trajectory.joint_names = list(get_robot(ROBOT).joint_names)
        wrapped = self._result(self._send(empty), 10.0)
        self.assertEqual(wrapped.result.error_code, FollowJointTrajectory.Result.INVALID_GOAL)
        self.assertIn("no point", wrapped.result.error_string)

    def test_4_a_cancelled_goal_ends_at_rest(self):
        q0 = self._current()
        t, q, dq, ddq = wrist_motion(q0, 3.0)
        handle = self._send(goal_msg(get_robot(ROBOT).joint_names, t, q, dq, ddq))
        self._wait_stamp(self._latest_stamp() + 1.0)  # 1 s into the 3 s motion, of the simulator's time
        with self.lock:
            speed = np.max(np.abs(self.states[-1][2]))
        self.assertGreater(speed, 0.1, "not moving when cancelled")
        cancel = handle.cancel_goal_async()
        self.assertTrue(self.wait(cancel.done, self.clock.stretch(5.0)))
        wrapped = self._result(handle, 10.0)
        self.assertEqual(wrapped.status, GoalStatus.STATUS_CANCELED)
        self._wait_stamp(self._latest_stamp() + 0.3)
        with self.lock:
            last = self.states[-200:]
        dq_last = np.array([s[2] for s in last])
        q_last = np.array([s[1] for s in last])
        self.assertLess(np.max(np.abs(dq_last)), 0.01)  # at rest (velocity noise 1e-3 rad/s)
        self.assertLess(np.max(np.ptp(q_last, axis=0)), 2e-3)
        self.assertGreater(np.max(np.abs(q_last[-1] - q0)), 0.05)  # stopped on the way, not back at the start


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
