"""The estimator node's lifecycle without ROS: :class:`payload_estimator.supervision.supervisor.Supervisor`.

Everything the rclpy node decides is decided by the supervisor; here it runs
on real streams built from the package's own Panda URDF, fed a simulated run
as real ROS message objects (the ``rosbags`` type store has the Jazzy message
classes, and ours: :func:`rosbags_factory`), turn by turn as the node's 100 Hz
timer feeds it. Receive times are the run's stamps (100 s + run time), which
stand in for the node's monotonic clock.

The one stand-in is :class:`Tf2StandIn`, for the node's tf2 buffer: tf2
cannot exist without ROS. The node's own lookup (a few lines around
``tf2_ros.Buffer.lookup_transform``) runs in ``test/ros/test_estimator_node.py``.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.diagnostic_level import DiagnosticLevel
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.outputs.apply import ApplyRequest
from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.urdf import urdf_inertial
from payload_estimator.pipeline.health import BUFFER_OVERFLOW
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import LiveRun
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.supervision.estimate_handover import ApplyDecision
from payload_estimator.supervision.frames import extra_frame
from payload_estimator.supervision.status import CONFIGURATION_ERROR, RUNNING, WAITING_DESCRIPTION, WAITING_FRAMES
from payload_estimator.supervision.supervisor import TF_RETRY_S, TF_WAIT_S, Supervisor

PAYLOAD = get_payload("claw_hammer")
T0 = 100.0
"""Stamps and receive times: 100 s + run time."""
TURN = 0.01
OK, WARN, ERROR, STALE = DiagnosticLevel


# ------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def typestore():
    return ros_typestore()


@pytest.fixture(scope="module")
def make(typestore):
    return ros_factories.rosbags_factory(typestore)


@pytest.fixture(scope="module")
def run():
    """A simulated Panda holding a claw hammer, 4 s of Nadeau et al.'s wrist motion."""
    return simulate(robot="panda", payload=PAYLOAD, duration=4.0, noise="low", seed=3, imu=False)


@pytest.fixture(scope="module")
def messages(run, make):
    """The run as franka_ros2 publishes it: ``(kind, msg, receive time)`` in arrival order, with
    ``sensor_msgs/JointState`` and the stiffness-frame ``geometry_msgs/WrenchStamped`` (sign -1)."""
    live = LiveRun(run, settings_for_robot("panda"), loop=False)
    assert np.array_equal(run.joint_t, run.wrench_t)
    names = list(run.joint_names)
    items = []
    for i, t in enumerate(run.joint_t):
        t = T0 + float(t)
        items.append(("joint_states", ros_outbound.joint_state_msg(make, t, names, run.joint_q[i], run.joint_dq[i]), t))
        items.append(("wrench", ros_outbound.wrench_stamped_msg(
            make, t, live.wrench_frame_id, live.wrench_force[i], live.wrench_torque[i]), t))
    return items


class Tf2StandIn:
    """Stands in for the node's tf2 buffer (tf2 cannot exist without ROS): the transforms
    "published" to it so far, relative to whatever parent is asked for."""

    def __init__(self) -> None:
        self.transforms: dict[str, tuple] = {}
        self.lookups: list[tuple[list[str], str]] = []
        self.released = 0

    def publish(self, frame: str, xyz, quaternion_xyzw=(0.0, 0.0, 0.0, 1.0)) -> None:
        self.transforms[frame] = (xyz, quaternion_xyzw)

    def lookup(self, frames: list[str], parent: str):
        self.lookups.append((list(frames), parent))
        found = [extra_frame(f, parent, *self.transforms[f]) for f in frames if f in self.transforms]
        return found, [f for f in frames if f not in self.transforms]

    def release(self) -> None:
        self.released += 1


def make_supervisor(make, tf: Tf2StandIn | None = None, **parameters) -> Supervisor:
    """A supervisor with the Panda preset's parameters (``parameters`` override them), as the node makes it."""
    values = {**settings_for_robot("panda").to_dict(), **parameters}
    return Supervisor(values, make, name="payload_estimator", lookup=tf.lookup if tf else None,
                      release_lookup=tf.release if tf else None, resolve=lambda topic: "/" + topic.lstrip("/"))


def drive(sup: Supervisor, items, start: float, stop: float, overflow=None):
    """Turns every 10 ms over (start, stop] with the items received in each; returns ``[(t, outputs)]``
    of the turns that returned outputs."""
    out = []
    walls = np.array([w for _, _, w in items])
    n = int(round((stop - start) / TURN))
    a = int(np.searchsorted(walls, start, side="right"))
    for k in range(1, n + 1):
        t = round(start + k * TURN, 9)
        b = int(np.searchsorted(walls, t + 1e-9, side="right"))
        result = sup.tick(t, items[a:b], overflow if k == 1 else None)
        a = b
        if result is not None:
            out.append((t, result))
    return out


def statuses(diagnostic_array) -> dict:
    return {s.name.split(": ", 1)[1]: s for s in diagnostic_array.status}


def values(status) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def roundtrip(typestore, msg):
    return typestore.deserialize_cdr(typestore.serialize_cdr(msg, msg.__msgtype__), msg.__msgtype__)


# ------------------------------------------------------------ status transitions


def test_waiting_for_the_description_then_running(make, run, messages, caplog):
    caplog.set_level(logging.INFO, "payload_estimator")
    sup = make_supervisor(make)
    assert sup.status.state == WAITING_DESCRIPTION and "/robot_description" in sup.status.detail
    assert "waiting for the robot model on /robot_description" in caplog.text
    # inputs before the model: dropped, counted, nothing published
    assert sup.tick(T0, messages[:40]) is None
    assert sup.stream is None and sup.dropped_while_not_running == 40
    sup.on_description(run.urdf)
    assert "robot_description received" in caplog.text
    assert sup.tick(T0 + 0.01, messages[40:60]) is None
    assert sup.status.state == RUNNING and sup.status.level == OK
    stream = sup.stream
    assert stream.joint_names == tuple(run.joint_names) and sup.dropped_while_not_running == 40
    assert stream.health.snapshot()["streams"]["joint_states"]["samples"] == 10  # fed in the turn it was built
    assert "estimating with pmd in panda_link8 (franka_stiffness wrench from /" in caplog.text
    # the latched description again changes nothing; a new one rebuilds
    sup.on_description(run.urdf)
    sup.tick(T0 + 0.02, [])
    assert sup.stream is stream
    sup.on_description(run.urdf + "\n")
    assert "robot_description changed: the estimation restarts" in caplog.text
    sup.tick(T0 + 0.03, [])
    assert sup.status.state == RUNNING and sup.stream is not stream


