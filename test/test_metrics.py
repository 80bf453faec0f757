"""Nadeau et al.'s error metrics and the geodesic distance."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.metrics import geodesic_distance, paper_errors
from payload_estimator.core.shapes import Box


def test_paper_errors_by_hand():
    a = np.array([0.2, 0.1, 0.05])
    truth = Box(size=tuple(a)).solid_inertia(1.0)
    assert paper_errors(truth, truth, a).mass == pytest.approx(0.0, abs=1e-12)  # percent
    est = InertialParameters.from_mass_com_inertia(1.1, [0.02, 0.0, 0.0], truth.inertia_com * 1.5)
    e = paper_errors(est, truth, a)
    assert e.mass == pytest.approx(10.0)
    np.testing.assert_allclose(e.com_axes, [10.0, 0.0, 0.0], atol=1e-12)  # percent: 2 cm of a 20 cm box
    # diagonal entries are 50 % off, normalised by the box's own moments: 50 %
    np.testing.assert_allclose(e.inertia_entries[[0, 3, 5]], 50.0)
    np.testing.assert_allclose(e.inertia_entries[[1, 2, 4]], 0.0, atol=1e-12)
    assert e.inertia == pytest.approx(25.0)


def test_off_diagonal_normalisation():
    a = np.array([0.2, 0.1, 0.05])
    truth = Box(size=tuple(a)).solid_inertia(2.0)
    I = truth.inertia_com.copy()
    I[0, 1] = I[1, 0] = 2.0 / 12.0 * 0.2 * 0.1 * 0.3  # 30 % of m a_x a_y / 12
    e = paper_errors(InertialParameters.from_mass_com_inertia(2.0, truth.com, I), truth, a)
    assert e.inertia_entries[1] == pytest.approx(30.0)


def test_geodesic_distance_properties(make_body, rng):
    a, b = make_body(), make_body()
    assert geodesic_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    assert geodesic_distance(a, b) == pytest.approx(geodesic_distance(b, a), rel=1e-9)
    # invariant to a change of frame applied to both
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    R *= np.sign(np.linalg.det(R))
    p = rng.normal(size=3)
    assert geodesic_distance(a.transformed(R, p), b.transformed(R, p)) == pytest.approx(
        geodesic_distance(a, b), rel=1e-6
    )
    # scaling the mass by e gives distance 2 (all four eigenvalues = e... sqrt(4 * 1) = 2)
    assert geodesic_distance(a, a.scaled(np.e)) == pytest.approx(2.0, rel=1e-9)
    bad = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    assert geodesic_distance(a, bad) == float("inf")
