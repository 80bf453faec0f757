"""Block sums (batch means): deferred block sums read exactly as computed ones, and held in bounded memory."""

from __future__ import annotations

import gc

import numpy as np

from payload_estimator.core.batch_means import BlockSums
from payload_estimator.core.offset_windows import MAX_BATCHES, WindowedStatistics


def _filled(rng: np.random.Generator, t0: float, channels: int | None = 6) -> BlockSums:
    blocks = BlockSums(0.1, 5, channels=channels)
    t = t0 + np.arange(0.0, 0.73, 0.01)
    shape = (len(t), 5) if channels is None else (len(t), channels, 5)
    blocks.add(rng.normal(size=shape), t)
    return blocks


def _same(a: BlockSums, b: BlockSums) -> None:
    np.testing.assert_allclose(a.gram, b.gram, rtol=1e-12, atol=1e-12)
    assert a.n_blocks == b.n_blocks and a.n_held == b.n_held


def _copy(blocks: BlockSums) -> BlockSums:
    out = BlockSums(blocks.length_s, blocks.gram.shape[-1], channels=None if blocks.gram.ndim == 2 else 6)
    out.merge(blocks)
    return out


def test_deferred_block_sums_merge_and_map_as_computed_ones(rng):
    a, b = _filled(rng, 0.0), _filled(rng, 5.0)
    calls = []

    def make() -> BlockSums:
        calls.append(1)
        return _copy(b)

    eager = _copy(a)
    eager.merge(b)
    lazy = _copy(a)
    deferred = BlockSums.deferred(0.1, make, n_held=b.n_held)
    lazy.merge(deferred)
    assert not calls  # nothing computed yet, the count known
    assert lazy.n_held == eager.n_held
    _same(lazy, eager)
    assert len(calls) == 1
    # changing what was read leaves the other reader of the same projection untouched
    lazy.gram += 1.0
    other = BlockSums(0.1, 5)
    other.merge(deferred)
    expected = BlockSums(0.1, 5)
    expected.merge(b)
    _same(other, expected)
    assert len(calls) == 1  # computed once for every reader

    shared = _filled(rng, 2.0, channels=None)
    Q = rng.normal(size=(6, 5, 4))
    mapped = BlockSums.deferred(0.1, lambda: shared, n_held=shared.n_held).mapped(Q)
    assert mapped.n_held == shared.n_held
    _same(mapped, shared.mapped(Q))


def test_windowed_statistics_read_the_same_whatever_is_read_first(rng):
    """A correlation analysis, a normal matrix or the batches' covariance first: the same numbers."""
    def filled() -> WindowedStatistics:
        stats = WindowedStatistics(2.0)
        data = np.random.default_rng(7)
        for start in np.arange(0.0, 20.0, 0.05):
            t = start + np.arange(50) * 0.001
            features = data.normal(size=(50, 12))
            stats.add(None, data.normal(size=(50, 6)), t=t, features=features)
        return stats

    x = np.random.default_rng(3).normal(size=16)
    first, second = filled(), filled()
    analysis = first.correlation_analysis(x, True)
    A_first = first.normal_equations(True).A
    A_second = second.normal_equations(True).A
    covariance = second.batch_score_covariance(x, True)
    np.testing.assert_array_equal(A_first, A_second)
    again = second.correlation_analysis(x, True)
    np.testing.assert_array_equal(analysis.tau_short, again.tau_short)
    np.testing.assert_array_equal(analysis.slow_score, again.slow_score)
    assert covariance is not None
    np.testing.assert_array_equal(covariance, first.batch_score_covariance(x, True))


def _live_block_sums() -> int:
    gc.collect()
    return sum(isinstance(o, BlockSums) for o in gc.get_objects())


def test_windowed_statistics_hold_bounded_memory_however_many_windows_close():
    """Each closed window merges deferred block sums into the closed windows' ones: they must not keep a
    chain of every window (a node running for days would grow by its windows, some MB an hour)."""
    stats = WindowedStatistics(1.0)
    data = np.random.default_rng(11)
    x = data.normal(size=16)

    def windows(first: int, last: int) -> None:
        for start in np.arange(float(first), float(last), 0.1):
            t = start + np.arange(20) * 0.005
            stats.add(None, data.normal(size=(20, 6)), t=t, features=data.normal(size=(20, 12)))
            if abs(start - round(start)) < 1e-9:  # read as an estimate does, once a window
                stats.correlation_analysis(x, True)
                stats.batch_score_covariance(x, True)

    baseline = _live_block_sums()
    windows(0, 40)
    after_40 = _live_block_sums() - baseline
    windows(40, 160)
    after_160 = _live_block_sums() - baseline
    assert stats.windows_closed >= 159
    assert after_160 <= after_40, f"{after_40} block sums alive after 40 windows, {after_160} after 160"
    assert max(len(stats._batches), len(stats._short)) <= MAX_BATCHES
