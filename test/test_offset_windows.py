"""Offsets that vary in time: a line per window of sample time, left out of the statistics.

Ground truth from pinocchio's RNEA on Nadeau et al.'s wrist sinusoids (``sim.wrist``), not from our
regressor; the offsets drift as an F/T sensor's do (a linear trend plus a random walk).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from payload_estimator.core.estimators import METHODS, make_estimator
from payload_estimator.core.estimators.linear_algebra import solve_psd
from payload_estimator.core.metrics import paper_errors
from payload_estimator.core.noise import get_noise
from payload_estimator.core.offset_windows import MIN_BATCHES, WindowedStatistics
from payload_estimator.core.point_masses import sample_points
from payload_estimator.core.regressor import features_regressor, samples_features
from payload_estimator.core.statistics import RegressorStatistics
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

HAMMER = get_payload("claw_hammer")
SCALE = HAMMER.mass * 9.81 * np.array([1.0, 1.0, 1.0, 0.05, 0.05, 0.05])
"""The simulator's unit of an offset: the payload's weight per axis (torques: times 5 cm)."""


def _drift(t: np.ndarray, factor: float, seed: int = 1) -> np.ndarray:
    """(N, 6) an offset drifting as the simulator's does: 0.1 % of the weight per s, and a random walk."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.normal(0.0, 1.0, (len(t), 6)) * np.sqrt(np.diff(t, prepend=t[0]))[:, None], axis=0)
    return factor * (np.outer(t, rng.normal(0.0, 1e-3, 6)) + 5e-4 * walk) * SCALE + rng.normal(0.0, 0.03, 6) * SCALE


@pytest.fixture(scope="module")
def long_run():
    noisy, exact = simulate_wrist(HAMMER.params, WristTrajectory(mean_ang_vel=1.0), duration=180.0, rate_hz=100.0,
                                  noise=get_noise("moderate"), rng=np.random.default_rng(0))
    return noisy, exact


def _feed(estimator, samples, batch: int = 25):
    for k in range(0, len(samples), batch):
        estimator.update(samples.select(slice(k, k + batch)))
    return estimator.estimate()


