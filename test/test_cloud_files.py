"""Point cloud files (``core.cloud_files``: PLY through trimesh, PCD through pypcd4, beside text and .npy) and the
checks a cloud must pass to become the payload's shape (``core.clouds.check_payload_cloud``)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payload_estimator.core.cloud_files import load_point_cloud, read_cloud_file
from payload_estimator.core.clouds import MAX_CLOUD_DISTANCE_M, check_payload_cloud, cloud_columns, cloud_shape
from payload_estimator.core.shapes import outermost_points, payload_points
from payload_estimator.errors import ShapeError

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def cloud(rng):
    """A 0.1 m payload 5-15 cm from the sensor origin: two parts, volumes in any unit."""
    points = rng.uniform([-0.05, -0.03, 0.05], [0.05, 0.03, 0.15], (300, 3))
    part = (points[:, 2] > 0.1).astype(int) + 7
    volume = rng.uniform(1.0, 2.0, 300)
    return points, part, volume


# ------------------------------------------------------------------ PLY
def _ply(path, columns: dict[str, np.ndarray], encoding: str) -> None:
    """A PLY file written from its specification (header, then ASCII rows or packed binary records)."""
    names = {"f4": "float", "f8": "double", "i4": "int", "u1": "uchar", "i2": "short", "u4": "uint"}
    n = len(next(iter(columns.values())))
    header = [f"ply\nformat {encoding} 1.0\ncomment written by test_cloud_files\nelement vertex {n}"]
    header += [f"property {names[v.dtype.str[1:]]} {k}" for k, v in columns.items()]
    text = "\n".join(header) + "\nend_header\n"
    if encoding == "ascii":
        rows = zip(*[v.tolist() for v in columns.values()])
        path.write_text(text + "\n".join(" ".join(repr(x) for x in row) for row in rows) + "\n")
        return
    order = ">" if encoding == "binary_big_endian" else "<"
    table = np.zeros(n, dtype=[(k, order + v.dtype.str[1:]) for k, v in columns.items()])
    for k, v in columns.items():
        table[k] = v
    path.write_bytes(text.encode() + table.tobytes())


@pytest.mark.parametrize("encoding", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_a_ply_file_gives_its_points_labels_and_volumes(tmp_path, cloud, encoding):
    """PLY, ASCII or binary of either byte order: its vertices' x, y, z, label and volume; the colour ignored;
    a vertex of NaN position (a depth camera's hole) dropped."""
    points, part, volume = cloud
    x = points.astype(np.float32)
    x[5, 0] = np.nan
    columns = {"x": x[:, 0], "y": x[:, 1], "z": x[:, 2], "red": np.full(300, 200, np.uint8),
               "label": part.astype(np.int32), "volume": volume}
    path = tmp_path / "cloud.ply"
    _ply(path, columns, encoding)
    read = read_cloud_file(path)
    keep = np.arange(300) != 5
    np.testing.assert_array_equal(read.points, x[keep].astype(np.float64))
    np.testing.assert_array_equal(read.part, part[keep])
    np.testing.assert_allclose(read.volume, volume[keep])
    assert read.non_finite == 1
    shape = load_point_cloud(path)
    assert set(shape.part) == {0, 1} and len(shape.points_in_sensor) == 299 and shape.own_inertia.shape == (299, 6)


def test_a_ply_written_by_trimesh_and_a_mesh_ply_read_their_vertices(tmp_path, rng):
    """trimesh's own PLY writer (binary, a point cloud); a PLY mesh's vertices (its faces ignored)."""
    import trimesh

    points = rng.uniform(-0.05, 0.05, (50, 3))
    path = tmp_path / "trimesh.ply"
    trimesh.PointCloud(points).export(path)
    np.testing.assert_allclose(load_point_cloud(path).points_in_sensor, points, atol=1e-7)
    box = trimesh.creation.box(extents=(0.1, 0.05, 0.02))
    box.export(tmp_path / "box.ply")
    read = read_cloud_file(tmp_path / "box.ply")
    np.testing.assert_allclose(read.points, box.vertices, atol=1e-7)
    assert read.part is None and read.volume is None


# ------------------------------------------------------------------ PCD
@pytest.mark.parametrize("encoding", ["ascii", "binary", "binary_compressed"])
def test_a_pcd_file_gives_its_points_labels_and_volumes(tmp_path, cloud, encoding):
    """PCD written by pypcd4 in each encoding, with PCL's ``label`` (uint32), a float colour and a volume."""
    from pypcd4 import Encoding, PointCloud

    points, part, volume = cloud
    rgb = np.full(300, 0x00FF8000, np.uint32).view(np.float32)
    pc = PointCloud.from_points([*points.astype(np.float32).T, rgb, part.astype(np.uint32), volume.astype(np.float32)],
                                ("x", "y", "z", "rgb", "label", "volume"),
                                (np.float32, np.float32, np.float32, np.float32, np.uint32, np.float32))
    path = tmp_path / "cloud.pcd"
    pc.save(path, encoding=Encoding(encoding))
    read = read_cloud_file(path)
    np.testing.assert_allclose(read.points, points, atol=1e-7)
    np.testing.assert_array_equal(read.part, part)
    np.testing.assert_allclose(read.volume, volume, rtol=1e-6)
    assert read.non_finite == 0


def test_an_organised_pcd_as_pcl_writes_it_drops_its_holes(tmp_path, rng):
    """A PCL-style organised cloud (WIDTH x HEIGHT, NaN where the camera saw nothing), written here from the file
    format's specification with a ``_`` padding field (PCL's PointXYZ alignment) and a part named ``segment``."""
    width, height = 8, 6
    x = rng.uniform(-0.05, 0.05, (height * width, 3)).astype(np.float32)
    x[::4] = np.nan
    segment = (np.arange(height * width) % 3).astype(np.int16)
    header = (f"# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS x y z _ segment\nSIZE 4 4 4 4 2\n"
              f"TYPE F F F U I\nCOUNT 1 1 1 1 1\nWIDTH {width}\nHEIGHT {height}\nVIEWPOINT 0 0 0 1 0 0 0\n"
              f"POINTS {width * height}\nDATA binary\n")
    table = np.zeros(width * height, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("_", "<u4"), ("s", "<i2")])
    table["x"], table["y"], table["z"], table["s"] = x[:, 0], x[:, 1], x[:, 2], segment
    path = tmp_path / "organised.pcd"
    path.write_bytes(header.encode() + table.tobytes())
    read = read_cloud_file(path)
    keep = np.isfinite(x).all(axis=1)
    assert read.non_finite == 12 and len(read.points) == 36
    np.testing.assert_array_equal(read.points, x[keep].astype(np.float64))
    np.testing.assert_array_equal(read.part, segment[keep])
    ascii_path = tmp_path / "organised_ascii.pcd"
    rows = "\n".join(" ".join(("nan" if math.isnan(v) else repr(float(v))) for v in p) + f" 0 {s}"
                     for p, s in zip(x, segment))
    ascii_path.write_text(header.replace("DATA binary", "DATA ascii") + rows + "\n")
    np.testing.assert_array_equal(read_cloud_file(ascii_path).points, read.points)


