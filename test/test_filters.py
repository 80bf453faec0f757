"""Causal low-pass and phase-matched differentiation (pipeline/filters.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from payload_estimator.pipeline.filters import (
    LowPassFilter,
    MatchedDelay,
    MatchedDifferentiator,
    PositionVelocityDifferentiator,
    butter_lowpass_sos,
    settling_time_s,
    zero_phase_lowpass,
)

RATE = 1000.0
CUTOFF = 20.0
FREQS = np.array([0.7, 1.9, 3.1])  # Hz, well below the cutoff
AMPS = np.array([[0.5, -0.2], [0.3, 0.4], [-0.1, 0.25]])  # (freq, channel)
PHASES = np.array([0.3, 1.1, -0.4])


def sinusoids(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two channels of sums of sines and their exact first and second derivatives."""
    w = 2 * np.pi * FREQS
    arg = np.outer(t, w) + PHASES  # (N, F)
    x = np.sin(arg) @ AMPS
    dx = (np.cos(arg) * w) @ AMPS
    ddx = (-np.sin(arg) * w**2) @ AMPS
    return x, dx, ddx


def reference_filter(x: np.ndarray, order: int = 4) -> np.ndarray:
    """G applied to a whole record, steady-state initialised at the first row."""
    sos = butter_lowpass_sos(CUTOFF, RATE, order)
    zi = signal.sosfilt_zi(sos)[:, :, None] * x[0][None, None, :]
    return signal.sosfilt(sos, x, axis=0, zi=zi)[0]


def split_points(n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), size=25, replace=False))
    # include batches of 0, 1 and 2 samples
    return [0, 0, 1, 2, 3, 3, *cuts.tolist(), n]


def run_split(fn, cuts: list[int], *arrays: np.ndarray):
    outs = [fn(*(a[i:j] for a in arrays)) for i, j in zip(cuts[:-1], cuts[1:])]
    return [np.concatenate([o[k] for o in outs]) for k in range(len(outs[0]))]


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("cutoff", [0.0, -1.0, 500.0, 600.0, np.nan])
def test_cutoff_must_be_below_nyquist(cutoff: float) -> None:
    with pytest.raises(ValueError, match="Nyquist"):
        LowPassFilter(cutoff, RATE)


def test_bad_order_and_rate_rejected() -> None:
    with pytest.raises(ValueError):
        LowPassFilter(10.0, RATE, order=0)
    with pytest.raises(ValueError):
        LowPassFilter(10.0, -5.0)


def test_non_finite_input_rejected_and_state_untouched() -> None:
    lp = LowPassFilter(CUTOFF, RATE, channels=2)
    lp(np.ones((5, 2)))
    with pytest.raises(ValueError, match="NaN"):
        lp(np.array([[1.0, np.nan]]))
    np.testing.assert_allclose(lp(np.ones((3, 2))), 1.0, rtol=1e-12)


def test_non_uniform_grid_rejected() -> None:
    d = MatchedDifferentiator(CUTOFF, RATE, channels=1)
    d(np.array([0.0, 0.001, 0.002]), np.zeros(3))
    with pytest.raises(ValueError, match="uniform"):
        d(np.array([0.010]), np.zeros(1))  # skipped grid points: must reset first
    d.reset()
    out = d(np.array([0.010, 0.011, 0.012]), np.zeros(3))
    assert out.t.tolist() == [0.011]


# ---------------------------------------------------------------- steady state
def test_constant_input_gives_constant_output_from_first_sample() -> None:
    c = np.array([3.0, -7.5, 0.25])
    lp = LowPassFilter(CUTOFF, RATE, order=6, channels=3)
    y = lp(np.tile(c, (200, 1)))
    np.testing.assert_allclose(y, np.tile(c, (200, 1)), rtol=1e-12, atol=1e-12)

    d = MatchedDifferentiator(CUTOFF, RATE, channels=3)
    t = np.arange(50) / RATE
    out = d(t, np.tile(c, (50, 1)))
    np.testing.assert_allclose(out.x, np.tile(c, (48, 1)), rtol=1e-12)
    np.testing.assert_allclose(out.dx, 0.0, atol=1e-8)
    np.testing.assert_allclose(out.ddx, 0.0, atol=1e-5)


