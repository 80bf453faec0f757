"""The estimator node with ``cloud_topic``: a camera's PointCloud2 of the payload becomes PMD's shape, and
``~/point_masses`` shows PMD's point masses (mass, rgb) while someone subscribes.

A real rclpy EstimatorNode (spun as ``main()`` spins it) fed a simulated Panda run as franka_ros2 publishes
it, and a cloud of a box held on the flange (frame ``panda_link8``, in the URDF: no tf needed) built by
the package's own message builder with rclpy's messages. Skipped without ROS.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from ros_helpers import Listener, RunPublisher, node_status, payload_shape, status_values, wait_for  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from payload_estimator.io import ros_factories, ros_outbound  # noqa: E402
from payload_estimator.io.point_cloud2 import cloud_from_message  # noqa: E402
from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.ros.qos import LATCHED_QOS  # noqa: E402

NS = "/with_cloud"
CLOUD_TOPIC = "/camera/payload/points"
BOX_CENTRE, BOX_SIZE = np.array([0.0, 0.0, 0.09]), np.array([0.05, 0.07, 0.12])


def box_surface(n: int = 10) -> np.ndarray:
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


def test_a_cloud_becomes_the_shape_and_the_point_masses_are_published(ros):
    node = ros.estimator(payload_shape=payload_shape(), cloud_topic=CLOUD_TOPIC, _namespace=NS.strip("/"))
    helper = ros.node("cloud_publisher")
    listener = Listener(helper)
    listener.listen(DiagnosticArray, "/diagnostics")
    listener.listen(PayloadEstimate, f"{NS}/payload_estimator/estimate")
    listener.listen(PointCloud2, f"{NS}/payload_estimator/point_masses", 2)
    pub = RunPublisher(helper, duration=6.0)
    helper.create_publisher(String, f"{NS}/robot_description", LATCHED_QOS).publish(String(data=pub.run.urdf))
    assert wait_for(lambda: node.supervisor.stream is not None, 10.0), node.supervisor.status.message
    pub.publish(2.0)
    assert wait_for(lambda: listener.last.get(f"{NS}/payload_estimator/estimate"), 15.0)

    clouds = helper.create_publisher(PointCloud2, CLOUD_TOPIC, 2)
    points = box_surface()
    stamp = pub.t0 + 1.5
    clouds.publish(ros_outbound.point_cloud2_msg(ros_factories.rclpy_factory(), stamp, "panda_link8", points))

    def estimate_values():
        msg = listener.last.get("/diagnostics")
        status = node_status(msg, f"{NS.strip('/')}/payload_estimator: estimate") if msg else None
        values = status_values(status) if status is not None else {}
        return values if values.get("shape", "").startswith("cloud at") else None

    pub.publish(1.0)
    values = wait_for(estimate_values, 10.0)
    assert values is not None, node.supervisor.stream.shapes.diagnostics()
    assert values["shape"] == f"cloud at t = {stamp:.3f} s with {len(points)} points"
    assert values["clouds applied"] == "1" and values["clouds refused"] == "0"

    pub.publish(1.0)
    n = int(values["shape point masses"])

    def point_masses():
        msg = listener.last.get(f"{NS}/payload_estimator/point_masses")
        return msg if msg is not None and msg.width == n else None

    msg = wait_for(point_masses, 10.0)
    assert msg is not None and msg.header.frame_id == "panda_link8"
    assert [f.name for f in msg.fields] == ["x", "y", "z", "mass", "rgb"]
    cloud = cloud_from_message(msg)
    assert np.all(np.abs(cloud.points - BOX_CENTRE) <= BOX_SIZE / 2 + 0.01)  # PMD's points fill the box
    masses = np.frombuffer(bytes(msg.data), dtype=np.dtype({"names": ["mass"], "formats": ["<f4"], "offsets": [12],
                                                            "itemsize": msg.point_step}))["mass"]
    assert masses.min() >= 0.0 and masses.sum() > 0.1
    assert not ros.errors, ros.errors
