"""~/identify end to end: sim_demo.launch.py scenario:=identify (the simulated Panda holding a claw hammer
holds still until FollowJointTrajectory goals move it), the estimator, no rviz.

Launched by ``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_identify_launch.py``. Checks that a dry run designs a motion and moves
nothing, that ~/identify moves the arm, converges to within 2 % of the simulator's true mass
(``/payload_sim/truth``) and brings the arm back to its start, and that cancelling it stops the arm.
The arm's motion is judged on the simulator's own time (its joint states' stamps); the wall-time limits
on the answers are stretched by how much slower than real time the simulator runs
(ros_helpers.StampMonitor).
"""

from __future__ import annotations

import math
import os
import sys
import time
import unittest

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.action", reason="no interfaces: colcon build or scripts/build_ros_interfaces.py")
pytest.importorskip("launch_testing")
pytest.importorskip("control_msgs")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test does not add it
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import numpy as np  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from geometry_msgs.msg import InertiaStamped  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from ros_helpers import SpinningTestCase, StampMonitor, stamp_s  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import launch  # noqa: E402
from payload_estimator.action import Identify  # noqa: E402
from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.settings import settings_for_robot  # noqa: E402

ROBOT = "panda"
PAYLOAD = "claw_hammer"
SETTINGS = settings_for_robot(ROBOT)
DESIGN_S = 60.0
"""How long one goal may take to design its motion, wall s (an optimisation: about 1 s, far more on a loaded
machine), divided by the simulator's real-time factor."""
GOAL_S = DESIGN_S + 30.0
"""How long one goal may take from being sent to its result, wall s, divided by the simulator's real-time factor."""


@pytest.mark.launch_test
def generate_test_description():
    share = get_package_share_directory("payload_estimator")
    demo = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "sim_demo.launch.py")),
        launch_arguments={"robot": ROBOT, "payload": PAYLOAD, "rviz": "false", "scenario": "identify"}.items(),
    )
    return launch.LaunchDescription([demo, launch_testing.actions.ReadyToTest()])


