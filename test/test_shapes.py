"""Shapes and their point masses, checked against trimesh's independent mass properties."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from payload_estimator.core.estimators.pmd import point_mass_matrix
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.shapes import (
    Box,
    Cylinder,
    Mesh,
    ShapeError,
    Sphere,
    Union,
    downsample_evenly,
    format_shape_spec,
    load_points,
    parse_shape_spec,
    sample_points,
)
from payload_estimator.sim.payloads import PAYLOADS


def _trimesh_params(mesh: trimesh.Trimesh, mass: float) -> InertialParameters:
    mesh.density = mass / mesh.volume
    return InertialParameters.from_mass_com_inertia(mass, mesh.center_mass, mesh.moment_inertia)


@pytest.mark.parametrize(
    "shape, mesh",
    [
        (Box(size=(0.1, 0.04, 0.2), xyz=(0.01, 0.02, 0.1), rpy=(0.3, -0.2, 0.5)), None),
        (Cylinder(radius=0.03, height=0.15, xyz=(0.0, 0.05, 0.08), rpy=(np.pi / 2, 0.0, 0.0)), None),
        (Sphere(radius=0.04, xyz=(0.02, 0.0, 0.05)), None),
    ],
)
def test_solid_inertia_matches_trimesh(shape, mesh):
    T = np.eye(4)
    T[:3, :3] = shape.R_sensor_shape
    T[:3, 3] = shape.p_sensor_shape
    if isinstance(shape, Box):
        m = trimesh.creation.box(extents=shape.size, transform=T)
        tol = 1e-10
    elif isinstance(shape, Cylinder):
        m = trimesh.creation.cylinder(radius=shape.radius, height=shape.height, sections=512, transform=T)
        tol = 1e-3
    else:
        m = trimesh.creation.icosphere(subdivisions=6, radius=shape.radius)
        m.apply_transform(T)
        tol = 1e-3
    ref = _trimesh_params(m, 0.7)
    got = shape.solid_inertia(0.7)
    assert shape.volume == pytest.approx(m.volume, rel=max(tol, 1e-9))
    np.testing.assert_allclose(got.com, ref.com, atol=1e-9)
    np.testing.assert_allclose(got.inertia_com, ref.inertia_com, rtol=tol * 5, atol=1e-9)


def test_points_are_strictly_inside_and_at_the_requested_density():
    box = Box(size=(0.1, 0.04, 0.2), xyz=(0.0, 0.0, 0.1))
    pts = sample_points(box, density=0.04e6)
    assert np.all(box.contains(pts))
    # 800 cm³ at 0.04 points/cm³ = 32 points; grid rounding allows some slack
    assert 20 <= len(pts) <= 60
    assert np.all(np.abs(pts - [0, 0, 0.1]) < [0.05, 0.02, 0.1])  # strictly


def test_uniform_point_masses_approximate_the_solid():
    cyl = Cylinder(radius=0.03, height=0.15, xyz=(0.0, 0.0, 0.075))
    pts = sample_points(cyl, density=5e6, max_points=5000)
    body = InertialParameters(point_mass_matrix(pts) @ np.full(len(pts), 1.0 / len(pts)))
    solid = cyl.solid_inertia(1.0)
    np.testing.assert_allclose(body.com, solid.com, atol=1e-3)
    np.testing.assert_allclose(np.diag(body.inertia_com), np.diag(solid.inertia_com), rtol=0.05)


@pytest.mark.slow
def test_cap_downsamples_evenly_to_a_subset():
    box = Box(size=(0.2, 0.2, 0.2))
    dense = sample_points(box, density=1e7, max_points=10**6)
    thin = sample_points(box, density=1e7, max_points=300)
    assert len(thin) <= 300 and len(thin) > 150
    assert np.all(box.contains(thin))
    dense_set = {tuple(p) for p in np.round(dense, 12)}
    assert all(tuple(p) in dense_set for p in np.round(thin, 12))
    # evenly: the thinned cloud still spans the box and is centred
    np.testing.assert_allclose(thin.mean(axis=0), 0.0, atol=0.01)
    assert np.all(thin.max(axis=0) > 0.08)
    assert len(downsample_evenly(dense, 10)) <= 10


def test_mesh_from_file_and_convex_hull(tmp_path):
    path = tmp_path / "part.stl"
    trimesh.creation.box(extents=(100.0, 40.0, 20.0)).export(path)  # mm
    mesh = Mesh.from_file(path, xyz=(0.0, 0.0, 0.01), scale=1e-3)
    assert mesh.volume == pytest.approx(0.1 * 0.04 * 0.02)
    pts = sample_points(mesh)
    assert np.all(mesh.contains(pts)) and len(pts) >= 10
    ref = Box(size=(0.1, 0.04, 0.02), xyz=(0.0, 0.0, 0.01)).solid_inertia(1.0)
    np.testing.assert_allclose(mesh.solid_inertia(1.0).phi, ref.phi, atol=1e-9)
    via_spec = parse_shape_spec(f"mesh:{path}*0.001@0,0,0.01")
    assert via_spec.volume == pytest.approx(mesh.volume)


def test_shape_specs():
    s = parse_shape_spec("box:0.1,0.04,0.2@0,0,0.1")
    assert isinstance(s, Box) and s.size == (0.1, 0.04, 0.2) and s.xyz == (0.0, 0.0, 0.1)
    s = parse_shape_spec("cylinder:0.02,0.1@0,0,0.05,1.5708,0,0")
    assert isinstance(s, Cylinder) and s.rpy[0] == pytest.approx(1.5708)
    s = parse_shape_spec("sphere:0.05")
    assert isinstance(s, Sphere)
    u = parse_shape_spec("box:0.1,0.1,0.1@0,0,0.05+sphere:0.03@0,0,0.13")
    assert isinstance(u, Union) and len(u.parts) == 2
    assert u.volume == pytest.approx(1e-3 + 4 / 3 * np.pi * 0.03**3)
    for bad in ("box:0.1,0.1", "box:0,0.1,0.1", "cone:1", "box", "sphere:-1", "box:a,b,c",
                "box:0.1,0.1,0.1@1,2", "mesh:/no/such/file.stl"):
        with pytest.raises(ShapeError):
            parse_shape_spec(bad)


def test_load_points(tmp_path, rng):
    pts = rng.uniform(-0.1, 0.1, (50, 3))
    np.save(tmp_path / "p.npy", pts)
    np.testing.assert_allclose(load_points(tmp_path / "p.npy"), pts)
    (tmp_path / "p.csv").write_text("x,y,z\n" + "\n".join(",".join(map(str, p)) for p in pts))
    np.testing.assert_allclose(load_points(tmp_path / "p.csv"), pts)
    (tmp_path / "flat.csv").write_text("0,0,0\n1,0,0\n0,1,0\n1,1,0\n")
    with pytest.raises(ShapeError, match="coplanar"):
        load_points(tmp_path / "flat.csv")
    with pytest.raises(ShapeError):
        load_points(tmp_path / "missing.csv")


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_format_shape_spec_is_the_inverse_of_parse(name):
    shape = PAYLOADS[name].envelope
    parsed = parse_shape_spec(format_shape_spec(shape))
    assert np.isclose(parsed.volume, shape.volume, rtol=1e-5)
    lo, hi = shape.bounds()
    lo2, hi2 = parsed.bounds()
    assert np.allclose(lo, lo2, atol=1e-6) and np.allclose(hi, hi2, atol=1e-6)
    with pytest.raises(ShapeError):
        format_shape_spec(Mesh(mesh=trimesh.creation.box(extents=(0.1, 0.1, 0.1))))
