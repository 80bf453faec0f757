"""Estimators: exact recovery, equivalence with textbook algorithms, uncertainty, robustness."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.estimators import (
    InsufficientData,
    OrdinaryLeastSquares,
    PointMassDiscretization,
    RecursiveLeastSquares,
    RecursiveTotalLeastSquares,
    WeightedLeastSquares,
    make_estimator,
)
from payload_estimator.core.estimators.pmd import point_mass_matrix
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import TABLE_II
from payload_estimator.core.regressor import samples_regressor
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import sample_points
from payload_estimator.errors import ConfigurationError
from payload_estimator.sim.payloads import PAYLOADS
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

HAMMER = PAYLOADS["hammer"]
BIAS = np.array([0.4, -0.3, 0.2, 0.01, -0.02, 0.015])


@pytest.fixture(scope="module")
def exact_motion():
    """Noise-free samples of the hammer on the wrist at 2 rad/s, 3 s at 100 Hz."""
    _, exact = simulate_wrist(HAMMER.params, WristTrajectory(mean_ang_vel=2.0), duration=3.0)
    return exact


def _with_wrench(s: SensorSamples, wrench: np.ndarray) -> SensorSamples:
    return SensorSamples(s.t, s.lin_acc_in_sensor, s.ang_vel_in_sensor, s.ang_acc_in_sensor,
                         s.gravity_in_sensor, wrench)


@pytest.mark.parametrize("method", ["ols", "wls", "rls", "rtls"])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_estimators_recover_exact_parameters(exact_motion, method, bias):
    data = exact_motion if not bias else _with_wrench(exact_motion, exact_motion.wrench_in_sensor + BIAS)
    options = {"forgetting": 1.0} if method == "rls" else {}
    est = make_estimator(method, bias=bias, **options)
    est.update(data)
    e = est.estimate()
    np.testing.assert_allclose(e.phi, HAMMER.params.phi, rtol=1e-5, atol=1e-8)
    if bias:
        np.testing.assert_allclose(e.bias, BIAS, atol=1e-6)
    assert e.physically_consistent
    assert e.samples_used == len(data)


def test_rls_equals_textbook_sequential_recursion(exact_motion, rng):
    """Sherman-Morrison RLS with forgetting, one wrench channel at a time, from P0 = delta I."""
    lam, delta = 0.995, 1e3
    noisy = _with_wrench(exact_motion, exact_motion.wrench_in_sensor + rng.normal(0, 0.05, (len(exact_motion), 6)))
    Y = samples_regressor(noisy)
    theta, P = np.zeros(10), np.eye(10) * delta
    for j in range(len(noisy)):
        # one sample = 6 scalar rows; forgetting applies once per sample
        P = P / lam
        for k in range(6):
            y = Y[j, k]
            gain = P @ y / (1.0 + y @ P @ y)
            theta = theta + gain * (noisy.wrench_in_sensor[j, k] - y @ theta)
            P = P - np.outer(gain, y @ P)
    est = RecursiveLeastSquares(forgetting=lam, initial_covariance=delta, min_information=0.0)
    for chunk in np.array_split(np.arange(len(noisy)), 7):  # arbitrary batches
        est.update(noisy.select(chunk))
    np.testing.assert_allclose(est.estimate().phi, theta, rtol=1e-6, atol=1e-9)


def test_rls_forgetting_follows_a_payload_change(exact_motion):
    light = InertialParameters.from_mass_com_inertia(0.2, [0.0, 0.0, 0.05], np.eye(3) * 1e-4)
    est = RecursiveLeastSquares(forgetting=0.98)
    est.update(exact_motion)
    assert est.estimate().mass == pytest.approx(HAMMER.params.mass, rel=1e-4)
    est.update(_with_wrench(exact_motion, samples_regressor(exact_motion) @ light.phi))
    assert est.estimate().mass == pytest.approx(0.2, rel=5e-3)  # 0.98^300 of the old data remains
    no_forgetting = RecursiveLeastSquares(forgetting=1.0)
    no_forgetting.update(exact_motion)
    no_forgetting.update(_with_wrench(exact_motion, samples_regressor(exact_motion) @ light.phi))
    assert abs(no_forgetting.estimate().mass - 0.2) > 0.05


def test_rtls_equals_svd_of_scaled_data_matrix(exact_motion, rng):
    """Kubus et al.'s scaling: batch TLS by SVD of the explicitly stacked, column-scaled [A b] (Leboutet et al.)."""
    n = len(exact_motion)
    s = SensorSamples(
        exact_motion.t,
        exact_motion.lin_acc_in_sensor + rng.normal(0, 0.05, (n, 3)),
        exact_motion.ang_vel_in_sensor,
        exact_motion.ang_acc_in_sensor + rng.normal(0, 0.5, (n, 3)),
        exact_motion.gravity_in_sensor,
        exact_motion.wrench_in_sensor + rng.normal(0, 0.05, (n, 6)),
    )
    A = samples_regressor(s).reshape(-1, 10)
    b = s.wrench_in_sensor.reshape(-1)
    C = np.column_stack([A, b])
    d = 1.0 / np.sqrt((C**2).sum(axis=0))
    _, _, Vt = np.linalg.svd(C * d, full_matrices=False)
    v = Vt[-1]
    x_ref = -(v[:-1] * d[:-1]) / (v[-1] * d[-1])
    est = RecursiveTotalLeastSquares(column_std="rms")
    est.update(s)
    np.testing.assert_allclose(est.estimate().phi, x_ref, rtol=1e-6, atol=1e-9)