def test_builtin_description_runs_at_the_first_turn(make):
    sup = make_supervisor(make, use_builtin_description=True)
    assert sup.builtin_description and sup.stream is None
    sup.tick(0.0, [])
    assert sup.status.state == RUNNING and "panda_link8" in sup.description
    assert values(statuses(sup.diagnostics(0.0, 0.0))["node"])["robot_description"] == "built-in"


def test_frames_the_urdf_lacks_come_from_tf2_when_it_answers(make, run, messages, caplog):
    caplog.set_level(logging.INFO, "payload_estimator")
    tf = Tf2StandIn()
    sup = make_supervisor(make, tf, sensor_frame="tool_ft", estimator="rls")
    sup.on_description(run.urdf)
    sup.tick(T0, [])
    assert sup.status.state == WAITING_FRAMES and sup.status.detail == "tool_ft" and sup.status.level == WARN
    assert tf.lookups == [(["tool_ft"], "panda_link8")]
    assert "frames not in robot_description: tool_ft; looking them up in tf2 relative to panda_link8" in caplog.text
    assert sup.tick(T0 + 1.0, messages[:30]) is None  # still waiting: dropped
    assert sup.dropped_while_not_running == 30 and len(tf.lookups) == 2
    tf.publish("tool_ft", (0.0, 0.0, 0.05), (0.0, 0.0, math.sin(0.25), math.cos(0.25)))  # 0.5 rad about z
    sup.tick(T0 + 1.01, [])
    assert sup.status.state == RUNNING and sup.frames_from_tf == ["tool_ft"]
    assert np.allclose(sup.stream.p_flange_sensor, [0, 0, 0.05])
    assert np.allclose(sup.stream.R_flange_sensor, Rotation.from_euler("z", 0.5).as_matrix())
    assert tf.released == 1  # the node stops listening to /tf
    assert "frames from tf2: tool_ft" in caplog.text
    node = values(statuses(sup.diagnostics(T0 + 1.01, 7.0))["node"])
    assert node["frames from tf2"] == "tool_ft" and node["inputs dropped while not running"] == "30"


def test_without_tf2_the_sensor_frame_is_attached_to_the_flange_after_the_wait(make, run, caplog):
    tf = Tf2StandIn()
    sup = make_supervisor(make, tf, sensor_frame="tool_ft", sensor_xyz=[0.0, 0.0, 0.07], estimator="rls")
    sup.on_description(run.urdf)
    sup.tick(10.0, [])
    sup.tick(10.0 + TF_WAIT_S - 0.01, [])
    assert sup.status.state == WAITING_FRAMES
    sup.tick(10.0 + TF_WAIT_S, [])
    assert sup.status.state == RUNNING and sup.frames_from_tf == []
    assert np.allclose(sup.stream.p_flange_sensor, [0, 0, 0.07]) and np.allclose(sup.stream.R_flange_sensor, np.eye(3))
    assert "sensor frame 'tool_ft' is neither in robot_description nor in tf2: attached to 'panda_link8'" in caplog.text
    assert tf.released == 1


@pytest.mark.parametrize("parameters, says", [
    ({"payload_shape": "box:0,0,0@0,0,0"}, "box sizes must be 3 positive lengths"),
    ({"joint_names": [f"arm_joint{i}" for i in range(1, 8)]}, "joints not in the robot description"),
    ({"cutoff_hz": 900.0}, "cutoff_hz"),
])
def test_a_stream_that_cannot_be_built_is_a_configuration_error_until_fixed(make, run, messages, parameters, says,
                                                                            caplog):
    tf = Tf2StandIn()
    sup = make_supervisor(make, tf, **parameters)
    sup.on_description(run.urdf)
    sup.tick(T0, messages[:10])
    assert sup.status.state == CONFIGURATION_ERROR and sup.status.level == ERROR
    assert sup.status.detail.startswith("cannot build the estimator: ") and says in sup.status.detail
    assert "inputs are dropped until the configuration is fixed" in caplog.text
    # nothing missing in tf2: not retried by itself, inputs dropped and counted
    sup.tick(T0 + TF_RETRY_S + 1.0, messages[10:20])
    assert sup.status.state == CONFIGURATION_ERROR and sup.dropped_while_not_running == 20 and tf.lookups == []
    node = statuses(sup.diagnostics(T0, 0.0))["node"]
    assert node.level == ERROR and says in node.message
    # fixed at run time: rebuilt at the next turn
    sup.parameters_changed(settings_for_robot("panda").to_dict())
    sup.tick(T0 + TF_RETRY_S + 1.01, [])
    assert sup.status.state == RUNNING


def test_a_frame_that_exists_nowhere_is_retried(make, run, caplog):
    tf = Tf2StandIn()
    sup = make_supervisor(make, tf, wrench_source="ft_sensor", wrench_frame="no_such_frame",
                          sensor_frame="panda_link8", estimator="rls")
    sup.on_description(run.urdf)
    sup.tick(0.0, [])
    assert sup.status.state == WAITING_FRAMES and sup.status.detail == "no_such_frame"
    sup.tick(TF_WAIT_S, [])
    assert sup.status.state == CONFIGURATION_ERROR
    assert "no_such_frame" in sup.status.detail and "not in robot_description nor in tf2" in sup.status.detail
    looked = len(tf.lookups)
    sup.tick(TF_WAIT_S + TF_RETRY_S - 0.01, [])  # not yet
    assert len(tf.lookups) == looked
    sup.tick(TF_WAIT_S + TF_RETRY_S, [])  # looks again, still nothing
    assert len(tf.lookups) == looked + 1 and sup.status.state == CONFIGURATION_ERROR
    assert caplog.text.count("cannot build the estimator") == 1  # the same error is logged once
    tf.publish("no_such_frame", (0.0, 0.0, 0.01))
    sup.tick(TF_WAIT_S + 2 * TF_RETRY_S, [])
    assert sup.status.state == RUNNING and sup.frames_from_tf == ["no_such_frame"]


