"""The simulated depth camera: what it sees, where, with which label, how noisy, and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from payload_estimator.core.solids import Box, Cylinder, Mesh, Shape, Union
from payload_estimator.errors import ConfigurationError, ShapeError
from payload_estimator.sim.camera import NO_NOISE, DepthCamera, Intrinsics, RangeNoise, look_at, transform

BOX = Box(size=(0.1, 0.06, 0.2), xyz=(0.0, 0.0, 0.1))
FACE_ON = look_at([0.0, -1.0, 0.1], [0.0, 0.0, 0.1])
"""A camera 1 m from the box's centre, facing its -y face (0.97 m away) straight on."""


def test_a_box_seen_face_on_gives_points_on_that_face_only_at_its_depth():
    view = DepthCamera(BOX, noise=NO_NOISE).capture(np.eye(4), FACE_ON)
    points = view.points_in_sensor
    assert np.allclose(points[:, 1], -0.03, atol=1e-9)  # the -y face, nothing else
    assert np.all(np.abs(points[:, 0]) <= 0.05 + 1e-9)
    assert np.all((points[:, 2] >= -1e-9) & (points[:, 2] <= 0.2 + 1e-9))
    assert np.allclose(view.points_in_camera[:, 2], 0.97, atol=1e-9)  # a face square to the view: one depth
    pixel = 0.97 / Intrinsics().focal_px  # the face's size over a pixel's footprint at its depth
    assert len(points) == pytest.approx(0.1 * 0.2 / pixel**2, rel=0.03)
    assert np.array_equal(view.viewpoint_in_sensor, [0.0, -1.0, 0.1])
    u, v = view.pixels.T
    assert np.allclose(Intrinsics().project(view.points_in_camera), np.column_stack([u, v]) + 0.5)


def test_points_move_with_the_payload_and_the_camera_together():
    camera = DepthCamera(BOX, noise=NO_NOISE)
    T_world_sensor = np.eye(4)
    T_world_sensor[:3, :3] = trimesh.transformations.rotation_matrix(0.7, [1.0, 2.0, 3.0])[:3, :3]
    T_world_sensor[:3, 3] = [0.4, -0.2, 0.9]
    here = camera.capture(np.eye(4), FACE_ON)
    there = camera.capture(T_world_sensor, T_world_sensor @ FACE_ON)
    assert np.allclose(here.points_in_camera, there.points_in_camera, atol=1e-9)
    assert np.allclose(transform(T_world_sensor, here.points_in_sensor),
                       transform(T_world_sensor @ here.T_sensor_camera, there.points_in_camera), atol=1e-9)


def _on_box(box: Box, points: np.ndarray) -> np.ndarray:
    """(n,) True for points on the surface of ``box``."""
    local = np.abs(box.to_local(points)) / (0.5 * np.asarray(box.size))
    return np.all(local <= 1.0 + 1e-9, axis=1) & (np.max(local, axis=1) >= 1.0 - 1e-9)


def test_each_point_carries_the_part_it_lies_on_and_the_nearer_part_hides_the_farther():
    left = Box(size=(0.05, 0.05, 0.05), xyz=(-0.04, 0.0, 0.0))
    right = Box(size=(0.05, 0.05, 0.05), xyz=(0.04, 0.0, 0.0))
    behind = Box(size=(0.2, 0.02, 0.02), xyz=(0.0, 0.1, 0.0))  # behind both, wider: seen on both sides only
    view = DepthCamera(Union(parts=(left, right, behind)), noise=NO_NOISE).capture(
        np.eye(4), look_at([0.0, -0.8, 0.0], [0.0, 0.0, 0.0]))
    p, part = view.points_in_sensor, view.part
    assert set(np.unique(part)) == {0, 1, 2}
    for k, box in enumerate((left, right, behind)):
        assert np.all(_on_box(box, p[part == k]))
    assert np.allclose(p[part == 2, 1], 0.09, atol=1e-9)  # the far box's front face, where neither hides it
    hidden = DepthCamera(Union(parts=(left, right)), noise=NO_NOISE).capture(
        np.eye(4), look_at([0.0, -0.8, 0.0], [0.0, 0.0, 0.0]))
    assert len(set(map(tuple, view.pixels[part == 2])) & set(map(tuple, hidden.pixels))) == 0


