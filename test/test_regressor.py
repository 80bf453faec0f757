"""The regressor against independent rigid-body implementations (pinocchio spatial algebra and RNEA)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from payload_estimator.core.regressor import (
    bias_regressor,
    predict_wrench,
    reduced_regressor,
    regressor,
    regressor_reference,
)
from payload_estimator.core.samples import SensorSamples
from payload_estimator.sim.payloads import PAYLOADS
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist


def _pinocchio_wrench_on_sensor(p, a, w, al, g, v_origin):
    """Newton-Euler with pinocchio's spatial algebra: sensor-on-body wrench, then its opposite."""
    I = pin.Inertia(p.mass, p.com, p.inertia_com)
    v = pin.Motion(v_origin, w)
    # spatial acceleration = classical acceleration of the origin minus omega x v
    a_spatial = pin.Motion(a - np.cross(w, v_origin), al)
    f_on_body = I * (a_spatial - pin.Motion(g, np.zeros(3))) + v.cross(I * v)
    return -f_on_body.vector


def test_regressor_matches_pinocchio_newton_euler(make_body, rng):
    for _ in range(50):
        p = make_body()
        a, w, al, g, vo = (rng.normal(size=3) * s for s in (2.0, 2.0, 10.0, 9.81, 0.5))
        Y = regressor(a[None], w[None], al[None], g[None])[0]
        np.testing.assert_allclose(Y @ p.phi, _pinocchio_wrench_on_sensor(p, a, w, al, g, vo), atol=1e-12)


def test_fast_regressor_equals_reference(rng):
    n = 500
    a, w, al, g = (rng.normal(size=(n, 3)) for _ in range(4))
    np.testing.assert_allclose(regressor(a, w, al, g), regressor_reference(a, w, al, g), atol=1e-13)


def test_regressor_matches_pinocchio_rnea_along_a_trajectory():
    """The wrist simulator computes wrenches with pinocchio's RNEA; the regressor must agree."""
    payload = PAYLOADS["hammer"].params
    _, exact = simulate_wrist(payload, WristTrajectory(mean_ang_vel=2.0), duration=2.0, rate_hz=50.0)
    np.testing.assert_allclose(predict_wrench(payload.phi, exact), exact.wrench_in_sensor, atol=1e-10)
    # and the motion was not trivial
    assert np.linalg.norm(exact.ang_acc_in_sensor, axis=1).max() > 0.5


def test_static_payload_and_reduced_model(make_body, rng):
    p = make_body()
    g = rng.normal(size=(10, 3))
    g *= 9.81 / np.linalg.norm(g, axis=1, keepdims=True)
    z = np.zeros_like(g)
    w_full = regressor(z, z, z, g) @ p.phi
    w_red = reduced_regressor(g) @ p.phi
    np.testing.assert_allclose(w_full, w_red, atol=1e-13)
    np.testing.assert_allclose(w_red[:, :3], p.mass * g, atol=1e-12)  # f = m g
    np.testing.assert_allclose(w_red[:, 3:], p.mass * np.cross(p.com, g), atol=1e-12)  # tau = m c x g
    # the reduced model does not see the inertia tensor at all
    assert np.all(reduced_regressor(g)[:, :, 4:] == 0)


def test_bias_columns_and_prediction(make_body, rng):
    p = make_body()
    n = 5
    s = SensorSamples(np.arange(n), *(rng.normal(size=(n, 3)) for _ in range(4)), np.zeros((n, 6)))
    beta = rng.normal(size=6)
    B = bias_regressor(n)
    np.testing.assert_allclose(B @ beta, np.tile(beta, (n, 1)))
    np.testing.assert_allclose(predict_wrench(p.phi, s, beta) - predict_wrench(p.phi, s), np.tile(beta, (n, 1)))
