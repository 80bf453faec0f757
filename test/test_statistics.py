"""Sufficient statistics against explicitly stacked regressor rows."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.regressor import regressor
from payload_estimator.core.statistics import RegressorStatistics


def _stacked(Y, w):
    """Explicit augmented rows [Y, I, w] for every sample and channel: (N, 6, 17)."""
    n = Y.shape[0]
    return np.concatenate([Y, np.broadcast_to(np.eye(6), (n, 6, 6)), w[:, :, None]], axis=2)


def _batch(rng, n):
    a, om, al, g = (rng.normal(size=(n, 3)) for _ in range(4))
    return regressor(a, om, al, g), rng.normal(size=(n, 6))


def test_gram_equals_stacked_rows_weighted_and_chunked(rng):
    Y, w = _batch(rng, 300)
    s = rng.uniform(0, 2, 300)
    st = RegressorStatistics()
    for i in range(0, 300, 37):  # arbitrary chunking
        st.add(Y[i : i + 37], w[i : i + 37], s[i : i + 37])
    Z = _stacked(Y, w)
    np.testing.assert_allclose(st.gram, np.einsum("n,nki,nkj->kij", s, Z, Z), rtol=1e-12, atol=1e-10)
    assert st.n_samples == 300 and np.isclose(st.weight_sum, s.sum())


def test_normal_equations_solve_like_lstsq(rng):
    Y, w = _batch(rng, 200)
    st = RegressorStatistics()
    st.add(Y, w)
    for with_bias in (False, True):
        ne = st.normal_equations(with_bias)
        A = Y.reshape(-1, 10)
        if with_bias:
            A = np.concatenate([A, np.tile(np.eye(6), (200, 1))], axis=1)
        x_ref = np.linalg.lstsq(A, w.reshape(-1), rcond=None)[0]
        np.testing.assert_allclose(np.linalg.solve(ne.A, ne.c), x_ref, rtol=1e-9, atol=1e-11)
        rss = st.channel_residuals(x_ref, with_bias)
        r = (A @ x_ref - w.reshape(-1)).reshape(200, 6)
        np.testing.assert_allclose(rss, (r**2).sum(axis=0), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(ne.residual(x_ref), (r**2).sum(), rtol=1e-8)


def test_channel_weights_decay_and_merge(rng):
    Y, w = _batch(rng, 100)
    a, b = RegressorStatistics(), RegressorStatistics()
    a.add(Y[:50], w[:50])
    b.add(Y[50:], w[50:])
    merged = a.copy()
    merged += b
    whole = RegressorStatistics()
    whole.add(Y, w)
    np.testing.assert_allclose(merged.gram, whole.gram, atol=1e-10)
    c = rng.uniform(0.1, 3, 6)
    np.testing.assert_allclose(whole.combined(c), np.einsum("k,kij->ij", c, whole.gram), atol=1e-10)
    whole.decay(0.5)
    np.testing.assert_allclose(whole.gram, 0.5 * merged.gram, atol=1e-10)
    assert np.isclose(whole.weight_sum, 50.0)
    whole.reset()
    assert whole.n_samples == 0 and np.all(whole.gram == 0)


def _two_ways(stats_class, batches, **kwargs):
    """The same batches into statistics kept as feature rows and into per-channel ones (no features)."""
    from payload_estimator.core.regressor import features_regressor

    by_features, by_channels = stats_class(**kwargs), stats_class(**kwargs)
    for features, wrench, weights, t in batches:
        by_features.add(None, wrench, weights, t=t, features=features)
        by_channels.add(features_regressor(features), wrench, weights, t=t)
    return by_features, by_channels


def _batches(rng, n_batches=40, size=37, rate=100.0):
    t0 = 5.0
    out = []
    for _ in range(n_batches):
        t = t0 + np.arange(size) / rate
        t0 = t[-1] + 1.0 / rate
        features = rng.normal(size=(size, 12))
        out.append((features, rng.normal(size=(size, 6)), rng.uniform(0.2, 2.0, size), t))
    return out


def test_feature_rows_keep_exactly_the_per_channel_sums(rng):
    """Statistics kept as extended feature rows read the same sums as statistics kept per channel,
    through decay and merging: the Gram, the time sums, the block sums and the analyses built on them."""
    stats_f, stats_c = _two_ways(RegressorStatistics, _batches(rng))
    for stats in (stats_f, stats_c):
        stats.decay(0.9)
    more_f, more_c = _two_ways(RegressorStatistics, _batches(rng, n_batches=5))
    stats_f += more_f
    stats_c += more_c
    assert stats_f.feature_gram() is not None and stats_c.feature_gram() is None
    np.testing.assert_allclose(stats_f.gram, stats_c.gram, rtol=1e-11, atol=1e-9)
    np.testing.assert_allclose(stats_f.time_data, stats_c.time_data, rtol=1e-11, atol=1e-8)
    assert np.isclose(stats_f.time_sum, stats_c.time_sum) and np.isclose(stats_f.time_sq, stats_c.time_sq)
    assert stats_f.weight_sum == pytest.approx(stats_c.weight_sum) and stats_f.n_samples == stats_c.n_samples
    for mine, theirs in zip(stats_f.block_sums(), stats_c.block_sums()):
        assert mine.n_held == theirs.n_held
        np.testing.assert_allclose(mine.gram_with_open_block(), theirs.gram_with_open_block(), rtol=1e-11, atol=1e-9)
    x = rng.normal(size=16)
    corr_f, corr_c = stats_f.correlation_analysis(x, True), stats_c.correlation_analysis(x, True)
    np.testing.assert_allclose(corr_f.tau_short, corr_c.tau_short, rtol=1e-9)
    np.testing.assert_allclose(corr_f.slow_score, corr_c.slow_score, rtol=1e-9, atol=1e-12)


def test_a_batch_without_features_turns_feature_rows_into_per_channel_sums(rng):
    """Mixed input (a whitened batch among plain ones): the sums stay those of every row, per channel."""
    from payload_estimator.core.regressor import features_regressor

    batches = _batches(rng, n_batches=6)
    mixed, reference = RegressorStatistics(), RegressorStatistics()
    for i, (features, wrench, weights, t) in enumerate(batches):
        mixed.add(None if i != 3 else features_regressor(features), wrench, weights, t=t,
                  features=None if i == 3 else features)
        reference.add(features_regressor(features), wrench, weights, t=t)
    assert mixed.feature_gram() is None
    np.testing.assert_allclose(mixed.gram, reference.gram, rtol=1e-11, atol=1e-9)
    for mine, theirs in zip(mixed.block_sums(), reference.block_sums()):
        np.testing.assert_allclose(mine.gram_with_open_block(), theirs.gram_with_open_block(), rtol=1e-11, atol=1e-9)


def test_windowed_feature_rows_project_like_per_channel_sums(rng):
    """Offsets per window: the windows' projections, batch scores and blocks agree whichever way the rows are kept."""
    from payload_estimator.core.offset_windows import WindowedStatistics

    stats_f, stats_c = _two_ways(WindowedStatistics, _batches(rng, n_batches=120, size=50), window_s=4.0)
    assert stats_f.windows_closed == stats_c.windows_closed >= 8
    assert stats_f._open.features and not stats_c._open.features
    np.testing.assert_allclose(stats_f.gram, stats_c.gram, rtol=1e-9, atol=1e-8)
    x = rng.normal(size=16)
    np.testing.assert_allclose(stats_f.batch_score_covariance(x, True), stats_c.batch_score_covariance(x, True),
                               rtol=1e-9, atol=1e-9)
    for mine, theirs in zip(stats_f.block_sums(), stats_c.block_sums()):
        np.testing.assert_allclose(mine.gram_with_open_block(), theirs.gram_with_open_block(), rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(stats_f.current_offsets(x[:10]), stats_c.current_offsets(x[:10]), rtol=1e-9,
                               atol=1e-12)