def test_rtls_is_generalised_tls_with_the_signals_noise(exact_motion, rng):
    """The default: the pencil of the stacked [A b] and the noise covariance of its columns (Van Huffel &
    Vandewalle 1991), the noise levels given; and with them measured from the signals, close to it."""
    import scipy.linalg

    from payload_estimator.core.regressor import regressor_noise_gram

    n = len(exact_motion)
    sa, sal, sf, st = 0.05, 0.5, 0.1, 0.005
    s = SensorSamples(
        exact_motion.t,
        exact_motion.lin_acc_in_sensor + rng.normal(0, sa, (n, 3)),
        exact_motion.ang_vel_in_sensor,
        exact_motion.ang_acc_in_sensor + rng.normal(0, sal, (n, 3)),
        exact_motion.gravity_in_sensor,
        exact_motion.wrench_in_sensor + np.c_[rng.normal(0, sf, (n, 3)), rng.normal(0, st, (n, 3))],
    )
    Z = np.column_stack([samples_regressor(s).reshape(-1, 10), s.wrench_in_sensor.reshape(-1)])
    C = np.zeros((11, 11))
    C[:10, :10] = n * regressor_noise_gram(sa, sal).sum(axis=0)
    C[10, 10] = n * 3 * (sf**2 + st**2)
    _, V = scipy.linalg.eigh(Z.T @ Z, C, subset_by_index=[0, 0])
    x_ref = -V[:10, 0] / V[10, 0]
    # plain GTLS: rows unweighted, the eigenvector (the defaults weight the channels and cap the
    # correction: test_rtls_noise_model.py)
    known = RecursiveTotalLeastSquares(kinematic_noise=(sa, sal), wrench_noise=(sf, st), channel_std=None,
                                       floor=None)
    known.update(s)
    np.testing.assert_allclose(known.estimate().phi, x_ref, rtol=1e-6, atol=1e-9)
    measured = RecursiveTotalLeastSquares()
    measured.update(s)
    e = measured.estimate()
    assert abs(e.mass - x_ref[0]) < 3 * e.mass_std


def test_wls_with_known_noise_equals_weighted_lstsq(exact_motion, rng):
    std = np.array([0.1, 0.1, 0.1, 0.005, 0.005, 0.005])
    n = len(exact_motion)
    s = _with_wrench(exact_motion, exact_motion.wrench_in_sensor + rng.normal(0, 1, (n, 6)) * std)
    A = samples_regressor(s) / std[None, :, None]
    b = s.wrench_in_sensor / std
    x_ref = np.linalg.lstsq(A.reshape(-1, 10), b.reshape(-1), rcond=None)[0]
    est = WeightedLeastSquares(channel_std=std)
    est.update(s)
    e = est.estimate()
    np.testing.assert_allclose(e.phi, x_ref, rtol=1e-8, atol=1e-10)
    # and the reported covariance is close to (A^T S^-1 A)^-1: the sandwich measures the noise from
    # the residuals (white here, so within the sampling error of a variance from 300 samples)
    cov_ref = np.linalg.inv(A.reshape(-1, 10).T @ A.reshape(-1, 10))
    np.testing.assert_allclose(np.sqrt(np.diag(e.covariance)), np.sqrt(np.diag(cov_ref)), rtol=0.2)