def test_invalid_parameters_then_fixed(make):
    sup = make_supervisor(make, use_builtin_description=True, estimator="magic")
    assert sup.settings is None and sup.status.state == CONFIGURATION_ERROR
    assert sup.status.detail.startswith("invalid parameters") and "estimator" in sup.status.detail
    sup.tick(0.0, [])
    assert sup.stream is None
    assert "estimator" in Supervisor.check_parameters({**settings_for_robot("panda").to_dict(), "estimator": "x"})
    assert Supervisor.check_parameters(settings_for_robot("panda").to_dict()) is None
    refused = sup.apply(dry_run=True)
    assert not refused.success and refused.message.startswith("refused: configuration error: invalid parameters")
    sup.parameters_changed({**settings_for_robot("panda").to_dict(), "use_builtin_description": True,
                            "estimator": "rls"})
    sup.tick(0.01, [])
    assert sup.status.state == RUNNING and sup.settings.estimator == "rls"


def test_rebuild_on_a_rebuild_parameter_not_on_a_live_one(make, run, messages, caplog):
    caplog.set_level(logging.INFO, "payload_estimator")
    sup = make_supervisor(make, estimator="rls")
    sup.on_description(run.urdf)
    drive(sup, messages, T0, T0 + 1.0)
    stream = sup.stream
    samples = stream.estimator.samples_used
    assert samples > 0
    base = settings_for_robot("panda", estimator="rls").to_dict()
    sup.parameters_changed({**base, "max_payload_mass": 2.0})  # live
    assert "parameters changed: max_payload_mass" in caplog.text and "restarts" not in caplog.text
    drive(sup, messages, T0 + 1.0, T0 + 1.2)
    assert sup.stream is stream and sup.settings.max_payload_mass == 2.0
    assert stream.estimator.samples_used > samples
    sup.parameters_changed({**base, "max_payload_mass": 2.0})  # no change at all
    sup.parameters_changed({**base, "max_payload_mass": 2.0, "estimator": "nope"})  # invalid: ignored
    assert sup.settings.estimator == "rls"
    sup.parameters_changed({**base, "max_payload_mass": 2.0, "cutoff_hz": 8.0})  # rebuild
    assert "parameters changed: cutoff_hz; the estimation restarts" in caplog.text
    drive(sup, messages, T0 + 1.2, T0 + 1.7)  # the new filters settle for 0.36 s first
    assert sup.stream is not stream and sup.stream.config.cutoff_hz == 8.0
    assert 0 < sup.stream.estimator.samples_used < samples


# ----------------------------------------------------------------- the loop


@pytest.mark.parametrize("rate_hz", [10.0, 25.0])
@pytest.mark.slow
def test_an_estimate_is_published_at_the_publish_rate(typestore, make, run, messages, rate_hz):
    """A simulated run fed as messages, one turn per 10 ms: outputs every 100/rate_hz turns, from
    the estimate the stream solves, as the messages the node publishes."""
    sup = make_supervisor(make, payload_shape=format_shape_spec(PAYLOAD.envelope), publish_rate_hz=rate_hz)
    sup.on_description(run.urdf)
    outputs = drive(sup, messages, T0 - TURN, T0 + 4.0)
    every = int(round(1.0 / (rate_hz * TURN)))
    turns = np.round((np.array([t for t, _ in outputs]) - T0) / TURN).astype(int)
    assert len(outputs) > 0.8 * 4.0 * rate_hz
    # at each multiple of the publish period after the first turn (turn 0)
    assert np.all(np.diff(turns) == every) and np.all(turns % every == 0)
    t, last = outputs[-1]
    est = last.result.estimate
    assert sup.last_output is last.result and est.samples_used > 300  # 4 s at estimator_rate_hz
    assert est.mass == pytest.approx(PAYLOAD.mass, rel=0.03)
    # the messages, through a CDR round trip (the real ROS definitions)
    msg = roundtrip(typestore, last.estimate)
    assert msg.header.frame_id == "panda_link8" and msg.flange_frame == "panda_link8" and msg.estimator == "pmd"
    assert msg.mass == est.mass and msg.samples_used == est.samples_used
    assert msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 == pytest.approx(last.result.t, abs=1e-6)
    inertia = roundtrip(typestore, last.inertia)
    assert inertia.inertia.m == est.mass and inertia.header.frame_id == "panda_link8"
    markers = roundtrip(typestore, last.markers)
    assert markers.markers[0].action == 3  # DELETEALL, then the estimate's markers
    cloud = [m for m in markers.markers if m.ns == "point_masses"]
    assert len(cloud) == 1 and len(cloud[0].points) == len(est.extras["points_in_sensor"])
    np.testing.assert_allclose([[p.x, p.y, p.z] for p in cloud[0].points], est.extras["points_in_sensor"])
    # ~/urdf_inertial: only estimates that may be handed over; the first of them, then only when it
    # changed noticeably or converged
    urdf = [o.urdf_inertial for _, o in outputs if o.urdf_inertial is not None]
    may = [o for _, o in outputs if check_handover(o.result.estimate)]
    assert may and may[0].urdf_inertial is not None and 1 <= len(urdf) < len(outputs)
    assert all(check_handover(o.result.estimate) for _, o in outputs if o.urdf_inertial is not None)
    newest = [o for _, o in outputs if o.urdf_inertial is not None][-1]
    text = roundtrip(typestore, newest.urdf_inertial).data
    assert text.count("<inertial>") == 1
    assert text == urdf_inertial(newest.result.params_in_flange, frame="panda_link8")


