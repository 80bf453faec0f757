"""The node's input and output paths against rclpy itself: ``io.cdr`` reads what ``rclpy.serialization``
writes, :class:`InputTaker` takes in bulk what a publisher sent (all of it, in order, with distinct receive
times), and the rclpy message factory builds byte for byte the messages the ``rosbags`` factory builds.
Run by ``colcon test`` (ROS_DOMAIN_ID isolated); skipped without ROS."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from payload_estimator.io import cdr  # noqa: E402

PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


def _joint_state(sec: int, nanosec: int, names: list[str], *arrays: list[float], frame: str = "") -> JointState:
    msg = JointState(name=names, position=arrays[0], velocity=arrays[1], effort=arrays[2])
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = sec, nanosec, frame
    return msg


@pytest.mark.parametrize("frame", ["", "w", "wor", "world", "panda_link0"])
@pytest.mark.parametrize("lengths", [(7, 7, 7), (7, 0, 7), (7, 7, 0), (9, 9, 0), (0, 0, 0)])
def test_rclpy_serialised_joint_states_decode_bit_for_bit(frame, lengths):
    rng = np.random.default_rng(len(frame) + sum(lengths))
    names = [f"joint_{'n' * k}" for k in range(max(lengths[0], 1))]
    arrays = [rng.normal(size=n).tolist() for n in lengths]
    msgs = [_joint_state(1_700_000_000 + k, int(rng.integers(0, 10**9)), names, *arrays, frame=frame)
            for k in range(5)]
    blobs = [serialize_message(m) for m in msgs]
    one = cdr.decode_joint_state(blobs[0])
    assert one.name == tuple(names) and one.header.frame_id == frame
    for got, expected in zip((one.position, one.velocity, one.effort), arrays, strict=True):
        assert got.tolist() == expected
    layout = cdr.joint_state_layout(blobs[0])
    assert all(layout.fits(b) for b in blobs)
    if lengths[0] == lengths[1]:
        stamps, q, dq = layout.read(blobs)
        assert stamps.tolist() == [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in msgs]
        assert q.tolist() == [list(m.position) for m in msgs] and dq.tolist() == [list(m.velocity) for m in msgs]
    _, _, _, tau = layout.read_arrays(blobs, velocities=False, efforts=True)  # the joint-torque source's path
    assert tau.shape == (5, lengths[2]) and tau.tolist() == [list(m.effort) for m in msgs]


def test_rclpy_serialised_wrenches_decode_bit_for_bit():
    rng = np.random.default_rng(2)
    msgs = []
    for k in range(6):
        msg = WrenchStamped()
        msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 12, k * 1000, "panda_K"
        v = rng.normal(size=6).tolist()
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = v[:3]
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = v[3:]
        msgs.append(msg)
    blobs = [serialize_message(m) for m in msgs]
    layout = cdr.wrench_layout(blobs[0])
    stamps, w = layout.read(blobs)
    assert layout.frame_id == "panda_K" and stamps.tolist() == [12 + k * 1e-6 for k in range(6)]
    for row, m in zip(w.tolist(), msgs, strict=True):
        f, t = m.wrench.force, m.wrench.torque
        assert row == [f.x, f.y, f.z, t.x, t.y, t.z]


def test_the_taker_takes_everything_in_order_with_distinct_times():
    import rclpy

    from payload_estimator.pipeline.stream import JOINTS, WRENCH
    from payload_estimator.ros.inputs import InputNode, InputTaker
    from payload_estimator.ros.qos import INPUT_DEPTH, INPUT_QOS
    from payload_estimator.supervision.input_queue import InputQueue

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        queue = InputQueue()
        inputs = InputNode(queue, {JOINTS: "/taker_test/joints", WRENCH: "/taker_test/wrench"}, "/", context=context)
        helper = rclpy.create_node("taker_test_publisher", context=context)
        joints = helper.create_publisher(JointState, "/taker_test/joints", INPUT_QOS)
        wrench = helper.create_publisher(WrenchStamped, "/taker_test/wrench", INPUT_QOS)
        taker = InputTaker(inputs, queue)
        assert taker.available()
        deadline = time.monotonic() + 10.0
        while (joints.get_subscription_count() < 1 or wrench.get_subscription_count() < 1) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        n = 300  # within the subscription's depth: none may be lost while nobody takes
        assert n <= INPUT_DEPTH
        for k in range(n):
            joints.publish(_joint_state(100, k, PANDA_ARM, [0.1 * k] * 7, [0.0] * 7, []))
            w = WrenchStamped()
            w.header.stamp.sec, w.header.stamp.nanosec = 100, k
            w.wrench.force.z = float(k)
            wrench.publish(w)
            if k % 50 == 0:
                time.sleep(0.002)
        got: list = []
        while len(got) < 2 * n and time.monotonic() < deadline:
            taker.take()
            got.extend(queue.drain())
            time.sleep(0.01)
        by_kind = {kind: [(msg, t) for k, msg, t in got if k == kind] for kind in (JOINTS, WRENCH)}
        assert [m.header.stamp.nanosec for m, _ in by_kind[JOINTS]] == list(range(n))
        assert [m.wrench.force.z for m, _ in by_kind[WRENCH]] == [float(k) for k in range(n)]
        assert all(isinstance(m, cdr.SerializedJointState) for m, _ in by_kind[JOINTS])
        times = np.array([t for _, t in by_kind[JOINTS]])
        assert np.all(np.diff(times) >= 0) and len(np.unique(times)) > n // 2  # send times, not one per take
        assert abs(times[-1] - time.monotonic()) < 5.0  # on the monotonic clock
        inputs.destroy_node()
        helper.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_the_rclpy_factory_builds_what_the_rosbags_factory_builds():
    """The node's messages (estimate, inertia, markers with point masses, diagnostics, inputs) serialise to the
    same bytes from both factories."""
    from payload_estimator.io import ros_outbound as outbound
    from payload_estimator.io.interfaces import ros_typestore
    from payload_estimator.io.ros_factories import rclpy_factory, rosbags_factory
    from payload_estimator.outputs.markers import estimate_markers
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.mujoco_sim import simulate
    from payload_estimator.sim.payloads import get_payload
    from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

    payload = get_payload("claw_hammer")
    run = simulate(robot="panda", payload=payload, duration=2.0, seed=4)
    stream = stream_for_run(run, payload.envelope, estimator="pmd", track_payload=False)
    play(stream, recording_from_run(run))
    out = stream.update_estimate()
    est = out.estimate
    markers = estimate_markers(est.params, est.extras.get("points_in_sensor"), est.extras.get("point_masses"),
                               est.physically_consistent)
    assert len(markers) >= 3  # COM, box, point masses
    typestore = ros_typestore()
    makers = {"rclpy": rclpy_factory(), "rosbags": rosbags_factory(typestore)}

    def build(make):
        return [
            outbound.payload_estimate_msg(make, out, "panda_link8", "panda_link8", True, 1.5, True),
            outbound.inertia_stamped_msg(make, est.params, "panda_link8", out.t),
            outbound.marker_array_msg(make, markers, "panda_link8", out.t),
            outbound.diagnostic_array_msg(make, stream.diagnostics(now=out.t), "payload_estimator", out.t),
            outbound.joint_state_msg(make, 3.25, PANDA_ARM, np.arange(7.0), np.ones(7)),
            outbound.wrench_stamped_msg(make, 3.25, "panda_link8", [1, 2, 3], [4, 5, 6]),
        ]

    for mine, theirs in zip(build(makers["rclpy"]), build(makers["rosbags"]), strict=True):
        # Not bytes against bytes: CDR leaves the alignment padding unspecified, and ROS 2's wheels (their
        # rmw_fastrtps_cpp) neither zero it nor trim the buffer's unwritten end. rclpy reads both (so both
        # have their float32 fields rounded alike).
        expected = bytes(typestore.serialize_cdr(theirs, theirs.__msgtype__))
        ours = deserialize_message(serialize_message(mine), type(mine))
        assert ours == deserialize_message(expected, type(mine)), theirs.__msgtype__