def test_reported_uncertainty_matches_monte_carlo(exact_motion):
    """The OLS mass and COM std predicted from one data set match the spread over 200 data sets."""
    rng = np.random.default_rng(7)
    n = len(exact_motion)
    std = np.array([0.1, 0.1, 0.1, 0.005, 0.005, 0.005])
    masses, coms, predicted = [], [], []
    for _ in range(200):
        s = _with_wrench(exact_motion, exact_motion.wrench_in_sensor + rng.normal(0, 1, (n, 6)) * std)
        est = OrdinaryLeastSquares()
        est.update(s)
        e = est.estimate()
        masses.append(e.mass)
        coms.append(e.com)
        predicted.append([e.mass_std, *e.com_std])
    predicted = np.mean(predicted, axis=0)
    empirical = np.r_[np.std(masses), np.std(coms, axis=0)]
    np.testing.assert_allclose(predicted, empirical, rtol=0.25)


def test_pmd_recovers_a_body_made_of_its_own_points(exact_motion, rng):
    points = sample_points(HAMMER.envelope)
    masses = rng.uniform(0.0, 0.02, len(points))
    truth = InertialParameters(point_mass_matrix(points) @ masses)
    data = _with_wrench(exact_motion, samples_regressor(exact_motion) @ truth.phi)
    # c1 -> 0 gives w = 1: the full model only, which these exact data satisfy exactly
    est = PointMassDiscretization(points, regularization=1e-9, c1=1e-9)
    est.update(data)
    e = est.estimate()
    assert e.mass == pytest.approx(truth.mass, rel=1e-5)
    np.testing.assert_allclose(e.com, truth.com, atol=1e-5)
    assert e.physically_consistent
    assert np.all(est.masses >= 0)