def test_reset_and_pause(make, run, messages, caplog):
    caplog.set_level(logging.INFO, "payload_estimator")
    sup = make_supervisor(make, estimator="rls")
    assert sup.reset() == (False, f"nothing to reset: {sup.status.message}")
    assert sup.pause(True)[0]  # before the stream exists: the stream is built paused
    sup.on_description(run.urdf)
    outputs = drive(sup, messages, T0, T0 + 1.0)
    assert sup.stream.paused and sup.stream.estimator.samples_used == 0 and outputs == []
    ok, message = sup.pause(False)
    assert ok and message == "resumed: new data enter the estimate" and message in caplog.text
    outputs = drive(sup, messages, T0 + 1.0, T0 + 2.0)
    used = sup.stream.estimator.samples_used  # what the estimate holds when it is paused
    assert used >= outputs[-1][1].result.estimate.samples_used > 0
    ok, message = sup.pause(True)
    assert ok and message == "paused: the estimate is frozen (inputs are still checked)"
    frozen = drive(sup, messages, T0 + 2.0, T0 + 2.5)
    assert len(frozen) == 5 and {o.result.estimate.samples_used for _, o in frozen} == {used}  # still published
    assert sup.stream.diagnostics(T0 + 2.5)["paused"] is True
    sup.pause(False)
    assert sup.reset() == (True, "estimate reset: estimating from new data")
    assert sup.last_output is None and sup.stream.estimator.samples_used == 0
    again = drive(sup, messages, T0 + 2.5, T0 + 3.5)
    assert again and again[-1][1].result.estimate.samples_used < used
    may = [o for _, o in again if check_handover(o.result.estimate)]
    assert not may or may[0].urdf_inertial is not None  # republished from scratch


def test_queue_overflow_is_counted_and_reported(make, run, messages):
    sup = make_supervisor(make, estimator="rls")
    sup.tick(T0, messages[:10], {"wrench": 4})  # not running yet: reported by the node status only
    sup.on_description(run.urdf)
    drive(sup, messages, T0, T0 + 0.5, overflow={"wrench": 12, "imu": 0})
    assert sup.stream.health.counts == {BUFFER_OVERFLOW: 12}
    node = statuses(sup.diagnostics(T0 + 0.5, 0.0))["node"]
    assert node.level == WARN and "input queue overflowed: 16 wrench" in node.message
    assert values(node)["queue overflow wrench"] == "16" and "queue overflow imu" not in values(node)
    after = statuses(sup.diagnostics(T0 + 0.5, 1.0))
    assert after["node"].level == OK  # reported once


def test_diagnostics(typestore, make, run, messages):
    sup = make_supervisor(make, estimator="rls")
    waiting = roundtrip(typestore, sup.diagnostics(T0, 12.5, queue_length=3))
    assert (waiting.header.stamp.sec, waiting.header.stamp.nanosec) == (12, 500_000_000)
    assert [s.name for s in waiting.status] == ["payload_estimator: node"]
    node = waiting.status[0]
    assert node.level == WARN and node.message.startswith("waiting for robot_description: on /robot_description")
    assert values(node) == {"state": "waiting for robot_description", "robot": "panda",
                            "robot_description": "/robot_description", "frames from tf2": "none",
                            "inputs dropped while not running": "0", "queue length": "3",
                            "estimate stale": "no", "estimate age (s)": "no estimate"}
    sup.on_description(run.urdf)
    drive(sup, messages, T0, T0 + 2.0)
    running = roundtrip(typestore, sup.diagnostics(T0 + 2.0, 13.0))
    assert [s.name for s in running.status] == [f"payload_estimator: {k}"
                                                for k in ("node", "inputs", "rejected input", "estimate")]
    assert [s.level for s in running.status[:3]] == [OK, OK, OK]
    converged = sup.last_output.converged
    assert running.status[3].level == (OK if converged else WARN)
    assert running.status[3].message == ("converged" if converged else sup.last_output.reason)
    assert float(values(running.status[1])["joint_states rate (Hz)"]) == pytest.approx(1000, rel=0.02)
    # a NaN wrench: rejected input warns once, with the count since the last diagnostics
    bad = ros_outbound.wrench_stamped_msg(make, T0 + 2.0005, "panda_link8", [np.nan, 0.0, 0.0], [0.0, 0.0, 0.0])
    sup.tick(T0 + 2.01, [("wrench", bad, T0 + 2.01)])
    first = statuses(sup.diagnostics(T0 + 2.01, 14.0))
    assert first["rejected input"].level == WARN and "1 non_finite" in first["rejected input"].message
    second = statuses(sup.diagnostics(T0 + 2.02, 15.0))
    assert second["rejected input"].level == OK and values(second["rejected input"])["total non_finite"] == "1"
    # inputs that stop: stale
    stale = statuses(sup.diagnostics(T0 + 60.0, 16.0))
    assert stale["inputs"].level == STALE


# ----------------------------------------------------------------- services


