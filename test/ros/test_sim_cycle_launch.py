"""sim_demo.launch.py scenario:=cycle end to end: the simulated Panda picks and places four payloads
(sim.arm_cycle.arm_work_cycle) and the estimator node follows them, no rviz.

Launched by ``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_sim_cycle_launch.py``. The claw hammer is picked 3.5 s into the
cycle and put down at 10.4 s, with an 8 N push between (at 5.2 s): ~/estimate must say
``payload_changed`` once for each, count them, show the push as a contact, and give the hammer's
mass within 2 % while it is held; /payload_sim/truth follows what the gripper holds. The second change
must come within a few seconds of the put-down in the cycle's own time (the sample time the simulator
published, ros_helpers.StampMonitor), whatever the machine's speed.
"""

from __future__ import annotations

import os
import sys
import unittest

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")
pytest.importorskip("launch_testing")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test does not add it
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from geometry_msgs.msg import InertiaStamped  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from ros_helpers import SpinningTestCase, StampMonitor, stamp_s, wait_within_sample_time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import launch  # noqa: E402
from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.settings import settings_for_robot  # noqa: E402
from payload_estimator.sim.payloads import get_payload  # noqa: E402

HAMMER = get_payload("claw_hammer")
CHANGES_WITHIN_MOTION_S = 16.0
"""Sample time the simulator published, from its first joint state to the one the estimate saying the
second change is stamped with, s: the put-down at 10.4 s of the cycle, then the change judged (~1 s)."""
WAIT_GUARD_S = 90.0
"""Wall seconds the test waits for it at most, divided by the simulator's real-time factor."""


@pytest.mark.launch_test
def generate_test_description():
    share = get_package_share_directory("payload_estimator")
    demo = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "sim_demo.launch.py")),
        launch_arguments={"robot": "panda", "scenario": "cycle", "estimator": "wls", "rviz": "false"}.items(),
    )
    return launch.LaunchDescription([demo, launch_testing.actions.ReadyToTest()])


class TestSimCycle(SpinningTestCase, unittest.TestCase):
    NODE_NAME = "sim_cycle_test"

    @classmethod
    def set_up_node(cls):
        cls.estimates: list[PayloadEstimate] = []
        cls.truths: list[InertiaStamped] = []
        cls.node.create_subscription(PayloadEstimate, "/payload_estimator/estimate", cls.estimates.append, 100)
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        cls.node.create_subscription(InertiaStamped, "/payload_sim/truth", cls.truths.append, latched)
        cls.joints = StampMonitor(cls.node, JointState, settings_for_robot("panda").joint_states_topic)

    def test_the_estimate_follows_the_picks_and_places(self):
        second = wait_within_sample_time(
            lambda: next((m for m in list(self.estimates) if m.payload_changes >= 2), None),
            lambda: stamp_s(self.estimates[-1].header.stamp) if self.estimates else None,
            self.joints, CHANGES_WITHIN_MOTION_S, WAIT_GUARD_S)
        estimates = list(self.estimates)
        if second is not None:
            print(f"second change after {self.joints.sample_time(until_stamp=stamp_s(second.header.stamp)):.2f} s of "
                  f"published motion (the simulator's real-time factor {self.joints.real_time_factor():.3f})")
        self.assertIsNotNone(second, f"no second change within {CHANGES_WITHIN_MOTION_S} s of published motion "
                                     f"({self.joints.sample_time():.1f} s published)")
        flagged = [m for m in estimates if m.payload_changed]
        self.assertEqual([m.payload_changes for m in flagged], [1, 2], [(m.payload_changes, m.status)
                                                                        for m in flagged])
        self.assertTrue(all(m.tracking for m in estimates))
        # while the hammer is held (after the first change, before the second), settled: its mass
        held = [m for m in estimates if m.payload_changes == 1 and not m.contact]
        self.assertTrue(held)
        self.assertAlmostEqual(held[-1].mass, HAMMER.mass, delta=0.02 * HAMMER.mass)
        self.assertTrue(any(m.contact for m in estimates if m.payload_changes == 1), "the push was not held out")
        self.assertGreaterEqual(estimates[-1].contacts, 1)
        # the simulator's truth: empty, the hammer, empty again
        masses = [round(t.inertia.m, 3) for t in self.truths]
        self.assertEqual(masses[:3], [0.0, round(HAMMER.mass, 3), 0.0], masses)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
