"""A one-sided cloud completed into point masses: what each completion fills, parts kept, bad clouds refused."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.cloud_completion import COMPLETIONS, complete_cloud
from payload_estimator.core.solids import Box, Union
from payload_estimator.errors import ShapeError


def _seen_faces(box: Box, eye: np.ndarray, step: float = 0.002) -> np.ndarray:
    """Points on a grid over the faces of an axis-aligned ``box`` that face ``eye`` (a convex box hides none)."""
    half, centre = 0.5 * np.asarray(box.size), np.asarray(box.xyz)
    faces = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            if sign * (eye[axis] - centre[axis]) <= half[axis]:
                continue
            u, v = (a for a in range(3) if a != axis)
            gu = np.linspace(-half[u], half[u], int(round(2 * half[u] / step)) + 1)
            gv = np.linspace(-half[v], half[v], int(round(2 * half[v] / step)) + 1)
            grid = np.zeros((len(gu) * len(gv), 3))
            grid[:, u], grid[:, v] = np.repeat(gu, len(gv)), np.tile(gv, len(gu))
            grid[:, axis] = sign * half[axis]
            faces.append(grid + centre)
    return np.unique(np.concatenate(faces), axis=0)


def _inside(box: Box, points: np.ndarray, margin: float) -> np.ndarray:
    return np.all(np.abs(points - np.asarray(box.xyz)) <= 0.5 * np.asarray(box.size) + margin, axis=1)


BOX = Box(size=(0.06, 0.04, 0.1), xyz=(0.0, 0.0, 0.06))
"""On the gripper's approach axis, symmetric about its planes."""
SIDE = np.array([0.0, -2.0, 0.06])
"""Far enough that the rays are nearly parallel: the -y face alone is seen."""


def test_a_half_seen_box_extruded_fills_the_box():
    seen = _seen_faces(BOX, SIDE)
    assert np.allclose(seen[:, 1], -0.02)  # one face: coplanar points
    filled = complete_cloud(seen, SIDE, "extrude")
    p = filled.points_in_sensor
    assert np.all(_inside(BOX, p, margin=0.0015))  # the rays widen by 2 % from the near face to the far one
    assert p[:, 1].min() < -0.005 and p[:, 1].max() > 0.005  # behind the seen face too
    # each ray stands for a cell of the grid of points: 31 x 51 points are 30 x 50 cells and the outline's half
    assert filled.volume.sum() == pytest.approx(BOX.volume * 31 * 51 / (30 * 50) * 1.02, rel=0.01)
    assert np.allclose(p.mean(axis=0), BOX.xyz, atol=1e-3)
    assert np.all(filled.part == 0) and np.all(filled.own_inertia == 0.0)


def test_a_half_seen_box_mirrored_about_the_gripper_fills_the_box():
    seen = _seen_faces(BOX, SIDE)
    filled = complete_cloud(seen, SIDE, "mirror_gripper")
    assert np.all(_inside(BOX, filled.points_in_sensor, margin=1e-9))
    assert filled.volume.sum() == pytest.approx(BOX.volume, rel=0.01)  # the median filter moves the outline a little
    assert np.allclose(filled.points_in_sensor.mean(axis=0), BOX.xyz, atol=1e-6)


def test_extrusion_stops_at_the_gripper_and_at_a_depth_limit():
    low = Box(size=(0.06, 0.04, 0.1), xyz=(0.0, 0.0, 0.05))  # from the gripper's plane, z = 0, up
    above = np.array([0.0, 0.0, 1.0])  # along the approach axis: no plane through it faces the camera
    seen = _seen_faces(low, above)
    deep = complete_cloud(seen, above, "extrude", max_depth=1.0).points_in_sensor
    assert deep[:, 2].min() > 0.0 and deep[:, 2].min() < 0.02  # down to the gripper, not beyond
    default = complete_cloud(seen, above, "extrude").points_in_sensor  # as deep as the cloud is wide: 7.2 cm
    assert deep[:, 2].min() < default[:, 2].min() and default[:, 2].min() > 0.1 - np.hypot(0.06, 0.04) - 0.001
    shallow = complete_cloud(seen, above, "extrude", max_depth=0.02).points_in_sensor
    assert shallow[:, 2].min() > 0.1 - 0.02 - 0.001
    with pytest.raises(ShapeError, match="max_depth"):
        complete_cloud(seen, above, "extrude", max_depth=0.0)


