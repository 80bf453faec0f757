"""The ROS message layer (``io.ros_factories``, ``io.ros_inbound``, ``io.ros_outbound``), with the real
ROS 2 Jazzy definitions that ``rosbags`` carries plus ours.

Outgoing builders must survive a CDR round trip with their values intact;
incoming adapters must push good messages, and count (never raise on) bad ones.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from payload_estimator.core.convergence import ConvergenceCriteria
from payload_estimator.core.inertia import from_ros_inertia_fields, to_ros_inertia_fields
from payload_estimator.io import ros_factories as factories
from payload_estimator.io import ros_inbound as inbound
from payload_estimator.io import ros_outbound as outbound
from payload_estimator.io.diagnostic_level import DiagnosticLevel
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.outputs.markers import estimate_markers
from payload_estimator.pipeline.build import build_stream, builtin_description
from payload_estimator.pipeline.playback import play
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

PAYLOAD = get_payload("claw_hammer")
PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def typestore():
    return ros_typestore()


@pytest.fixture(scope="module")
def make(typestore):
    return factories.rosbags_factory(typestore)


def roundtrip(typestore, msg):
    return typestore.deserialize_cdr(typestore.serialize_cdr(msg, msg.__msgtype__), msg.__msgtype__)


@pytest.fixture(scope="module")
def played():
    """A short simulated Panda run played through a stream: (run, stream, its final StreamEstimate)."""
    run = simulate(robot="panda", payload=PAYLOAD, duration=2.5, seed=4)
    # mass and COM are what these 2.5 s determine; converged means them here
    stream = stream_for_run(run, PAYLOAD.envelope, estimator="pmd", track_payload=False, converge_on="mass_com")
    assert stream.config.convergence == ConvergenceCriteria(inertia=False)
    play(stream, recording_from_run(run))
    return run, stream, stream.update_estimate()


# ------------------------------------------------------------------------ stamps


@pytest.mark.parametrize(
    "t, fields",
    [
        (0.0, {"sec": 0, "nanosec": 0}),
        (1.25, {"sec": 1, "nanosec": 250_000_000}),
        (-0.5, {"sec": -1, "nanosec": 500_000_000}),
        (-1e-10, {"sec": 0, "nanosec": 0}),  # rounds up to the next second
        (1.9999999999, {"sec": 2, "nanosec": 0}),
        (1_700_000_000.5, {"sec": 1_700_000_000, "nanosec": 500_000_000}),
    ],
)
def test_stamp_fields(t, fields):
    assert factories.sec_to_stamp_fields(t) == fields
    stamp = SimpleNamespace(**fields)
    assert factories.stamp_to_sec(stamp) == pytest.approx(t, abs=1e-9)


def test_stamp_fields_reject_non_finite_times():
    with pytest.raises(ValueError):
        factories.sec_to_stamp_fields(float("nan"))


# ---------------------------------------------------------------------- factory


def test_rosbags_factory_fills_every_field_not_given(typestore, make):
    marker = make("visualization_msgs/msg/Marker", {"ns": "com", "id": 3})
    back = roundtrip(typestore, marker)
    assert (back.ns, back.id, back.action) == ("com", 3, 0)
    assert back.pose.orientation.w == 1.0  # the definition's default, as rclpy has it
    assert back.texture.data.shape == (0,) and back.mesh_file.filename == ""  # Jazzy-only fields
    imu = make("sensor_msgs/msg/Imu", {})
    assert imu.orientation_covariance.shape == (9,) and not imu.orientation_covariance.any()
    status = make("diagnostic_msgs/msg/DiagnosticStatus", {"level": b"\x02"})
    assert roundtrip(typestore, status).level == 2


def test_rosbags_factory_refuses_unknown_fields_and_wrong_fixed_lengths(make):
    with pytest.raises(AttributeError, match="no field"):
        make("std_msgs/msg/String", {"text": "x"})
    with pytest.raises(ValueError, match="9"):
        make("sensor_msgs/msg/Imu", {"orientation_covariance": np.zeros(4)})


def test_rclpy_factory_imports_ros_lazily():
    try:
        import rclpy  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            factories.rclpy_factory()
        with pytest.raises(ImportError):
            factories.message_class("std_msgs/msg/String")
    else:  # pragma: no cover - only where ROS is sourced
        assert callable(factories.rclpy_factory())


# --------------------------------------------------------------------- outbound


def strict(typestore, make):
    """A factory that insists the builder names every top-level field of the type."""

    def build(typename, fields):
        names = {name for name, _ in typestore.fielddefs[typename][1]}
        assert set(fields) == names, f"{typename}: missing {sorted(names - set(fields))}"
        return make(typename, fields)

    return build


def test_payload_estimate_round_trip(typestore, make, played):
    _, stream, out = played
    est = out.estimate
    msg = outbound.payload_estimate_msg(strict(typestore, make), out, "ft_sensor", "panda_link8")
    back = roundtrip(typestore, msg)
    assert back.header.frame_id == "ft_sensor"
    assert (back.header.stamp.sec, back.header.stamp.nanosec) == tuple(factories.sec_to_stamp_fields(out.t).values())
    assert back.estimator == "pmd" and back.flange_frame == "panda_link8"
    assert back.mass == est.mass and est.mass == pytest.approx(PAYLOAD.mass, rel=0.02)
    np.testing.assert_array_equal([back.com.x, back.com.y, back.com.z], est.com)
    ros = to_ros_inertia_fields(est.params)
    assert back.inertia.m == ros["m"] and back.inertia.ixz == ros["ixz"] and back.inertia.izz == ros["izz"]
    np.testing.assert_array_equal(back.phi, est.phi)
    np.testing.assert_array_equal(back.phi_covariance.reshape(10, 10), est.covariance)
    assert back.mass_std == est.mass_std > 0
    np.testing.assert_array_equal([back.com_std.x, back.com_std.y, back.com_std.z], est.com_std)
    flange = to_ros_inertia_fields(out.params_in_flange)
    assert back.inertia_in_flange.m == flange["m"] and back.inertia_in_flange.com.z == flange["com"][2]
    assert back.bias_estimated is True
    np.testing.assert_array_equal([back.bias.force.x, back.bias.force.y, back.bias.force.z,
                                   back.bias.torque.x, back.bias.torque.y, back.bias.torque.z], est.bias)
    assert back.samples_used == est.samples_used > 0
    assert back.dynamism == est.dynamism and back.condition_number == est.condition_number
    np.testing.assert_array_equal(back.residual_rms, est.residual_rms)
    assert back.inertia_identifiable == est.inertia_identifiable
    assert back.physically_consistent == est.physically_consistent
    assert back.converged == out.converged
    assert back.status == ("converged" if out.converged else out.reason)


def test_payload_estimate_without_covariance_or_bias(typestore, make, played):
    _, _, out = played
    bare = dataclasses.replace(out, converged=False, reason="too few samples",
                               estimate=dataclasses.replace(out.estimate, covariance=None, bias=None))
    back = roundtrip(typestore, outbound.payload_estimate_msg(make, bare, "ft_sensor", "panda_link8"))
    assert np.isnan(back.phi_covariance).all() and np.isnan(back.mass_std) and np.isnan(back.com_std.x)
    assert back.bias_estimated is False and back.bias.force.z == 0.0
    assert back.converged is False and back.status == "too few samples"


def test_inertia_stamped_is_about_the_com(typestore, make, make_body):
    body = make_body()
    back = roundtrip(typestore, outbound.inertia_stamped_msg(make, body, "ft_sensor", 12.5))
    ros = to_ros_inertia_fields(body)
    i = back.inertia
    assert (back.header.frame_id, back.header.stamp.sec, back.header.stamp.nanosec) == ("ft_sensor", 12, 500_000_000)
    assert [i.m, i.com.x, i.com.y, i.com.z] == [ros["m"], *ros["com"]]
    assert [i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz] == [ros[k] for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
    again = from_ros_inertia_fields(i.m, (i.com.x, i.com.y, i.com.z), i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz)
    np.testing.assert_allclose(again.phi, body.phi, rtol=1e-12, atol=1e-15)


def test_marker_array_deletes_then_adds_each_spec(typestore, make, rng):
    points = rng.normal(size=(12, 3)) * 0.02
    specs = estimate_markers(PAYLOAD.params, points, rng.uniform(size=12))
    assert [s.kind for s in specs] == ["sphere", "cube", "sphere_list"]
    back = roundtrip(typestore, outbound.marker_array_msg(make, specs, "ft_sensor", 3.0))
    first, *adds = back.markers
    assert first.action == 3  # DELETEALL
    assert len(adds) == len(specs)
    for m, spec in zip(adds, specs):
        assert m.action == 0 and m.frame_locked and m.header.frame_id == "ft_sensor" and m.header.stamp.sec == 3
        assert (m.ns, m.id) == (spec.ns, spec.marker_id)
        assert m.type == {"sphere": 2, "cube": 1, "sphere_list": 7}[spec.kind]
        np.testing.assert_allclose([m.pose.position.x, m.pose.position.y, m.pose.position.z], spec.position,
                                   atol=1e-12)  # m
        o = m.pose.orientation
        np.testing.assert_allclose([o.x, o.y, o.z, o.w], spec.orientation_xyzw, atol=1e-12)  # unit quaternion
        np.testing.assert_allclose([m.scale.x, m.scale.y, m.scale.z], spec.scale)
        np.testing.assert_allclose([m.color.r, m.color.g, m.color.b, m.color.a], spec.color, rtol=1e-6)  # float32
        assert len(m.points) == len(spec.points) and len(m.colors) == len(spec.colors)
    cloud = adds[2]
    np.testing.assert_allclose([[p.x, p.y, p.z] for p in cloud.points], points)
    np.testing.assert_allclose([[c.r, c.g, c.b, c.a] for c in cloud.colors], specs[2].colors, rtol=1e-6)
    with pytest.raises(ValueError, match="marker kind"):
        outbound.marker_array_msg(make, [dataclasses.replace(specs[0], kind="arrow")], "f", 0.0)


def _levels(typestore, make, diagnostics):
    back = roundtrip(typestore, outbound.diagnostic_array_msg(make, diagnostics, "payload_estimator", 7.0))
    assert back.header.stamp.sec == 7
    assert [s.name for s in back.status] == [
        "payload_estimator: inputs", "payload_estimator: rejected input", "payload_estimator: estimate"]
    assert all(s.hardware_id == "payload_estimator" for s in back.status)
    return [s.level for s in back.status], back.status


def test_diagnostics_levels(typestore, make, played):
    OK, WARN, STALE = DiagnosticLevel.OK, DiagnosticLevel.WARN, DiagnosticLevel.STALE
    run, stream, _ = played
    now = stream.health.snapshot()["streams"]["joint_states"]["last_wall_time"]
    # a clean, converged run, seen right after its last sample
    levels, status = _levels(typestore, make, stream.diagnostics(now))
    assert levels == [OK, OK, OK]
    values = {kv.key: kv.value for kv in status[0].values}
    assert values["stale"] == "none" and float(values["joint_states rate (Hz)"]) == pytest.approx(1000, rel=0.01)
    # the same stream a minute later: every input stale
    levels, status = _levels(typestore, make, stream.diagnostics(now + 60.0))
    assert levels == [STALE, WARN, OK] and "joint_states" in status[0].message
    # input rejected since the last publication
    diag = dict(stream.diagnostics(now), counts={"non_finite": 5}, recent_counts={"non_finite": 2})
    levels, status = _levels(typestore, make, diag)
    assert levels == [OK, WARN, OK] and "2 non_finite" in status[1].message
    assert {kv.key: kv.value for kv in status[1].values} == {"total non_finite": "5", "recent non_finite": "2"}
    # old problems alone do not warn (a snapshot cannot tell when they happened)
    assert _levels(typestore, make, dict(diag, recent_counts={}))[0][1] == OK
    # the payload followed (track_payload): its counts shown, a contact named in the message
    tracked = dict(stream.diagnostics(now), payload_changes=2, contacts=3, contact_now=True, held_out_samples=41)
    levels, status = _levels(typestore, make, tracked)
    values = {kv.key: kv.value for kv in status[2].values}
    assert values["payload changes"] == "2" and values["contacts"] == "3" and values["held out samples"] == "41"
    assert status[2].message.startswith("contact: samples held out")
    assert "payload changes" not in {kv.key for kv in _levels(typestore, make, stream.diagnostics(now))[1][2].values}
    # one stream stale: WARN, not STALE
    partial = dict(stream.diagnostics(now), stale_streams=["wrench"])
    assert _levels(typestore, make, partial)[0][:2] == [WARN, WARN]
    # a fresh stream: nothing received, no estimate
    fresh = stream_for_run(run, estimator="ols", track_payload=False)
    levels, status = _levels(typestore, make, fresh.diagnostics(0.0))
    assert levels == [STALE, WARN, WARN] and status[2].message == "no estimate yet"


def test_recent_counts():
    assert outbound.recent_counts({"gap": 2, "stale": 1}, {"gap": 5, "stale": 1, "saturated": 3}) == {
        "gap": 3, "saturated": 3}


def test_string_round_trip(typestore, make):
    assert roundtrip(typestore, outbound.string_msg(make, "<robot name='x'/>")).data == "<robot name='x'/>"


# ---------------------------------------------------------------------- inbound


@pytest.fixture
def panda_stream():
    settings = settings_for_robot("panda")  # franka_stiffness: wrench in panda_link8
    return build_stream(settings, builtin_description(settings))


def js(make, t, names, positions, velocities=()):
    return outbound.joint_state_msg(make, t, names, positions, velocities)


def test_joint_states_in_any_order_with_fingers_are_used(make, panda_stream):
    rng = np.random.default_rng(1)
    order = rng.permutation(7)
    names = [PANDA_ARM[k] for k in order] + ["panda_finger_joint1", "panda_finger_joint2"]
    q = np.linspace(-0.5, 0.5, 7)
    assert inbound.feed(panda_stream, "joint_states", js(make, 1.0, names, np.r_[q[order], 0.04, np.nan]), 1.0)
    wrench = outbound.wrench_stamped_msg(make, 1.0, "panda_link8", [0, 0, -5], [0, 0, 0])
    assert inbound.feed(panda_stream, "wrench", wrench, 1.0)
    panda_stream.process()
    assert panda_stream.health.counts == {}  # a NaN finger does not matter
    assert panda_stream.health.snapshot()["streams"]["joint_states"]["samples"] == 1


def test_bad_joint_states_are_counted_never_raised(make, panda_stream):
    s = panda_stream
    assert not inbound.feed(s, "joint_states", js(make, 1.0, PANDA_ARM, np.zeros(6)), 1.0)  # 7 names, 6 positions
    assert not inbound.feed(s, "joint_states", js(make, 1.001, PANDA_ARM[:6], np.zeros(6)), 1.001)  # joint 7 missing
    assert inbound.feed(s, "joint_states", js(make, 1.002, PANDA_ARM, np.r_[np.nan, np.zeros(6)]), 1.002)
    garbage = SimpleNamespace(header=SimpleNamespace(stamp=SimpleNamespace(sec=1, nanosec=3_000_000)),
                              name=PANDA_ARM, position=["a"] * 7, velocity=[])
    assert not inbound.feed(s, "joint_states", garbage, 1.003)
    assert not inbound.feed(s, "joint_states", None, 1.004)
    s.process()
    assert s.health.counts_for("joint_states") == {
        "length_mismatch": 1, "missing_joint": 1, "non_finite": 1, "malformed_message": 2}


def test_unstamped_messages_use_the_receive_time_or_are_dropped(make, panda_stream):
    s = panda_stream
    assert inbound.feed(s, "joint_states", js(make, 0.0, PANDA_ARM, np.zeros(7)), wall_time=42.0)
    assert s.health.snapshot()["streams"]["joint_states"]["last_stamp"] == 42.0
    assert not inbound.feed(s, "joint_states", js(make, 0.0, PANDA_ARM, np.zeros(7)))
    assert s.health.counts == {"unstamped": 2}


def test_missing_velocities_count_when_the_stream_needs_them(make):
    settings = settings_for_robot("panda", use_joint_velocities=True)
    s = build_stream(settings, builtin_description(settings))
    assert not inbound.feed(s, "joint_states", js(make, 1.0, PANDA_ARM, np.zeros(7)), 1.0)
    assert inbound.feed(s, "joint_states", js(make, 1.001, PANDA_ARM, np.zeros(7), np.zeros(7)), 1.001)
    assert s.health.counts == {"length_mismatch": 1}


def test_wrenches_in_a_wrong_frame_or_with_nan_are_counted(make, panda_stream):
    s = panda_stream
    w = outbound.wrench_stamped_msg
    assert not inbound.feed(s, "wrench", w(make, 1.0, "panda_link0", [1, 2, 3], [0, 0, 0]), 1.0)
    assert not inbound.feed(s, "wrench", w(make, 1.001, "panda_link8", [np.nan, 2, 3], [0, 0, 0]), 1.001)
    assert inbound.feed(s, "wrench", w(make, 1.002, "/panda_link8", [1, 2, 3], [0, 0, 0]), 1.002)  # ROS 1-style slash
    assert inbound.feed(s, "wrench", w(make, 1.003, "", [1, 2, 3], [0, 0, 0]), 1.003)  # no frame: trusted
    assert not inbound.feed(s, "wrench", SimpleNamespace(header=None), 1.004)
    assert s.health.counts_for("wrench") == {"wrong_frame": 1, "non_finite": 1, "malformed_message": 1}


def test_imu_without_gyro_or_accelerometer_is_skipped_and_counted(make):
    run = simulate(robot="xarm7", payload=PAYLOAD, duration=0.05, seed=0)
    settings = settings_for_robot("xarm7", motion_source="imu", imu_frame=run.imu_frame)
    s = build_stream(settings, run.urdf)
    imu = outbound.imu_msg(make, 1.0, run.imu_frame, [0, 0, 0.1], [0, 0, 9.81])
    assert imu.orientation_covariance[0] == -1  # no orientation: irrelevant here
    assert inbound.feed(s, "imu", imu, 1.0)
    for field in ("angular_velocity_covariance", "linear_acceleration_covariance"):
        absent = outbound.imu_msg(make, 1.001, run.imu_frame, [0, 0, 0.1], [0, 0, 9.81])
        getattr(absent, field)[0] = -1.0
        assert not inbound.feed(s, "imu", absent, 1.001)
    assert not inbound.feed(s, "imu", outbound.imu_msg(make, 1.002, "elsewhere", [0, 0, 0], [0, 0, 9.8]), 1.002)
    assert s.health.counts_for("imu") == {"imu_field_absent": 2, "wrong_frame": 1}


def test_imu_is_ignored_when_the_stream_does_not_use_one(make, panda_stream):
    absent = outbound.imu_msg(make, 1.0, "imu_link", [0, 0, 0], [0, 0, 9.8])
    absent.linear_acceleration_covariance[0] = -1.0
    assert not inbound.feed(panda_stream, "imu", absent, 1.0)
    assert panda_stream.health.counts == {}


def test_feed_rejects_unknown_kinds(make, panda_stream):
    with pytest.raises(ValueError, match="unknown input kind"):
        inbound.feed(panda_stream, "odometry", None)


@pytest.mark.slow
def test_feed_many_equals_feeding_one_by_one(tmp_path):
    """Batching consecutive messages changes nothing but the cost: same samples, same counts, same estimate."""
    from payload_estimator.io.bag import read_bag
    from payload_estimator.io.ros_inbound import feed, feed_many
    from payload_estimator.pipeline.build import build_stream, builtin_description
    from payload_estimator.settings import settings_for_robot
    from payload_estimator.sim.bag_writer import write_simulated_bag
    from payload_estimator.sim.mujoco_sim import simulate

    run = simulate(robot="xarm7", payload="drill", duration=2.5, seed=3)
    settings = settings_for_robot("xarm7", payload_shape="box:0.2,0.08,0.24@0.01,0,0.12")
    bag = write_simulated_bag(run, tmp_path / "bag", settings=settings)
    items = [(kind, msg, t) for kind, msg, t in read_bag(bag, settings)]
    # spoil a few messages: NaN wrench, a wrong frame, a short joint state, an unstamped one
    import copy

    def spoil(i, fn):
        kind, msg, t = items[i]
        msg = copy.deepcopy(msg)
        fn(msg)
        items[i] = (kind, msg, t)

    w_idx = [i for i, it in enumerate(items) if it[0] == "wrench"]
    j_idx = [i for i, it in enumerate(items) if it[0] == "joint_states"]
    spoil(w_idx[10], lambda m: setattr(m.wrench.force, "x", float("nan")))
    spoil(w_idx[20], lambda m: setattr(m.header, "frame_id", "elsewhere"))
    spoil(j_idx[30], lambda m: setattr(m, "position", m.position[:-1]))
    spoil(j_idx[40], lambda m: (setattr(m.header.stamp, "sec", 0), setattr(m.header.stamp, "nanosec", 0)))

    one, many = (build_stream(settings, builtin_description(settings)) for _ in range(2))
    accepted_one = 0
    for k in range(0, len(items), 20):
        chunk = items[k:k + 20]
        accepted_one += sum(bool(feed(one, kind, msg, t)) for kind, msg, t in chunk)
        one.process()
    accepted_many = 0
    for k in range(0, len(items), 20):
        accepted_many += sum(feed_many(many, items[k:k + 20]).values())
        many.process()
    assert accepted_one == accepted_many
    assert one.health.counts == many.health.counts
    for reason in ("non_finite", "wrong_frame", "length_mismatch", "unstamped"):
        assert one.health.counts.get(reason, 0) >= 1
    a, b = one.update_estimate().estimate, many.update_estimate().estimate
    np.testing.assert_array_equal(a.phi, b.phi)
