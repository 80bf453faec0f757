"""sensor_msgs/PointCloud2 without ROS (``io.point_cloud2``): real ROS 2 Jazzy message definitions (rosbags), CDR,
rosbag2 files (mcap, sqlite3), every field layout the message allows, and garbage that must be one ShapeError."""

from __future__ import annotations

import array
import struct
from types import SimpleNamespace as NS

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payload_estimator.core.clouds import cloud_shape
from payload_estimator.errors import ShapeError
from payload_estimator.io.point_cloud2 import (
    DATATYPES,
    FLOAT32,
    FLOAT64,
    INT32,
    UINT8,
    UINT16,
    UINT32,
    CloudLayout,
    ReceivedCloud,
    cloud_from_message,
    point_cloud2_layout,
)

rosbags = pytest.importorskip("rosbags", reason="rosbags is in the sim extra")
from rosbags.typesys import Stores, get_typestore  # noqa: E402

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
PointCloud2 = TYPESTORE.types["sensor_msgs/msg/PointCloud2"]
PointField = TYPESTORE.types["sensor_msgs/msg/PointField"]
Header = TYPESTORE.types["std_msgs/msg/Header"]
Time = TYPESTORE.types["builtin_interfaces/msg/Time"]
MSGTYPE = "sensor_msgs/msg/PointCloud2"
STRUCT_CODES = {1: "b", 2: "B", 3: "h", 4: "H", 5: "i", 6: "I", 7: "f", 8: "d"}


def ros_message(layout: CloudLayout, frame_id: str = "camera_color_optical_frame", sec: int = 12,
                nanosec: int = 250_000_000) -> object:
    """A real Jazzy PointCloud2 (rosbags' class) from a layout, as the ROS layer will build it."""
    return PointCloud2(
        header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id),
        height=layout.height, width=layout.width,
        fields=[PointField(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count) for f in layout.fields],
        is_bigendian=layout.is_bigendian, point_step=layout.point_step, row_step=layout.row_step,
        data=np.frombuffer(layout.data, dtype=np.uint8), is_dense=layout.is_dense)


def through_cdr(msg: object) -> object:
    """Serialise to CDR, as on the wire and in a bag, and back."""
    return TYPESTORE.deserialize_cdr(TYPESTORE.serialize_cdr(msg, MSGTYPE), MSGTYPE)


