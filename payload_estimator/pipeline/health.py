"""Counted, rate-limited warnings about the input streams, and their rates.

Bad input (NaN samples, duplicate stamps, late samples, clock jumps ...) is
never an exception in the pipeline: the offending samples are dropped and
reported here. :class:`InputHealth` counts every report per reason (and per
stream), logs the first occurrence of each ``(stream, reason)`` pair at WARNING
through ``logging.getLogger("payload_estimator")`` and then at most once every
``log_interval_s`` seconds, with the count accumulated since the last line.

It also tracks, per stream, the message rate over a sliding window and the
time of the last sample, so a node can report stale streams and publish
diagnostics (:meth:`InputHealth.snapshot`).

Times
-----
``t_stamp`` is a sample's own stamp (header stamp, s). ``wall_time`` is the
time at which the caller received the sample, on the clock it uses for
staleness (``time.monotonic()`` live; the record time when replaying a bag).
The rate-limiting of log lines uses ``clock`` (``time.monotonic`` by default).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from payload_estimator.errors import ConfigurationError

__all__ = [
    "InputHealth",
    "LOGGER_NAME",
    "NON_FINITE",
    "OUT_OF_RANGE",
    "DUPLICATE_STAMP",
    "OUT_OF_ORDER",
    "TOO_LATE",
    "CLOCK_JUMP",
    "GAP",
    "LENGTH_MISMATCH",
    "UNKNOWN_JOINT",
    "MISSING_JOINT",
    "MISSING_EFFORT",
    "SATURATED",
    "WRONG_FRAME",
    "BUFFER_OVERFLOW",
    "STALE",
    "REASONS",
]

LOGGER_NAME = "payload_estimator"

NON_FINITE = "non_finite"
"""A sample with a NaN or infinite value (or stamp); dropped."""
OUT_OF_RANGE = "out_of_range"
"""A sample with a value no sensor reports (beyond ``core.samples.MAX_ABS_VALUE`` in SI units) or
a stamp that is no time in seconds (beyond ``pipeline.align.MAX_STAMP_S``); dropped."""
DUPLICATE_STAMP = "duplicate_stamp"
"""A sample with the same stamp as one already received on that stream; dropped."""
OUT_OF_ORDER = "out_of_order"
"""A sample older than one received before it on that stream; reordered and kept."""
TOO_LATE = "too_late"
"""A sample older than what has already been emitted; dropped."""
CLOCK_JUMP = "clock_jump"
"""Time jumped backwards (bag restarted, simulation reset); alignment restarted."""
GAP = "gap"
"""A stream had a gap longer than allowed; no output was produced across it."""
LENGTH_MISMATCH = "length_mismatch"
"""A message whose arrays have the wrong or inconsistent lengths; dropped."""
UNKNOWN_JOINT = "unknown_joint"
"""A joint name that the robot model does not have; ignored."""
MISSING_JOINT = "missing_joint"
"""A joint of the model absent from a joint-state message; the message is dropped."""
MISSING_EFFORT = "missing_effort"
"""A joint-state message without an effort per joint while the wrench comes from joint torques; dropped."""
SATURATED = "saturated"
"""A force/torque sample near or beyond the sensor range; dropped."""
WRONG_FRAME = "wrong_frame"
"""A message in a frame other than the configured one; dropped."""
BUFFER_OVERFLOW = "buffer_overflow"
"""Samples dropped unused because a buffer reached its size limit."""
STALE = "stale"
"""A stream that stopped publishing."""
SOLVER_FAILURE = "solver_failure"
"""The estimator could not produce an estimate; the last one is kept."""

REASONS: tuple[str, ...] = (
    SOLVER_FAILURE,
    NON_FINITE,
    OUT_OF_RANGE,
    DUPLICATE_STAMP,
    OUT_OF_ORDER,
    TOO_LATE,
    CLOCK_JUMP,
    GAP,
    LENGTH_MISMATCH,
    UNKNOWN_JOINT,
    MISSING_JOINT,
    MISSING_EFFORT,
    SATURATED,
    WRONG_FRAME,
    BUFFER_OVERFLOW,
    STALE,
)
"""The reasons defined here (callers may report others)."""


@dataclass
class _LogState:
    last_log_time: float
    since_last_log: int = 0


@dataclass
class _StreamState:
    arrivals: deque[tuple[float, int]] = field(default_factory=deque)
    last_stamp: float = math.nan
    last_wall_time: float = math.nan
    samples: int = 0


class InputHealth:
    """Counters, rate-limited warnings and per-stream rates for the input streams.

    Args:
        log_interval_s: minimum time between two log lines for the same
            ``(stream, reason)`` after the first one, s (on ``clock``).
        rate_window_s: length of the sliding window over which stream rates
            are computed, s (on the callers' ``wall_time``).
        expected_streams: streams that :meth:`stale_streams` reports as stale
            until their first sample arrives.
        logger: where to log; ``logging.getLogger("payload_estimator")`` by default.
        clock: monotonic time source for rate-limiting log lines, s.
    """

    _MAX_ARRIVALS = 100_000

    def __init__(
        self,
        log_interval_s: float = 10.0,
        rate_window_s: float = 2.0,
        expected_streams: Iterable[str] = (),
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not log_interval_s >= 0.0:
            raise ConfigurationError(f"log_interval_s must be >= 0, got {log_interval_s}")
        if not rate_window_s > 0.0:
            raise ConfigurationError(f"rate_window_s must be > 0, got {rate_window_s}")
        self.log_interval_s = float(log_interval_s)
        self.rate_window_s = float(rate_window_s)
        self.logger = logger if logger is not None else logging.getLogger(LOGGER_NAME)
        self._clock = clock
        self._counts: dict[str, int] = {}
        self._counts_by_stream: dict[str, dict[str, int]] = {}
        self._log_state: dict[tuple[str | None, str], _LogState] = {}
        self._streams: dict[str, _StreamState] = {s: _StreamState() for s in expected_streams}

    # ------------------------------------------------------------------ reports
    def report(
        self, reason: str, message: str, stream: str | None = None, count: int = 1
    ) -> None:
        """Count ``count`` occurrences of ``reason`` and log ``message`` (rate-limited).

        ``message`` is a complete sentence without the stream name, e.g.
        ``"3 samples with NaN/inf dropped"``; the logged line is
        ``"wrench: 3 samples with NaN/inf dropped"``. The first report of each
        ``(stream, reason)`` pair is logged at once; later ones at most once per
        ``log_interval_s``, followed by how many occurred since the previous
        line. Never raises.
        """
        try:
            count = int(count)
            if count <= 0:
                return
            reason = str(reason)
            self._counts[reason] = self._counts.get(reason, 0) + count
            if stream is not None:
                per = self._counts_by_stream.setdefault(stream, {})
                per[reason] = per.get(reason, 0) + count
            now = self._clock()
            key = (stream, reason)
            state = self._log_state.get(key)
            prefix = f"{stream}: " if stream else ""
            if state is None:
                self._log_state[key] = _LogState(last_log_time=now)
                self._warn(f"{prefix}{message} [{reason}]")
                return
            state.since_last_log += count
            if now - state.last_log_time >= self.log_interval_s:
                total = self._total(stream, reason)
                self._warn(
                    f"{prefix}{message} [{reason}; {state.since_last_log} since the last "
                    f"report {now - state.last_log_time:.1f} s ago, {total} in total]"
                )
                state.last_log_time = now
                state.since_last_log = 0
        except Exception:  # noqa: BLE001 - a warning must never take the pipeline down
            pass

    def _warn(self, text: str) -> None:
        try:
            self.logger.warning("%s", text)
        except Exception:  # noqa: BLE001
            pass

    def _total(self, stream: str | None, reason: str) -> int:
        if stream is None:
            return self._counts.get(reason, 0)
        return self._counts_by_stream.get(stream, {}).get(reason, 0)

    @property
    def counts(self) -> dict[str, int]:
        """Occurrences per reason, all streams together (a copy)."""
        return dict(self._counts)

    def counts_for(self, stream: str) -> dict[str, int]:
        """Occurrences per reason for one stream (a copy)."""
        return dict(self._counts_by_stream.get(stream, {}))

    # ------------------------------------------------------------------ rates
    def note_sample(
        self, stream: str, t_stamp: float, wall_time: float, count: int = 1
    ) -> None:
        """Record that ``count`` samples of ``stream`` arrived at ``wall_time`` (s).

        ``t_stamp`` is the stamp of the newest of them, s. Never raises.
        """
        try:
            wall_time, t_stamp, count = float(wall_time), float(t_stamp), int(count)
            st = self._streams.get(stream)
            if st is None:
                st = self._streams[stream] = _StreamState()
            st.arrivals.append((wall_time, count))
            while st.arrivals and st.arrivals[0][0] < wall_time - self.rate_window_s:
                st.arrivals.popleft()
            while len(st.arrivals) > self._MAX_ARRIVALS:
                st.arrivals.popleft()
            st.last_stamp = t_stamp
            st.last_wall_time = wall_time
            st.samples += count
        except Exception:  # noqa: BLE001
            pass

    def rate_hz(self, stream: str) -> float:
        """Samples per second of ``stream`` over the sliding window (NaN if unknown).

        Counts the samples that arrived after the first arrival in the window,
        divided by the time from that first arrival to the last one.
        """
        st = self._streams.get(stream)
        if st is None or len(st.arrivals) < 2:
            return math.nan
        first, last = st.arrivals[0][0], st.arrivals[-1][0]
        if last <= first:
            return math.nan
        n = sum(c for _, c in st.arrivals) - st.arrivals[0][1]
        return n / (last - first)

    def stale_streams(self, now: float, timeout: float) -> list[str]:
        """Return the stale streams, sorted by name.

        Streams with no sample for more than ``timeout`` s before ``now`` (wall time), and
        expected streams that never sent one."""
        out = []
        for name, st in self._streams.items():
            if math.isnan(st.last_wall_time) or now - st.last_wall_time > timeout:
                out.append(name)
        return sorted(out)

    def snapshot(self) -> dict:
        """Return a plain-data summary for diagnostics.

        The summary reads::

            {"counts": {reason: n}, "counts_by_stream": {stream: {reason: n}},
            "streams": {stream: {"rate_hz", "last_stamp", "last_wall_time", "samples"}}}
        """
        return {
            "counts": dict(self._counts),
            "counts_by_stream": {s: dict(c) for s, c in self._counts_by_stream.items()},
            "streams": {
                name: {
                    "rate_hz": self.rate_hz(name),
                    "last_stamp": st.last_stamp,
                    "last_wall_time": st.last_wall_time,
                    "samples": st.samples,
                }
                for name, st in self._streams.items()
            },
        }

    def clear(self) -> None:
        """Forget all counts, log states and stream statistics (expected streams stay known)."""
        self._counts.clear()
        self._counts_by_stream.clear()
        self._log_state.clear()
        self._streams = {s: _StreamState() for s in self._streams}