def test_save_urdf_frames(make, run, messages, tmp_path):
    """The sensor frame comes from tf2, 5 cm beyond the flange and turned 0.5 rad about z."""
    tf = Tf2StandIn()
    sup = make_supervisor(make, tf, sensor_frame="tool_ft", estimator="rls")
    assert not sup.save_urdf().success and sup.save_urdf().message.startswith("no estimate: waiting for")
    tf.publish("tool_ft", (0.0, 0.0, 0.05), (0.0, 0.0, math.sin(0.25), math.cos(0.25)))
    sup.on_description(run.urdf)
    sup.tick(T0, [])
    assert sup.save_urdf().message == "no estimate yet"
    drive(sup, messages, T0, T0 + 3.0)
    out = sup.last_output

    def com_of(text):
        import xml.etree.ElementTree as ET

        return np.array([float(v) for v in ET.fromstring(text).find("origin").get("xyz").split()])

    # 3 s of RLS: not yet safe to hand over; refused with the reasons, or forced and marked
    refused = sup.save_urdf("")
    assert not refused.success and refused.message.startswith("refused: ") and "force" in refused.message
    flange = sup.save_urdf("", force=True)
    assert flange.success and flange.message.startswith("inertial of the payload in panda_link8 (forced: ")
    assert "FORCED:" in flange.urdf
    assert flange.urdf == sup.save_urdf("flange", force=True).urdf
    np.testing.assert_allclose(com_of(flange.urdf), out.params_in_flange.com, atol=1e-5)
    np.testing.assert_allclose(out.params_in_flange.com, run.payload_params.com, atol=0.02)
    sensor = sup.save_urdf("sensor", force=True)
    assert sensor.message.startswith("inertial of the payload in tool_ft")
    assert sup.save_urdf("tool_ft", force=True).urdf == sensor.urdf
    R = Rotation.from_euler("z", 0.5).as_matrix()
    np.testing.assert_allclose(com_of(sensor.urdf), R.T @ (out.params_in_flange.com - [0, 0, 0.05]), atol=1e-5)
    # another frame fixed to the flange: panda_link7 (panda_joint8 is fixed)
    link7 = sup.save_urdf("panda_link7", force=True)
    R78, p78 = sup.stream.kinematics.rigid_pose("panda_link8", "panda_link7")
    assert link7.success and "panda_link7" in link7.message
    np.testing.assert_allclose(com_of(link7.urdf), R78 @ out.params_in_flange.com + p78, atol=1e-5)
    # a frame that moves relative to the flange, and one that does not exist
    moving = sup.save_urdf("panda_link0", force=True)
    assert not moving.success and "moves relative" in moving.message and moving.urdf == ""
    assert not sup.save_urdf("nowhere", force=True).success
    # the file
    path = tmp_path / "out" / "payload.urdf.xml"
    saved = sup.save_urdf("", str(path), force=True)
    assert saved.success and f"written to {path}" in saved.message
    assert path.read_text().strip() == saved.urdf.strip()
    (tmp_path / "file").write_text("")
    unwritable = sup.save_urdf("", str(tmp_path / "file" / "x.xml"), force=True)
    assert not unwritable.success and unwritable.message.startswith("cannot write")


def test_apply_decision(make, run, messages):
    sup = make_supervisor(make, estimator="rls", apply_target="franka", max_payload_mass=3.0)
    sup.on_description(run.urdf)
    nothing = sup.apply(force=True, dry_run=True)
    assert not nothing.success and nothing.message.startswith("refused:") and nothing.send is None
    drive(sup, messages, T0, T0 + 3.0)
    dry = sup.apply(force=True, dry_run=True)
    assert dry.success and dry.message.startswith("dry run, not sent") and dry.send is None
    assert dry.request.startswith("# franka_msgs/srv/SetLoad on /service_server/set_load")
    send = sup.apply(force=True)
    assert isinstance(send, ApplyDecision) and isinstance(send.send, ApplyRequest)
    assert send.send.service_type == "franka_msgs/srv/SetLoad" and send.request == dry.request
    assert send.send.fields["mass"] == pytest.approx(sup.last_output.params_in_flange.mass)
    base = settings_for_robot("panda", estimator="rls", apply_target="franka").to_dict()
    sup.parameters_changed({**base, "max_payload_mass": 0.1})  # live: the same stream, refused now
    over = sup.apply(force=True, dry_run=True)
    assert not over.success and "exceeds" in over.message and over.send is None
    sup.parameters_changed({**base, "apply_target": "none"})
    none = sup.apply(dry_run=True)
    assert not none.success and "apply_target" in none.message


# ------------------------------------------------------------------ faults
#
# What the node does when its inputs misbehave at run time: the wrench topic stops and comes back,
# every input stops, the simulator restarts (its clock jumps back), robot_description is republished
# with another robot, the node starts before the robot driver. The estimate published is never
# non-finite, and the last good one stays published, flagged stale, at publish_rate_hz.


def run_items(run, make, rows: slice, stamp0: float = T0, wall0: float = T0, wrench: bool = True, settings=None):
    """Rows ``rows`` of ``run`` as the robot's driver publishes them: stamps ``stamp0`` + run time,
    received at ``wall0`` + run time (``wrench=False``: the wrench topic is silent)."""
    settings = settings or settings_for_robot(run.robot)
    live = LiveRun(run, settings, loop=False)
    names = list(run.joint_names)
    items = []
    for i in range(*rows.indices(len(run.joint_t))):
        t = float(run.joint_t[i])
        items.append(("joint_states", ros_outbound.joint_state_msg(make, stamp0 + t, names, run.joint_q[i],
                                                                   run.joint_dq[i]), wall0 + t))
        if wrench:
            items.append(("wrench", ros_outbound.wrench_stamped_msg(
                make, stamp0 + t, live.wrench_frame_id, live.wrench_force[i], live.wrench_torque[i]), wall0 + t))
    return items


def rows_between(run, start: float, stop: float) -> slice:
    """The rows of ``run`` with run time in [start, stop), s."""
    return slice(int(np.searchsorted(run.joint_t, start)), int(np.searchsorted(run.joint_t, stop)))


def published(outputs) -> list:
    """``[(turn time, PayloadEstimate)]`` of ``drive``'s outputs."""
    return [(t, o.estimate) for t, o in outputs]


def assert_finite(estimates) -> None:
    for _, msg in estimates:
        assert np.isfinite([msg.mass, msg.com.x, msg.com.y, msg.com.z, msg.inertia.ixx, msg.inertia.izz]).all()
        assert np.isfinite(msg.phi).all() and math.isfinite(msg.age)


