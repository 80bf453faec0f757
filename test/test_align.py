"""Stream alignment onto a uniform grid (pipeline/align.py)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from payload_estimator.pipeline.align import AlignedBatch, StreamAligner
from payload_estimator.pipeline.health import (
    BUFFER_OVERFLOW,
    CLOCK_JUMP,
    DUPLICATE_STAMP,
    GAP,
    LENGTH_MISMATCH,
    NON_FINITE,
    OUT_OF_ORDER,
    TOO_LATE,
    InputHealth,
)

RATE = 1000.0
STREAMS = {"joints": 7, "wrench": 6}
JITTER = 2e-4
RNG_A = np.random.default_rng(100)
LIN_A = {"joints": RNG_A.normal(size=7), "wrench": RNG_A.normal(size=6)}
LIN_B = {"joints": RNG_A.normal(size=7), "wrench": RNG_A.normal(size=6)}


def linear(name: str, t: np.ndarray) -> np.ndarray:
    return LIN_A[name] + np.outer(t, LIN_B[name])


def wavy(name: str, t: np.ndarray) -> np.ndarray:
    c = len(LIN_A[name])
    return np.sin(np.outer(t, 3.0 + np.arange(c)) + LIN_A[name])


def stamps(rate: float, start: float, stop: float, offset: float, rng: np.random.Generator) -> np.ndarray:
    n = int(round((stop - start) * rate))
    return start + offset + np.arange(n) / rate + rng.uniform(-JITTER, JITTER, n)


def collect(batches: list[AlignedBatch | None]) -> AlignedBatch:
    got = [b for b in batches if b is not None]
    if not got:
        return AlignedBatch(np.zeros(0), {n: np.zeros((0, c)) for n, c in STREAMS.items()}, np.zeros(0, bool))
    return AlignedBatch(
        np.concatenate([b.t for b in got]),
        {n: np.concatenate([b.values[n] for b in got]) for n in got[0].values},
        np.concatenate([b.segment_start for b in got]),
    )


def two_streams(
    rng: np.random.Generator, start: float = 0.0, stop: float = 2.0, fn=linear
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    tj = stamps(1000.0, start, stop, 0.0, rng)
    tw = stamps(100.0, start, stop, 0.0037, rng)  # constant offset of the slow stream
    return {"joints": (tj, fn("joints", tj)), "wrench": (tw, fn("wrench", tw))}


def events_in_arrival_order(
    data: dict[str, tuple[np.ndarray, np.ndarray]], rng: np.random.Generator, max_latency: float
) -> list[tuple[float, str, float, np.ndarray]]:
    ev = []
    for name, (t, v) in data.items():
        arrival = t + rng.uniform(0.0, max_latency, t.shape[0])
        ev += [(a, name, ti, vi) for a, ti, vi in zip(arrival, t, v)]
    ev.sort(key=lambda e: e[0])
    return ev


def replay(aligner: StreamAligner, events, chunk: int, pull_every: float = 0.01) -> AlignedBatch:
    """Push events (per-stream chunks of ``chunk`` rows), pulling every ``pull_every`` s of arrival time."""
    out: list[AlignedBatch | None] = []
    held: dict[str, list] = {n: [] for n in aligner.stream_names}
    next_pull = events[0][0] + pull_every if events else 0.0

    def flush(name: str) -> None:
        rows = held[name]
        if rows:
            aligner.push(name, np.array([r[0] for r in rows]), np.array([r[1] for r in rows]))
            held[name] = []

    for arrival, name, t, v in events:
        while arrival >= next_pull:
            out.append(aligner.pull())
            next_pull += pull_every
        held[name].append((t, v))
        if len(held[name]) >= chunk:
            flush(name)
    for name in held:
        flush(name)
    out.append(aligner.pull())
    return collect(out)


# ---------------------------------------------------------------- basics
def test_linear_signals_are_interpolated_exactly_on_the_grid() -> None:
    rng = np.random.default_rng(0)
    data = two_streams(rng)
    al = StreamAligner(STREAMS, RATE)
    for name, (t, v) in data.items():
        al.push(name, t, v)
    b = al.pull()
    assert b is not None and len(b) > 1800
    k = np.round(b.t * RATE)
    np.testing.assert_array_equal(b.t, k / RATE)  # anchored at multiples of the period
    np.testing.assert_array_equal(np.diff(k), 1)
    for name in STREAMS:
        np.testing.assert_allclose(b.values[name], linear(name, b.t), rtol=0, atol=1e-12)
    assert b.segment_start[0] and not b.segment_start[1:].any()
    # never extrapolate
    assert b.t[0] >= max(t[0] for t, _ in data.values())
    assert b.t[-1] <= min(t[-1] for t, _ in data.values())
    # waits the reorder window behind the newest stamp of the slowest stream
    assert b.t[-1] <= data["wrench"][0][-1] - al.reorder_window_s + 1e-12
    assert al.health.counts == {}


def test_sample_exactly_on_grid_is_returned_unchanged() -> None:
    al = StreamAligner({"a": 1}, 100.0, max_gap_s=0.5, reorder_window_s=0.0)
    al.push("a", np.array([0.0, 0.3, 1.0]), np.array([[1.0], [7.0], [2.0]]))
    b = al.pull()
    assert b is not None
    i = int(np.argmin(np.abs(b.t - 0.3)))
    assert b.t[i] == 0.3 and b.values["a"][i, 0] == 7.0
    assert b.t[0] == 0.0 and b.t[-1] == 1.0


def test_pull_without_data_returns_none() -> None:
    al = StreamAligner(STREAMS, RATE)
    assert al.pull() is None
    al.push("joints", np.arange(100) / RATE, np.zeros((100, 7)))
    assert al.pull() is None  # wrench still silent


def test_unknown_stream_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="unknown stream"):
        StreamAligner(STREAMS, RATE).push("imu", 0.0, np.zeros(6))


def test_invalid_configuration_rejected() -> None:
    with pytest.raises(ValueError):
        StreamAligner({}, RATE)
    with pytest.raises(ValueError):
        StreamAligner(STREAMS, 0.0)
    with pytest.raises(ValueError):
        StreamAligner(STREAMS, RATE, max_buffer_s=0.01)


# ---------------------------------------------------------------- bad data
def test_dropped_samples_are_bridged_when_short() -> None:
    rng = np.random.default_rng(1)
    data = two_streams(rng)
    t, v = data["joints"]
    keep = rng.uniform(size=t.shape[0]) > 0.1
    al = StreamAligner(STREAMS, RATE)
    al.push("joints", t[keep], v[keep])
    al.push("wrench", *data["wrench"])
    b = al.pull()
    assert b is not None and b.segment_start.sum() == 1
    np.testing.assert_allclose(b.values["joints"], linear("joints", b.t), atol=1e-12)


def test_duplicates_dropped_first_wins() -> None:
    rng = np.random.default_rng(2)
    data = two_streams(rng)
    clean = StreamAligner(STREAMS, RATE)
    for name, (t, v) in data.items():
        clean.push(name, t, v)
    expected = clean.pull()

    al = StreamAligner(STREAMS, RATE)
    t, v = data["joints"]
    al.push("joints", t, v)
    # re-sent recent samples (older than clock_jump_s would read as a clock jump)
    recent = np.flatnonzero(t > t[-1] - 0.9)
    dup = rng.choice(recent, 50, replace=False)
    al.push("joints", t[dup], v[dup] + 100.0)  # same stamps, different values
    tw, vw = data["wrench"]
    al.push("wrench", np.repeat(tw, 2), np.repeat(vw, 2, axis=0))  # duplicates inside a batch
    b = al.pull()
    assert al.health.counts[DUPLICATE_STAMP] == 50 + tw.shape[0]
    np.testing.assert_array_equal(b.t, expected.t)
    for name in STREAMS:
        np.testing.assert_array_equal(b.values[name], expected.values[name])


def test_non_finite_rows_and_wrong_widths_are_dropped_and_counted() -> None:
    rng = np.random.default_rng(3)
    data = two_streams(rng)
    t, v = data["joints"]
    v = v.copy()
    v[[10, 500, 501], 3] = np.nan
    v[700, 0] = np.inf
    t = t.copy()
    t[900] = np.nan
    al = StreamAligner(STREAMS, RATE)
    al.push("joints", t, v)
    al.push("wrench", *data["wrench"])
    al.push("joints", np.inf, np.zeros(7))  # an infinite stamp must not look like a clock jump
    al.push("joints", np.array([np.inf, -np.inf]), np.zeros((2, 7)))
    al.push("wrench", 1.0, np.zeros(7))  # wrong width
    al.push("wrench", np.array([1.0, 1.1]), np.zeros((3, 6)))  # rows do not match stamps
    b = al.pull()
    counts = al.health.counts
    assert counts[NON_FINITE] == 5 + 3
    assert CLOCK_JUMP not in counts
    assert counts[LENGTH_MISMATCH] == 1 + 2
    assert np.all(np.isfinite(b.values["joints"]))
    np.testing.assert_allclose(b.values["joints"], linear("joints", b.t), atol=1e-12)


def test_out_of_order_within_window_is_used_and_too_late_is_dropped() -> None:
    rng = np.random.default_rng(4)
    data = two_streams(rng, fn=wavy)
    ref = StreamAligner(STREAMS, RATE)
    for name, (t, v) in data.items():
        ref.push(name, t, v)
    expected = ref.pull()

    al = StreamAligner(STREAMS, RATE, reorder_window_s=0.02)
    got = replay(al, events_in_arrival_order(data, rng, max_latency=0.015), chunk=1)
    assert al.health.counts.get(OUT_OF_ORDER, 0) > 100
    assert TOO_LATE not in al.health.counts
    np.testing.assert_array_equal(got.t, expected.t)
    for name in STREAMS:
        np.testing.assert_array_equal(got.values[name], expected.values[name])

    # a sample older than what was emitted is refused and changes nothing
    before = al.decided_until
    al.push("joints", before - 0.1, np.zeros(7))
    assert al.pull() is None
    assert al.health.counts[TOO_LATE] == 1


def test_gap_is_not_bridged_and_starts_a_segment() -> None:
    rng = np.random.default_rng(5)
    data = two_streams(rng, stop=3.0)
    tw, vw = data["wrench"]
    hole = (tw > 1.0) & (tw < 1.2)
    al = StreamAligner(STREAMS, RATE, max_gap_s=0.05)
    al.push("joints", *data["joints"])
    al.push("wrench", tw[~hole], vw[~hole])
    b = al.pull()
    before = tw[~hole][tw[~hole] <= 1.0][-1]
    after = tw[~hole][tw[~hole] >= 1.2][0]
    assert not np.any((b.t > before) & (b.t < after))
    i = int(np.searchsorted(b.t, after))
    assert b.segment_start[i] and b.segment_start.sum() == 2
    assert b.t[i - 1] <= before
    assert al.health.counts[GAP] == 1
    assert [s.start for s in b.segments()] == [0, i]
    np.testing.assert_allclose(b.values["wrench"], linear("wrench", b.t), atol=1e-12)


def test_backward_clock_jump_restarts_alignment(caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(6)
    first = two_streams(rng, start=100.0, stop=102.0)
    second = two_streams(rng, start=0.0, stop=2.0)
    al = StreamAligner(STREAMS, RATE)
    for name, (t, v) in first.items():
        al.push(name, t, v)
    b1 = al.pull()
    with caplog.at_level(logging.WARNING, logger="payload_estimator"):
        for name, (t, v) in second.items():
            al.push(name, t, v)
    b2 = al.pull()
    assert al.health.counts[CLOCK_JUMP] == 1
    assert any("jumped back" in r.getMessage() for r in caplog.records)
    assert b1.t[0] >= 100.0 and b2.t[-1] < 2.0 and b2.t[0] < 0.01
    assert b2.segment_start[0] and b2.segment_start.sum() == 1
    assert TOO_LATE not in al.health.counts
    np.testing.assert_allclose(b2.values["joints"], linear("joints", b2.t), atol=1e-12)


def test_clock_jump_inside_one_batch() -> None:
    al = StreamAligner({"a": 1}, RATE, reorder_window_s=0.0)
    t = np.concatenate([50.0 + np.arange(100) / RATE, np.arange(100) / RATE])
    al.push("a", t, t[:, None])
    b = al.pull()
    assert al.health.counts[CLOCK_JUMP] == 1
    assert b.t[0] == 0.0 and b.t[-1] == 0.099
    np.testing.assert_allclose(b.values["a"][:, 0], b.t, atol=1e-12)


def test_forward_time_jump_is_a_gap_not_a_flood() -> None:
    rng = np.random.default_rng(10)
    al = StreamAligner(STREAMS, RATE)
    out = []
    for start in (0.0, 1.0e6):  # e.g. simulation time leaping ahead
        for name, (t, v) in two_streams(rng, start=start, stop=start + 1.0).items():
            al.push(name, t, v)
        out.append(al.pull())
    b = collect(out)
    assert b.segment_start.sum() == 2
    # only the unsettled tail before the jump is lost
    assert al.health.counts[BUFFER_OVERFLOW] <= (al.reorder_window_s + 0.011) * (RATE + 100)
    i = int(np.flatnonzero(b.segment_start)[1])
    assert b.t[i - 1] < 1.0 and b.t[i] > 1.0e6
    assert len(b) < 2000
    np.testing.assert_allclose(b.values["joints"], linear("joints", b.t), rtol=1e-9)


def test_single_sample_pushes_detect_clock_jumps() -> None:
    al = StreamAligner({"a": 1}, RATE, reorder_window_s=0.0)
    for t in np.arange(5.0, 5.1, 0.001):
        al.push("a", float(t), [t])
    assert al.pull() is not None
    for t in np.arange(0.0, 0.1, 0.001):
        al.push("a", float(t), [t])
    b = al.pull()
    assert al.health.counts[CLOCK_JUMP] == 1
    assert b.segment_start[0] and b.t[0] == 0.0
    np.testing.assert_allclose(b.values["a"][:, 0], b.t, atol=1e-12)


# ---------------------------------------------------------------- memory
def test_buffers_stay_bounded_with_one_stream_silent() -> None:
    rng = np.random.default_rng(7)
    al = StreamAligner(STREAMS, RATE, max_buffer_s=5.0)
    tw = stamps(100.0, 0.0, 1.0, 0.0037, rng)
    al.push("wrench", tw, linear("wrench", tw))
    out = []
    sizes = []
    for start in np.arange(0.0, 60.0, 0.01):
        tj = stamps(1000.0, start, start + 0.01, 0.0, rng)
        al.push("joints", tj, linear("joints", tj))
        out.append(al.pull())
        sizes.append(al.buffer_sizes()["joints"])
    assert max(sizes) <= 5.0 * RATE + 20
    assert al.health.counts[BUFFER_OVERFLOW] > 40_000
    b = collect(out)
    assert b.t[-1] <= tw[-1]
    # the silent stream resumes: output resumes with a new segment, nothing bridged
    tw2 = stamps(100.0, 60.0, 61.0, 0.0037, rng)
    al.push("wrench", tw2, linear("wrench", tw2))
    tj = stamps(1000.0, 60.0, 61.0, 0.0, rng)
    al.push("joints", tj, linear("joints", tj))
    b2 = al.pull()
    assert b2.t[0] >= tw2[0] and b2.segment_start[0] and b2.segment_start.sum() == 1


def test_pending_samples_bounded_without_pull() -> None:
    al = StreamAligner(STREAMS, RATE, max_buffer_s=2.0)
    for start in np.arange(0.0, 20.0, 0.001):
        al.push("joints", start, np.zeros(7))
    assert al.buffer_sizes()["joints"] <= 2.0 * RATE + StreamAligner._MERGE_ROWS + 2


def test_buffers_trimmed_in_steady_state() -> None:
    rng = np.random.default_rng(8)
    data = two_streams(rng, stop=5.0)
    al = StreamAligner(STREAMS, RATE, reorder_window_s=0.02)
    replay(al, events_in_arrival_order(data, rng, 0.005), chunk=1)
    sizes = al.buffer_sizes()
    # at most the reorder window plus a slow-stream period plus one sample per stream
    assert sizes["joints"] <= 40 and sizes["wrench"] <= 5


# ---------------------------------------------------------------- invariance
def test_batch_size_invariance() -> None:
    rng = np.random.default_rng(9)
    data = two_streams(rng, stop=4.0, fn=wavy)
    # a 0.2 s gap, dropped samples and duplicates
    tw, vw = data["wrench"]
    keep = ~((tw > 1.5) & (tw < 1.7))
    data["wrench"] = (tw[keep], vw[keep])
    tj, vj = data["joints"]
    keep = rng.uniform(size=tj.shape[0]) > 0.05
    tj, vj = tj[keep], vj[keep]
    dup = rng.choice(tj.shape[0], 30, replace=False)
    data["joints"] = (np.concatenate([tj, tj[dup]]), np.concatenate([vj, vj[dup] - 5.0]))
    events = events_in_arrival_order(data, rng, max_latency=0.012)

    results = []
    for chunk in (1, 7, 100):
        al = StreamAligner(STREAMS, RATE)
        results.append(replay(al, events, chunk=chunk))
        assert TOO_LATE not in al.health.counts
    a = results[0]
    assert len(a) > 3000 and a.segment_start.sum() == 2
    for b in results[1:]:
        np.testing.assert_array_equal(b.t, a.t)
        np.testing.assert_array_equal(b.segment_start, a.segment_start)
        for name in STREAMS:
            np.testing.assert_array_equal(b.values[name], a.values[name])


def test_health_logs_clear_sentences(caplog: pytest.LogCaptureFixture) -> None:
    health = InputHealth()
    al = StreamAligner(STREAMS, RATE, health=health)
    t = np.arange(10) / RATE
    v = np.zeros((10, 6))
    v[:3, 0] = np.nan
    with caplog.at_level(logging.WARNING, logger="payload_estimator"):
        al.push("wrench", t, v)
        al.pull()
    assert "wrench: 3 samples with NaN/inf dropped" in caplog.text
    assert health.counts_for("wrench") == {NON_FINITE: 3}
