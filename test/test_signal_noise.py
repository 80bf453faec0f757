"""The white-noise monitor (``core.signal_noise``): its estimate, and the thinning of a long run."""

from __future__ import annotations

import numpy as np

from payload_estimator.core.signal_noise import SignalNoise


class _Unthinned(SignalNoise):
    THIN = 1


def test_a_long_run_is_thinned_beyond_settled_and_reads_the_same_noise():
    rng = np.random.default_rng(3)
    t = np.arange(400_000) * 1e-3
    x = np.c_[np.sin(t), np.cos(0.7 * t), 0.1 * t] + rng.normal(0.0, 0.3, (len(t), 3))
    thinned, every = SignalNoise(), _Unthinned()
    for k in range(0, len(x), 50_000):  # batches of any size
        thinned.update(x[k : k + 50_000])
        every.update(x[k : k + 50_000])
    assert every.n_differences == 3 * (len(x) - 4)
    settled_rows = SignalNoise.SETTLED // 3
    expected = 3 * settled_rows + 3 * (len(x) - 4 - settled_rows) / SignalNoise.THIN
    assert abs(thinned.n_differences - expected) < 3 * 8 * SignalNoise.THIN  # a few per batch from rounding
    assert abs(thinned.std() / 0.3 - 1.0) < 0.015
    assert abs(thinned.std() / every.std() - 1.0) < 0.01


def test_a_noise_that_changes_after_settling_is_still_followed():
    rng = np.random.default_rng(4)
    monitor = SignalNoise()
    monitor.update(rng.normal(0.0, 0.3, (SignalNoise.SETTLED // 3 + 10, 3)))
    assert monitor.settled and abs(monitor.std() / 0.3 - 1.0) < 0.02
    monitor.update(rng.normal(0.0, 0.6, (2_000_000, 3)))
    assert abs(monitor.std() / 0.6 - 1.0) < 0.05