def test_a_window_longer_than_the_data_with_known_offsets_is_the_plain_statistics(long_run):
    _, exact = long_run
    F = samples_features(exact)
    Y = features_regressor(F)
    plain, windowed = RegressorStatistics(), WindowedStatistics(1e6, first_known=True)
    for k in range(0, len(exact), 37):
        rows = slice(k, k + 37)
        for stats in (plain, windowed):
            stats.add(Y[rows], exact.wrench_in_sensor[rows], t=exact.t[rows], features=F[rows])
    # the same sums, added in another order (the window's Gram is its short batches')
    np.testing.assert_allclose(plain.gram, windowed.gram, rtol=1e-13, atol=1e-9)
    np.testing.assert_allclose(plain.feature_gram(), windowed.feature_gram(), rtol=1e-13, atol=1e-9)
    ne = windowed.normal_equations(False)
    np.testing.assert_allclose(solve_psd(ne.A, ne.c)[0], HAMMER.params.phi, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("factor", [1.0, 10.0])
def test_a_drifting_offset_no_longer_moves_the_estimate(long_run, factor):
    """Three minutes of the simulator's drift (and ten times it). Held constant, the offsets' drift moves
    mass, COM and inertia; a line per window leaves it out: the estimate is nearly what the same data give
    without any drift, and the F/T offsets reported are the ones at the newest sample."""
    noisy, _ = long_run
    drift = _drift(noisy.t, factor)
    drifting = replace(noisy, wrench_in_sensor=noisy.wrench_in_sensor + drift)
    undrifted = paper_errors(_feed(make_estimator("wls", bias=True), noisy).params, HAMMER.params,
                             HAMMER.bbox_lengths)
    constant = paper_errors(_feed(make_estimator("wls", bias=True), drifting).params, HAMMER.params,
                            HAMMER.bbox_lengths)
    est = _feed(make_estimator("wls", bias=True, offset_window_s=10.0), drifting)
    windowed = paper_errors(est.params, HAMMER.params, HAMMER.bbox_lengths)
    assert windowed.mass < 0.1 and windowed.com < 0.15
    assert windowed.mass < 0.3 * constant.mass and windowed.com < 0.5 * constant.com
    assert windowed.inertia < undrifted.inertia + 3.0 * factor and windowed.inertia < 0.5 * constant.inertia
    np.testing.assert_allclose(est.bias[:3], drift[-1, :3], atol=0.05 * factor)


def test_slow_motion_keeps_its_information(long_run):
    """A reorientation slower than the window turns gravity almost linearly in time: a line would take it
    for drift, so such a window removes its mean only, and the mass stays as well determined as with one
    constant offset."""
    slow, _ = simulate_wrist(HAMMER.params, WristTrajectory(mean_ang_vel=0.15), duration=40.0, rate_hz=100.0,
                             noise=get_noise("moderate"), rng=np.random.default_rng(3))
    plain = _feed(make_estimator("wls", bias=True), slow)
    windowed = _feed(make_estimator("wls", bias=True, offset_window_s=10.0), slow)
    assert windowed.mass == pytest.approx(HAMMER.mass, rel=0.01)
    assert windowed.mass_std < 3.0 * plain.mass_std


@pytest.mark.parametrize("method", METHODS)
def test_every_estimator_takes_the_offset_model(long_run, method):
    noisy, _ = long_run
    short = noisy.select(noisy.t < 60.0)
    drifting = replace(short, wrench_in_sensor=short.wrench_in_sensor + _drift(short.t, 1.0))
    points = sample_points(HAMMER.envelope) if method.startswith("pmd") else None
    est = _feed(make_estimator(method, points, bias=True, offset_window_s=10.0), drifting)
    assert est.params.mass == pytest.approx(HAMMER.mass, rel=0.01)
    assert est.bias is not None and np.all(np.isfinite(est.bias))


def test_the_windows_scores_tell_a_model_error_correlated_over_seconds(long_run):
    """A residual that follows the motion over seconds (unmodelled dynamics) moves the score coherently
    within a batch; the spread of the batches' scores shows it, and the reported uncertainty grows to
    cover the error it causes."""
    noisy, exact = long_run
    rng = np.random.default_rng(5)
    slow = np.cumsum(rng.normal(0.0, 1.0, (len(exact), 6)), axis=0)
    slow = (slow - np.convolve(slow[:, 0], np.ones(300) / 300, mode="same")[:, None]) * 0.004 * np.array(
        [1.0, 1.0, 1.0, 0.05, 0.05, 0.05])
    spoiled = replace(noisy, wrench_in_sensor=noisy.wrench_in_sensor + slow)
    est = _feed(make_estimator("ols", bias=True, offset_window_s=10.0), spoiled)
    stats = make_estimator("ols", bias=True, offset_window_s=10.0).stats
    assert isinstance(stats, WindowedStatistics)
    F = samples_features(spoiled)
    stats.add(features_regressor(F), spoiled.wrench_in_sensor, t=spoiled.t, features=F)
    assert stats.windows_closed >= MIN_BATCHES
    S = stats.batch_score_covariance(est.phi, False)
    assert S is not None and np.all(np.linalg.eigvalsh(S[:10, :10]) >= -1e-9 * np.trace(S))
    z = np.abs(est.params.mass - HAMMER.mass) / est.mass_std
    assert z < 3.0


def test_offsets_of_a_recursive_estimator_forget_alike(long_run):
    noisy, _ = long_run
    short = noisy.select(noisy.t < 40.0)
    drifting = replace(short, wrench_in_sensor=short.wrench_in_sensor + _drift(short.t, 1.0))
    est = _feed(make_estimator("rls", bias=True, offset_window_s=10.0, forgetting=0.999), drifting)
    assert est.params.mass == pytest.approx(HAMMER.mass, rel=0.02)


def test_offsets_that_jump_while_the_input_is_silent_start_a_new_window(long_run):
    """The sensor goes silent in the middle of a window and comes back with its offsets moved by a tenth
    of the payload's weight (a driver restarted, a re-zeroing): told of the break, the estimator starts a
    new window there and the jump changes nothing at all; not told, the window that straddles it cannot
    fit it, and the COM moves."""
    noisy, _ = long_run
    before = noisy.select(noisy.t < 15.0)
    after = noisy.select((noisy.t >= 15.5) & (noisy.t < 60.0))
    jump = 0.1 * SCALE * np.array([1.0, -1.0, 0.5, 1.0, -0.5, 1.0])
    jumped = replace(after, wrench_in_sensor=after.wrench_in_sensor + jump)

    def estimate(second, told):
        est = make_estimator("wls", bias=True, offset_window_s=10.0)
        _feed(est, before)
        if told:
            est.input_break()
        return _feed(est, second)

    reference = estimate(after, True)
    np.testing.assert_allclose(estimate(jumped, True).phi, reference.phi, rtol=1e-6, atol=1e-9)
    com_moved = np.linalg.norm(estimate(jumped, False).params.com - reference.params.com)
    assert com_moved > 3e-4  # m (0.8 mm measured)