def test_a_mesh_is_seen_as_its_triangles_labelled_as_its_part():
    ring = Mesh(mesh=trimesh.creation.annulus(r_min=0.02, r_max=0.03, height=0.05), xyz=(0.0, 0.0, 0.1))
    core = Cylinder(radius=0.01, height=0.05, xyz=(0.0, 0.0, 0.1))  # inside the ring's hole, seen through it
    view = DepthCamera(Union(parts=(core, ring)), noise=NO_NOISE).capture(
        np.eye(4), look_at([0.0, 0.0, 0.6], [0.0, 0.0, 0.1], up_in_world=(0.0, 1.0, 0.0)))
    on_ring = view.points_in_sensor[view.part == 1]
    assert len(on_ring) > 1000 and np.all(np.abs(ring.mesh.nearest.on_surface(ring.to_local(on_ring))[1]) < 1e-9)
    assert np.min(np.hypot(*on_ring[:, :2].T)) >= 0.02 * np.cos(np.pi / 32) - 1e-9  # the hole (a 32-gon) is empty
    core_top = view.points_in_sensor[view.part == 0]
    assert len(core_top) > 100 and np.allclose(core_top[:, 2], 0.125) and np.all(np.hypot(*core_top[:, :2].T) <= 0.01)


def test_a_box_as_a_mesh_gives_the_cloud_of_the_box_noise_and_dropouts_included():
    as_mesh = Mesh(mesh=trimesh.creation.box(BOX.size), xyz=BOX.xyz)
    oblique = look_at([0.5, -0.5, 0.4], [0.0, 0.0, 0.1])
    a = DepthCamera(BOX).capture(np.eye(4), oblique, seed=3)
    b = DepthCamera(as_mesh).capture(np.eye(4), oblique, seed=3)
    assert np.array_equal(a.pixels, b.pixels)
    gap = np.max(np.abs(a.points_in_camera - b.points_in_camera), axis=1)
    assert np.mean(gap < 1e-7) > 0.999 and gap.max() < 1e-4  # an edge's pixel may take the other face's normal