def test_wrench_stops_and_comes_back(typestore, make, run, caplog):
    """The wrench driver dies for 1.5 s while joint states go on: the estimate goes on being published at
    publish_rate_hz, flagged stale after stale_after_s with a growing age; /diagnostics says which input;
    when the wrench is back the estimate takes in new samples again and the flag clears."""
    caplog.set_level(logging.INFO, "payload_estimator")
    sup = make_supervisor(make, estimator="rls")
    sup.on_description(run.urdf)
    before = drive(sup, run_items(run, make, rows_between(run, 0.0, 1.5)), T0, T0 + 1.5)
    assert before and not any(m.stale for _, m in published(before))
    assert all(m.age == 0.0 for _, m in published(before)[1:])  # each one took in new samples
    used = sup.stream.estimator.samples_used
    gone = drive(sup, run_items(run, make, rows_between(run, 1.5, 3.0), wrench=False), T0 + 1.5, T0 + 3.0)
    estimates = published(gone)
    assert len(estimates) == 15  # still 10 Hz
    assert_finite(estimates)
    stale = [(t, m) for t, m in estimates if m.stale]
    # flagged at the first estimate after the wrench has been silent for stale_after_s (its last
    # sample came at 1.5 s; estimates at 0.01 s + multiples of 0.1 s): from 2.01 s on
    assert [round(t - T0, 2) for t, _ in stale] == [round(2.01 + 0.1 * k, 2) for k in range(10)]
    assert all(m.samples_used == stale[0][1].samples_used for _, m in stale)  # nothing new went in
    # the age counts from the last estimate that took in samples (1.51 s), stale or not
    ages = [m.age for _, m in estimates]
    assert ages[0] == 0.0 and np.allclose(ages[1:], 0.1 * np.arange(1, 15))
    back = roundtrip(typestore, gone[-1][1].estimate)  # the fields of msg/PayloadEstimate.msg
    assert back.stale is True and back.age == pytest.approx(1.4) and back.mass == stale[-1][1].mass
    assert sup.stale and sup.stale_reason == "no wrench for more than 0.5 s"
    assert "estimate stale (no wrench for more than 0.5 s): the last good estimate is republished" in caplog.text
    diagnostics = statuses(sup.diagnostics(T0 + 3.0, 3.0))
    assert values(diagnostics["node"])["estimate stale"] == "yes: no wrench for more than 0.5 s"
    assert float(values(diagnostics["node"])["estimate age (s)"]) == pytest.approx(1.5, abs=0.051)
    assert diagnostics["inputs"].level == WARN and diagnostics["inputs"].message == "stale: wrench"
    back = published(drive(sup, run_items(run, make, rows_between(run, 3.0, 4.0)), T0 + 3.0, T0 + 4.0))
    assert_finite(back)
    assert not back[-1][1].stale and back[-1][1].age == 0.0 and not sup.stale
    assert back[-1][1].samples_used > used
    assert "estimate current again" in caplog.text
    assert back[-1][1].mass == pytest.approx(PAYLOAD.mass, rel=0.05)


@pytest.mark.slow
def test_offsets_that_drifted_while_the_wrench_was_silent_are_no_new_payload(make):
    """An F/T sensor that drifts (the simulator's default) is silent for 2.5 s while the arm moves
    on: when it is back its offsets have moved. That is neither a contact nor a new payload: the
    tracker takes the step as an offset shift, and the estimate is updated again within a second
    of the wrench's return (0.28 s of settling filters, 0.3 s to tell the step from a payload)."""
    run8 = simulate(robot="panda", payload=PAYLOAD, duration=8.0, noise="low", seed=3, imu=False)
    sup = make_supervisor(make, estimator="rls")
    sup.on_description(run8.urdf)
    drive(sup, run_items(run8, make, rows_between(run8, 0.0, 3.0)), T0, T0 + 3.0)
    drive(sup, run_items(run8, make, rows_between(run8, 3.0, 5.5), wrench=False), T0 + 3.0, T0 + 5.5)
    used = sup.stream.estimator.samples_used
    back = published(drive(sup, run_items(run8, make, rows_between(run8, 5.5, 7.5)), T0 + 5.5, T0 + 7.5))
    updated = [t for t, m in back if m.samples_used > used]
    assert updated and updated[0] - (T0 + 5.5) < 1.0
    last = back[-1][1]
    assert last.tracking and last.payload_changes == 0 and last.contacts == 0 and not last.contact
    tracker = sup.stream.estimator
    assert tracker.counts.offset_shifts == 1
    assert last.mass == pytest.approx(PAYLOAD.mass, rel=0.02)


@pytest.mark.slow
def test_a_grasp_and_a_release_are_said_once_each_on_the_estimate(typestore, make):
    """A MuJoCo work cycle (the claw hammer picked at 3.5 s, placed at 10.4 s, each taking a few tenths of
    a second, a push and a bump between) through the node's logic: ``payload_changed`` is true on exactly
    one message after each change, ``payload_changes`` counts them, ``change_stamp`` says where the payload's data
    begin, ``contact`` is true while the push is held out, and /diagnostics shows the counts."""
    from payload_estimator.sim.arm_cycle import arm_work_cycle

    cycle = arm_work_cycle("panda", seed=0)
    run_ = cycle.simulate(noise="low", seed=0, imu=False)
    sup = make_supervisor(make)
    sup.on_description(run_.urdf)
    out = published(drive(sup, run_items(run_, make, rows_between(run_, 0.0, 13.0)), T0, T0 + 13.0))
    flagged = [(t - T0, m) for t, m in out if m.payload_changed]
    # the grasp and the release take time (a table bears the part meanwhile): flagged after their ends
    grasp, release = cycle.transfer_ends[:2]
    assert [round(m.payload_changes) for _, m in flagged] == [1, 2]
    assert grasp < flagged[0][0] < grasp + 0.6 and release < flagged[1][0] < release + 0.6
    last = roundtrip(typestore, out[-1][1])
    assert last.tracking and last.payload_changes == 2 and not last.payload_changed
    change_t = last.change_stamp.sec + 1e-9 * last.change_stamp.nanosec - T0
    assert cycle.transfer_starts[1] - 0.05 < change_t < release
    push = cycle.contacts[0]
    during = [m for t, m in out if push.t_start + 0.1 < t - T0 < push.t_end]
    assert during and all(m.contact for m in during) and last.contacts >= 1
    node = values(statuses(sup.diagnostics(T0 + 13.0, 13.0))["estimate"])
    assert node["payload changes"] == "2" and int(node["contacts"]) >= 1


