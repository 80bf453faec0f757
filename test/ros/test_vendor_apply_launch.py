"""~/apply against the robot vendors' real service types, end to end: sim_demo.launch.py (the simulated
Panda, the xArm 7, then the UR5e, holding a claw hammer; no rviz), the estimator, and a stand-in for the robot.

The robot is the only stand-in: its driver needs the arm itself (franka_hardware talks to libfranka
and the controller, xarm_api to the xArm's controller over TCP, ur_robot_driver to the UR controller over
RTDE), so a service server of the real type (``franka_msgs/srv/SetLoad``, ``xarm_msgs/srv/SetTcpLoad``,
``ur_msgs/srv/SetPayload``, built from the vendors' sources: franka_ros2's ``humble`` branch, xarm_ros2's
branch of the distribution and ur_msgs' ROS 2 branch, as docs/ros.md's "The robots' interface packages"
says) takes its place, under the name the driver advertises:

* franka_ros2 (franka_hardware/src/franka_param_service_server.cpp): a node ``service_server``
  serving ``~/set_load``, i.e. ``/service_server/set_load``;
* xarm_ros2 (xarm_api/src/xarm_driver.cpp and xarm_driver_service.cpp): the node ``ufactory_driver``
  serves ``set_tcp_load`` on a sub-node ``hw_ns`` (``xarm`` for the xArm 5/6/7, ``ufactory`` for the
  Lite 6 and 850), i.e. ``/xarm/set_tcp_load``, once ``services.set_tcp_load`` is enabled;
* Universal_Robots_ROS2_Driver (ur_controllers/src/gpio_controller.cpp): the controller
  ``io_and_status_controller`` (a node of that name) serves ``~/set_payload``, i.e.
  ``/io_and_status_controller/set_payload``.

Every field the stand-in receives is checked against the simulator's truth (``/payload_sim/truth``,
in the sensor frame, moved into the flange frame with the simulator's tf): Franka's mass (kg),
center_of_mass (m) and load_inertia (about the COM, column-major 3x3, kg m²), all in the flange frame;
xArm's weight (kg) and center_of_gravity (mm, flange frame); UR's mass (kg), center_of_gravity (m) and,
where ur_msgs has them (2.6 on; ur_msgs 3: all in one geometry_msgs/Inertia ``payload``), ixx ... iyz (about
the COM, flange axes, kg m²), all in ``tool0``, with transition_time zero. With an older ur_msgs (up to 2.5,
e.g. 2.0.0) the robot gets mass and centre of gravity only, and ~/apply's answer says the inertia was not
sent. A robot refusing (Franka: moving; xArm: a non-zero ret; UR: success false) is reported by ~/apply as a
failure with the robot's words.

A run whose vendor package is not installed is skipped (the others still run). Launched by
``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_vendor_apply_launch.py``. The estimate must come within so many seconds of the
motion the simulator published (its joint states' stamps, ros_helpers.StampMonitor), whatever the machine's speed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import unittest

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")
pytest.importorskip("launch_testing")
pytest.importorskip("tf2_ros")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test does not add it

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from geometry_msgs.msg import InertiaStamped  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.time import Time  # noqa: E402
from ros_helpers import SpinningTestCase, StampMonitor, stamp_s  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402
from tf2_ros import Buffer, TransformListener  # noqa: E402

import launch  # noqa: E402
from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.robots import ROBOTS  # noqa: E402
from payload_estimator.settings import settings_for_robot  # noqa: E402
from payload_estimator.srv import ApplyEstimate  # noqa: E402

PAYLOAD = "claw_hammer"
UR_KINDS = {
    "mass and centre of gravity": {"mass", "center_of_gravity"},  # ur_msgs up to 2.5
    "with inertia": {"mass", "center_of_gravity", "ixx", "iyy", "izz", "ixy", "ixz", "iyz", "transition_time"},  # 2.6
    "one geometry_msgs/Inertia": {"payload", "transition_time"},  # ur_msgs 3
}
"""The kinds of ur_msgs' SetPayload request: its fields, as each ur_msgs' srv/SetPayload.srv defines them."""
VENDOR_PACKAGE = {"panda": "franka_msgs", "xarm7": "xarm_msgs", "ur5e": "ur_msgs"}
CONVERGED_WITHIN_MOTION_S = 20.0
"""Sample time the simulator published, from its first joint state to the one the estimate ~/apply may
send (Franka, UR: mass, COM and inertia converged; xArm: mass and COM) is stamped with, s; 2-3 s seen."""
WAIT_GUARD_S = 150.0
"""Wall seconds the test waits for it at most, divided by the simulator's real-time factor."""
MASS_REL_TOL = 0.02
"""Mass within 2 % of the truth."""
COM_TOL_M = 0.005
"""Each COM component within 5 mm of the truth."""
INERTIA_TOL = 0.25
"""Each inertia entry (about the COM) within 25 % of the truth's largest principal moment (the inertia is the
least certain part: 7-12 % in the runs seen; cf. max_inertia_rel_std, 25 % of the mean principal moment)."""