def test_pmd_osqp_workspace_agrees_with_an_independent_solver(exact_motion, rng):
    """The persistent OSQP path and Clarabel (interior point, through qpsolvers) solve the same QP."""
    pytest.importorskip("clarabel")
    noisy, _ = simulate_wrist(HAMMER.params, WristTrajectory(1.0), duration=1.5,
                              noise=TABLE_II["moderate"], rng=np.random.default_rng(3))
    points = sample_points(HAMMER.envelope)
    results = []
    for solver in ("osqp", "clarabel", "osqp-qpsolvers"):
        est = PointMassDiscretization(points, solver=solver, bias=True)
        est.update(noisy)
        results.append(est.estimate())
    for other in results[1:]:
        np.testing.assert_allclose(other.phi, results[0].phi, rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(other.bias, results[0].bias, atol=1e-4)


def test_pmd_is_consistent_and_accurate_on_paper_objects():
    for name in ("hammer", "corner", "tower"):
        payload = PAYLOADS[name]
        noisy, _ = simulate_wrist(payload.params, WristTrajectory(1.0), duration=1.5,
                                  noise=TABLE_II["moderate"], rng=np.random.default_rng(11))
        est = PointMassDiscretization(sample_points(payload.envelope))
        est.update(noisy)
        e = est.estimate()
        assert e.physically_consistent
        assert e.mass == pytest.approx(payload.mass, rel=0.01)
        assert np.all(np.abs(e.com - payload.params.com) < 0.08 * payload.bbox_lengths)
        assert e.covariance is not None and np.all(np.isfinite(e.phi_std))


def test_pmd_estimates_the_ft_bias(exact_motion):
    data = _with_wrench(exact_motion, exact_motion.wrench_in_sensor + BIAS)
    # full model only (c1 -> 0): the reduced model's approximation error would leak into the offsets
    est = PointMassDiscretization(sample_points(HAMMER.envelope), bias=True, regularization=1e-6, c1=1e-9)
    est.update(data)
    e = est.estimate()
    np.testing.assert_allclose(e.bias, BIAS, atol=2e-3)
    assert e.mass == pytest.approx(HAMMER.mass, rel=2e-3)


def test_pmd_warm_start_reuses_the_workspace(exact_motion):
    wrench = exact_motion.wrench_in_sensor
    noise = np.random.default_rng(3).normal(0.0, [0.1] * 3 + [0.005] * 3, wrench.shape)
    noisy = _with_wrench(exact_motion, wrench + noise)
    est = PointMassDiscretization(sample_points(HAMMER.envelope))
    est.update(noisy.select(slice(0, 100)))
    est.estimate()
    workspace = est._qp._workspace
    est.update(noisy.select(slice(100, 105)))
    est.estimate()
    warm = est.last_solve_iterations
    assert est._qp._workspace is workspace  # updated in place, not rebuilt
    cold = PointMassDiscretization(sample_points(HAMMER.envelope))
    cold.update(noisy.select(slice(0, 105)))
    cold.estimate()
    assert warm <= max(cold.last_solve_iterations, 50)


def test_pmd_resolve_on_the_last_support_is_the_qps_minimiser(exact_motion):
    """A few samples later the last support usually still holds the minimiser: it is solved exactly,
    without OSQP. When the data move the minimiser off it (here: another body's wrench follows), the
    optimality check sends the solve to OSQP. Either way the estimate is the one OSQP and the
    refinement find from a cold start on the same data."""
    from payload_estimator.core.estimators.qp import EXACT_ON_SUPPORT

    rng = np.random.default_rng(5)
    std = np.array([0.1] * 3 + [0.005] * 3)
    points = sample_points(HAMMER.envelope)
    hammer = _with_wrench(exact_motion, exact_motion.wrench_in_sensor + rng.normal(0.0, std, (len(exact_motion), 6)))
    # another body in the same envelope: the hammer's mass on one point at the envelope's end
    phi_other = HAMMER.mass * point_mass_matrix(points)[:, int(np.argmax(points[:, 2]))]
    other_wrench = samples_regressor(exact_motion) @ phi_other
    other = _with_wrench(exact_motion, other_wrench + rng.normal(0.0, std, other_wrench.shape))
    batches = [hammer.select(slice(0, 150))] + [hammer.select(slice(i, i + 10)) for i in range(150, 300, 10)]
    batches += [other.select(slice(i, i + 50)) for i in range(0, 300, 50)]

    def estimator() -> PointMassDiscretization:
        return PointMassDiscretization(points, channel_std=std, kinematic_noise=None)

    est = estimator()
    statuses = []
    for k, batch in enumerate(batches):
        est.update(batch)
        e = est.estimate()
        statuses.append(est.last_solve_status)
        cold = estimator()
        for earlier in batches[: k + 1]:
            cold.update(earlier)
        c = cold.estimate()
        assert cold.last_solve_status != EXACT_ON_SUPPORT
        np.testing.assert_allclose(e.phi, c.phi, rtol=1e-5, atol=1e-8 * HAMMER.mass)
        assert np.all(est.masses >= 0.0)
    on_hammer, on_other = statuses[1:16], statuses[16:]
    assert on_hammer.count(EXACT_ON_SUPPORT) >= 10  # the support rarely changes between estimates this close
    assert any(s != EXACT_ON_SUPPORT for s in on_other)  # ... and when it does, OSQP searches again
    assert est.last_solve_iterations == 0 or est.last_solve_status != EXACT_ON_SUPPORT


def test_non_finite_samples_are_dropped_and_counted(exact_motion):
    bad_wrench = exact_motion.wrench_in_sensor.copy()
    bad_wrench[5, 2] = np.nan
    bad_wrench[9, 0] = np.inf
    bad = _with_wrench(exact_motion, bad_wrench)
    for method in ("ols", "rtls", "pmd"):
        est = make_estimator(method, sample_points(HAMMER.envelope))
        est.update(bad)
        assert est.rejected_samples == 2
        assert est.samples_used == len(bad) - 2
        assert est.estimate().mass == pytest.approx(HAMMER.mass, rel=1e-3)


def test_no_data_raises_insufficient_data():
    with pytest.raises(InsufficientData):
        OrdinaryLeastSquares().estimate()
    with pytest.raises(ValueError):
        make_estimator("pmd")
    with pytest.raises(ValueError):
        make_estimator("nope")


def test_inertia_identifiability_flag(exact_motion):
    # static poses: gravity only, the inertia cannot be identified
    static = SensorSamples.at_rest(exact_motion.t, exact_motion.gravity_in_sensor,
                                   samples_regressor(SensorSamples.at_rest(
                                       exact_motion.t, exact_motion.gravity_in_sensor,
                                       np.zeros((len(exact_motion), 6)))) @ HAMMER.params.phi)
    est = OrdinaryLeastSquares()
    est.update(static)
    e = est.estimate()
    assert not e.inertia_identifiable
    assert e.mass == pytest.approx(HAMMER.mass, rel=1e-6)  # mass and COM still are
    np.testing.assert_allclose(e.com, HAMMER.params.com, atol=1e-6)
    # rich motion with small noise: identified
    rng = np.random.default_rng(0)
    n = len(exact_motion)
    s = _with_wrench(exact_motion, exact_motion.wrench_in_sensor + rng.normal(0, 1e-4, (n, 6)))
    est = OrdinaryLeastSquares()
    est.update(s)
    assert est.estimate().inertia_identifiable


@pytest.mark.parametrize("seed", range(5))
def test_one_pass_validation_is_the_masks(seed):
    """``SensorSamples.usable`` keeps and zeroes exactly what ``usable_mask`` and ``with_tiny_values_zeroed`` do."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 30))
        arrays = [rng.normal(size=(n, 3)) for _ in range(4)] + [rng.normal(size=(n, 6))]
        t = np.arange(n, dtype=float)
        for _ in range(int(rng.integers(0, 3))):
            k = int(rng.integers(0, 5))
            arrays[k][rng.integers(0, n), rng.integers(0, arrays[k].shape[1])] = rng.choice(
                [np.nan, np.inf, -np.inf, 2e6, -2e6, 1e-40, -1e-40, 0.0])
        if rng.random() < 0.2:
            t[rng.integers(0, n)] = np.nan
        samples = SensorSamples(t, *arrays)
        kept, dropped = samples.usable()
        ok = samples.usable_mask()
        reference = samples.select(ok).with_tiny_values_zeroed()
        assert dropped == int(np.count_nonzero(~ok))
        for name in ("t", "lin_acc_in_sensor", "ang_vel_in_sensor", "ang_acc_in_sensor", "gravity_in_sensor",
                     "wrench_in_sensor"):
            np.testing.assert_array_equal(getattr(kept, name), getattr(reference, name))


@pytest.mark.parametrize("method", ["ols", "rtls", "pmd"])
def test_samples_fed_one_at_a_time_give_the_estimate_of_one_batch(method):
    """Small batches are gathered before they are taken in: the estimate, the counts and the rejected
    samples are those of the same samples in one batch, whenever they are read."""
    noisy, _ = simulate_wrist(PAYLOADS["hammer"].params, WristTrajectory(1.0), duration=2.0,
                              noise=TABLE_II["moderate"], rng=np.random.default_rng(7))
    values = noisy.wrench_in_sensor.copy()
    values[17, 2] = np.nan  # one bad sample among them
    noisy = SensorSamples(noisy.t, noisy.lin_acc_in_sensor, noisy.ang_vel_in_sensor, noisy.ang_acc_in_sensor,
                          noisy.gravity_in_sensor, values)
    points = sample_points(PAYLOADS["hammer"].envelope, max_points=200) if method == "pmd" else None
    batch = make_estimator(method, points, bias=True, offset_window_s=1.0)
    single = make_estimator(method, points, bias=True, offset_window_s=1.0)
    batch.update(noisy)
    reused = [np.zeros((1, 3)) for _ in range(4)] + [np.zeros((1, 6))]  # a caller that refills its arrays
    for i in range(len(noisy)):
        one = noisy.select(slice(i, i + 1))
        for mine, theirs in zip(reused, (one.lin_acc_in_sensor, one.ang_vel_in_sensor, one.ang_acc_in_sensor,
                                         one.gravity_in_sensor, one.wrench_in_sensor)):
            mine[:] = theirs
        single.update(SensorSamples(one.t, *reused))
        if i == 20:
            assert single.rejected_samples == 1 and single.samples_used == 20  # a read takes in what is held
    assert single.samples_used == batch.samples_used == len(noisy) - 1
    assert single.rejected_samples == batch.rejected_samples == 1
    a, b = single.estimate(), batch.estimate()
    np.testing.assert_allclose(a.params.phi, b.params.phi, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(a.covariance, b.covariance, rtol=1e-5, atol=1e-12)


def test_pmd_solve_budget_keeps_the_last_converged_estimate():
    """A solve stopped by PMD's iteration budget leaves the last converged estimate in place, counts it, and
    continues from where it stopped: the estimates converge over the following calls."""
    noisy, _ = simulate_wrist(PAYLOADS["hammer"].params, WristTrajectory(1.0), duration=3.0,
                              noise=TABLE_II["moderate"], rng=np.random.default_rng(11))
    points = sample_points(PAYLOADS["hammer"].envelope, max_points=300)
    generous = make_estimator("pmd", points, bias=True)
    tight = make_estimator("pmd", points, bias=True, iteration_budget=25)
    for est in (generous, tight):
        est.update(noisy.select(slice(0, 150)))
    first = tight.estimate()
    assert tight.budget_reached >= 1 and int(first.extras["qp_iterations"]) <= 25 + 25  # one termination check
    converged_params = None
    for k in range(150, 300, 10):
        for est in (generous, tight):
            est.update(noisy.select(slice(k, k + 10)))
        before = tight.budget_reached
        est_tight = tight.estimate()
        if tight.budget_reached > before and converged_params is not None:
            # stopped at the budget: the last estimate that converged, not the solver's iterate
            np.testing.assert_allclose(est_tight.params.phi, converged_params)
        elif tight.budget_reached == before:
            converged_params = est_tight.params.phi.copy()
    assert converged_params is not None, "the tight budget never converged: its solves do not continue"
    final = generous.estimate()
    assert abs(tight.estimate().mass - final.mass) < 0.02 * final.mass
    with pytest.raises(ConfigurationError):
        make_estimator("pmd", points, iteration_budget=-1)
