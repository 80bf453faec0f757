"""sim_demo.launch.py end to end: the simulated Panda holding a claw hammer, the estimator, no rviz.

Launched by ``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_sim_demo_launch.py``. Checks that a converged,
physically consistent ~/estimate within 2 % of the true mass comes within a few seconds of
the motion the simulator published, that /diagnostics reports the input rates the simulator
actually published, and that ~/pause, ~/reset, ~/save_urdf (writes a file) and ~/apply (dry
run: the Franka SetLoad request) answer, and that ~/apply, not forced, is granted after 60 s and
after 90 s of published motion.

Times are the simulator's (the sample time it published: the header stamps of its joint states,
ros_helpers.StampMonitor), not the machine's: on a loaded machine the simulator falls behind and
publishes less, which is not the estimator's doing. Wall time only bounds the waits, generously.
"""

from __future__ import annotations

import os
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
import yaml  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from ros_helpers import SpinningTestCase, StampMonitor, stamp_s, wait_for, wait_within_sample_time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

import launch  # noqa: E402
from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.settings import settings_for_robot  # noqa: E402
from payload_estimator.sim.payloads import get_payload  # noqa: E402
from payload_estimator.srv import ApplyEstimate, SaveUrdf  # noqa: E402

PAYLOAD = "claw_hammer"
SETTINGS = settings_for_robot("panda")
CONVERGED_WITHIN_MOTION_S = 10.0
"""Sample time the simulator published, from its first joint state to the one the first converged
estimate is stamped with (its newest sample), s: about 3-4 s on a 2-core machine, the estimator's
start-up included."""
WAIT_GUARD_S = 90.0
"""Wall seconds the test waits for that estimate at most, divided by the simulator's real-time factor."""
APPLY_AT_MOTION_S = (60.0, 90.0)
"""Sample time published at which ~/apply (dry run, not forced) must be granted, s."""
RATE_WINDOW_S = 6.0
"""Wall seconds over which the node's reported input rates are compared with the published ones."""
RATE_FRACTION = 0.9
"""The node's reported rate: at least this fraction of what the simulator published meanwhile."""


@pytest.mark.launch_test
def generate_test_description():
    share = get_package_share_directory("payload_estimator")
    demo = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "sim_demo.launch.py")),
        launch_arguments={"robot": "panda", "payload": PAYLOAD, "rviz": "false"}.items(),
    )
    return launch.LaunchDescription([demo, launch_testing.actions.ReadyToTest()])


