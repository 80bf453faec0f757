"""The estimator node survives bad input, says so on /diagnostics and keeps its last estimate.

A real rclpy EstimatorNode (spun as ``main()`` spins it) receives, from a helper
node: inputs before any robot_description; then a simulated Panda run as
franka_ros2 publishes it; then NaN wrenches, wrenches in the wrong frame,
joint states with the wrong names; then nothing at all. Other nodes are
configured with a wrench frame that exists nowhere, with a sensor frame only
tf2 knows, and with invalid parameters fixed at run time. Run by
``colcon test`` (ROS_DOMAIN_ID isolated); skipped without ROS.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from ros_helpers import Listener, RunPublisher, level, node_status, payload_shape, status_values, wait_for  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.ros.qos import LATCHED_QOS  # noqa: E402

ESTIMATE = "/payload_estimator/estimate"


def _rejected(listener: Listener) -> dict[str, int]:
    msg = listener.last.get("/diagnostics")
    status = node_status(msg, ": rejected input") if msg else None
    if status is None:
        return {}
    return {k[len("total "):]: int(v) for k, v in status_values(status).items() if k.startswith("total ")}


def test_bad_input_never_kills_the_node(ros):
    node = ros.estimator(payload_shape=payload_shape())
    helper = ros.node("bad_input_publisher")
    listener = Listener(helper)
    listener.listen(DiagnosticArray, "/diagnostics")
    listener.listen(PayloadEstimate, ESTIMATE)
    listener.listen(String, "/payload_estimator/urdf_inertial", LATCHED_QOS)
    pub = RunPublisher(helper, duration=8.0)

    # 1. no robot_description yet: inputs are dropped, the node says why
    pub.publish(0.5)
    status = wait_for(lambda: node_status(listener.last["/diagnostics"], ": node")
                      if "/diagnostics" in listener.last else None, 10.0)
    assert status is not None and "waiting for robot_description" in status.message
    assert level(status) == 1
    assert wait_for(lambda: int(status_values(node_status(listener.last["/diagnostics"], ": node"))
                                ["inputs dropped while not running"]) > 0, 5.0)
    assert node.supervisor.stream is None

    # 2. the model arrives: good data give an estimate
    pub.publish_description()
    assert wait_for(lambda: node.supervisor.stream is not None, 10.0), node.supervisor.status.message
    pub.publish(4.0)
    first = wait_for(lambda: listener.last.get(ESTIMATE), 15.0)
    assert first is not None and first.mass > 0
    assert wait_for(lambda: listener.last.get("/payload_estimator/urdf_inertial"), 5.0).data.count("<inertial>") == 1

    # 3. bad input: NaN, wrong frame, wrong joint names -> dropped, counted, estimate kept
    pub.publish(0.3, nan=True)
    pub.publish(0.3, frame="some_other_frame")
    pub.publish(0.3, names=[f"arm_joint{i}" for i in range(1, 8)])
    def all_counted():  # /diagnostics is 1 Hz: wait for the counts to catch up
        counts = _rejected(listener)
        reasons = ("non_finite", "wrong_frame", "missing_joint")
        return counts if all(counts.get(r, 0) >= 250 for r in reasons) else None

    assert wait_for(all_counted, 10.0), _rejected(listener)
    count = listener.count[ESTIMATE]
    assert wait_for(lambda: listener.count[ESTIMATE] > count + 5, 5.0), "the estimate is no longer published"
    kept = listener.last[ESTIMATE]
    assert math.isfinite(kept.mass) and abs(kept.mass - first.mass) < 0.1 * first.mass

    # 4. the inputs stop: reported stale, the last estimate stays
    def stale_status():
        status = node_status(listener.last["/diagnostics"], ": inputs")
        return status if "stale" in status.message or "no input" in status.message else None

    stale = wait_for(stale_status, 5.0)
    assert stale is not None and level(stale) in (1, 3), node_status(listener.last["/diagnostics"], ": inputs")
    count = listener.count[ESTIMATE]
    assert wait_for(lambda: listener.count[ESTIMATE] > count + 3, 5.0)
    assert math.isfinite(listener.last[ESTIMATE].mass)

    # 5. good data again: the node goes on estimating
    pub.publish(1.0)
    assert wait_for(lambda: "receiving" in node_status(listener.last["/diagnostics"], ": inputs").message, 5.0)
    assert not ros.errors, ros.errors


def test_a_frame_that_exists_nowhere_is_a_configuration_error(ros):
    pytest.importorskip("tf2_ros", reason="no tf2_ros (no wheel of it): frames the URDF lacks come from tf2")
    node = ros.estimator(wrench_source="ft_sensor", wrench_frame="no_such_frame", sensor_frame="panda_link8",
                         _namespace="misconfigured")
    helper = ros.node("description_publisher")
    listener = Listener(helper)
    listener.listen(DiagnosticArray, "/diagnostics")
    pub = RunPublisher(helper, duration=1.0)
    from std_msgs.msg import String as StringMsg

    description = helper.create_publisher(StringMsg, "/misconfigured/robot_description", LATCHED_QOS)
    description.publish(StringMsg(data=pub.run.urdf))

    def error_status():
        msg = listener.last.get("/diagnostics")
        status = node_status(msg, "misconfigured/payload_estimator: node") if msg else None
        return status if status is not None and level(status) == 2 else None

    status = wait_for(error_status, 15.0)  # after waiting for tf2 (3 s)
    assert status is not None
    assert "no_such_frame" in status.message and "tf2" in status.message
    pub.publish(0.2)  # inputs are dropped, nothing breaks
    assert wait_for(lambda: node.supervisor.status.state == "configuration error", 2.0)
    assert not ros.errors, ros.errors


def test_frames_the_urdf_lacks_come_from_tf2(ros):
    """A sensor frame only tf2 knows (here a static transform 5 cm beyond the flange) is looked up once."""
    pytest.importorskip("tf2_ros", reason="no tf2_ros (no wheel of it): frames the URDF lacks come from tf2")
    from geometry_msgs.msg import TransformStamped
    from tf2_ros import StaticTransformBroadcaster

    helper = ros.node("tf_publisher")
    broadcaster = StaticTransformBroadcaster(helper)
    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = "panda_link8", "tool_ft"
    t.transform.translation.z = 0.05
    t.transform.rotation.z, t.transform.rotation.w = math.sin(0.25), math.cos(0.25)  # 0.5 rad about z
    broadcaster.sendTransform(t)
    node = ros.estimator(sensor_frame="tool_ft", _namespace="with_tf")
    pub = RunPublisher(helper, duration=1.0)
    from std_msgs.msg import String as StringMsg

    helper.create_publisher(StringMsg, "/with_tf/robot_description", LATCHED_QOS).publish(StringMsg(data=pub.run.urdf))
    assert wait_for(lambda: node.supervisor.stream is not None, 10.0), node.supervisor.status.message
    assert node.supervisor.frames_from_tf == ["tool_ft"]
    stream = node.supervisor.stream
    assert abs(stream.p_flange_sensor[2] - 0.05) < 1e-9
    assert abs(stream.R_flange_sensor[0, 0] - math.cos(0.5)) < 1e-9
    assert node._tf.listener is None  # no longer listening to /tf
    assert not ros.errors, ros.errors


def test_builtin_description_and_fixing_bad_parameters_at_run_time(ros):
    """Invalid parameters at start-up: a configuration error, until ``ros2 param set`` fixes them."""
    from rclpy.parameter import Parameter

    node = ros.estimator(use_builtin_description=True, estimator="magic", _namespace="builtin")
    assert node.supervisor.settings is None and node.supervisor.status.state == "configuration error"
    assert "estimator" in node.supervisor.status.detail
    result = node.set_parameters([Parameter("estimator", value="also_bad")])[0]
    assert not result.successful and "estimator" in result.reason   # still invalid: refused, with the reason
    assert node.set_parameters([Parameter("estimator", value="rls")])[0].successful
    assert wait_for(lambda: node.supervisor.stream is not None, 10.0), node.supervisor.status.message
    assert node.supervisor.settings.estimator == "rls" and node.supervisor.status.state == "running"
    # valid settings that the stream cannot run: a configuration error, then fixed
    assert node.set_parameters([Parameter("cutoff_hz", value=900.0)])[0].successful
    assert wait_for(lambda: node.supervisor.status.state == "configuration error", 5.0)
    assert "cutoff_hz" in node.supervisor.status.detail
    assert node.set_parameters([Parameter("cutoff_hz", value=8.0)])[0].successful
    assert wait_for(lambda: node.supervisor.stream is not None, 5.0), node.supervisor.status.message
    assert node.supervisor.stream.config.cutoff_hz == 8.0
    # read-only parameters are refused
    assert not node.set_parameters([Parameter("wrench_topic", value="/elsewhere")])[0].successful
    assert not ros.errors, ros.errors
