"""Serialised JointState and WrenchStamped read without ROS (``io.cdr``), against the bytes that the real
ROS 2 Jazzy definitions serialise to (``rosbags``' CDR serialiser; test/ros/test_cdr_rclpy.py does the same
with rclpy's own), and fed through ``ros_inbound.feed_many`` exactly as deserialised messages are."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from payload_estimator.io import cdr
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.io.ros_inbound import MALFORMED, feed_many

PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def typestore():
    return ros_typestore(ours=False)


def joint_state(ts, sec, nanosec, names, position, velocity=(), effort=(), frame=""):
    t = ts.types
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec),
                                      frame_id=frame)
    return t["sensor_msgs/msg/JointState"](header=header, name=list(names),
                                           position=np.asarray(position, dtype=float),
                                           velocity=np.asarray(velocity, dtype=float),
                                           effort=np.asarray(effort, dtype=float))


def wrench(ts, sec, nanosec, frame, values):
    t = ts.types
    v3 = t["geometry_msgs/msg/Vector3"]
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec),
                                      frame_id=frame)
    return t["geometry_msgs/msg/WrenchStamped"](header=header, wrench=t["geometry_msgs/msg/Wrench"](
        force=v3(*map(float, values[:3])), torque=v3(*map(float, values[3:]))))


def serialised(ts, msg, little_endian=True):
    return bytes(ts.serialize_cdr(msg, msg.__msgtype__, little_endian=little_endian))


# ---------------------------------------------------------------- one message


@pytest.mark.parametrize("little_endian", [True, False])
@pytest.mark.parametrize("frame", ["", "a", "abc", "abcd", "panda_link0"])  # every padding before the names
@pytest.mark.parametrize("arrays", [(7, 7, 7), (7, 0, 0), (7, 7, 0), (7, 0, 7), (0, 0, 0), (9, 9, 2)])
def test_one_joint_state_decodes_to_the_serialised_fields(typestore, little_endian, frame, arrays):
    rng = np.random.default_rng(sum(arrays) + len(frame))
    names = [f"j{'x' * k}" for k in range(max(arrays[0], 1))]  # names of every length mod 4
    values = [rng.normal(size=n) for n in arrays]
    msg = joint_state(typestore, 1_700_000_123, 987_654_321, names, *values, frame=frame)
    got = cdr.decode_joint_state(serialised(typestore, msg, little_endian))
    assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (1_700_000_123, 987_654_321,
                                                                                     frame)
    assert got.name == tuple(names)
    for field, expected in zip((got.position, got.velocity, got.effort), values, strict=True):
        np.testing.assert_array_equal(field, expected)  # bit for bit


@pytest.mark.parametrize("little_endian", [True, False])
@pytest.mark.parametrize("frame", ["", "s", "sen", "sens", "panda_link8"])
def test_one_wrench_decodes_to_the_serialised_fields(typestore, little_endian, frame):
    values = [1.5, -2.25, 9.81, 0.125, -0.5, 1e-9]
    got = cdr.decode_wrench_stamped(serialised(typestore, wrench(typestore, -3, 5, frame, values), little_endian))
    assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (-3, 5, frame)
    w = got.wrench
    assert [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z] == values


def test_serialized_messages_read_like_messages(typestore):
    data = serialised(typestore, joint_state(typestore, 2, 3, PANDA_ARM, np.arange(7.0), np.ones(7)))
    msg = cdr.SerializedJointState(data)
    assert msg.data is data and len(msg) == len(data)
    assert msg.name == tuple(PANDA_ARM) and msg.header.stamp.nanosec == 3
    np.testing.assert_array_equal(msg.position, np.arange(7.0))
    with pytest.raises(AttributeError):
        msg.no_such_field  # noqa: B018
    # the newest reading of the same driver (fits the last layout), another driver's, bytes that are none
    for names, q in ((PANDA_ARM, np.arange(7.0) + 1), (PANDA_ARM[::-1], -np.arange(7.0)), (PANDA_ARM, np.ones(7))):
        other = cdr.SerializedJointState(serialised(typestore, joint_state(typestore, 9, 0, names, q, [], [1.0])))
        assert other.name == tuple(names)
        np.testing.assert_array_equal(other.position, q)
    with pytest.raises(ValueError):
        cdr.SerializedJointState(data[:-9]).name  # noqa: B018
    w = cdr.SerializedWrenchStamped(serialised(typestore, wrench(typestore, 1, 0, "f", [1, 2, 3, 4, 5, 6])))
    assert w.wrench.torque.z == 6.0 and w.header.frame_id == "f"


def test_what_is_not_such_a_message_raises_value_error(typestore):
    good = serialised(typestore, joint_state(typestore, 2, 3, PANDA_ARM, np.arange(7.0), np.ones(7)))
    for bad in (good[:-1], good[:40], b"", b"\x00\x07\x00\x00" + good[4:], good[:4] + b"\xff" * 60):
        with pytest.raises(ValueError):
            cdr.decode_joint_state(bad)
        with pytest.raises(ValueError):
            cdr.joint_state_layout(bad)
    with pytest.raises(ValueError):
        cdr.decode_wrench_stamped(serialised(typestore, wrench(typestore, 1, 0, "f", [0] * 6))[:-8])
    with pytest.raises(ValueError):
        cdr.SerializedJointState(good[:30]).position  # noqa: B018 - decoding on first use raises


# -------------------------------------------------------------------- batches


def test_a_batch_reads_as_each_message_does(typestore):
    rng = np.random.default_rng(0)
    msgs = [joint_state(typestore, 100 + k // 3, int(rng.integers(0, 10**9)), PANDA_ARM, rng.normal(size=7),
                        rng.normal(size=7), rng.normal(size=7)) for k in range(25)]
    blobs = [serialised(typestore, m) for m in msgs]
    layout = cdr.joint_state_layout(blobs[0])
    assert all(layout.fits(b) for b in blobs) and layout.names == tuple(PANDA_ARM)
    stamps, q, dq = layout.read(blobs)
    np.testing.assert_array_equal(stamps, [float(m.header.stamp.sec) + float(m.header.stamp.nanosec) * 1e-9
                                           for m in msgs])  # exactly ros_factories.stamp_to_sec
    np.testing.assert_array_equal(q, [m.position for m in msgs])
    np.testing.assert_array_equal(dq, [m.velocity for m in msgs])
    assert layout.read(blobs, velocities=False)[2] is None
    empty = [serialised(typestore, joint_state(typestore, 1, k, ["j"], [])) for k in range(3)]
    stamps, q, dq = cdr.joint_state_layout(empty[0]).read(empty)  # no number at all, at the very end
    assert q.shape == dq.shape == (3, 0) and stamps.tolist() == [1 + k * 1e-9 for k in range(3)]

    ws = [wrench(typestore, 7, k * 1000, "panda_link8", rng.normal(size=6)) for k in range(9)]
    wblobs = [serialised(typestore, w, little_endian=False) for w in ws]
    wl = cdr.wrench_layout(wblobs[0])
    assert all(wl.fits(b) for b in wblobs)
    stamps, values = wl.read(wblobs)
    np.testing.assert_array_equal(stamps, [7 + k * 1000 * 1e-9 for k in range(9)])
    np.testing.assert_array_equal(values[:, 0], [w.wrench.force.x for w in ws])
    np.testing.assert_array_equal(values[:, 5], [w.wrench.torque.z for w in ws])


def test_layouts_tell_drivers_apart(typestore):
    base = serialised(typestore, joint_state(typestore, 1, 0, PANDA_ARM, np.zeros(7), np.zeros(7)))
    layout = cdr.joint_state_layout(base)
    others = [
        joint_state(typestore, 1, 0, PANDA_ARM[::-1], np.zeros(7), np.zeros(7)),  # same size, other order
        joint_state(typestore, 1, 0, PANDA_ARM, np.zeros(7), np.zeros(7), frame="x"),
        joint_state(typestore, 1, 0, PANDA_ARM[:6] + ["panda_jointX"], np.zeros(7), np.zeros(7)),
    ]
    for other in others:
        assert not layout.fits(serialised(typestore, other))
    assert not layout.fits(serialised(typestore, joint_state(typestore, 1, 0, PANDA_ARM, np.zeros(7), np.zeros(7)),
                                      little_endian=False))
    # 6 velocities and 1 effort, or 1 and 6: same size, same prefix; read() finds out
    six_one = serialised(typestore, joint_state(typestore, 1, 0, PANDA_ARM, np.zeros(7), np.zeros(6), np.zeros(1)))
    one_six = serialised(typestore, joint_state(typestore, 2, 0, PANDA_ARM, np.zeros(7), np.zeros(1), np.zeros(6)))
    layout = cdr.joint_state_layout(six_one)
    assert layout.fits(one_six)
    with pytest.raises(ValueError, match="counts differ"):
        layout.read([six_one, one_six])
    wl = cdr.wrench_layout(serialised(typestore, wrench(typestore, 1, 0, "abc", [0] * 6)))
    assert not wl.fits(serialised(typestore, wrench(typestore, 1, 0, "abd", [0] * 6)))


# ------------------------------------------------ through the stream, as the node feeds it


@pytest.mark.slow
def test_serialised_input_gives_the_stream_what_messages_give(tmp_path, typestore):
    """The node's path (serialised messages, batched by layout) and the deserialised one: the same samples,
    the same counted problems, the same estimate, bit for bit."""
    from payload_estimator.io.bag import read_bag
    from payload_estimator.pipeline.build import build_stream, builtin_description
    from payload_estimator.settings import settings_for_robot
    from payload_estimator.sim.bag_writer import write_simulated_bag
    from payload_estimator.sim.mujoco_sim import simulate

    run = simulate(robot="panda", payload="claw_hammer", duration=2.5, seed=5)
    settings = settings_for_robot("panda", use_joint_velocities=True)
    bag = write_simulated_bag(run, tmp_path / "bag", settings=settings)
    items = list(read_bag(bag, settings))

    def spoil(i, fn):
        kind, msg, t = items[i]
        msg = copy.deepcopy(msg)
        fn(msg)
        items[i] = (kind, msg, t)

    w_idx = [i for i, it in enumerate(items) if it[0] == "wrench"]
    j_idx = [i for i, it in enumerate(items) if it[0] == "joint_states"]
    spoil(w_idx[10], lambda m: setattr(m.wrench.force, "x", float("nan")))
    spoil(w_idx[20], lambda m: setattr(m.header, "frame_id", "elsewhere"))
    spoil(w_idx[21], lambda m: setattr(m.header, "frame_id", "/panda_link8"))
    spoil(j_idx[30], lambda m: setattr(m, "position", m.position[:-1]))
    spoil(j_idx[31], lambda m: setattr(m, "velocity", m.velocity[:0]))
    spoil(j_idx[32], lambda m: setattr(m, "effort", m.effort[:0]))  # a new layout, still good
    spoil(j_idx[40], lambda m: (setattr(m.header.stamp, "sec", 0), setattr(m.header.stamp, "nanosec", 0)))
    spoil(j_idx[50], lambda m: setattr(m, "name", [n.replace("panda", "arm") for n in m.name]))

    wrap = {"joint_states": cdr.SerializedJointState, "wrench": cdr.SerializedWrenchStamped}
    raw = [(kind, wrap[kind](serialised(typestore, msg)), t) for kind, msg, t in items]
    messages, serial = (build_stream(settings, builtin_description(settings)) for _ in range(2))
    accepted = {"messages": 0, "serialised": 0}
    for k in range(0, len(items), 20):  # 10 ms turns
        accepted["messages"] += sum(feed_many(messages, items[k:k + 20]).values())
        messages.process()
        accepted["serialised"] += sum(feed_many(serial, raw[k:k + 20]).values())
        serial.process()
    assert accepted["messages"] == accepted["serialised"] > 0.95 * len(items)
    assert messages.health.counts == serial.health.counts
    for reason in ("non_finite", "wrong_frame", "length_mismatch", "unstamped", "missing_joint"):
        assert serial.health.counts.get(reason, 0) >= 1, reason
    a, b = messages.update_estimate().estimate, serial.update_estimate().estimate
    assert a.samples_used == b.samples_used > 0
    np.testing.assert_array_equal(a.phi, b.phi)

    # bytes that are no message are counted, never raised
    good = raw[j_idx[60]][1].data
    assert feed_many(serial, [("joint_states", cdr.SerializedJointState(good[:-3]), 9.0),
                              ("wrench", cdr.SerializedWrenchStamped(b"\x00\x01\x00\x00" + bytes(8)), 9.0)]) == {
        "joint_states": 0, "wrench": 0, "imu": 0}
    assert serial.health.counts_for("joint_states")[MALFORMED] == 1
    assert serial.health.counts_for("wrench")[MALFORMED] == 1


# ------------------------------------------------ efforts (the wrench from joint torques)


def test_a_batch_reads_the_efforts_as_each_message_has_them(typestore):
    rng = np.random.default_rng(4)
    msgs = [joint_state(typestore, 50, int(rng.integers(0, 10**9)), PANDA_ARM, rng.normal(size=7), (),
                        rng.normal(size=7) * 30.0) for _ in range(11)]
    for little_endian in (True, False):
        blobs = [serialised(typestore, m, little_endian) for m in msgs]
        layout = cdr.joint_state_layout(blobs[0])
        stamps, q, dq, tau = layout.read_arrays(blobs, velocities=False, efforts=True)
        assert dq is None and tau.shape == (11, 7) and tau.flags.c_contiguous
        np.testing.assert_array_equal(tau, [m.effort for m in msgs])  # bit for bit
        np.testing.assert_array_equal(q, [m.position for m in msgs])
        assert layout.read_arrays(blobs)[3] is None  # read only when asked
    none = [serialised(typestore, joint_state(typestore, 1, k, PANDA_ARM, np.zeros(7), np.zeros(7)))
            for k in range(4)]
    assert cdr.joint_state_layout(none[0]).read_arrays(none, efforts=True)[3].shape == (4, 0)


@pytest.fixture(scope="module")
def joint_torque_items(tmp_path_factory, typestore):
    from payload_estimator.io.bag import read_bag
    from payload_estimator.settings import settings_for_robot
    from payload_estimator.sim.bag_writer import write_simulated_bag
    from payload_estimator.sim.mujoco_sim import simulate

    run = simulate(robot="panda", payload="claw_hammer", duration=2.5, seed=6)
    settings = settings_for_robot("panda", "joint_torques", arm_calibration="",
                                  joint_states_topic="/joint_states")
    bag = write_simulated_bag(run, tmp_path_factory.mktemp("jt") / "bag", settings=settings)
    return settings, [item for item in read_bag(bag, settings) if item[0] == "joint_states"]


def test_serialised_joint_torques_give_the_stream_what_messages_give(joint_torque_items, typestore):
    """Joint-torque mode: the efforts read in bulk from the bytes are the messages' own, bit for bit (the same
    estimate), and efforts missing or of the wrong length are counted alike (missing_effort)."""
    from payload_estimator.pipeline.build import build_stream, builtin_description
    from payload_estimator.pipeline.health import MISSING_EFFORT

    settings, items = joint_torque_items
    assert len(items) > 2000 and len(items[0][1].effort) == 7

    def spoil(i, fn):
        kind, msg, t = items[i]
        msg = copy.deepcopy(msg)
        fn(msg)
        items[i] = (kind, msg, t)

    items = list(items)
    for i in range(100, 130):  # a driver that stops sending efforts for a while
        spoil(i, lambda m: setattr(m, "effort", m.effort[:0]))
    spoil(300, lambda m: setattr(m, "effort", m.effort[:-1]))  # of the wrong length
    raw = [(kind, cdr.SerializedJointState(serialised(typestore, msg)), t) for kind, msg, t in items]
    messages, serial = (build_stream(settings, builtin_description(settings)) for _ in range(2))
    assert serial.needs_efforts and not serial.reads_wrench
    for k in range(0, len(items), 20):
        feed_many(messages, items[k:k + 20])
        messages.process()
        feed_many(serial, raw[k:k + 20])
        serial.process()
    assert messages.health.counts == serial.health.counts
    assert serial.health.counts_for("joint_states").get(MISSING_EFFORT) == 31
    a, b = messages.update_estimate().estimate, serial.update_estimate().estimate
    assert a.samples_used == b.samples_used > 0
    np.testing.assert_array_equal(a.phi, b.phi)


def test_joint_states_without_efforts_give_no_estimate(joint_torque_items, typestore):
    from payload_estimator.pipeline.build import build_stream, builtin_description
    from payload_estimator.pipeline.health import MISSING_EFFORT

    settings, items = joint_torque_items
    stream = build_stream(settings, builtin_description(settings))
    raw = []
    for kind, msg, t in items:
        msg = copy.deepcopy(msg)
        msg.effort = msg.effort[:0]
        raw.append((kind, cdr.SerializedJointState(serialised(typestore, msg)), t))
    for k in range(0, len(raw), 50):
        assert feed_many(stream, raw[k:k + 50])["joint_states"] == 0
        stream.process()
    assert stream.health.counts_for("joint_states")[MISSING_EFFORT] == len(raw)
    assert stream.update_estimate() is None