class TestSimDemo(SpinningTestCase, unittest.TestCase):
    NODE_NAME = "sim_demo_test"

    @classmethod
    def set_up_node(cls):
        cls.estimates: list[tuple[float, PayloadEstimate]] = []
        cls.diagnostics: list[DiagnosticArray] = []
        cls.node.create_subscription(PayloadEstimate, "/payload_estimator/estimate",
                                     lambda m: cls.estimates.append((time.monotonic(), m)), 10)
        cls.node.create_subscription(DiagnosticArray, "/diagnostics",
                                     lambda m: cls.diagnostics.append((time.monotonic(), m)), 10)
        cls.joints = StampMonitor(cls.node, JointState, SETTINGS.joint_states_topic)
        cls.wrench = StampMonitor(cls.node, WrenchStamped, SETTINGS.wrench_topic)
        cls.t_start = time.monotonic()

    def _call(self, srv_type, name, request):
        client = self.node.create_client(srv_type, name)
        self.assertTrue(client.wait_for_service(timeout_sec=15.0), f"{name} not available")
        future = client.call_async(request)
        self.assertTrue(self.wait(future.done, 15.0), f"no answer from {name}")
        return future.result()

    def _converged(self):
        """The first estimate whose mass and COM converged (the inertia, which SetLoad takes too, may need
        longer than this run gives it: "converged" waits for it)."""
        for t, msg in list(self.estimates):
            if msg.mass_com_converged:
                return t, msg
        return None

    def _latest_stamp(self):
        return stamp_s(self.estimates[-1][1].header.stamp) if self.estimates else None

    def _wait_converged(self):
        return wait_within_sample_time(self._converged, self._latest_stamp, self.joints, CONVERGED_WITHIN_MOTION_S,
                                       WAIT_GUARD_S)

    def test_1_converged_estimate_of_the_true_mass(self):
        found = self._wait_converged()
        self.assertIsNotNone(found, f"no converged mass and COM within {CONVERGED_WITHIN_MOTION_S} s of published "
                                    f"motion ({self.joints.sample_time():.1f} s published, real-time factor "
                                    f"{self.joints.real_time_factor():.2f}); last: "
                                    f"{self.estimates[-1][1].status if self.estimates else 'no estimate at all'}")
        t, est = found
        motion = self.joints.sample_time(until_stamp=stamp_s(est.header.stamp))
        truth = get_payload(PAYLOAD).params
        print(f"converged estimate after {motion:.2f} s of published motion ({t - self.t_start:.1f} s after "
              f"start-up, the simulator's real-time factor {self.joints.real_time_factor():.3f}): mass "
              f"{est.mass:.4f} kg (truth {truth.mass:.4f}), COM [{est.com.x:.4f}, {est.com.y:.4f}, {est.com.z:.4f}] m")
        self.assertLessEqual(motion, CONVERGED_WITHIN_MOTION_S)
        self.assertTrue(est.physically_consistent)
        self.assertEqual(est.model_fit, "good")
        self.assertEqual(est.not_identified, "")
        self.assertEqual(est.header.frame_id, "panda_link8")
        self.assertEqual(est.estimator, "pmd")
        self.assertLess(abs(est.mass - truth.mass), 0.02 * truth.mass)
        self.assertLess(abs(est.com.z - truth.com[2]), 0.02)

    def _inputs(self, since=0.0):
        """The estimator's "inputs" statuses that arrived after ``since`` (monotonic s): [(arrival, {key: value})]."""
        out = []
        for t, msg in list(self.diagnostics):
            names = [s.name for s in msg.status]
            if t >= since and "payload_estimator: node" in names and "payload_estimator: inputs" in names:
                inputs = next(s for s in msg.status if s.name == "payload_estimator: inputs")
                out.append((t, {kv.key: kv.value for kv in inputs.values}))
        return out

    def test_2_diagnostics_report_the_published_rates(self):
        """The input rates /diagnostics reports (arrivals over the node's 2 s window) are those the simulator
        published meanwhile (its stamps), whatever the machine makes of its nominal 1 kHz."""
        self.assertTrue(self.wait(self._inputs, 10.0), "no /diagnostics from the estimator")
        start = time.monotonic()
        self.wait(lambda: time.monotonic() - start > RATE_WINDOW_S and len(self._inputs(start)) >= 3, 30.0)
        reports = self._inputs(start)
        self.assertGreaterEqual(len(reports), 3, "the estimator's diagnostics stopped")
        rate_window_s = 2.0  # the node's (InputHealth.rate_window_s): its first report counts arrivals from then
        for stream, monitor in (("joint_states", self.joints), ("wrench", self.wrench)):
            reported = [float(values[f"{stream} rate (Hz)"]) for _, values in reports]
            node_hz = sum(reported) / len(reported)
            published_hz = monitor.rate_hz(since=start - rate_window_s, until=reports[-1][0])
            rtf = monitor.real_time_factor(since=start - rate_window_s, until=reports[-1][0])
            print(f"{stream}: the simulator published {published_hz:.1f} Hz (real-time factor {rtf:.3f}), the "
                  f"estimator reports {node_hz:.1f} Hz ({', '.join(f'{r:.0f}' for r in reported)})")
            self.assertGreater(published_hz, 0.0, f"nothing published on {monitor.topic}")
            self.assertGreaterEqual(node_hz, RATE_FRACTION * published_hz, reports[-1][1])

    def test_3_pause_reset_save_apply(self):
        self.assertIsNotNone(self._wait_converged())
        paused = self._call(SetBool, "/payload_estimator/pause", SetBool.Request(data=True))
        self.assertTrue(paused.success, paused.message)
        n = len(self.estimates)
        self.wait(lambda: len(self.estimates) > n + 5, 5.0)
        used = {m.samples_used for _, m in self.estimates[n + 2:]}
        self.assertEqual(len(used), 1, "samples still enter the estimate while paused")
        # save and apply while paused: the converged estimate stays put (running on, the inertia may move)

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "out", "payload.urdf.xml")
            saved = self._call(SaveUrdf, "/payload_estimator/save_urdf", SaveUrdf.Request(path=path, frame=""))
            self.assertTrue(saved.success, saved.message)
            with open(path) as f:
                text = f.read()
            self.assertIn("<inertial>", text)
            self.assertIn("panda_link8", text)
            self.assertEqual(text.strip(), saved.urdf.strip())

        apply = self._call(ApplyEstimate, "/payload_estimator/apply", ApplyEstimate.Request(dry_run=True))
        if not apply.success:  # SetLoad takes the inertia too, which may not have converged yet: refused, said why
            self.assertIn("not converged", apply.message)
            apply = self._call(ApplyEstimate, "/payload_estimator/apply",
                               ApplyEstimate.Request(dry_run=True, force=True))
            self.assertTrue(apply.success, apply.message)
            self.assertIn("forced", apply.message)
        self.assertTrue(apply.request.startswith("# franka_msgs/srv/SetLoad on /service_server/set_load"))
        fields = yaml.safe_load(apply.request)
        self.assertLess(abs(fields["mass"] - get_payload(PAYLOAD).params.mass), 0.02 * get_payload(PAYLOAD).mass)
        self.assertEqual(len(fields["load_inertia"]), 9)

        resumed = self._call(SetBool, "/payload_estimator/pause", SetBool.Request(data=False))
        self.assertTrue(resumed.success, resumed.message)

        reset = self._call(Trigger, "/payload_estimator/reset", Trigger.Request())
        self.assertTrue(reset.success, reset.message)
        n = len(self.estimates)
        self.assertTrue(self.wait(lambda: len(self.estimates) > n + 3, 10.0))
        self.assertLess(min(m.samples_used for _, m in self.estimates[n:]),
                        max(m.samples_used for _, m in self.estimates[:n]), "reset did not start over")

    def test_4_apply_granted_after_a_minute_and_a_half(self):
        """Running on, the estimate stays converged (the F/T offsets drift; a line per window follows them):
        ~/apply, not forced, is granted after 60 s and after 90 s of published motion, and nearly every
        estimate of the last 30 s of samples says converged."""
        truth = get_payload(PAYLOAD).params
        for at_s in APPLY_AT_MOTION_S:
            published = wait_for(lambda at_s=at_s: self.joints.sample_time() > at_s,  # twice a second: it sorts
                                 self.joints.stretch(at_s + 10.0), period=0.5)
            self.assertTrue(published, f"the simulator published {self.joints.sample_time():.1f} s, not {at_s} s")
            apply = self._call(ApplyEstimate, "/payload_estimator/apply", ApplyEstimate.Request(dry_run=True))
            last = self.estimates[-1][1]
            print(f"~/apply after {self.joints.sample_time():.1f} s of published motion "
                  f"({time.monotonic() - self.t_start:.0f} s after start-up): {apply.success}, {apply.message!r}; "
                  f"mass {last.mass:.4f} kg, status {last.status!r}")
            self.assertTrue(apply.success, f"~/apply refused after {at_s} s of motion: {apply.message}")
            fields = yaml.safe_load(apply.request)
            self.assertLess(abs(fields["mass"] - truth.mass), 0.01 * truth.mass)
        newest = stamp_s(self.estimates[-1][1].header.stamp)
        recent = [m for _, m in list(self.estimates) if stamp_s(m.header.stamp) > newest - 30.0]
        self.assertGreater(len(recent), 100)
        why_not = sorted({m.status for m in recent if not m.converged})
        print(f"last 30 s: {sum(m.converged for m in recent)} of {len(recent)} estimates converged; "
              f"otherwise {why_not}; changes {recent[-1].payload_changes}, contacts {recent[-1].contacts}, "
              f"held out {recent[-1].held_out_samples}")
        self.assertGreater(sum(m.converged for m in recent) / len(recent), 0.95,
                           f"the estimate does not stay converged: {why_not}")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        # both nodes end cleanly on SIGINT
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