def test_every_input_silent_no_turns_last_estimate_republished(make, run):
    """The robot driver stops altogether: no turn runs (nothing could change the estimate), the last
    estimate is republished at publish_rate_hz, stale, its age growing with the silence, then updated
    again when the driver is back (stamps and receive times later by the silence)."""
    sup = make_supervisor(make, estimator="rls")
    sup.on_description(run.urdf)
    drive(sup, run_items(run, make, rows_between(run, 0.0, 2.0)), T0, T0 + 2.0)
    last = sup.last_output
    ticks = sup.driver.ticks
    silence = drive(sup, [], T0 + 2.0, T0 + 12.0)
    estimates = published(silence)
    assert len(estimates) == 100 and all(m.stale for _, m in estimates[5:])
    assert sup.driver.ticks - ticks < 60  # the turns stop once every input is stale (0.5 s)
    kept = silence[-1][1].result  # the samples still in the aligner went in first, then no solve again
    assert all(o.result is kept for _, o in silence[5:])
    assert kept.estimate.samples_used - last.estimate.samples_used < 20
    assert estimates[-1][1].age == pytest.approx(9.9, abs=0.11)
    assert_finite(estimates)
    later = 10.0
    again = published(drive(sup, run_items(run, make, rows_between(run, 2.0, 3.5), stamp0=T0 + later,
                                           wall0=T0 + later), T0 + 2.0 + later, T0 + 3.5 + later))
    assert not again[-1][1].stale and again[-1][1].age == 0.0
    assert again[-1][1].samples_used > last.estimate.samples_used


@pytest.mark.slow
def test_simulator_restart_clock_jumps_back(make, run, caplog):
    """The simulator restarts: its stamps begin again 3 s earlier while the node's clock goes on.
    Alignment restarts (counted, said once), every estimate stays finite and close to the truth,
    the stamps follow the new clock, and the estimate goes on taking in samples."""
    sup = make_supervisor(make, payload_shape=format_shape_spec(PAYLOAD.envelope))
    sup.on_description(run.urdf)
    first = published(drive(sup, run_items(run, make, rows_between(run, 0.0, 3.0)), T0, T0 + 3.0))
    used = sup.stream.estimator.samples_used
    restart = T0 + 3.2  # receive time of the restarted simulator's first sample
    after = published(drive(sup, run_items(run, make, rows_between(run, 0.0, 3.0), stamp0=T0, wall0=restart),
                            T0 + 3.0, restart + 3.0))
    assert sup.stream.health.counts.get("clock_jump") == 1
    assert caplog.text.count("time jumped back by") == 1 and "alignment restarted" in caplog.text
    assert_finite(first + after)
    stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in after]
    assert stamps[-1] == pytest.approx(T0 + 3.0, abs=0.15)  # the new clock
    assert min(stamps) < T0 + 3.0 - 1.0
    assert after[-1][1].samples_used > used + 200  # the new run went in
    for _, m in first[20:] + after:
        assert m.mass == pytest.approx(PAYLOAD.mass, rel=0.05)
        assert not m.stale


@pytest.mark.slow
def test_convergence_after_a_clock_jump_counts_from_the_new_clock(make, run):
    """After the simulator restarts, the convergence monitor counts steadiness on the new clock: never
    a negative time ("steady for -1.9 of 1.0 s", for as long as the old clock is ahead)."""
    sup = make_supervisor(make, payload_shape=format_shape_spec(PAYLOAD.envelope))
    sup.on_description(run.urdf)
    drive(sup, run_items(run, make, rows_between(run, 0.0, 3.0)), T0, T0 + 3.0)
    after = published(drive(sup, run_items(run, make, rows_between(run, 0.0, 3.0), stamp0=T0, wall0=T0 + 3.2),
                            T0 + 3.0, T0 + 6.2))
    assert not [m.status for _, m in after if m.status.startswith("steady for -")]


