"""The estimator node's outputs without ROS: the table of topics (:data:`OUTPUT_TOPICS`), the messages each
row's builder makes of the supervisor's :class:`Outputs`, and their staleness
(:class:`~payload_estimator.supervision.estimate_publication.EstimatePublication`).

The estimates are a real stream's: the Panda's supervisor fed a simulated run as ``rosbags`` messages,
turn by turn (receive times 100 s + run time)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import LiveRun
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.supervision.node_outputs import (
    OUTPUT_TOPICS,
    Outputs,
    estimate_message,
    markers_message,
    point_masses_message,
    urdf_inertial_message,
)
from payload_estimator.supervision.supervisor import Supervisor

T0 = 100.0
TURN = 0.05


@pytest.fixture(scope="module")
def make():
    return ros_factories.rosbags_factory(ros_typestore())


@pytest.fixture(scope="module")
def outputs(make):
    """``[(now, Outputs)]`` of a supervisor fed 4 s of a simulated Panda with a claw hammer in 50 ms turns,
    then 1 s of silence (the estimate republished stale)."""
    run = simulate(robot="panda", payload="claw_hammer", duration=4.0, noise="low", seed=3, imu=False)
    settings = settings_for_robot("panda")
    live = LiveRun(run, settings, loop=False)
    items = []
    for i, t in enumerate(run.joint_t):
        t = T0 + float(t)
        items.append(("joint_states", ros_outbound.joint_state_msg(make, t, list(run.joint_names), run.joint_q[i],
                                                                   run.joint_dq[i]), t))
        items.append(("wrench", ros_outbound.wrench_stamped_msg(make, t, live.wrench_frame_id, live.wrench_force[i],
                                                                live.wrench_torque[i]), t))
    shape = format_shape_spec(get_payload("claw_hammer").envelope)
    sup = Supervisor({**settings.to_dict(), "use_builtin_description": True, "payload_shape": shape}, make)
    walls = np.array([w for _, _, w in items])
    got, a = [], 0
    for k in range(1, 101):
        now = round(T0 + k * TURN, 9)
        b = int(np.searchsorted(walls, now + 1e-9, side="right"))
        out = sup.tick(now, items[a:b])
        a = b
        if out is not None:
            got.append((now, out))
    return got


def test_one_row_per_topic_each_with_the_type_its_builder_makes(outputs):
    assert [row.topic for row in OUTPUT_TOPICS] == ["~/estimate", "~/inertia", "~/markers", "~/point_masses",
                                                    "~/urdf_inertial"]
    assert len({row.topic for row in OUTPUT_TOPICS}) == len(OUTPUT_TOPICS)
    assert [row.topic for row in OUTPUT_TOPICS if row.latched] == ["~/urdf_inertial"]
    assert [row.topic for row in OUTPUT_TOPICS if row.on_demand] == ["~/markers", "~/point_masses"]
    with_urdf = next(o for _, o in outputs if o.urdf_text is not None)
    for row in OUTPUT_TOPICS:
        msg = with_urdf.message(row.build)
        assert msg.__msgtype__ == row.type_name, row.topic


def test_each_message_is_made_once_and_only_when_asked_for(outputs, make):
    out = [o for _, o in outputs if not o.stale][-1]
    assert out.message(estimate_message) is out.estimate is out.estimate
    calls = []

    def counting(o: Outputs):
        calls.append(o)
        return markers_message(o)

    assert out.message(counting) is out.message(counting) and len(calls) == 1
    again = replace(out, stale=True)  # a new Outputs makes its own messages
    assert again.estimate is not out.estimate and again.estimate.stale and not out.estimate.stale
    assert again.inertia == out.inertia and again.inertia is not out.inertia
    assert [(m.ns, m.id, m.type) for m in again.markers.markers] == [(m.ns, m.id, m.type) for m in out.markers.markers]


def test_fresh_estimates_then_the_last_one_again_stale_without_urdf(outputs):
    fresh = [(now, o) for now, o in outputs if not o.stale]
    stale = [(now, o) for now, o in outputs if o.stale]
    assert fresh and stale and max(now for now, _ in fresh) < min(now for now, _ in stale)
    last = fresh[-1][1]
    for _, o in stale:
        assert o.result is last.result and o.urdf_text is None and urdf_inertial_message(o) is None
        assert o.estimate.stale and o.estimate.age == pytest.approx(o.age) and o.age > 0
        assert not o.estimate.payload_changed
        assert o.estimate.mass == last.estimate.mass and o.inertia == last.inertia
    # at publish_rate_hz (10 Hz): every other 50 ms turn
    times = np.array([now for now, _ in stale])
    np.testing.assert_allclose(np.diff(times), 0.1, atol=1e-9)


def test_the_point_masses_are_pmds_with_their_mass_and_a_colour_by_mass(outputs):
    from payload_estimator.io.point_cloud2 import cloud_from_message

    out = [o for _, o in outputs if not o.stale][-1]
    extras = out.result.estimate.extras
    msg = out.point_masses
    assert msg.__msgtype__ == "sensor_msgs/msg/PointCloud2" and msg.header.frame_id == out.sensor_frame
    assert [f.name for f in msg.fields] == ["x", "y", "z", "mass", "rgb"]
    cloud = cloud_from_message(msg)
    np.testing.assert_allclose(cloud.points, extras["points_in_sensor"], atol=1e-6)  # float32 positions
    data = np.frombuffer(bytes(msg.data), dtype=np.dtype({"names": ["mass", "rgb"], "formats": ["<f4", "<u4"],
                                                          "offsets": [12, 16], "itemsize": msg.point_step}))
    masses = np.asarray(extras["point_masses"])
    np.testing.assert_allclose(data["mass"], masses, rtol=1e-6, atol=1e-9)
    assert data["mass"].sum() == pytest.approx(out.result.estimate.params.mass, rel=1e-5)
    heaviest, empty = int(np.argmax(masses)), int(np.argmin(masses))
    assert data["rgb"][heaviest] >> 16 == 255 and data["rgb"][heaviest] & 0xFF == 0  # red
    assert masses[empty] < 1e-9 * masses.max() or data["rgb"][empty] & 0xFF > data["rgb"][heaviest] & 0xFF
    # an estimator without point masses: nothing to publish
    plain = replace(out, result=replace(out.result, estimate=replace(out.result.estimate, extras={})))
    assert point_masses_message(plain) is None