def test_a_cloud_published_and_received_over_cdr_is_the_same_cloud(rng):
    """point_cloud2_layout -> a real Jazzy message -> CDR bytes -> message -> cloud_from_message: the same points
    (float32), labels, volumes, frame and stamp; the holes dropped and counted."""
    points = rng.uniform(-0.2, 0.2, (500, 3))
    points[::7, 1] = np.nan
    points[3, 2] = np.inf
    label = rng.integers(0, 4, 500).astype(np.uint16)
    volume = rng.uniform(1e-7, 1e-6, 500)
    rgb = rng.integers(0, 2**24, 500).astype(np.uint32).view(np.float32)
    layout = point_cloud2_layout(points, rgb=rgb, label=label, volume=volume)
    assert [(f.name, f.offset, f.datatype) for f in layout.fields] == [
        ("x", 0, FLOAT32), ("y", 4, FLOAT32), ("z", 8, FLOAT32), ("rgb", 12, FLOAT32), ("label", 16, UINT16),
        ("volume", 20, FLOAT32)]
    assert layout.point_step == 24 and len(layout.data) == 24 * 500 and not layout.is_dense
    received = through_cdr(ros_message(layout, frame_id="/camera_link"))
    assert isinstance(received.data, np.ndarray) and received.data.dtype == np.uint8
    cloud = cloud_from_message(received)
    keep = np.isfinite(points).all(axis=1)
    assert cloud.non_finite == int((~keep).sum()) == 73 and len(cloud) == 427
    np.testing.assert_array_equal(cloud.points, points[keep].astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(cloud.part, label[keep])
    np.testing.assert_allclose(cloud.volume, volume[keep], rtol=1e-7)
    assert cloud.frame_id == "camera_link" and cloud.stamp_s == pytest.approx(12.25)
    assert not cloud.points.flags.writeable  # a frozen value
    shape = cloud_shape(cloud.points, cloud.part, cloud.volume)  # in the sensor frame: the candidate point masses
    assert len(shape.points_in_sensor) == 427 and set(shape.part) == {0, 1, 2, 3}
    np.testing.assert_array_equal(shape.volume, cloud.volume)


def test_an_rclpy_like_message_decodes_as_a_rosbags_one(rng):
    """rclpy's PointCloud2 has data as an array.array of bytes and fields as PointField objects: the same cloud."""
    points = rng.uniform(-0.1, 0.1, (40, 3))
    layout = point_cloud2_layout(points, label=rng.integers(0, 3, 40))
    rclpy_like = NS(header=NS(stamp=NS(sec=3, nanosec=5), frame_id="cam"), height=1, width=layout.width,
                    fields=[NS(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count)
                            for f in layout.fields],
                    is_bigendian=False, point_step=layout.point_step, row_step=layout.row_step,
                    data=array.array("B", layout.data), is_dense=True)
    for data in (array.array("B", layout.data), layout.data, bytearray(layout.data), memoryview(layout.data),
                 list(layout.data)):
        rclpy_like.data = data
        cloud = cloud_from_message(rclpy_like)
        np.testing.assert_array_equal(cloud.points, points.astype(np.float32))
        assert cloud.part.dtype == np.int64 and cloud.stamp_s == pytest.approx(3.000000005)
    assert [f.datatype for f in layout.fields[3:]] == [INT32]  # 64-bit integers that fit are sent as INT32


def test_an_organised_big_endian_cloud_with_padding_and_a_float64_label(rng):
    """A depth camera's organised cloud (height > 1, rows padded by row_step), big-endian, x as FLOAT64, a label
    as FLOAT64 whole numbers, a padding field and a count-3 normal: every layout the message allows."""
    height, width, point_step, row_step = 3, 4, 48, 4 * 48 + 8
    fields = [("normal", 0, FLOAT32, 3), ("x", 16, FLOAT64, 1), ("y", 12, FLOAT32, 1), ("z", 24, UINT16, 1),
              ("label", 32, FLOAT64, 1)]
    data = bytearray(row_step * height)
    expected, labels = [], []
    for r in range(height):
        for c in range(width):
            base = r * row_step + c * point_step
            x, y, z, label = 0.01 * c, -0.02 * r, 7 + c, float(r % 2)
            if (r, c) == (1, 2):
                y = float("nan")
            struct.pack_into(">d", data, base + 16, x)
            struct.pack_into(">f", data, base + 12, y)
            struct.pack_into(">H", data, base + 24, z)
            struct.pack_into(">d", data, base + 32, label)
            if (r, c) != (1, 2):
                expected.append([x, np.float32(y), z])
                labels.append(int(label))
    msg = NS(header=NS(stamp=NS(sec=0, nanosec=0), frame_id=""), height=height, width=width,
             fields=[NS(name=n, offset=o, datatype=d, count=k) for n, o, d, k in fields], is_bigendian=True,
             point_step=point_step, row_step=row_step, data=bytes(data), is_dense=False)
    cloud = cloud_from_message(msg)
    np.testing.assert_array_equal(cloud.points, np.array(expected))
    np.testing.assert_array_equal(cloud.part, labels)
    assert cloud.non_finite == 1 and cloud.volume is None and cloud.frame_id == ""


# ------------------------------------------------------------ every layout
def _reference_encode(spec: dict) -> bytes:
    """A cloud's bytes written point by point with struct (independent of numpy's structured arrays)."""
    order = ">" if spec["big"] else "<"
    data = bytearray(spec["row_step"] * (spec["height"] - 1) + spec["width"] * spec["point_step"])
    for i in range(spec["height"] * spec["width"]):
        base = (i // spec["width"]) * spec["row_step"] + (i % spec["width"]) * spec["point_step"]
        for name, offset, datatype in spec["fields"]:
            struct.pack_into(order + STRUCT_CODES[datatype], data, base + offset, spec["values"][name][i])
    return bytes(data)


def _values(draw, datatype: int, n: int, kind: str) -> list:
    dtype = DATATYPES[datatype]
    if dtype.kind == "f":
        if kind == "position":
            special = st.sampled_from([float("nan"), float("inf"), -float("inf")])
            element = st.one_of(st.floats(-1.0, 1.0, width=32), special) if draw(st.booleans()) else \
                st.floats(-1.0, 1.0, width=32)
        elif kind == "label":
            element = st.integers(-1000, 1000).map(float)
        else:
            element = st.floats(2.0**-20, 1.0, width=32)
        return draw(st.lists(element, min_size=n, max_size=n))
    info = np.iinfo(dtype)
    low = 1 if kind == "volume" else int(info.min)
    return draw(st.lists(st.integers(low, int(info.max)), min_size=n, max_size=n))


@st.composite
def cloud_specs(draw):
    """A random valid layout: x, y, z and optionally a label, a volume and other fields, any datatypes, any order,
    gaps between fields, padding after them, organised or not, either byte order."""
    height, width = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    names = ["x", "y", "z"] + [n for n in ("label", "volume", "rgb", "intensity") if draw(st.booleans())]
    names = draw(st.permutations(names))
    fields, end = [], 0
    for name in names:
        datatype = draw(st.integers(1, 8))
        end += draw(st.integers(0, 5))
        fields.append((name, end, datatype))
        end += DATATYPES[datatype].itemsize
    point_step = end + draw(st.integers(0, 7))
    row_step = width * point_step + (draw(st.integers(0, 9)) if height > 1 else 0)
    n = height * width
    kinds = {"x": "position", "y": "position", "z": "position", "label": "label", "volume": "volume"}
    values = {name: _values(draw, datatype, n, kinds.get(name, "other")) for name, _, datatype in fields}
    return dict(height=height, width=width, fields=fields, point_step=point_step, row_step=row_step,
                big=draw(st.booleans()), values=values)


QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""The quick default's examples (about a second each); the tests marked slow run 20 times as many."""
LONG = settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@QUICK
@given(cloud_specs())
def test_every_field_layout_decodes_to_its_values(spec):
    """Any datatype for any field, any order and padding, organised or not, either endianness: the decoder reads
    each point's values as struct wrote them, drops the points of non-finite position and counts them."""
    _check_layout(spec)


@pytest.mark.slow
@LONG
@given(cloud_specs())
def test_every_field_layout_decodes_to_its_values_long(spec):
    _check_layout(spec)


def _check_layout(spec: dict) -> None:
    msg = NS(header=NS(stamp=NS(sec=1, nanosec=0), frame_id="f"), height=spec["height"], width=spec["width"],
             fields=[NS(name=n, offset=o, datatype=d, count=1) for n, o, d in spec["fields"]],
             is_bigendian=spec["big"], point_step=spec["point_step"], row_step=spec["row_step"],
             data=np.frombuffer(_reference_encode(spec), np.uint8), is_dense=False)
    dtypes = {n: DATATYPES[d] for n, _, d in spec["fields"]}
    columns = {n: np.array(v, dtype=dtypes[n]).astype(np.float64) for n, v in spec["values"].items()}
    xyz = np.column_stack([columns[a] for a in "xyz"])
    keep = np.isfinite(xyz).all(axis=1)
    if not keep.any():
        with pytest.raises(ShapeError, match="none of its .* points has a finite position"):
            cloud_from_message(msg)
        return
    cloud = cloud_from_message(msg)
    np.testing.assert_array_equal(cloud.points, xyz[keep])
    assert cloud.non_finite == int((~keep).sum())
    if "label" in columns:
        np.testing.assert_array_equal(cloud.part, np.array(spec["values"]["label"])[keep].astype(np.int64))
    else:
        assert cloud.part is None
    if "volume" in columns:
        np.testing.assert_array_equal(cloud.volume, columns["volume"][keep])
    else:
        assert cloud.volume is None


# ------------------------------------------------------------------ refusals
def _good(**changes) -> NS:
    layout = point_cloud2_layout(np.array([[0.0, 0.0, 0.1], [0.01, 0.0, 0.1], [0.0, 0.01, 0.1], [0.0, 0.0, 0.12]]),
                                 label=np.array([0, 0, 1, 1], dtype=np.int32), volume=np.ones(4))
    msg = NS(header=NS(stamp=NS(sec=1, nanosec=0), frame_id="cam"), height=1, width=4,
             fields=[NS(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count) for f in layout.fields],
             is_bigendian=False, point_step=layout.point_step, row_step=layout.row_step,
             data=np.frombuffer(layout.data, np.uint8).copy(), is_dense=True)
    for name, value in changes.items():
        setattr(msg, name, value)
    return msg


def _with_values(name: str, values: list[float]) -> NS:
    msg = _good()
    field = next(f for f in msg.fields if f.name == name)
    for i, v in enumerate(values):
        struct.pack_into("<" + STRUCT_CODES[field.datatype], msg.data, i * msg.point_step + field.offset, v)
    return msg


@pytest.mark.parametrize("msg, message", [
    (_good(fields=[NS(name="y", offset=4, datatype=FLOAT32, count=1), NS(name="z", offset=8, datatype=FLOAT32,
                                                                         count=1)]),
     "PointCloud2 from cam: no x field (fields: y, z); a cloud's positions are its fields x, y and z"),
    (_good(width=0, data=np.zeros(0, np.uint8)), "PointCloud2 from cam: an empty cloud (height 1, width 0)"),
    (_good(data=np.zeros(50, np.uint8)), "data holds 50 bytes, 80 needed for 1 x 4 points of 20 bytes"),
    (_good(height=2, width=2, row_step=30), "row_step 30 is shorter than a row of 2 points of 20 bytes"),
    (_good(height=2, width=2, row_step=48),
     "data holds 80 bytes, 88 needed for 2 x 2 points of 20 bytes in rows of 48"),
    (_with_values("x", [float("nan")] * 4), "none of its 4 points has a finite position"),
    (_with_values("label", [0, 1, 2, 3]), None),  # integers: fine
    (_with_values("volume", [1.0, 0.0, 1.0, -1.0]), "2 volume(s) not positive (the smallest -1)"),
    (_good(fields=[NS(name="x", offset=0, datatype=9, count=1)]), "field x has datatype 9, not one of PointField's"),
    (_good(fields=[NS(name="x", offset=18, datatype=FLOAT32, count=1), NS(name="y", offset=4, datatype=FLOAT32,
                                                                          count=1),
                   NS(name="z", offset=8, datatype=FLOAT32, count=1)]),
     "field x at offset 18 (4 bytes) lies beyond point_step 20"),
    (_good(point_step=0), "point_step is 0"),
    (_good(width=-3), "PointCloud2 width is negative (-3)"),
    (_good(width=2.5), "PointCloud2 width is not a whole number (float)"),
    (_good(data="not bytes"), "data is not bytes (str)"),
    (_good(data=np.zeros(64, np.float32)), "data is not bytes (an array of float32)"),
    (NS(header=NS(frame_id="x", stamp=NS(sec=0, nanosec=0))), "not a PointCloud2: no field 'height'"),
])
def test_a_message_that_is_no_cloud_is_one_line(msg, message):
    if message is None:
        assert list(cloud_from_message(msg).part) == [0, 1, 2, 3]
        return
    with pytest.raises(ShapeError) as info:
        cloud_from_message(msg)
    text = str(info.value)
    assert message in text and "\n" not in text, text


def test_a_label_that_is_not_a_whole_number_is_refused():
    msg = _good()
    msg.fields[3] = NS(name="label", offset=12, datatype=FLOAT32, count=1)
    for i, label in enumerate([0.0, 0.0, 1.5, 1.0]):
        struct.pack_into("<f", msg.data, i * msg.point_step + 12, label)
    with pytest.raises(ShapeError, match=r"part labels must be integers, got 1.5 \(1 of the field label are not\)"):
        cloud_from_message(msg)


def test_a_point_of_non_finite_position_takes_its_label_and_volume_with_it():
    """A hole's label and volume are not looked at: they go with the point."""
    msg = _with_values("x", [float("nan"), 0.01, 0.0, 0.0])
    msg.fields[3] = NS(name="label", offset=12, datatype=FLOAT32, count=1)
    for i, label in enumerate([0.5, 0.0, 1.0, 1.0]):  # the hole's label is no whole number: it goes with the hole
        struct.pack_into("<f", msg.data, i * msg.point_step + 12, label)
    struct.pack_into("<f", msg.data, 16, -1.0)  # nor is its volume positive
    cloud = cloud_from_message(msg)
    assert cloud.non_finite == 1 and len(cloud) == 3 and list(cloud.part) == [0, 1, 1]


def test_the_layout_refuses_what_a_point_field_cannot_carry():
    with pytest.raises(ShapeError, match=r"expected \(N, 3\) positions"):
        point_cloud2_layout(np.zeros((4, 2)))
    with pytest.raises(ShapeError, match="field mass: .* values for 3 points"):
        point_cloud2_layout(np.zeros((3, 3)), mass=np.ones(4))
    with pytest.raises(ShapeError, match="do not fit PointField's 32-bit integers"):
        point_cloud2_layout(np.zeros((2, 3)), part=np.array([0, 2**40]))
    with pytest.raises(ShapeError, match="not numbers"):
        point_cloud2_layout(np.zeros((2, 3)), name=np.array(["a", "b"]))
    with pytest.raises(ShapeError, match="the positions' own field"):
        point_cloud2_layout(np.zeros((2, 3)), x=np.zeros(2))
    layout = point_cloud2_layout(np.zeros((2, 3)), flag=np.array([True, False]), mass=np.ones(2, np.float64),
                                 big=np.array([0, 3_000_000_000]))
    assert [(f.name, f.offset, f.datatype) for f in layout.fields[3:]] == [
        ("flag", 12, UINT8), ("mass", 16, FLOAT32), ("big", 20, UINT32)]
    assert layout.point_step == 24 and layout.row_step == 48 and layout.is_dense


# ---------------------------------------------------------------------- fuzz
_garbage = st.one_of(st.none(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=5), st.binary(max_size=8),
                     st.lists(st.integers(-5, 300), max_size=5), st.booleans())


@st.composite
def garbage_messages(draw):
    """A message whose every field may be garbage: wrong types, negative or huge sizes, fields at random offsets
    of random datatypes, data of random bytes, a little short or long; most often close to a real cloud, so that
    the decoder gets past its first checks (about a fifth decode to a cloud)."""
    def maybe(value):
        return draw(_garbage) if draw(st.integers(0, 40)) == 17 else value  # hypothesis favours the ends

    height, width, point_step = draw(st.integers(1, 3)), draw(st.integers(1, 6)), draw(st.integers(1, 48))
    row_step = width * point_step + draw(st.sampled_from([0, 0, 0, 1, 7, -1, -4]))
    datatypes = st.sampled_from([*range(1, 9)] * 4 + [0, 9])
    names = ["x", "y", "z"] + draw(st.lists(st.sampled_from(["label", "part", "segment", "volume", "rgb", "_", "x"]),
                                            max_size=4))
    fields = [NS(name=maybe(name), offset=maybe(draw(st.integers(0, point_step + 2))), datatype=maybe(draw(datatypes)),
                 count=maybe(draw(st.sampled_from([1] * 12 + [3, 0])))) for name in draw(st.permutations(names))]
    needed = (height - 1) * row_step + width * point_step
    data = draw(st.binary(min_size=max(needed + draw(st.integers(-8, 16)), 0), max_size=max(needed + 16, 0)))
    wrap = draw(st.sampled_from([bytes, bytearray, lambda d: np.frombuffer(d, np.uint8),
                                 lambda d: array.array("B", d)]))
    return NS(header=NS(stamp=NS(sec=maybe(1), nanosec=maybe(2)), frame_id=maybe("cam")),
              height=maybe(height), width=maybe(width), fields=maybe(fields), is_bigendian=maybe(draw(st.booleans())),
              point_step=maybe(point_step), row_step=maybe(row_step), data=maybe(wrap(data)), is_dense=maybe(False))


@QUICK
@given(garbage_messages())
def test_a_garbage_message_is_a_cloud_or_one_shape_error(msg):
    """Whatever a message holds, the decoder returns a cloud or raises ShapeError (one line), never anything else."""
    _check_garbage(msg)


@pytest.mark.slow
@LONG
@given(garbage_messages())
def test_a_garbage_message_is_a_cloud_or_one_shape_error_long(msg):
    _check_garbage(msg)


def _check_garbage(msg: NS) -> None:
    try:
        cloud = cloud_from_message(msg)
    except ShapeError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(cloud, ReceivedCloud) and len(cloud) >= 1
    assert np.isfinite(cloud.points).all() and cloud.points.shape == (len(cloud), 3)


# ------------------------------------------------------------------ rosbag2
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_clouds_written_to_a_rosbag2_file_are_read_back(tmp_path, rng, storage):
    """A real rosbag2 file (rosbags' writer, Jazzy's definitions) holding a camera's clouds, read back with rosbags'
    reader: each message decodes to the cloud that was written."""
    from rosbags.rosbag2 import Reader, StoragePlugin, Writer

    clouds = [rng.uniform(-0.1, 0.1, (int(rng.integers(20, 200)), 3)) for _ in range(3)]
    clouds[1][::5] = np.nan
    path = tmp_path / f"clouds_{storage}"
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection("/camera/depth/points", MSGTYPE, typestore=TYPESTORE)
        for i, points in enumerate(clouds):
            layout = point_cloud2_layout(points, label=np.arange(len(points)) % 2)
            msg = ros_message(layout, frame_id="camera_depth_optical_frame", sec=100 + i, nanosec=0)
            writer.write(conn, (100 + i) * 10**9, TYPESTORE.serialize_cdr(msg, MSGTYPE))
    with Reader(path) as reader:
        read = [cloud_from_message(TYPESTORE.deserialize_cdr(raw, c.msgtype))
                for c, _, raw in reader.messages(connections=reader.connections)]
    assert len(read) == 3
    for i, (points, cloud) in enumerate(zip(clouds, read)):
        keep = np.isfinite(points).all(axis=1)
        np.testing.assert_array_equal(cloud.points, points[keep].astype(np.float32))
        np.testing.assert_array_equal(cloud.part, (np.arange(len(points)) % 2)[keep])
        assert cloud.stamp_s == 100 + i and cloud.frame_id == "camera_depth_optical_frame"
        assert cloud.non_finite == int((~keep).sum())