@pytest.mark.slow
def test_robot_description_with_another_robot(make, run, caplog):
    """The simulator comes back as an xArm 7 while the node is configured for the Panda: the node says
    what changed, rebuilds, reports why the Panda configuration does not fit, keeps republishing the
    Panda's last estimate as stale (never sent to the robot unless forced); the Panda again: running."""
    caplog.set_level(logging.INFO, "payload_estimator")
    sup = make_supervisor(make, estimator="rls", apply_target="franka")
    sup.on_description(run.urdf)
    drive(sup, run_items(run, make, rows_between(run, 0.0, 3.0)), T0, T0 + 3.0)
    panda = sup.last_output
    assert sup.apply(force=True, dry_run=True).success
    xarm = simulate(robot="xarm7", payload=PAYLOAD, duration=3.0, noise="low", seed=4, imu=False)
    sup.on_description(xarm.urdf)
    assert "robot_description changed (robot 'xarm7', was 'panda'): the estimation restarts; the last estimate " \
           "is republished as stale" in caplog.text
    xarm_items = run_items(xarm, make, rows_between(xarm, 0.0, 3.0), stamp0=T0 + 3.0, wall0=T0 + 3.0,
                           settings=settings_for_robot("xarm7"))
    waiting = drive(sup, xarm_items[: len(xarm_items) // 2], T0 + 3.0, T0 + 3.0 + TF_WAIT_S + 0.5)
    assert sup.status.state == CONFIGURATION_ERROR and "panda_link8" in sup.status.detail
    assert all(o.stale and o.result is panda for _, o in waiting) and len(waiting) >= 10 * TF_WAIT_S
    refused = sup.apply(dry_run=True)
    assert not refused.success and "before the estimation restarted" in refused.message
    assert "configuration error" in refused.message
    assert sup.apply(force=True, dry_run=True).success  # forced: the user's decision
    # the Panda is back (the xArm needs the node restarted with its parameter file: robot and topics
    # are read-only): rebuilt at once, estimating again, the new estimate current and sendable
    sup.on_description(run.urdf)
    t = T0 + 3.0 + TF_WAIT_S + 0.5
    out = drive(sup, run_items(run, make, rows_between(run, 0.0, 3.0), stamp0=t, wall0=t), t, t + 3.0)
    assert sup.status.state == RUNNING
    fresh = [o for _, o in out if not o.stale]
    assert fresh and fresh[0].result is not panda and fresh[-1].age == 0.0
    assert all(o.result is panda for _, o in out[: len(out) - len(fresh)])  # until the first new estimate
    assert fresh[-1].result.estimate.mass == pytest.approx(PAYLOAD.mass, rel=0.05)
    assert sup.apply(dry_run=True).message != refused.message


def test_started_before_the_robot_driver(make, run):
    """The node starts first: no description, no inputs for 5 s (nothing published, nothing breaks);
    the description comes, still no inputs for 2 s (running, no turns, nothing to publish yet); then
    the driver publishes and the estimate comes."""
    sup = make_supervisor(make, estimator="rls")
    assert drive(sup, [], T0 - 7.0, T0 - 2.0) == [] and sup.status.state == WAITING_DESCRIPTION
    sup.on_description(run.urdf)
    assert drive(sup, [], T0 - 2.0, T0) == [] and sup.status.state == RUNNING
    assert sup.driver.ticks == 0  # every input silent: no turn
    outputs = published(drive(sup, run_items(run, make, rows_between(run, 0.0, 2.0)), T0, T0 + 2.0))
    assert outputs and not outputs[-1][1].stale and outputs[-1][1].mass == pytest.approx(PAYLOAD.mass, rel=0.1)


def test_a_non_finite_estimate_is_never_published(make, run, caplog):
    """The one stand-in: an estimator whose solve returns NaN (a solver bug; no real input reaches the
    estimate as NaN, the stream drops it first). The estimate is discarded and counted, the last good
    one is republished flagged stale."""
    import dataclasses

    sup = make_supervisor(make, estimator="rls")
    sup.on_description(run.urdf)
    drive(sup, run_items(run, make, rows_between(run, 0.0, 2.0)), T0, T0 + 2.0)
    good = sup.last_output
    estimator = sup.stream.estimator
    solve = estimator.estimate

    def broken():
        est = solve()
        return dataclasses.replace(est, params=type(est.params)(np.full(10, np.nan)))

    estimator.estimate = broken
    out = drive(sup, run_items(run, make, rows_between(run, 2.0, 3.0)), T0 + 2.0, T0 + 3.0)
    assert len(out) == 10 and all(o.result is good and o.stale for _, o in out)
    assert_finite(published(out))
    assert sup.stream.health.counts["solver_failure"] == 10
    assert "estimate not finite: discarded, the last good one is kept" in caplog.text


def test_a_sigint_taken_by_the_qp_solver_is_reported(make, run, messages):
    """OSQP replaces the process's SIGINT handler while it solves PMD's QP: a Ctrl-C then ends the solve
    ("Solver interrupted") and never reaches the process. The supervisor says so (the node hands the
    signal on). Real SIGINTs, every 2 ms from a thread, while the main thread solves."""
    import os
    import signal
    import threading
    import time

    sup = make_supervisor(make, payload_shape=format_shape_spec(PAYLOAD.envelope))
    sup.on_description(run.urdf)
    drive(sup, messages, T0, T0 + 1.0)
    assert sup.stream.estimator.name == "pmd" and not sup.solver_interrupted
    outside: list[int] = []  # SIGINTs that arrived between two solves reach Python's handler
    previous = signal.signal(signal.SIGINT, lambda *_: outside.append(1))
    stop = threading.Event()

    def ctrl_c() -> None:
        while not stop.wait(0.002):
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=ctrl_c, daemon=True)
    sender.start()
    solves = 0
    try:
        deadline = time.monotonic() + 30.0
        while not sup.solver_interrupted and time.monotonic() < deadline:
            # the same data again: the last support answers exactly without OSQP; forget it so OSQP solves
            sup.stream.estimator.estimator._qp._support = None
            sup.stream.estimator.estimate()
            solves += 1
    finally:
        stop.set()
        sender.join()
        signal.signal(signal.SIGINT, previous)
    assert sup.solver_interrupted, f"no SIGINT landed in {solves} solves ({len(outside)} outside them)"
    sup.stream.estimator.estimate()  # the next solve, undisturbed
    assert not sup.solver_interrupted


@pytest.mark.slow
def test_the_convergence_history_stays_bounded_while_no_new_sample_arrives():
    """Estimates re-taken at the same sample time (a silent input, hours of them) are one entry, not many."""
    from payload_estimator.core.convergence import ConvergenceMonitor
    from payload_estimator.core.inertia import InertialParameters
    from payload_estimator.core.results import Estimate

    params = InertialParameters.from_mass_com_inertia(0.8, np.array([0.0, 0.0, 0.1]), np.diag([1e-3, 1e-3, 1e-3]))
    est = Estimate("ols", params, np.eye(10) * 1e-10, None, np.zeros(6), 10.0, 500, True)
    monitor = ConvergenceMonitor()
    for k in range(20):
        monitor.update(100.0 + 0.1 * k, est)
    assert monitor.converged
    for _ in range(10_000):  # 1000 s of estimates at 10 Hz without a new sample
        monitor.update(101.9, est)
    assert monitor.converged and len(monitor._history) <= 20


def test_a_gap_in_the_inputs_does_not_unsettle_a_converged_estimate():
    """The simulator's loop (or a driver hiccup) leaves 0.8 s without a new sample: the estimate held
    through it, so it is as steady as before (it stayed converged), while an estimate that moves after the
    gap is still caught."""
    from payload_estimator.core.convergence import ConvergenceMonitor
    from payload_estimator.core.inertia import InertialParameters
    from payload_estimator.core.results import Estimate

    def estimate(mass):
        params = InertialParameters.from_mass_com_inertia(mass, np.array([0.0, 0.0, 0.1]), np.diag([1e-3] * 3))
        return Estimate("ols", params, np.eye(10) * 1e-10, None, np.zeros(6), 10.0, 500, True)

    monitor = ConvergenceMonitor()
    for k in range(20):
        monitor.update(100.0 + 0.1 * k, estimate(0.8))
    assert monitor.converged
    for k in range(10):  # after the gap: the same estimate, then a moving one
        monitor.update(102.7 + 0.1 * k, estimate(0.8))
        assert monitor.converged, monitor.reason
    monitor.update(103.7, estimate(0.9))
    assert not monitor.converged and "mass still moving" in monitor.reason