def test_the_hull_of_a_cube_s_seen_corner_leaves_out_the_hidden_corner():
    cube = Box(size=(0.1, 0.1, 0.1), xyz=(0.0, 0.0, 0.2))
    eye = np.asarray(cube.xyz) + 2.0 * np.ones(3) / np.sqrt(3.0)
    seen = _seen_faces(cube, eye)
    filled = complete_cloud(seen, eye, "hull")
    assert filled.volume.sum() == pytest.approx(cube.volume * 5.0 / 6.0, rel=0.02)  # less the hidden tetrahedron
    beyond = (filled.points_in_sensor - cube.xyz).sum(axis=1)
    assert beyond.min() >= -0.05 - 0.004  # nothing past the plane of the hidden corner's three neighbours
    assert np.all(_inside(cube, filled.points_in_sensor, margin=0.002))


def test_parts_are_kept_from_the_labels_each_filled_on_its_own():
    lower = Box(size=(0.04, 0.04, 0.05), xyz=(0.0, 0.0, 0.025))
    upper = Box(size=(0.08, 0.02, 0.03), xyz=(0.0, 0.0, 0.065))
    eye = np.array([0.8, -1.2, 0.5])
    clouds = [_seen_faces(b, eye, step=0.0005) for b in (lower, upper)]
    points = np.concatenate(clouds)
    keep = ~(_inside(upper, points, -1e-9) | (np.arange(len(points)) >= len(clouds[0])) & _inside(lower, points, -1e-9))
    labels = np.repeat([7, 3], [len(c) for c in clouds])  # any integers: sorted, 3 is the first part
    filled = complete_cloud(points[keep], eye, "mirror_gripper", part=labels[keep])
    assert set(np.unique(filled.part)) == {0, 1}
    for k, box in ((0, upper), (1, lower)):
        mine = filled.part == k
        assert np.all(_inside(box, filled.points_in_sensor[mine], margin=0.001))
        # the median filter moves an outline's point by up to two point spacings (0.5 mm): 4 % of the 2 cm side
        assert filled.volume[mine].sum() == pytest.approx(box.volume, rel=0.05)
        assert np.allclose(filled.points_in_sensor[mine].mean(axis=0), box.xyz, atol=1e-3)
    assert np.any(filled.own_inertia != 0.0)  # each part's points carry the rest of its solid's inertia


def test_the_visible_points_as_given_are_the_points_thinned_per_part():
    eye = np.array([0.8, -1.2, 0.5])
    seen = _seen_faces(BOX, eye)
    labels = (seen[:, 2] > 0.06).astype(int)
    filled = complete_cloud(seen, eye, "none", part=labels, max_points=300)
    assert len(filled.part) <= 300 and set(np.unique(filled.part)) == {0, 1}
    original = {tuple(p) for p in seen}
    assert all(tuple(p) in original for p in filled.points_in_sensor)  # points of the cloud, none moved
    assert np.all(filled.points_in_sensor[filled.part == 1, 2] > 0.06)
    assert np.ptp(filled.volume) == 0.0


@pytest.mark.parametrize("completion", COMPLETIONS)
def test_every_completion_fills_a_noisy_oblique_view_of_a_box_and_is_repeatable(completion):
    eye = np.array([0.5, -0.6, 0.4])
    rng = np.random.default_rng(3)
    seen = _seen_faces(BOX, eye)
    ray = (seen - eye) / np.linalg.norm(seen - eye, axis=1, keepdims=True)
    noisy = seen + ray * rng.normal(0.0, 0.0015, (len(seen), 1))
    a, b = complete_cloud(noisy, eye, completion), complete_cloud(noisy, eye, completion)
    assert np.array_equal(a.points_in_sensor, b.points_in_sensor)
    assert len(a.part) >= 10 and np.all(a.volume > 0.0) and np.all(np.isfinite(a.own_inertia))
    assert np.all(_inside(BOX, a.points_in_sensor, margin=0.03))