class TestIdentify(SpinningTestCase, unittest.TestCase):
    NODE_NAME = "identify_test"

    @classmethod
    def set_up_node(cls):
        cls.joints: list[tuple[float, float, np.ndarray]] = []  # (arrival, monotonic s; stamp, s; q, rad)
        cls.truth: list[InertiaStamped] = []
        cls.feedback: list = []
        cls.estimates: list[PayloadEstimate] = []
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        cls.node.create_subscription(InertiaStamped, "/payload_sim/truth", cls.truth.append, latched)
        cls.node.create_subscription(JointState, SETTINGS.joint_states_topic, cls._on_joints,
                                     qos_profile_sensor_data)  # best effort, as the robot publishes them
        cls.clock = StampMonitor(cls.node, JointState, SETTINGS.joint_states_topic)
        cls.client = ActionClient(cls.node, Identify, "/payload_estimator/identify")
        cls.node.create_subscription(PayloadEstimate, "/payload_estimator/estimate", cls.estimates.append, 10)

    @classmethod
    def _on_joints(cls, msg):
        cls.joints.append((time.monotonic(), stamp_s(msg.header.stamp), np.array(msg.position[:7], dtype=float)))
        del cls.joints[:-5000]

    def _ready(self):
        self.assertTrue(self.client.wait_for_server(timeout_sec=60.0), "no ~/identify action server")
        self.assertIsNotNone(self.wait(lambda: len(self.joints) > 100, 60.0), "no joint states")
        self.assertIsNotNone(self.wait(lambda: self.truth, 30.0), "no /payload_sim/truth")
        # the estimator runs (it has its robot model and publishes): ~/identify is refused before that
        self.assertIsNotNone(self.wait(lambda: self.estimates, 60.0), "the estimator publishes no estimate")

    def _send(self, **fields):
        self.feedback.clear()
        goal = Identify.Goal(**fields)
        future = self.client.send_goal_async(goal, feedback_callback=lambda m: self.feedback.append(m.feedback))
        self.assertTrue(self.wait(future.done, self.clock.stretch(30.0)), "the goal got no answer")
        handle = future.result()
        self.assertTrue(handle.accepted)
        return handle

    def _result(self, handle, timeout=GOAL_S):
        future = handle.get_result_async()
        self.assertTrue(self.wait(future.done, self.clock.stretch(timeout)), "no result")
        return future.result()

    def _joints_between(self, start, stop):
        """Joint positions that arrived between ``start`` and ``stop`` (monotonic s)."""
        return np.array([q for t, _, q in list(self.joints) if start <= t <= stop])

    def _latest_stamp(self):
        return self.joints[-1][1] if self.joints else -np.inf

    def _joints_stamped(self, start, stop):
        """Joint positions stamped between ``start`` and ``stop`` (the simulator's time, s), once published."""
        self.assertIsNotNone(self.wait(lambda: self._latest_stamp() >= stop, self.clock.stretch(stop - start + 10.0)),
                             "the simulator published no joint states")
        return np.array([q for _, t, q in list(self.joints) if start <= t <= stop])

    def test_1_dry_run_moves_nothing(self):
        self._ready()
        t0 = time.monotonic()
        response = self._result(self._send(dry_run=True))
        result = response.result
        self.assertEqual(response.status, GoalStatus.STATUS_SUCCEEDED, result.message)
        self.assertIn("nothing moved", result.message)
        self.assertIn("duration_s: 5.0", result.motion_summary)
        self.assertAlmostEqual(result.planned_duration, 5.0)
        self.assertEqual(result.motion_time, 0.0)
        q = self._joints_between(t0, time.monotonic())
        self.assertGreater(len(q), 100)
        # the joint states carry the simulated encoder noise (~1e-4 rad); the motion moves joints by tenths of a rad
        self.assertLess(float(np.max(np.ptp(q, axis=0))), 2e-3, "the arm moved during a dry run")
        self.assertLess(float(np.max(np.abs(q[:50].mean(axis=0) - q[-50:].mean(axis=0)))), 1e-4)

    def test_2_identify_converges_to_the_true_mass_and_returns(self):
        self._ready()
        q_start = self.joints[-1][2]
        response = self._result(self._send(apply=False))
        result = response.result
        truth = self.truth[-1].inertia.m
        print(f"~/identify: {result.message}; mass {result.estimate.mass:.4f} kg (truth {truth:.4f}), "
              f"{result.motion_time:.2f} s of motion")
        self.assertEqual(response.status, GoalStatus.STATUS_SUCCEEDED, result.message)
        self.assertTrue(result.converged, result.message)
        self.assertTrue(result.estimate.converged)
        self.assertFalse(result.applied)
        self.assertLess(abs(result.estimate.mass - truth), 0.02 * truth)
        self.assertGreater(result.motion_time, 0.0)
        self.assertIn("back at the start", result.message)
        phases = [f.phase for f in self.feedback]
        self.assertIn("moving", phases)
        moving = [f for f in self.feedback if f.phase == "moving"]
        self.assertTrue(all(math.isfinite(f.tracking_error) and f.tracking_error < 0.1 for f in moving[1:]))
        self.assertTrue(any(f.has_estimate for f in self.feedback))
        q_end = self._joints_stamped(self._latest_stamp(), self._latest_stamp() + 0.5)
        np.testing.assert_allclose(q_end[-1], q_start, atol=0.01)

    def test_3_cancel_stops_the_arm(self):
        self._ready()
        handle = self._send()
        moving = self.wait(lambda: any(f.phase == "moving" and f.progress > 0.1 for f in self.feedback),
                           self.clock.stretch(GOAL_S))
        self.assertIsNotNone(moving, "the arm never moved")
        cancel = handle.cancel_goal_async()
        self.assertTrue(self.wait(cancel.done, self.clock.stretch(10.0)))
        response = self._result(handle, 30.0)
        self.assertEqual(response.status, GoalStatus.STATUS_CANCELED, response.result.message)
        self.assertIn("stopped", response.result.message)
        t = self._latest_stamp() + 1.0  # the controller brakes: 1 s of the simulator's time, then 1 s at rest
        q = self._joints_stamped(t, t + 1.0)
        self.assertGreater(len(q), 100)
        self.assertLess(float(np.max(np.ptp(q, axis=0))), 2e-3, "the arm still moves after the cancel")
        self.assertLess(float(np.max(np.abs(q[:50].mean(axis=0) - q[-50:].mean(axis=0)))), 1e-4)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
