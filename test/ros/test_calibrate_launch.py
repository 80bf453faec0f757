"""The joint-torque wrench source end to end: no wrist sensor, an unloaded calibration by ``~/calibrate``.

Launched by ``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_calibrate_launch.py``. One simulated Panda arm (``arm_mismatch_seed`` 3: its
links differ from the URDF the estimators get), with realistic efforts (friction, tau_J noise), runs twice:

* unloaded (``payload:=none``) along the varied "thesis" motion, on ``/calib/joint_states``, read by the
  estimator ``calibrating`` (joint torques, its calibration file in a temporary directory, missing at
  start-up): the test calls its ``~/calibrate`` for 8 s; the file must exist, load, and explain the efforts
  better than the URDF alone; the node then estimates with it (no effort missing);
* holding the claw hammer along Nadeau et al.'s wrist motion (another motion than the calibration's), on
  ``/loaded/joint_states``, read by the estimator ``loaded`` with the same calibration file: an ERROR
  diagnostic naming the file and ``~/calibrate`` until the file exists, then (looked for again every
  few seconds) an estimate of a plausible mass.

And a third estimator, ``no_effort``, gets joint states without efforts from the test: its diagnostics say
so (ERROR) and it publishes no estimate.

The wall-time limits on the answers are stretched by how much slower than real time the simulators run
(the stamps of their joint states, ros_helpers.StampMonitor): two simulators and three estimators share
the machine.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import time
import unittest

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")
pytest.importorskip("launch_testing")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test does not add it
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from launch_ros.actions import Node  # noqa: E402
from ros_helpers import (  # noqa: E402
    SpinningTestCase,
    StampMonitor,
    level,
    node_status,
    payload_shape,
    status_values,
)
from sensor_msgs.msg import JointState  # noqa: E402

import launch  # noqa: E402
from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.pipeline.arm_dynamics import ArmCalibration  # noqa: E402
from payload_estimator.settings import settings_for_robot  # noqa: E402
from payload_estimator.sim.payloads import get_payload  # noqa: E402
from payload_estimator.srv import Calibrate  # noqa: E402

PAYLOAD = "claw_hammer"
ARM_SEED = 3
RATE_HZ = 500.0
"""Joint-state rate of both simulated runs (two simulators and three estimators share the machine)."""
TMP = tempfile.mkdtemp(prefix="payload_estimator_calibrate_")
CALIBRATION = os.path.join(TMP, "arm", "panda.yaml")
"""Missing at start-up; ~/calibrate makes its directory too."""
ERROR = 2


def _sim(name: str, payload: str, trajectory: str, topic: str) -> Node:
    return Node(package="payload_estimator", executable="sim_node", name=name, output="screen", parameters=[{
        "robot": "panda", "payload": payload, "trajectory": trajectory, "duration": 12.0, "noise": "low",
        "seed": 1, "efforts": True, "arm_mismatch_seed": ARM_SEED, "rate_hz": RATE_HZ, "joint_states_topic": topic,
        "tf_rate_hz": 5.0}])


def _estimator(name: str, topic: str, calibration: str) -> Node:
    params = settings_for_robot("panda", "joint_torques", joint_states_topic=topic, arm_calibration=calibration,
                                use_builtin_description=True, payload_shape=payload_shape(PAYLOAD)).to_dict()
    params = {k: v for k, v in params.items() if v != []}
    return Node(package="payload_estimator", executable="estimator_node", name=name, output="screen",
                parameters=[params])


@pytest.mark.launch_test
def generate_test_description():
    return launch.LaunchDescription([
        _sim("arm_unloaded", "none", "thesis", "/calib/joint_states"),
        _sim("arm_loaded", PAYLOAD, "wrist", "/loaded/joint_states"),
        _estimator("calibrating", "/calib/joint_states", CALIBRATION),
        _estimator("loaded", "/loaded/joint_states", CALIBRATION),
        _estimator("no_effort", "/no_effort/joint_states", ""),
        launch_testing.actions.ReadyToTest(),
    ])


class TestCalibrate(SpinningTestCase, unittest.TestCase):
    NODE_NAME = "calibrate_test"

    @classmethod
    def set_up_node(cls):
        cls.estimates: dict[str, list[PayloadEstimate]] = {"calibrating": [], "loaded": [], "no_effort": []}
        for name, got in cls.estimates.items():
            cls.node.create_subscription(PayloadEstimate, f"/{name}/estimate", got.append, 10)
        cls.diagnostics: list[DiagnosticArray] = []
        cls.node.create_subscription(DiagnosticArray, "/diagnostics", cls.diagnostics.append, 100)
        cls.clocks = [StampMonitor(cls.node, JointState, topic) for topic in ("/calib/joint_states",
                                                                              "/loaded/joint_states")]
        cls.no_effort = cls.node.create_publisher(JointState, "/no_effort/joint_states", 100)
        cls.node.create_timer(0.005, cls._publish_without_efforts)
        cls.t0 = time.monotonic()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(TMP, ignore_errors=True)

    @classmethod
    def _publish_without_efforts(cls):
        """A driver without efforts: 200 Hz joint states of a slow motion, positions and velocities only."""
        t = time.monotonic() - cls.t0
        msg = JointState()
        msg.header.stamp = cls.node.get_clock().now().to_msg()
        msg.name = [f"panda_joint{i}" for i in range(1, 8)]
        home = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
        msg.position = [q + 0.2 * math.sin(0.5 * t + i) for i, q in enumerate(home)]
        msg.velocity = [0.1 * math.cos(0.5 * t + i) for i in range(7)]
        cls.no_effort.publish(msg)

    def stretch(self, wall_s: float) -> float:
        """``wall_s`` divided by the slower simulator's real-time factor (at most 1)."""
        return max(clock.stretch(wall_s) for clock in self.clocks)

    def _status(self, node: str, suffix: str, condition=lambda s: True, timeout: float = 20.0):
        """The newest ``<node>: <suffix>`` diagnostic status that meets ``condition`` (waits for it)."""
        def find():
            for msg in reversed(self.diagnostics):
                status = node_status(msg, f"{node}: {suffix}")
                if status is not None and status.name.startswith(node) and condition(status):
                    return status
            return None
        return self.wait(find, self.stretch(timeout))

    def _calibrate(self, request: Calibrate.Request, timeout: float) -> Calibrate.Response:
        client = self.node.create_client(Calibrate, "/calibrating/calibrate")
        self.assertTrue(client.wait_for_service(timeout_sec=30.0), "~/calibrate not available")
        future = client.call_async(request)
        self.assertTrue(self.wait(future.done, self.stretch(timeout)), "no answer from ~/calibrate")
        return future.result()

    def test_1_a_missing_calibration_is_an_error_naming_the_file_and_what_to_do(self):
        status = self._status("loaded", "node", lambda s: level(s) == ERROR and CALIBRATION in s.message, 60.0)
        self.assertIsNotNone(status, "no ERROR diagnostic naming the missing calibration file")
        self.assertIn("~/calibrate", status.message)
        print(f"before calibrating: {status.message}")
        self.assertEqual(self.estimates["loaded"], [])

    def test_2_calibrate_the_unloaded_arm(self):
        self.assertFalse(os.path.exists(CALIBRATION))
        # the simulators simulate before they publish: wait for the joint states to arrive
        joints = self._status("calibrating", "node",
                              lambda s: int(status_values(s)["inputs dropped while not running"]) > 1000, 90.0)
        self.assertIsNotNone(joints, "no joint states from the unloaded arm")
        t = time.monotonic()
        client = self.node.create_client(Calibrate, "/calibrating/calibrate")
        self.assertTrue(client.wait_for_service(timeout_sec=30.0), "~/calibrate not available")
        first = client.call_async(Calibrate.Request(duration=8.0))
        time.sleep(1.0)
        second = self._calibrate(Calibrate.Request(duration=8.0), 5.0)  # answered at once, while recording
        self.assertFalse(second.success)
        self.assertEqual(second.message, "refused: a calibration is already recording")
        self.assertTrue(self.wait(first.done, self.stretch(60.0)), "no answer from ~/calibrate")
        answer = first.result()
        print(f"~/calibrate answered after {time.monotonic() - t:.1f} s (the simulators' real-time factors "
              f"{', '.join(f'{c.real_time_factor():.3f}' for c in self.clocks)}): {answer.message}")
        self.assertTrue(answer.success, answer.message)
        self.assertEqual(answer.path, CALIBRATION)
        self.assertTrue(os.path.isfile(CALIBRATION))
        calibration = ArmCalibration.load(CALIBRATION)
        self.assertEqual(calibration.robot, "panda")
        self.assertEqual(list(answer.joint_names), [f"panda_joint{i}" for i in range(1, 8)])
        before = math.sqrt(sum(x * x for x in answer.rms_before) / 7)
        after = math.sqrt(sum(x * x for x in answer.rms_after) / 7)
        print(f"effort residual RMS {before:.3f} -> {after:.3f} N m from {answer.samples} samples")
        self.assertLess(after, before)
        self.assertGreater(answer.samples, 300)

        # the node estimates with it now; the unloaded arm's joint states all carry efforts
        running = self._status("calibrating", "node", lambda s: s.message.startswith("running"), 30.0)
        self.assertIsNotNone(running, "the calibrating node did not start estimating with its calibration")
        self.assertEqual(status_values(running)["arm calibration"], CALIBRATION)
        rejected = self._status("calibrating", "rejected input", timeout=10.0)
        self.assertIsNotNone(rejected)
        self.assertNotIn("missing_effort", " ".join(kv.key for kv in rejected.values))
        self.assertIsNotNone(self.wait(lambda: self.estimates["calibrating"], self.stretch(20.0)),
                             "no estimate after calibrating")

    def test_3_the_loaded_arm_is_estimated_with_the_calibration(self):
        self.assertTrue(self.wait(lambda: os.path.isfile(CALIBRATION), self.stretch(90.0)))
        truth = get_payload(PAYLOAD).params.mass

        def settled():
            est = self.estimates["loaded"]
            return est[-1] if len(est) > 50 and est[-1].samples_used > 1000 else None

        est = self.wait(settled, self.stretch(60.0))
        self.assertIsNotNone(est, f"no settled estimate on /loaded/estimate ({len(self.estimates['loaded'])} "
                                  "estimates)")
        print(f"loaded arm, calibrated joint torques: mass {est.mass:.3f} kg (truth {truth:.3f}), COM "
              f"[{est.com.x:.4f}, {est.com.y:.4f}, {est.com.z:.4f}] m in {est.header.frame_id}, {est.status}")
        self.assertEqual(est.header.frame_id, "panda_link8")
        self.assertLess(abs(est.mass - truth), 0.2 * truth)

    def test_4_joint_states_without_efforts(self):
        status = self._status("no_effort", "node", lambda s: level(s) == ERROR, 30.0)
        self.assertIsNotNone(status, "no ERROR diagnostic for joint states without efforts")
        self.assertIn("without an effort per joint", status.message)
        self.assertIn("/no_effort/joint_states", status.message)
        rejected = self._status("no_effort", "rejected input", lambda s: "missing_effort" in s.message)
        self.assertIsNotNone(rejected)
        self.assertEqual(self.estimates["no_effort"], [])

    def test_5_no_other_wrench_source_without_a_restart(self):
        from rcl_interfaces.msg import Parameter, ParameterType
        from rcl_interfaces.srv import SetParameters

        client = self.node.create_client(SetParameters, "/loaded/set_parameters")
        self.assertTrue(client.wait_for_service(timeout_sec=10.0))
        parameter = Parameter(name="wrench_source")
        parameter.value.type = ParameterType.PARAMETER_STRING
        parameter.value.string_value = "ft_sensor"
        future = client.call_async(SetParameters.Request(parameters=[parameter]))
        self.assertTrue(self.wait(future.done, 10.0))
        result = future.result().results[0]
        self.assertFalse(result.successful)
        self.assertIn("no wrench subscription", result.reason)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