# -------------------------------------------------------- through the options
def test_points_files_of_every_format_are_the_same_shape(tmp_path, cloud):
    """The same cloud as CSV (its header naming the part ``label``), .npy, PLY and PCD: one and the same shape,
    through ``points:FILE`` (the setting payload_shape) as through load_point_cloud."""
    from pypcd4 import PointCloud

    points, part, volume = cloud
    table = np.column_stack([points, part, volume])
    np.savetxt(tmp_path / "c.csv", table, delimiter=",", header="x,y,z,label,volume", comments="")
    np.save(tmp_path / "c.npy", table)
    _ply(tmp_path / "c.ply", {"x": points[:, 0], "y": points[:, 1], "z": points[:, 2], "part": part.astype(np.int32),
                              "volume": volume}, "binary_little_endian")
    PointCloud.from_points([*points.T, part, volume], ("x", "y", "z", "part", "volume"),
                           (np.float64, np.float64, np.float64, np.int32, np.float64)).save(tmp_path / "c.pcd")
    shapes = [payload_points(f"points:{tmp_path / name}") for name in ("c.csv", "c.npy", "c.ply", "c.pcd")]
    for shape in shapes:
        np.testing.assert_allclose(shape.points_in_sensor, points, atol=1e-12)
        np.testing.assert_array_equal(shape.part, part - 7)
        np.testing.assert_allclose(shape.volume, volume, rtol=1e-12)


