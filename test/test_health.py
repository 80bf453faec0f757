"""Counted, rate-limited warnings and stream rates (pipeline/health.py)."""

from __future__ import annotations

import json
import logging
import math

import pytest

from payload_estimator.pipeline import health as H
from payload_estimator.pipeline.health import InputHealth


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_reasons_are_distinct_snake_case() -> None:
    assert len(set(H.REASONS)) == len(H.REASONS)
    for r in H.REASONS:
        assert r == r.lower() and " " not in r
    for name in ("NON_FINITE", "DUPLICATE_STAMP", "OUT_OF_ORDER", "TOO_LATE", "CLOCK_JUMP", "GAP",
                 "LENGTH_MISMATCH", "UNKNOWN_JOINT", "MISSING_JOINT", "SATURATED", "WRONG_FRAME",
                 "BUFFER_OVERFLOW"):
        assert getattr(H, name) in H.REASONS


def test_first_report_logged_then_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    h = InputHealth(log_interval_s=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="payload_estimator"):
        h.report(H.NON_FINITE, "3 samples with NaN/inf dropped", "wrench", count=3)
        assert warnings_of(caplog) == ["wrench: 3 samples with NaN/inf dropped [non_finite]"]
        for _ in range(5):
            clock.now += 1.0
            h.report(H.NON_FINITE, "1 samples with NaN/inf dropped", "wrench")
        assert len(warnings_of(caplog)) == 1  # silenced inside the interval
        clock.now = 10.0
        h.report(H.NON_FINITE, "2 samples with NaN/inf dropped", "wrench", count=2)
        msgs = warnings_of(caplog)
        assert len(msgs) == 2
        assert "7 since the last report" in msgs[1] and "10 in total" in msgs[1]
        clock.now = 12.0
        h.report(H.NON_FINITE, "1 samples with NaN/inf dropped", "wrench")
        assert len(warnings_of(caplog)) == 2
    assert h.counts == {H.NON_FINITE: 11}
    assert h.counts_for("wrench") == {H.NON_FINITE: 11}


def test_each_stream_and_reason_gets_its_first_warning(caplog: pytest.LogCaptureFixture) -> None:
    h = InputHealth(clock=FakeClock())
    with caplog.at_level(logging.WARNING, logger="payload_estimator"):
        h.report(H.NON_FINITE, "1 samples with NaN/inf dropped", "wrench")
        h.report(H.NON_FINITE, "1 samples with NaN/inf dropped", "joints")
        h.report(H.TOO_LATE, "1 samples dropped: too late", "joints")
        h.report(H.CLOCK_JUMP, "time jumped back")
    msgs = warnings_of(caplog)
    assert msgs[0].startswith("wrench: ") and msgs[1].startswith("joints: ")
    assert msgs[3] == "time jumped back [clock_jump]"
    assert h.counts == {H.NON_FINITE: 2, H.TOO_LATE: 1, H.CLOCK_JUMP: 1}


def test_warnings_never_raise() -> None:
    class Exploding(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            raise RuntimeError("handler broken")

    logger = logging.getLogger("payload_estimator.test_exploding")
    logger.addHandler(Exploding())
    logger.propagate = False
    raise_exc = logging.raiseExceptions
    logging.raiseExceptions = False
    try:
        h = InputHealth(logger=logger)
        h.report(H.GAP, "message with %s %d format characters", "imu")
        h.report(H.GAP, "x", "imu", count="not a number")  # type: ignore[arg-type]
        h.note_sample("imu", "bad stamp", 0.0)  # type: ignore[arg-type]
    finally:
        logging.raiseExceptions = raise_exc
    assert h.counts == {H.GAP: 1}
    assert h.snapshot()["streams"] == {}  # the bad note left nothing half-recorded


def test_zero_count_is_not_a_report(caplog: pytest.LogCaptureFixture) -> None:
    h = InputHealth()
    with caplog.at_level(logging.WARNING, logger="payload_estimator"):
        h.report(H.SATURATED, "0 samples", "wrench", count=0)
    assert h.counts == {} and not warnings_of(caplog)


def test_rates_over_sliding_window() -> None:
    h = InputHealth(rate_window_s=1.0)
    for i in range(300):
        h.note_sample("joints", t_stamp=100.0 + i * 0.001, wall_time=i * 0.004)  # 250 Hz arrival
    assert h.rate_hz("joints") == pytest.approx(250.0, rel=1e-6)
    # batches: 10 samples every 10 ms is 1 kHz
    for i in range(200):
        h.note_sample("wrench", t_stamp=i * 0.01, wall_time=i * 0.01, count=10)
    assert h.rate_hz("wrench") == pytest.approx(1000.0, rel=1e-6)
    assert math.isnan(h.rate_hz("imu"))
    # the window slides: after a slowdown only the recent rate counts
    for i in range(1, 21):
        h.note_sample("joints", t_stamp=200.0 + i, wall_time=1.196 + 0.1 * i)
    assert h.rate_hz("joints") == pytest.approx(10.0, rel=1e-6)


def test_stale_streams_and_snapshot() -> None:
    h = InputHealth(expected_streams=["joints", "wrench", "imu"])
    assert h.stale_streams(now=0.0, timeout=0.5) == ["imu", "joints", "wrench"]
    h.note_sample("joints", 10.0, wall_time=1.0)
    h.note_sample("wrench", 10.0, wall_time=1.4)
    assert h.stale_streams(now=1.45, timeout=0.5) == ["imu"]
    assert h.stale_streams(now=1.6, timeout=0.5) == ["imu", "joints"]
    h.report(H.SATURATED, "1 samples dropped", "wrench")
    snap = h.snapshot()
    assert snap["counts"] == {H.SATURATED: 1}
    assert snap["counts_by_stream"] == {"wrench": {H.SATURATED: 1}}
    assert snap["streams"]["wrench"]["last_stamp"] == 10.0
    assert snap["streams"]["wrench"]["last_wall_time"] == 1.4
    assert snap["streams"]["joints"]["samples"] == 1
    json.dumps(snap)  # plain data
    h.clear()
    assert h.counts == {} and h.stale_streams(now=0.0, timeout=1.0) == ["imu", "joints", "wrench"]