def test_reset_restarts_from_steady_state() -> None:
    lp = LowPassFilter(CUTOFF, RATE)
    lp(np.zeros(100))
    lp.reset()
    np.testing.assert_allclose(lp(np.full(10, 2.0)), 2.0, rtol=1e-12)


# ---------------------------------------------------------------- batch split invariance
def test_lowpass_batch_split_invariance() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(700, 3))
    whole = LowPassFilter(CUTOFF, RATE, channels=3)(x)
    lp = LowPassFilter(CUTOFF, RATE, channels=3)
    cuts = split_points(len(x), 2)
    parts = np.concatenate([lp(x[i:j]) for i, j in zip(cuts[:-1], cuts[1:])])
    np.testing.assert_allclose(parts, whole, rtol=0, atol=1e-13)


@pytest.mark.parametrize("cls", [MatchedDifferentiator, MatchedDelay])
def test_matched_batch_split_invariance(cls) -> None:
    rng = np.random.default_rng(3)
    t = 12.5 + np.arange(600) / RATE
    x = rng.normal(size=(600, 2))
    whole = cls(CUTOFF, RATE, channels=2)(t, x)
    split = run_split(cls(CUTOFF, RATE, channels=2), split_points(600, 4), t, x)
    assert len(whole[0]) == 598
    for a, b in zip(whole, split):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-9)


def test_position_velocity_batch_split_invariance() -> None:
    rng = np.random.default_rng(5)
    t = np.arange(500) / RATE
    q, dq = rng.normal(size=(500, 3)), rng.normal(size=(500, 3))
    whole = PositionVelocityDifferentiator(CUTOFF, RATE, 3)(t, q, dq)
    split = run_split(PositionVelocityDifferentiator(CUTOFF, RATE, 3), split_points(500, 6), t, q, dq)
    for a, b in zip(whole, split):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-9)


def test_delay_and_differentiator_rows_line_up() -> None:
    t = np.arange(40) / RATE
    x = np.sin(7 * t)[:, None]
    d, m = MatchedDifferentiator(CUTOFF, RATE, 1), MatchedDelay(CUTOFF, RATE, 1)
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 17), (17, 40)]:
        od, om = d(t[i:j], x[i:j]), m(t[i:j], x[i:j])
        np.testing.assert_array_equal(od.t, om.t)
        np.testing.assert_array_equal(od.x, om.x)


# ---------------------------------------------------------------- phase matching
def test_derivatives_carry_the_same_lag_as_the_filtered_signal() -> None:
    t = np.arange(4000) / RATE
    x, dx, ddx = sinusoids(t)
    out = MatchedDifferentiator(CUTOFF, RATE, channels=2)(t, x)
    np.testing.assert_array_equal(out.t, t[1:-1])

    settle = 500  # let the differing start-up transients die out (0.5 s)
    sl = slice(settle, None)
    ref_x = reference_filter(x)[1:-1]
    ref_dx = reference_filter(dx)[1:-1]
    ref_ddx = reference_filter(ddx)[1:-1]
    np.testing.assert_allclose(out.x, ref_x, rtol=0, atol=1e-12)
    # Central differences are exact up to (w T)^2 / 6 ~ 6e-5 relative at 3.1 Hz.
    np.testing.assert_allclose(out.dx[sl], ref_dx[sl], rtol=0, atol=2e-4 * np.abs(dx).max())
    np.testing.assert_allclose(out.ddx[sl], ref_ddx[sl], rtol=0, atol=2e-4 * np.abs(ddx).max())

    # The comparison is not vacuous: the filter lag is far larger than the tolerance
    # (Butterworth 4th order at 20 Hz delays by ~20 ms), ...
    assert np.abs(out.dx[sl] - dx[1:-1][sl]).max() > 0.05 * np.abs(dx).max()
    # ... and a one-sample misalignment would be caught.
    assert np.abs(out.dx[sl][1:] - ref_dx[sl][:-1]).max() > 5e-3 * np.abs(dx).max()