@pytest.mark.launch_test
@launch_testing.parametrize("robot", ["panda", "xarm7", "ur5e"])
def generate_test_description(robot):
    if importlib.util.find_spec(VENDOR_PACKAGE[robot]) is None:
        raise unittest.SkipTest(f"{VENDOR_PACKAGE[robot]} is not installed (docs/ros.md: interface packages)")
    share = get_package_share_directory("payload_estimator")
    demo = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "sim_demo.launch.py")),
        launch_arguments={"robot": robot, "payload": PAYLOAD, "rviz": "false"}.items(),
    )
    return launch.LaunchDescription([demo, launch_testing.actions.ReadyToTest()])


class FakeRobot:
    """The robot's "set load" service, of the real type under the driver's name: records each request
    and answers with the next of ``answers`` (then accepts)."""

    def __init__(self, context, robot):
        import rclpy

        self.requests = []
        self.answers = []
        if robot == "panda":
            from franka_msgs.srv import SetLoad

            self.node = rclpy.create_node("service_server", context=context)  # franka_param_service_server.cpp
            self.node.create_service(SetLoad, "~/set_load", self._franka)
        elif robot == "ur5e":
            from ur_msgs.srv import SetPayload

            self.node = rclpy.create_node("io_and_status_controller", context=context)  # gpio_controller.cpp
            self.node.create_service(SetPayload, "~/set_payload", self._ur)
        else:
            from xarm_msgs.srv import SetTcpLoad

            self.node = rclpy.create_node("ufactory_driver", context=context)  # xarm_driver.cpp, hw_ns "xarm"
            self.node.create_service(SetTcpLoad, "xarm/set_tcp_load", self._xarm)

    def _franka(self, request, response):
        self.requests.append(request)
        response.success, response.error = self.answers.pop(0) if self.answers else (True, "")
        return response

    def _ur(self, request, response):
        self.requests.append(request)
        response.success = self.answers.pop(0) if self.answers else True
        return response

    def _xarm(self, request, response):
        self.requests.append(request)
        response.ret, response.message = self.answers.pop(0) if self.answers else (0, "set_tcp_load done")
        return response


