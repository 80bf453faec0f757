"""The estimator node's payload clouds without ROS: ``cloud_topic`` through the :class:`Supervisor`.

A simulated Panda holding a claw hammer (MuJoCo), fed turn by turn as real Jazzy messages (rosbags' classes)
as in ``test_supervisor.py``, with a camera on a tripod (its frame known to tf only, here the stand-in for
tf2) sending a cloud of the payload captured while the arm moves: applied at its stamp, one turn after it
arrives; a cloud in a frame found nowhere refused, counted and said in the diagnostics, the shape kept.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from payload_estimator.core.estimators import PointMassDiscretization
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.pipeline.payload_cloud import CLOUD
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import LiveRun
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.supervision.frames import extra_frame
from payload_estimator.supervision.supervisor import Supervisor

T0 = 100.0
TURN = 0.01
BOX_CENTRE = np.array([0.0, 0.0, 0.09])
BOX_SIZE = np.array([0.05, 0.07, 0.12])
CAMERA_XYZ, CAMERA_QUAT = (0.9, -0.4, 0.8), tuple(Rotation.from_euler("xyz", [-2.0, 0.2, 2.5]).as_quat())


@pytest.fixture(scope="module")
def make():
    return ros_factories.rosbags_factory(ros_typestore())


@pytest.fixture(scope="module")
def run():
    return simulate(robot="panda", payload=get_payload("claw_hammer"), duration=2.5, noise="low", seed=5, imu=False)


@pytest.fixture(scope="module")
def messages(run, make):
    live = LiveRun(run, settings_for_robot("panda"), loop=False)
    items = []
    for i, t in enumerate(run.joint_t):
        t = T0 + float(t)
        items.append(("joint_states", ros_outbound.joint_state_msg(make, t, list(run.joint_names), run.joint_q[i],
                                                                   run.joint_dq[i]), t))
        items.append(("wrench", ros_outbound.wrench_stamped_msg(make, t, live.wrench_frame_id, live.wrench_force[i],
                                                                live.wrench_torque[i]), t))
    return items


class Tf2StandIn:
    """The node's tf2 buffer (tf2 cannot exist without ROS): the transforms published, in any parent asked."""

    def __init__(self) -> None:
        self.transforms: dict[str, tuple] = {}

    def lookup(self, frames: list[str], parent: str):
        found = [extra_frame(f, parent, *self.transforms[f]) for f in frames if f in self.transforms]
        return found, [f for f in frames if f not in self.transforms]


def box_surface(n=10):
    g = np.linspace(-0.5, 0.5, n)
    a, b = (x.ravel() for x in np.meshgrid(g, g))
    faces = []
    for axis in range(3):
        others = [i for i in range(3) if i != axis]
        for sign in (-0.5, 0.5):
            face = np.empty((len(a), 3))
            face[:, axis], face[:, others[0]], face[:, others[1]] = sign, a, b
            faces.append(face)
    return np.concatenate(faces) * BOX_SIZE + BOX_CENTRE


def drive(sup, items, start, stop):
    walls = np.array([w for _, _, w in items])
    a = int(np.searchsorted(walls, start, side="right"))
    for k in range(1, int(round((stop - start) / TURN)) + 1):
        t = round(start + k * TURN, 9)
        b = int(np.searchsorted(walls, t + 1e-9, side="right"))
        sup.tick(t, items[a:b])
        a = b


def estimate_values(sup, now):
    statuses = {s.name.split(": ", 1)[1]: s for s in sup.diagnostics(now, now).status}
    return {kv.key: kv.value for kv in statuses["estimate"].values}


def test_a_tripod_cameras_cloud_is_the_payloads_shape_from_its_stamp(make, run, messages, caplog):
    caplog.set_level(logging.WARNING, "payload_estimator")
    tf = Tf2StandIn()
    values = {**settings_for_robot("panda").to_dict(), "cloud_topic": "/camera/payload_cloud"}
    sup = Supervisor(values, make, name="payload_estimator", lookup=tf.lookup, resolve=str)
    sup.on_description(run.urdf)
    drive(sup, messages, T0 - TURN, T0 + 1.0)
    stream = sup.stream
    assert stream is not None and estimate_values(sup, T0 + 1.0)["shape"] == "configured"

    # the camera saw the payload at 100.8 s; the arm has moved on when the cloud arrives at 101.25 s
    stamp = T0 + 0.8
    q = np.array([np.interp(stamp - T0, run.joint_t, run.joint_q[:, j]) for j in range(run.joint_q.shape[1])])
    kin = stream.kinematics
    R, p = kin.frame_pose(q[None], kin.sensor_frame, kin.base_frame)
    tf.transforms["tripod_camera"] = (CAMERA_XYZ, CAMERA_QUAT)
    T_base_camera = np.eye(4)
    T_base_camera[:3, :3], T_base_camera[:3, 3] = Rotation.from_quat(CAMERA_QUAT).as_matrix(), CAMERA_XYZ
    T_base_sensor = np.eye(4)
    T_base_sensor[:3, :3], T_base_sensor[:3, 3] = R[0], p[0]
    T_camera_sensor = np.linalg.inv(T_base_camera) @ T_base_sensor
    in_camera = box_surface() @ T_camera_sensor[:3, :3].T + T_camera_sensor[:3, 3]
    good = ros_outbound.point_cloud2_msg(make, stamp, "tripod_camera", in_camera)
    lost = ros_outbound.point_cloud2_msg(make, stamp, "nowhere_camera", in_camera)
    clouds = [(CLOUD, good, T0 + 1.25), (CLOUD, lost, T0 + 1.65)]
    items = sorted([*messages, *clouds], key=lambda item: item[2])
    drive(sup, items, T0 + 1.0, T0 + 2.4)

    diagnostics = estimate_values(sup, T0 + 2.4)
    assert diagnostics["shape"] == f"cloud at t = {stamp:.3f} s with {len(in_camera)} points"
    assert diagnostics["clouds applied"] == "1" and diagnostics["clouds refused"] == "1"
    assert "'nowhere_camera' is neither in the robot's description nor in tf" in diagnostics["last cloud refusal"]
    assert "cloud: cloud in nowhere_camera at t = 100.800 s" in caplog.text
    (pmd,) = [e for e in stream.estimator.payload_estimators() if isinstance(e, PointMassDiscretization)]
    assert int(diagnostics["shape point masses"]) == pmd.n_points > 20
    np.testing.assert_allclose(pmd.points.mean(axis=0), BOX_CENTRE, atol=0.005)
    assert np.all(np.abs(pmd.points - BOX_CENTRE) <= BOX_SIZE / 2 + 0.01)
    assert sup.stream is stream and sup.last_output is not None  # estimating all along
    assert np.isfinite(sup.last_output.estimate.phi).all()
