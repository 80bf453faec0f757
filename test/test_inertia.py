"""The inertial-parameter value type and every convention change, against pinocchio."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from payload_estimator.core.inertia import (
    InertialParameters,
    check_physical_consistency,
    from_pseudo_inertia,
    from_ros_inertia_fields,
    phi_from_pinocchio,
    phi_to_pinocchio,
    pseudo_inertia,
    skew,
    to_ros_inertia_fields,
    unvech,
    vech,
)


def test_mass_com_inertia_round_trip(make_body):
    for _ in range(20):
        p = make_body()
        q = InertialParameters.from_mass_com_inertia(p.mass, p.com, p.inertia_com)
        np.testing.assert_allclose(q.phi, p.phi, atol=1e-14)
        np.testing.assert_allclose(q.inertia_com, p.inertia_com, atol=1e-14)


def test_parallel_axis_matches_pinocchio(make_body):
    """Paper order and pinocchio order, both about the origin, from pinocchio's own Inertia."""
    for _ in range(20):
        p = make_body()
        pin_params = pin.Inertia(p.mass, p.com, p.inertia_com).toDynamicParameters()
        np.testing.assert_allclose(phi_to_pinocchio(p.phi), pin_params, atol=1e-13)
        np.testing.assert_allclose(phi_from_pinocchio(pin_params), p.phi, atol=1e-13)
        # pinocchio's inertia about the origin is our J
        I_o = pin.Inertia(p.mass, p.com, p.inertia_com).matrix()[3:, 3:]
        np.testing.assert_allclose(p.inertia_origin, I_o, atol=1e-13)


def test_transform_matches_pinocchio_se3_action(make_body):
    for _ in range(20):
        p = make_body()
        M = pin.SE3.Random()
        moved = p.transformed(M.rotation, M.translation)
        ref = M.act(pin.Inertia(p.mass, p.com, p.inertia_com))
        np.testing.assert_allclose(moved.com, ref.lever, atol=1e-12)
        np.testing.assert_allclose(moved.inertia_com, ref.inertia, atol=1e-12)
        back = moved.transformed(M.rotation.T, -M.rotation.T @ M.translation)
        np.testing.assert_allclose(back.phi, p.phi, atol=1e-12)


def test_ros_inertia_fields_round_trip(make_body):
    p = make_body()
    f = to_ros_inertia_fields(p)
    assert f["m"] == pytest.approx(p.mass)
    assert f["ixy"] == pytest.approx(p.inertia_com[0, 1])
    q = from_ros_inertia_fields(**f)
    np.testing.assert_allclose(q.phi, p.phi, atol=1e-14)


def test_vech_and_skew():
    J = np.array([[1.0, 2, 3], [2, 4, 5], [3, 5, 6]])
    assert list(vech(J)) == [1, 2, 3, 4, 5, 6]
    np.testing.assert_array_equal(unvech(vech(J)), J)
    u, v = np.array([1.0, -2, 3]), np.array([0.5, 4, -1])
    np.testing.assert_allclose(skew(u) @ v, np.cross(u, v))


def test_additivity_of_point_masses():
    a = InertialParameters.point_mass(1.0, [0.1, 0.0, 0.0])
    b = InertialParameters.point_mass(1.0, [-0.1, 0.0, 0.0])
    both = a + b
    assert both.mass == 2.0
    np.testing.assert_allclose(both.com, 0.0, atol=1e-15)
    # two point masses at +-0.1 m on x: I_yy = I_zz = 2 * 1 * 0.01, I_xx = 0
    np.testing.assert_allclose(np.diag(both.inertia_com), [0.0, 0.02, 0.02], atol=1e-15)


def test_physical_consistency_accepts_real_bodies(make_body):
    for _ in range(20):
        p = make_body()
        c = check_physical_consistency(p)
        assert c.consistent and c.mass_positive and c.triangle_inequality
        assert np.linalg.eigvalsh(pseudo_inertia(p))[0] > 0


def test_physical_consistency_rejects_impossible_bodies():
    # negative mass
    assert not InertialParameters.from_mass_com_inertia(-1.0, np.zeros(3), np.eye(3)).is_physically_consistent()
    # principal moments violating the triangle inequality: 1 + 1 < 3
    bad = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    check = check_physical_consistency(bad)
    assert not check.triangle_inequality and not check.consistent
    # negative moment
    negative = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([-0.1, 1, 1]))
    assert not negative.is_physically_consistent()
    # NaN
    assert not InertialParameters(np.full(10, np.nan)).is_physically_consistent()


def test_pseudo_inertia_round_trip_and_rod_limit(make_body):
    p = make_body()
    np.testing.assert_allclose(from_pseudo_inertia(pseudo_inertia(p)).phi, p.phi, atol=1e-14)
    # A thin rod (two point masses) is realisable but degenerate: PSD, consistent.
    rod = InertialParameters.point_mass(0.5, [0, 0, 0.1]) + InertialParameters.point_mass(0.5, [0, 0, -0.1])
    assert check_physical_consistency(rod).consistent