def test_matched_delay_is_filtered_signal_one_sample_back() -> None:
    t = np.arange(1000) / RATE
    x, _, _ = sinusoids(t)
    out = MatchedDelay(CUTOFF, RATE, channels=2)(t, x)
    np.testing.assert_allclose(out.x, reference_filter(x)[1:-1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(out.t, t[1:-1])


def test_position_velocity_variant() -> None:
    t = np.arange(3000) / RATE
    q, dq, ddq = sinusoids(t)
    out = PositionVelocityDifferentiator(CUTOFF, RATE, channels=2)(t, q, dq)
    np.testing.assert_array_equal(out.t, t[1:-1])
    np.testing.assert_allclose(out.x, reference_filter(q)[1:-1], atol=1e-12)
    np.testing.assert_allclose(out.dx, reference_filter(dq)[1:-1], atol=1e-12)
    sl = slice(500, None)
    ref = reference_filter(ddq)[1:-1]
    np.testing.assert_allclose(out.ddx[sl], ref[sl], atol=2e-4 * np.abs(ddq).max())


def test_outputs_start_after_three_samples() -> None:
    d = MatchedDifferentiator(CUTOFF, RATE, channels=1)
    assert len(d(np.array([0.0]), np.array([1.0])).t) == 0
    assert len(d(np.array([0.001]), np.array([1.0])).t) == 0
    out = d(np.array([0.002]), np.array([1.0]))
    assert out.t.tolist() == [0.001]


# ---------------------------------------------------------------- zero phase
def test_zero_phase_lowpass_has_no_lag() -> None:
    t = np.arange(3000) / RATE
    x, _, _ = sinusoids(t)
    y = zero_phase_lowpass(x, RATE, CUTOFF)
    mid = slice(300, -300)
    np.testing.assert_allclose(y[mid], x[mid], atol=1e-4)
    causal = LowPassFilter(CUTOFF, RATE, channels=2)(x)
    assert np.abs(causal[mid] - x[mid]).max() > 1e-2  # the causal one does lag


def test_zero_phase_lowpass_attenuates_above_cutoff() -> None:
    t = np.arange(2000) / RATE
    hf = np.sin(2 * np.pi * 150 * t)
    y = zero_phase_lowpass(hf, RATE, CUTOFF)
    assert np.abs(y[200:-200]).max() < 1e-3


@pytest.mark.parametrize("n", [0, 1, 2, 5, 20])
def test_zero_phase_lowpass_short_inputs(n: int) -> None:
    x = np.full((n, 2), 4.0)
    y = zero_phase_lowpass(x, RATE, CUTOFF)
    assert y.shape == (n, 2)
    np.testing.assert_allclose(y, 4.0, rtol=1e-9)
    y1 = zero_phase_lowpass(np.linspace(0, 1, n), RATE, CUTOFF)
    assert y1.shape == (n,) and np.all(np.isfinite(y1))


def test_settling_time_scales_with_the_cutoff() -> None:
    assert settling_time_s(10.0, 1000.0) == pytest.approx(2.0 * settling_time_s(20.0, 1000.0), rel=0.05)
    assert settling_time_s(10.0, 1000.0, tolerance=0.01) < settling_time_s(10.0, 1000.0)


def test_restarted_on_a_moving_joint_the_acceleration_is_right_after_settling() -> None:
    """A joint turning at 1 rad/s: the filter restarted mid-motion (steady state at rest) gives
    accelerations wrong by tens of rad/s² at first, and right (the true 0) after settling."""
    t = np.arange(2000) / RATE
    x = 1.0 * t
    settle = settling_time_s(10.0, RATE)
    restarted = MatchedDifferentiator(10.0, RATE, channels=1)
    out = restarted(t, x[:, None])
    early = np.abs(out.ddx[out.t < 0.05, 0]).max()
    late = np.abs(out.ddx[out.t >= settle, 0]).max()
    assert early > 10.0 and late < 0.1, (early, late)