@pytest.mark.parametrize("suffix", [".pcd", ".ply"])
def test_estimate_takes_a_camera_cloud_file(tmp_path, capsys, suffix):
    """``estimate --points cloud.pcd`` (or .ply): the workshop claw hammer's segmented cloud, with a camera's holes,
    gives its mass and COM; a cloud of the whole scene is one line and exit status 2."""
    import json

    pytest.importorskip("pinocchio", reason="the simulated wrist needs the sim extra")
    from pypcd4 import PointCloud

    from payload_estimator.cli import main
    from payload_estimator.core.shapes import sample_parts
    from payload_estimator.io.samples_file import write_samples
    from payload_estimator.sim.workshop import get_tool
    from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

    tool = get_tool("ws_claw_hammer")
    shape = sample_parts(tool.envelope)
    points = np.vstack([shape.points_in_sensor, np.full((5, 3), np.nan)])
    label = np.concatenate([shape.part, np.zeros(5, int)]).astype(np.int32)
    path = tmp_path / f"hammer{suffix}"
    if suffix == ".pcd":
        PointCloud.from_points([*points.astype(np.float32).T, label], ("x", "y", "z", "label"),
                               (np.float32, np.float32, np.float32, np.int32)).save(path)
    else:
        _ply(path, {"x": points[:, 0], "y": points[:, 1], "z": points[:, 2], "label": label}, "binary_little_endian")
    motion, _ = simulate_wrist(tool.params, WristTrajectory(mean_ang_vel=1.5), duration=10.0, rate_hz=100.0)
    samples = tmp_path / "s.npz"
    write_samples(samples, motion)
    assert main(["estimate", str(samples), "--points", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_points"] == len(shape.points_in_sensor)
    assert out["mass"] == pytest.approx(tool.params.mass, rel=0.01)
    np.testing.assert_allclose(out["com"], tool.params.com, atol=0.002)
    scene = tmp_path / f"scene{suffix}"
    table = np.vstack([points, [[0.9, -0.4, 0.6]]])  # and a point of the table, 1.2 m away
    if suffix == ".pcd":
        PointCloud.from_xyz_points(table.astype(np.float32)).save(scene)
    else:
        _ply(scene, {"x": table[:, 0], "y": table[:, 1], "z": table[:, 2]}, "ascii")
    assert main(["estimate", str(samples), "--points", str(scene)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 of its" in err[0] and "farther than 0.5 m from the sensor origin (the farthest " \
        "1.15 m)" in err[0], err
    assert main(["estimate", str(samples), "--points", str(scene), "--cloud-max-distance", "1.5", "--json"]) == 0


def test_estimate_merges_a_large_cloud_down_to_its_budget(tmp_path, capsys, rng):
    """A camera's cloud of 20,000 points through estimate --points: merged to cloud_max_points point masses (its
    default, or --cloud-max-points), as a points:FILE shape is."""
    import json

    from pypcd4 import PointCloud

    from payload_estimator.cli import main

    path = tmp_path / "dense.pcd"
    PointCloud.from_xyz_points(rng.uniform([-0.05, -0.03, 0.05], [0.05, 0.03, 0.15], (20_000, 3))).save(path)
    samples = tmp_path / "s.csv"
    samples.write_text((REPO / "examples" / "samples.csv").read_text())
    from payload_estimator.settings import Settings

    for extra, budget in (([], Settings().cloud_max_points), (["--cloud-max-points", "80"], 80)):
        assert main(["estimate", str(samples), "--points", str(path), "--bias", "--json", *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert budget // 2 < out["n_points"] <= budget, out["n_points"]


# ------------------------------------------------------------------- refusals
def _pcd_text(fields: str, types: str, rows: list[str], sizes: str | None = None) -> str:
    n = len(fields.split())
    return (f"VERSION 0.7\nFIELDS {fields}\nSIZE {sizes or ' '.join(['4'] * n)}\nTYPE {types}\n"
            f"COUNT {' '.join(['1'] * n)}\nWIDTH {len(rows)}\nHEIGHT 1\nPOINTS {len(rows)}\nDATA ascii\n"
            + "\n".join(rows) + "\n")


FOUR = ["0 0 0.1", "0.01 0 0.1", "0 0.01 0.1", "0 0 0.12"]


@pytest.mark.parametrize("name, content, message", [
    ("noz.pcd", _pcd_text("x y", "F F", ["0 0", "1 0", "0 1", "1 1"]),
     "no z field (fields: x, y); a cloud's positions are its fields x, y and z"),
    ("holes.pcd", _pcd_text("x y z", "F F F", ["nan nan nan"] * 4), "none of its 4 points has a finite position"),
    ("half.pcd", _pcd_text("x y z label", "F F F F", [p + f" {v}" for p, v in zip(FOUR, (0, 0.5, 1, 1))]),
     "part labels must be integers, got 0.5 (1 of the field label are not)"),
    ("vol.pcd", _pcd_text("x y z volume", "F F F F", [p + f" {v}" for p, v in zip(FOUR, (1, 0, 1, -2))]),
     "2 volume(s) not positive (the smallest -2); each point's volume (volume) must be positive"),
    ("three.pcd", _pcd_text("x y z", "F F F", FOUR[:3]), "3 point(s); a point cloud that can hold an inertia needs"),
    ("flat.pcd", _pcd_text("x y z", "F F F", ["0 0 0.1", "0.01 0 0.1", "0 0.01 0.1", "0.01 0.01 0.1"]),
     "the points are coplanar (RMS distance 0 mm from their best-fit plane"),
    ("mm.pcd", _pcd_text("x y z", "F F F", ["0 0 100", "10 0 100", "0 10 100", "0 0 120"]),
     "4 of its 4 points are farther than 0.5 m from the sensor origin (the farthest 120 m)"),
    ("garbage.pcd", "\x00\x01 not a point cloud at all", "not a readable PCD file"),
    ("cut.pcd", _pcd_text("x y z", "F F F", FOUR).replace("DATA ascii", "DATA binary").split("DATA")[0]
     + "DATA binary\n\x00\x00", "not a readable PCD file"),
    ("garbage.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 100\nproperty float x\nend_header\n\x00",
     "not a readable PLY file"),
    ("nox.ply", "ply\nformat ascii 1.0\nelement vertex 4\nproperty float y\nproperty float z\nend_header\n"
     "0 0\n1 0\n0 1\n1 1\n", "a PLY file whose vertices have no property"),
    ("words.ply", "solid a cube\nfacet normal 0 0 1\n", "not a readable PLY file"),
])
def test_a_bad_cloud_file_is_one_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ShapeError) as info:
        load_point_cloud(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text, text


_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])


@_FUZZ
@given(suffix=st.sampled_from([".ply", ".pcd"]), cut=st.integers(0, 400), flips=st.lists(
    st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=6), encoding=st.sampled_from(["a", "b", "c"]))
def test_a_damaged_cloud_file_is_a_shape_or_one_shape_error(tmp_path, suffix, cut, flips, encoding):
    """A valid PLY or PCD file cut short and with bytes changed: a shape, or one ShapeError, nothing else."""
    from pypcd4 import Encoding, PointCloud

    points = np.random.default_rng(cut).uniform(-0.05, 0.05, (20, 3))
    path = tmp_path / f"damaged{suffix}"
    if suffix == ".pcd":
        PointCloud.from_xyzl_points(np.column_stack([points, np.arange(20) % 2])).save(
            path, encoding={"a": Encoding.ASCII, "b": Encoding.BINARY, "c": Encoding.BINARY_COMPRESSED}[encoding])
    else:
        _ply(path, {"x": points[:, 0], "y": points[:, 1], "z": points[:, 2], "label": np.arange(20, dtype=np.int32)},
             {"a": "ascii", "b": "binary_little_endian", "c": "binary_big_endian"}[encoding])
    data = bytearray(path.read_bytes())
    for at, value in flips:
        if at < len(data):
            data[at] = value
    path.write_bytes(bytes(data[:len(data) - cut]))
    try:
        shape = load_point_cloud(path, max_distance=math.inf)
    except ShapeError as exc:
        assert "\n" not in str(exc)
        return
    assert np.isfinite(shape.points_in_sensor).all() and len(shape.points_in_sensor) >= 4


# ----------------------------------------------------------- the checks alone
def test_check_payload_cloud_names_each_reason_and_its_figures(rng):
    """At least 4 finite points, not coplanar, within the distance of the sensor origin: each refusal one line."""
    box = rng.uniform([-0.05, -0.05, 0.05], [0.05, 0.05, 0.15], (100, 3))
    np.testing.assert_array_equal(check_payload_cloud(box), box)
    assert MAX_CLOUD_DISTANCE_M == 0.5
    cases = [
        (box[:3], {}, "3 point(s); a point cloud that can hold an inertia needs at least 4"),
        (np.vstack([box, [[np.nan, 0, 0]]]), {}, "1 of its 101 points have a position that is not finite"),
        (np.c_[box[:, :2], np.full(100, 0.1)], {}, "the points are coplanar (RMS distance "),
        (np.outer(np.linspace(0.0, 0.1, 10), [1.0, 2.0, 3.0]), {}, "the points are coplanar"),  # a line
        (box + [0.0, 0.0, 0.7], {}, "100 of its 100 points are farther than 0.5 m from the sensor origin (the "
                                    "farthest 0.85"),
        (box + [0.0, 0.0, 0.7], {"max_distance": 0.6}, "are farther than 0.6 m"),
        (box.T, {}, "expected (N, 3) positions, got an array of shape (3, 100)"),
        ([["a", "b", "c"]] * 4, {}, "the cloud's positions are not numbers"),
    ]
    for points, options, message in cases:
        with pytest.raises(ShapeError) as info:
            check_payload_cloud(points, where="camera: ", **options)
        assert str(info.value).startswith("camera: ") and message in str(info.value), str(info.value)
    np.testing.assert_array_equal(check_payload_cloud(box + [0.0, 0.0, 0.7], max_distance=math.inf), box + [0, 0, 0.7])
    with pytest.raises(ShapeError, match="must be positive"):
        check_payload_cloud(box, max_distance=0.0)
    thin = np.c_[box[:, :2], 0.1 + 1e-3 * rng.uniform(size=100)]  # a 1 mm thick plate: a solid
    assert len(check_payload_cloud(thin)) == 100


def test_a_cloud_of_columns_becomes_a_shape_of_parts():
    xyz = {"x": np.array([0.0, 0.1, 0.0, 0.0, np.nan]), "y": np.array([0.0, 0.0, 0.1, 0.0, 0.0]),
           "z": np.array([0.1, 0.1, 0.1, 0.2, 0.1])}
    columns = cloud_columns({**xyz, "segment": np.array([5, 5, -3, 5, 2.5])})  # 2.5: the hole's, dropped with it
    assert columns.non_finite == 1 and list(columns.part) == [5, 5, -3, 5] and columns.part.dtype == np.int64
    both = cloud_columns({**xyz, "segment": np.array([5, 5, -3, 5, 2.5]), "label": np.array([1, 1, 2, 1, 1])})
    assert list(both.part) == [1, 1, 2, 1]  # label comes before segment (PART_FIELDS)
    shape = cloud_shape(columns.points, columns.part)
    assert list(shape.part) == [1, 1, 0, 1] and list(shape.volume) == [1.0] * 4
    with pytest.raises(ShapeError, match="fields of different lengths"):
        cloud_columns({"x": np.zeros(3), "y": np.zeros(3), "z": np.zeros(4)})
    with pytest.raises(ShapeError, match="an empty cloud"):
        cloud_columns({"x": np.zeros(0), "y": np.zeros(0), "z": np.zeros(0)})


def test_outermost_points_take_a_cloud_at_any_distance(tmp_path):
    """A long tool's reach (excite --points) is no payload shape: its cloud may reach beyond the distance limit."""
    rod = np.array([[0, 0, 0], [0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.8]], dtype=float)
    np.savetxt(tmp_path / "rod.csv", rod, delimiter=",")
    assert [0.0, 0.0, 0.8] in outermost_points(f"points:{tmp_path / 'rod.csv'}").tolist()
    with pytest.raises(ShapeError, match="farther than 0.5 m"):
        payload_points(f"points:{tmp_path / 'rod.csv'}")


def test_a_binary_pcd_with_a_float64_label_and_a_count_3_normal(tmp_path):
    """A PCD whose label is F8 whole numbers and with a normal of COUNT 3 (left out): the label's values kept."""
    header = ("VERSION 0.7\nFIELDS x y z normal label\nSIZE 4 4 4 4 8\nTYPE F F F F F\nCOUNT 1 1 1 3 1\n"
              "WIDTH 4\nHEIGHT 1\nPOINTS 4\nDATA binary\n")
    rows = b"".join(struct.pack("<3f3fd", *p, 0, 0, 1, label)
                    for p, label in zip([(0, 0, 0.1), (0.01, 0, 0.1), (0, 0.01, 0.1), (0, 0, 0.12)], (2, 2, 9, 9)))
    (tmp_path / "n.pcd").write_bytes(header.encode() + rows)
    read = read_cloud_file(tmp_path / "n.pcd")
    assert list(read.part) == [2, 2, 9, 9] and read.points.shape == (4, 3)