def test_the_same_seed_gives_the_same_cloud_another_seed_another():
    camera = DepthCamera(BOX)
    a, b, c = (camera.capture(np.eye(4), FACE_ON, seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.points_in_camera, b.points_in_camera) and np.array_equal(a.part, b.part)
    assert a.points_in_camera.shape == c.points_in_camera.shape
    assert not np.allclose(a.points_in_camera, c.points_in_camera)


def test_range_noise_is_nguyen_et_al_s_along_the_rays():
    noise = RangeNoise()
    view = DepthCamera(BOX, noise=noise).capture(np.eye(4), FACE_ON, seed=1)
    depth = view.points_in_camera[:, 2]
    incidence = np.arccos(np.abs(view.points_in_camera[:, 2]) / np.linalg.norm(view.points_in_camera, axis=1))
    expected = noise.sigma(0.97, incidence)  # per pixel: the face is square to the optical axis, not to each ray
    assert noise.sigma(0.97, 0.0) == pytest.approx(0.0012 + 0.0019 * 0.57**2)
    z = (depth - 0.97) / expected
    assert abs(z.mean()) < 4.0 / np.sqrt(len(z)) and z.std() == pytest.approx(1.0, abs=0.03)
    exact = DepthCamera(BOX, noise=NO_NOISE).capture(np.eye(4), FACE_ON)
    rays = exact.points_in_camera / np.linalg.norm(exact.points_in_camera, axis=1, keepdims=True)
    along = view.points_in_camera / np.linalg.norm(view.points_in_camera, axis=1, keepdims=True)
    assert np.allclose(rays, along, atol=1e-12)  # the noise moves points along their rays only


def test_pixels_at_grazing_incidence_are_missing():
    rod = Cylinder(radius=0.05, height=0.3, xyz=(0.0, 0.0, 0.15))
    eye = np.array([0.0, -1.0, 0.15])
    side = look_at(eye, [0.0, 0.0, 0.15])
    every = DepthCamera(rod, noise=NO_NOISE).capture(np.eye(4), side)
    seen = DepthCamera(rod, noise=RangeNoise(max_incidence_deg=60.0)).capture(np.eye(4), side)
    p = every.points_in_sensor
    on_side = np.abs(np.hypot(p[:, 0], p[:, 1]) - 0.05) < 1e-9
    normal = np.where(on_side[:, None], np.column_stack([p[:, 0], p[:, 1], np.zeros(len(p))]) / 0.05,
                      [[0.0, 0.0, 1.0]] * np.sign(p[:, 2:] - 0.15))
    ray = (p - eye) / np.linalg.norm(p - eye, axis=1, keepdims=True)
    incidence = np.degrees(np.arccos(-np.einsum("ij,ij->i", normal, ray)))
    kept = {tuple(uv) for uv in seen.pixels}
    assert kept == {tuple(uv) for uv in every.pixels[incidence <= 60.0]}
    assert np.max(incidence[on_side]) > 80.0


def test_occluders_hide_what_is_behind_them_and_are_not_in_the_cloud():
    finger = Box(size=(0.02, 0.01, 0.3), xyz=(0.0, -0.05, 0.1))  # between the camera and the box's middle
    alone = DepthCamera(BOX, noise=NO_NOISE).capture(np.eye(4), FACE_ON)
    hidden = DepthCamera(BOX, occluders=[finger], noise=NO_NOISE).capture(np.eye(4), FACE_ON)
    assert np.allclose(hidden.points_in_sensor[:, 1], -0.03)  # the box's face only, none of the finger
    assert np.all(hidden.part == 0)
    assert not np.any(np.abs(hidden.points_in_sensor[:, 0]) < 0.0095)
    assert 0.7 * len(alone.part) < len(hidden.part) < 0.85 * len(alone.part)


def test_a_stride_casts_every_kth_pixel_and_a_camera_facing_away_sees_nothing():
    every = DepthCamera(BOX, noise=NO_NOISE).capture(np.eye(4), FACE_ON)
    third = DepthCamera(BOX, noise=NO_NOISE, stride=3).capture(np.eye(4), FACE_ON)
    assert np.all(third.pixels % 3 == 0) and len(third.part) == pytest.approx(len(every.part) / 9, rel=0.05)
    away = DepthCamera(BOX).capture(np.eye(4), look_at([0.0, -1.0, 0.1], [0.0, -2.0, 0.1]))
    assert away.points_in_camera.shape == (0, 3) and away.part.shape == (0,)


def test_bad_camera_inputs_are_refused_with_a_clear_message():
    camera = DepthCamera(BOX)
    with pytest.raises(ConfigurationError, match="T_world_camera"):
        camera.capture(np.eye(4), np.eye(3))
    flipped = np.diag([1.0, 1.0, -1.0, 1.0])
    with pytest.raises(ConfigurationError, match="T_world_sensor: its rotation"):
        camera.capture(flipped, FACE_ON)
    with pytest.raises(ConfigurationError, match="stride"):
        DepthCamera(BOX, stride=0)
    with pytest.raises(ConfigurationError, match="field of view"):
        Intrinsics(fov_deg=0.0)
    with pytest.raises(ConfigurationError, match="distinct"):
        look_at([0.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    with pytest.raises(ShapeError, match="sees boxes"):
        DepthCamera(Union(parts=(BOX, _NotASolid())))


class _NotASolid(Shape):
    """A shape the camera does not know how to draw."""

    volume = 1.0

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        return np.zeros(len(p), dtype=bool)

    def _local_corners(self) -> np.ndarray:
        return np.zeros((8, 3))

    def _local_inertia_com(self, mass: float) -> np.ndarray:
        return np.eye(3)