def test_an_empty_cloud_is_refused():
    with pytest.raises(ShapeError, match="empty"):
        complete_cloud(np.zeros((0, 3)), SIDE)


@pytest.mark.parametrize("completion", ["none", "hull"])
def test_a_coplanar_cloud_is_refused_where_nothing_gives_it_depth(completion):
    with pytest.raises(ShapeError, match="coplanar"):
        complete_cloud(_seen_faces(BOX, SIDE), SIDE, completion)


def test_the_principal_mirror_of_a_face_seen_straight_on_is_a_thin_slab():
    filled = complete_cloud(_seen_faces(BOX, SIDE), SIDE, "mirror")
    assert np.ptp(filled.points_in_sensor[:, 1]) < 0.005  # its far edge is the face: no depth to mirror


def test_points_on_a_line_and_a_viewpoint_inside_or_in_the_plane_are_refused():
    line = np.column_stack([np.zeros(20), np.zeros(20), np.linspace(0.0, 0.1, 20)])
    with pytest.raises(ShapeError, match="line"):
        complete_cloud(line, SIDE, "extrude")
    eye = np.array([0.8, -1.2, 0.5])
    seen = _seen_faces(BOX, eye)
    with pytest.raises(ShapeError, match="inside the cloud"):
        complete_cloud(seen, np.asarray(BOX.xyz), "extrude")
    face = _seen_faces(BOX, SIDE)
    with pytest.raises(ShapeError, match="plane of the cloud"):
        complete_cloud(face, [0.5, -0.02, 0.06], "extrude")
    with pytest.raises(ShapeError, match="at the viewpoint"):
        complete_cloud(face, face[0], "extrude")


def test_malformed_inputs_are_refused_with_what_is_wrong():
    seen = _seen_faces(BOX, np.array([0.8, -1.2, 0.5]))
    eye = [0.8, -1.2, 0.5]
    cases = [
        (lambda: complete_cloud(seen[:, :2], eye), "shape"),
        (lambda: complete_cloud(seen[:3], eye), "at least 4"),
        (lambda: complete_cloud(np.where(np.arange(len(seen))[:, None] == 5, np.nan, seen), eye), "not finite"),
        (lambda: complete_cloud(seen, [0.0, 1.0]), "viewpoint"),
        (lambda: complete_cloud(seen, eye, "carve"), "unknown cloud completion"),
        (lambda: complete_cloud(seen, eye, part=np.zeros(len(seen) - 1)), "one integer per point"),
        (lambda: complete_cloud(seen, eye, part=np.full(len(seen), 0.5)), "integers"),
        (lambda: complete_cloud(seen, eye, T_sensor_gripper=np.eye(3)), "T_sensor_gripper"),
        (lambda: complete_cloud("points", eye), "numbers"),
    ]
    for call, message in cases:
        with pytest.raises(ShapeError, match=message):
            call()


def test_a_camera_s_view_of_a_tool_is_completed_part_by_part():
    from payload_estimator.sim.camera import DepthCamera, look_at

    handle = Box(size=(0.02, 0.02, 0.2), xyz=(0.0, 0.0, 0.1))
    head = Box(size=(0.08, 0.025, 0.025), xyz=(0.0, 0.0, 0.2125))  # symmetric about the gripper's planes
    view = DepthCamera(Union(parts=(handle, head))).capture(np.eye(4), look_at([0.0, -0.6, 0.12], [0.0, 0.0, 0.12]),
                                                            seed=2)
    filled = complete_cloud(view.points_in_sensor, view.viewpoint_in_sensor, "mirror_gripper", part=view.part)
    for k, box in enumerate((handle, head)):
        mine = filled.points_in_sensor[filled.part == k]
        assert filled.volume[filled.part == k].sum() == pytest.approx(box.volume, rel=0.2)
        assert np.allclose(mine.mean(axis=0), box.xyz, atol=0.003)
