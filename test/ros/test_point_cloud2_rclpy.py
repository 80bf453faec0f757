"""``io.point_cloud2`` against rclpy's own ``sensor_msgs/PointCloud2``: a message the ROS layer builds from
``point_cloud2_layout`` (``data`` an ``array.array``, ``fields`` PointField objects) decodes to the cloud it
holds, as it is and after rclpy's serialisation, as a subscriber receives it. Skipped without ROS."""

from __future__ import annotations

import array

import numpy as np
import pytest

pytest.importorskip("rclpy")

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import PointCloud2, PointField  # noqa: E402

from payload_estimator.errors import ShapeError  # noqa: E402
from payload_estimator.io.point_cloud2 import cloud_from_message, point_cloud2_layout  # noqa: E402


def _rclpy_message(points: np.ndarray, **fields: np.ndarray) -> PointCloud2:
    layout = point_cloud2_layout(points, **fields)
    msg = PointCloud2(height=layout.height, width=layout.width, is_bigendian=layout.is_bigendian,
                      point_step=layout.point_step, row_step=layout.row_step, is_dense=layout.is_dense,
                      fields=[PointField(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count)
                              for f in layout.fields])
    msg.data = layout.data
    msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec = "camera_link", 40, 500_000_000
    return msg


def test_rclpy_clouds_decode_as_published_and_as_received():
    rng = np.random.default_rng(4)
    points = rng.uniform(-0.1, 0.1, (300, 3))
    points[::9] = np.nan
    label = rng.integers(0, 3, 300).astype(np.uint8)
    msg = _rclpy_message(points, label=label, mass=rng.uniform(0.001, 0.01, 300))
    assert isinstance(msg.data, array.array)  # rclpy's own type for uint8[]
    keep = np.isfinite(points).all(axis=1)
    for received in (msg, deserialize_message(serialize_message(msg), PointCloud2)):
        cloud = cloud_from_message(received)
        np.testing.assert_array_equal(cloud.points, points[keep].astype(np.float32))
        np.testing.assert_array_equal(cloud.part, label[keep])
        assert cloud.non_finite == int((~keep).sum()) and cloud.frame_id == "camera_link"
        assert cloud.stamp_s == pytest.approx(40.5)


def test_an_empty_rclpy_cloud_is_one_line():
    with pytest.raises(ShapeError, match="an empty cloud"):
        cloud_from_message(PointCloud2())