class TestVendorApply(SpinningTestCase, unittest.TestCase):
    NODE_NAME = "vendor_apply_test"

    @classmethod
    def set_up_node(cls):
        cls.estimates = []
        cls.truth = []
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        cls.node.create_subscription(InertiaStamped, "/payload_sim/truth", cls.truth.append, latched)
        cls.node.create_subscription(PayloadEstimate, "/payload_estimator/estimate", cls.estimates.append, 10)
        cls.joints = {robot: StampMonitor(cls.node, JointState, settings_for_robot(robot).joint_states_topic)
                      for robot in VENDOR_PACKAGE}  # only the launched robot's simulator publishes
        cls.tf_buffer = Buffer()
        cls.tf_listener = TransformListener(cls.tf_buffer, cls.node, spin_thread=False)
        cls.robots = {}
        for robot in VENDOR_PACKAGE:
            if importlib.util.find_spec(VENDOR_PACKAGE[robot]) is not None:
                cls.robots[robot] = FakeRobot(cls.context, robot)
                cls.executor.add_node(cls.robots[robot].node)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        for fake in cls.robots.values():
            fake.node.destroy_node()

    def _call(self, srv_type, name, request):
        client = self.node.create_client(srv_type, name)
        self.assertTrue(client.wait_for_service(timeout_sec=15.0), f"no {name}")
        future = client.call_async(request)
        self.assertTrue(self.wait(future.done, 30.0), f"no answer from {name}")
        return future.result()

    def _apply(self, **fields):
        return self._call(ApplyEstimate, "/payload_estimator/apply", ApplyEstimate.Request(**fields))

    def _truth_in_flange(self, flange):
        """The true payload in the ``flange`` frame: (mass kg, COM m, inertia about the COM kg m²)."""
        self.assertIsNotNone(self.wait(lambda: self.truth, 30.0), "no /payload_sim/truth")
        truth = self.truth[-1]
        sensor = truth.header.frame_id

        def lookup():
            try:
                return self.tf_buffer.lookup_transform(flange, sensor, Time())
            except Exception:  # noqa: BLE001 - not there yet
                return None

        tf = self.wait(lookup, 30.0)
        self.assertIsNotNone(tf, f"no tf from {sensor} to {flange}")
        q, t = tf.transform.rotation, tf.transform.translation
        R = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()  # sensor axes in the flange frame
        p = np.array([t.x, t.y, t.z])
        i = truth.inertia
        com = np.array([i.com.x, i.com.y, i.com.z])
        inertia = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
        return i.m, R @ com + p, R @ inertia @ R.T

    def _ready_to_apply(self, robot):
        """Pause the estimator on an estimate ~/apply sends without force; its flange frame (the robot's).

        Convergence is judged on a sliding window and may come and go on a noisy run, so the test
        pauses (the estimate then stays put) and asks a dry run; if refused, it resumes and waits again.
        """
        key = "mass_com_converged" if robot == "xarm7" else "converged"  # set_tcp_load takes no inertia
        joints = self.joints[robot]
        start = time.monotonic()

        def motion(estimate):
            """Sample time published up to ``estimate``'s newest sample, s."""
            return joints.sample_time(until_stamp=stamp_s(estimate.header.stamp))

        checked = {"at": 0.0, "in time": True}

        def in_time():
            """Neither the published motion nor the wall-time guard is over (looked at twice a second)."""
            if time.monotonic() - checked["at"] > 0.5:
                checked["at"] = time.monotonic()
                checked["in time"] = time.monotonic() - start <= joints.stretch(WAIT_GUARD_S) and (
                    not self.estimates or motion(self.estimates[-1]) <= CONVERGED_WITHIN_MOTION_S)
            return checked["in time"]

        while in_time():
            latest = self.wait(lambda: (self.estimates and getattr(self.estimates[-1], key) and self.estimates[-1])
                               or not in_time(), WAIT_GUARD_S)
            if latest is True or not latest:
                break
            self.assertTrue(self._call(SetBool, "/payload_estimator/pause", SetBool.Request(data=True)).success)
            dry = self._apply(dry_run=True)
            if dry.success:
                print(f"{robot}: {key} after {motion(latest):.2f} s of published motion (the simulator's real-time "
                      f"factor {joints.real_time_factor():.3f})")
                self.assertLessEqual(motion(latest), CONVERGED_WITHIN_MOTION_S)
                self.assertEqual(latest.flange_frame, ROBOTS[robot].flange_frame)
                return latest.flange_frame
            self.assertIn("not converged", dry.message)
            self.assertTrue(self._call(SetBool, "/payload_estimator/pause", SetBool.Request(data=False)).success)
        last = self.estimates[-1].status if self.estimates else "no estimate at all"
        self.fail(f"not {key} within {CONVERGED_WITHIN_MOTION_S} s of published motion ({joints.sample_time():.1f} s "
                  f"published, real-time factor {joints.real_time_factor():.3f}); last: {last}")

    def test_apply_sends_the_truth_to_the_robot(self, robot):
        fake = self.robots[robot]
        mass, com, inertia = self._truth_in_flange(self._ready_to_apply(robot))

        # the robot refuses first (Franka: moving; xArm: an error code; UR: success false): a failure, in the
        # robot's words
        fake.answers.append({"panda": (False, "command rejected: robot is moving"),
                             "xarm7": (9, "state is not ready to move"), "ur5e": False}[robot])
        refused = self._apply()
        self.assertFalse(refused.success, refused.message)
        self.assertIn("rejected by", refused.message)
        self.assertIn({"panda": "robot is moving", "xarm7": "ret 9", "ur5e": "refused"}[robot], refused.message)
        self.assertEqual(len(fake.requests), 1)

        applied = self._apply()
        self.assertTrue(applied.success, applied.message)
        self.assertEqual(len(fake.requests), 2)
        sent = fake.requests[-1]
        request = yaml.safe_load(applied.request)
        if robot == "panda":
            self.assertIn("applied by /service_server/set_load", applied.message)
            self.assertTrue(applied.request.startswith("# franka_msgs/srv/SetLoad on /service_server/set_load"))
            got_com = np.asarray(sent.center_of_mass)
            got_inertia = np.asarray(sent.load_inertia).reshape(3, 3, order="F")  # column-major
            print(f"{robot}: SetLoad mass {sent.mass:.4f} kg (truth {mass:.4f}), center_of_mass "
                  f"{np.round(got_com, 4).tolist()} m (truth {np.round(com, 4).tolist()}), load_inertia "
                  f"diag {np.round(np.diag(got_inertia), 5).tolist()} (truth {np.round(np.diag(inertia), 5).tolist()})"
                  f" kg m2, largest entry error {np.max(np.abs(got_inertia - inertia)):.2e}")
            self.assertLess(abs(sent.mass - mass), MASS_REL_TOL * mass)
            np.testing.assert_allclose(got_com, com, atol=COM_TOL_M)
            np.testing.assert_allclose(got_inertia, inertia, atol=INERTIA_TOL * np.linalg.eigvalsh(inertia).max())
            np.testing.assert_allclose(got_inertia, got_inertia.T, atol=1e-12)
            self.assertGreater(np.linalg.eigvalsh(got_inertia).min(), 0.0)
            np.testing.assert_allclose(request["load_inertia"], sent.load_inertia, rtol=1e-9)
            np.testing.assert_allclose(request["center_of_mass"], sent.center_of_mass, rtol=1e-9)
        elif robot == "ur5e":
            self._check_ur(applied, sent, request, mass, com, inertia)
        else:
            self.assertIn("applied by /xarm/set_tcp_load", applied.message)
            self.assertTrue(applied.request.startswith("# xarm_msgs/srv/SetTcpLoad on /xarm/set_tcp_load"))
            got_cog = np.asarray(sent.center_of_gravity, dtype=float)  # mm
            print(f"{robot}: SetTcpLoad weight {sent.weight:.4f} kg (truth {mass:.4f}), center_of_gravity "
                  f"{np.round(got_cog, 1).tolist()} mm (truth {np.round(com * 1000.0, 1).tolist()})")
            self.assertEqual(len(got_cog), 3)
            self.assertLess(abs(sent.weight - mass), MASS_REL_TOL * mass)
            np.testing.assert_allclose(got_cog, com * 1000.0, atol=COM_TOL_M * 1000.0)
            np.testing.assert_allclose(request["center_of_gravity"], got_cog, rtol=1e-6)  # float32 on the wire
            self.assertAlmostEqual(request["weight"], sent.weight, places=5)

        # a dry run sends nothing
        dry = self._apply(dry_run=True)
        self.assertTrue(dry.success, dry.message)
        self.assertEqual(len(fake.requests), 2)

    def _check_ur(self, applied, sent, request, mass, com, inertia):
        """UR's SetPayload, whichever ur_msgs is installed (UR_KINDS): what the robot got, what ~/apply says.

        ``request`` (the YAML ~/apply answers with) is the whole request, inertia included, whatever the
        installed type holds; ``sent`` is what the robot received; the message names what was left out.
        """
        service = "/io_and_status_controller/set_payload"
        fields = set(type(sent).get_fields_and_field_types())
        kind = next((k for k, names in UR_KINDS.items() if names == fields), None)
        self.assertIsNotNone(kind, f"a SetPayload of none of the known kinds: {sorted(fields)}")
        print(f"ur5e: ur_msgs' SetPayload {kind}: {sorted(fields)}")
        self.assertTrue(applied.request.startswith(f"# ur_msgs/srv/SetPayload on {service}"))
        if kind == "mass and centre of gravity":
            self.assertEqual(applied.message, f"applied by {service}: success (this ur_msgs has no ixx, iyy, izz, "
                                              "ixy, ixz, iyz: not sent)")
        else:
            self.assertEqual(applied.message, f"applied by {service}: success")
        payload = sent.payload if kind == "one geometry_msgs/Inertia" else None
        sent_mass = payload.m if payload is not None else sent.mass
        cog = payload.com if payload is not None else sent.center_of_gravity  # geometry_msgs/Vector3, m
        got_com = np.array([cog.x, cog.y, cog.z])
        print(f"ur5e: SetPayload mass {sent_mass:.4f} kg (truth {mass:.4f}), center of gravity "
              f"{np.round(got_com, 4).tolist()} m (truth {np.round(com, 4).tolist()})")
        self.assertLess(abs(sent_mass - mass), MASS_REL_TOL * mass)
        np.testing.assert_allclose(got_com, com, atol=COM_TOL_M)
        np.testing.assert_allclose(request["center_of_gravity"]["x"], cog.x, rtol=1e-12)
        self.assertAlmostEqual(request["mass"], sent_mass, places=5)  # float32 on the wire up to ur_msgs 2
        # the request's inertia (about the COM, flange axes) is the truth's, whether the type can carry it or not
        asked = np.array([[request["ixx"], request["ixy"], request["ixz"]],
                          [request["ixy"], request["iyy"], request["iyz"]],
                          [request["ixz"], request["iyz"], request["izz"]]])
        np.testing.assert_allclose(asked, inertia, atol=INERTIA_TOL * np.linalg.eigvalsh(inertia).max())
        self.assertGreater(np.linalg.eigvalsh(asked).min(), 0.0)
        if kind == "mass and centre of gravity":
            return
        holder = payload if payload is not None else sent
        got_inertia = np.array([[holder.ixx, holder.ixy, holder.ixz], [holder.ixy, holder.iyy, holder.iyz],
                                [holder.ixz, holder.iyz, holder.izz]])
        print(f"ur5e: SetPayload inertia diag {np.round(np.diag(got_inertia), 5).tolist()} (truth "
              f"{np.round(np.diag(inertia), 5).tolist()}) kg m2, largest entry error "
              f"{np.max(np.abs(got_inertia - inertia)):.2e}")
        np.testing.assert_allclose(got_inertia, asked, rtol=1e-12)  # float64 on the wire: as asked
        # at once: builtin_interfaces/Duration (2.6 on) or float64 s (3 on)
        transition = sent.transition_time
        at_once = transition == 0.0 if isinstance(transition, float) else (transition.sec, transition.nanosec) == (0, 0)
        self.assertTrue(at_once, transition)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
