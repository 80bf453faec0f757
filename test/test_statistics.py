"""Sufficient statistics against explicitly stacked regressor rows."""

from __future__ import annotations

import numpy as np

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
