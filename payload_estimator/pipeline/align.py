"""Alignment of independently stamped streams onto one uniform time grid.

Each stream (joint states at ~1 kHz, a wrench at 100 Hz-1 kHz, an IMU ...)
arrives with its own stamps, possibly jittered, late, out of order, duplicated
or broken. :class:`StreamAligner` buffers them and emits, for every grid time
``t_k = k / rate_hz`` that can be decided, the value of every stream linearly
interpolated at ``t_k``.

Rules
-----
* Never extrapolate: ``t_k`` is emitted only if every stream has a sample at or
  before it and one at or after it.
* Never bridge a gap: if the two samples of a stream around ``t_k`` are more
  than ``max_gap_s`` apart, ``t_k`` is skipped. The first emitted sample after a
  skipped one (and the very first, and the first after a restart) has
  ``segment_start`` set, so the consumer can reset its filters there.
* Wait for stragglers: a stream's samples are *settled* once a sample at least
  ``reorder_window_s`` newer has arrived on it. ``t_k`` is decided only when the
  samples bracketing it are settled on every stream, so a sample arriving out
  of order by less than ``reorder_window_s`` is still used, and the output does
  not depend on how the input was split into batches or when ``pull`` is called.
* Data problems never raise; the samples concerned are dropped and counted
  through :class:`~payload_estimator.pipeline.health.InputHealth`, as they are
  pushed: rows with NaN/inf (``NON_FINITE``), stamps beyond :data:`MAX_STAMP_S`
  or values beyond ``max_abs_value`` (``OUT_OF_RANGE``: no time in seconds, no
  measurement; the grid index of such a stamp would overflow), values of the
  wrong width (``LENGTH_MISMATCH``); when merged into the buffers, a
  stamp equal to one already received (``DUPLICATE_STAMP``, the first one
  wins), a stamp at or before the last decided grid time (``TOO_LATE``).
  Samples older than their predecessors but still usable are reordered and
  counted as ``OUT_OF_ORDER``.
* A stamp more than ``clock_jump_s`` older than the newest stamp of its stream
  is a clock jump (bag restarted, simulation time reset): all buffers are
  cleared and alignment starts afresh from that sample (``CLOCK_JUMP``).
* Memory stays bounded: buffers are trimmed below the decided horizon (keeping
  the sample interpolation still needs) and hold at most ``max_buffer_s`` of
  stamps; a stream that runs ahead while another is silent loses its oldest
  samples (``BUFFER_OVERFLOW``).

Times are floats in seconds on one clock shared by all streams. ROS stamps
near 1.7e9 s have a float64 resolution of about 2.4e-7 s, harmless here; a
caller that wants better can subtract a fixed epoch from all stamps.

Batch-split invariance holds as long as samples are displaced by less than
``reorder_window_s`` and no buffer overflows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.health import (
    BUFFER_OVERFLOW,
    CLOCK_JUMP,
    DUPLICATE_STAMP,
    GAP,
    LENGTH_MISMATCH,
    NON_FINITE,
    OUT_OF_ORDER,
    OUT_OF_RANGE,
    TOO_LATE,
    InputHealth,
)

__all__ = ["AlignedBatch", "StreamAligner", "MAX_STAMP_S"]

MAX_STAMP_S = 1e11
"""Largest magnitude of a stamp, s (3,000 years). Clocks in seconds (ROS time, 1.7e9 s now; a
simulation's or a bag's own clock) stay far below; stamps in ms, us or ns since 1970 (1.7e12 and
up) do not, nor does garbage: such stamps are dropped (``OUT_OF_RANGE``)."""


@dataclass(frozen=True)
class AlignedBatch:
    """Streams interpolated onto consecutive decided grid times.

    Attributes:
        t: (M,) grid times ``k / rate_hz``, increasing, s.
        values: stream name -> (M, C) interpolated values.
        segment_start: (M,) True where the grid is discontinuous before the
            sample (first sample ever, after a skipped grid time, after a
            restart): reset filters there.
    """

    t: np.ndarray
    values: dict[str, np.ndarray]
    segment_start: np.ndarray

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def segments(self) -> list[slice]:
        """Slices of the rows of each continuous stretch, in order."""
        starts = np.flatnonzero(self.segment_start).tolist()
        if not starts or starts[0] != 0:
            starts = [0] + starts
        ends = starts[1:] + [len(self)]
        return [slice(a, b) for a, b in zip(starts, ends) if b > a]


@dataclass
class _Stream:
    channels: int
    t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    v: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    pending_t: list[np.ndarray] = field(default_factory=list)
    pending_v: list[np.ndarray] = field(default_factory=list)
    pending_rows: int = 0
    newest_pushed: float = -math.inf  # for clock-jump detection, since the last restart
    newest_merged: float = -math.inf  # for out-of-order counting
    in_gap: bool = False

    def clear(self) -> None:
        self.t = np.zeros(0)
        self.v = np.zeros((0, self.channels))
        self.pending_t.clear()
        self.pending_v.clear()
        self.pending_rows = 0
        self.newest_pushed = -math.inf
        self.newest_merged = -math.inf
        self.in_gap = False


class StreamAligner:
    """Buffers stamped streams and interpolates them onto the grid ``k / rate_hz``.

    Args:
        streams: stream name -> number of channels (values per sample).
        rate_hz: grid rate, Hz.
        max_gap_s: largest spacing of two samples of a stream that may be
            interpolated across, s.
        reorder_window_s: how long to wait for out-of-order samples, s.
        max_buffer_s: largest span of stamps kept per stream, s.
        clock_jump_s: a stamp this much older than the newest of its stream
            restarts the alignment, s.
        health: where to count dropped samples; a private one if None.
        max_abs_value: samples with a value beyond this magnitude are dropped
            (``OUT_OF_RANGE``); inf: only NaN/inf values are.
    """

    _MERGE_ROWS = 2048  # merge pending pushes into the buffer beyond this many rows
    _MERGE_CHUNKS = 512

    def __init__(
        self,
        streams: Mapping[str, int],
        rate_hz: float,
        max_gap_s: float = 0.05,
        reorder_window_s: float = 0.02,
        max_buffer_s: float = 5.0,
        clock_jump_s: float = 1.0,
        health: InputHealth | None = None,
        max_abs_value: float = math.inf,
    ) -> None:
        if not streams:
            raise ValueError("StreamAligner needs at least one stream")
        if not (math.isfinite(rate_hz) and rate_hz > 0):
            raise ConfigurationError(f"rate_hz must be positive, got {rate_hz}")
        if not max_gap_s > 0:
            raise ConfigurationError(f"max_gap_s must be positive, got {max_gap_s}")
        if not reorder_window_s >= 0:
            raise ConfigurationError(f"reorder_window_s must be >= 0, got {reorder_window_s}")
        if not max_buffer_s > max_gap_s + reorder_window_s:
            raise ConfigurationError(
                f"max_buffer_s ({max_buffer_s}) must exceed max_gap_s + reorder_window_s "
                f"({max_gap_s + reorder_window_s})"
            )
        if not clock_jump_s > reorder_window_s:
            raise ConfigurationError(
                f"clock_jump_s ({clock_jump_s}) must exceed reorder_window_s ({reorder_window_s})"
            )
        self.rate_hz = float(rate_hz)
        self.max_gap_s = float(max_gap_s)
        self.reorder_window_s = float(reorder_window_s)
        self.max_buffer_s = float(max_buffer_s)
        if not max_abs_value > 0:
            raise ConfigurationError(f"max_abs_value must be positive, got {max_abs_value}")
        self.max_abs_value = float(max_abs_value)
        self.clock_jump_s = float(clock_jump_s)
        self.health = health if health is not None else InputHealth()
        self._streams: dict[str, _Stream] = {}
        for name, channels in streams.items():
            if int(channels) != channels or channels < 1:
                raise ValueError(f"stream {name!r}: channel count must be a positive integer")
            s = _Stream(int(channels))
            s.clear()
            self._streams[str(name)] = s
        self._k_done: int | None = None  # last decided grid index
        self._k_last_emitted: int | None = None

    # ------------------------------------------------------------------ public
    @property
    def period_s(self) -> float:
        """Grid period, s."""
        return 1.0 / self.rate_hz

    @property
    def stream_names(self) -> list[str]:
        """Names of the aligned streams, in the order they were declared."""
        return list(self._streams)

    @property
    def decided_until(self) -> float | None:
        """The last decided grid time (emitted or skipped), s; None before the first."""
        return None if self._k_done is None else self._k_done / self.rate_hz

    def buffer_sizes(self) -> dict[str, int]:
        """Samples held per stream, buffered plus pending."""
        return {n: int(s.t.shape[0]) + s.pending_rows for n, s in self._streams.items()}

    def reset(self) -> None:
        """Drop all buffered data and start afresh (the next output starts a segment)."""
        for s in self._streams.values():
            s.clear()
        self._k_done = None
        self._k_last_emitted = None

    def push(self, name: str, t: np.ndarray | float, values: np.ndarray) -> int:
        """Add samples of stream ``name``: stamps ``t`` (N,) s, ``values`` (N, C).

        A single sample may be given as a scalar stamp and (C,) values. Bad
        samples are dropped and counted at once, never raised about; an unknown
        stream name is a programming error (KeyError). Returns how many samples
        were kept.
        """
        s = self._streams.get(name)
        if s is None:
            raise KeyError(f"unknown stream {name!r}; known streams: {', '.join(self._streams)}")
        c = s.channels
        v = np.array(values, dtype=float)
        if isinstance(t, float) and v.shape == (c,):  # fast path: one sample
            largest = float(np.abs(v).max())  # NaN if any is
            if not (abs(t) <= MAX_STAMP_S and math.isfinite(largest) and largest <= self.max_abs_value):
                self._drop_bad(name, np.array((t,)), v.reshape(1, c))
                return 0
            if t > s.newest_pushed:
                s.newest_pushed = t
            elif t < s.newest_pushed - self.clock_jump_s:
                self._restart(name, s.newest_pushed, t)
                s.newest_pushed = t
            self._add_pending(name, s, np.array((t,)), v.reshape(1, c))
            return 1
        ts = np.array(t, dtype=float).reshape(-1)
        n = ts.shape[0]
        if v.ndim == 1:
            if n == 1 and v.shape[0] == c:
                v = v.reshape(1, c)
            elif c == 1 and v.shape[0] == n:
                v = v.reshape(n, 1)
        if v.shape != (n, c):
            bad = max(n, 1)
            self.health.report(
                LENGTH_MISMATCH,
                f"{bad} samples dropped: values of shape {v.shape} for {n} stamps, "
                f"expected ({n}, {c})",
                name,
                bad,
            )
            return 0
        ok = (np.abs(ts) <= MAX_STAMP_S) & np.isfinite(v).all(axis=1) & (np.abs(v) <= self.max_abs_value).all(axis=1)
        if not ok.all():
            self._drop_bad(name, ts[~ok], v[~ok])
            ts, v = ts[ok], v[ok]
            n = ts.shape[0]
        kept = n
        while n:
            running = np.maximum.accumulate(np.concatenate(([s.newest_pushed], ts)))
            jumps = ts < running[:-1] - self.clock_jump_s
            jump_at = int(np.argmax(jumps)) if jumps.any() else -1
            s.newest_pushed = float(running[jump_at if jump_at >= 0 else n])
            if jump_at < 0:
                self._add_pending(name, s, ts, v)
                return kept
            if jump_at > 0:
                self._add_pending(name, s, ts[:jump_at], v[:jump_at])
            self._restart(name, s.newest_pushed, float(ts[jump_at]))
            ts, v = ts[jump_at:], v[jump_at:]
            n = ts.shape[0]
        return kept

    def _drop_bad(self, name: str, t: np.ndarray, v: np.ndarray) -> None:
        """Count samples with a NaN/inf (NON_FINITE) or an out-of-range stamp or value (OUT_OF_RANGE)."""
        finite = int((np.isfinite(t) & np.isfinite(v).all(axis=1)).sum())
        if len(t) - finite:
            self.health.report(NON_FINITE, f"{len(t) - finite} samples with NaN/inf dropped", name, len(t) - finite)
        if finite:
            self.health.report(OUT_OF_RANGE, f"{finite} samples stamped beyond {MAX_STAMP_S:g} s or with a value "
                               f"beyond {self.max_abs_value:g} dropped", name, finite)

    def pull(self) -> AlignedBatch | None:
        """Interpolated values at every grid time decidable now, or None if there is none."""
        streams = self._streams
        for name, s in streams.items():
            if s.pending_t:
                self._merge(name, s)
        t_limit = math.inf
        t_first = -math.inf
        for s in streams.values():
            ts = s.t
            if ts.shape[0] == 0:
                return None
            # newest settled sample: at least reorder_window_s older than the newest one
            i = int(ts.searchsorted(ts[-1] - self.reorder_window_s, side="right")) - 1
            if i < 0:
                return None
            t_limit = min(t_limit, float(ts[i]))
            t_first = max(t_first, float(ts[0]))
        k_end = self._floor_k(t_limit)
        # Grid times before the first buffered sample of any stream can never be
        # bracketed: skip them (this also bounds the work after a forward time jump).
        k_start = self._ceil_k(t_first)
        if self._k_done is not None:
            k_start = max(k_start, self._k_done + 1)
        if k_end < k_start:
            return None

        k = np.arange(k_start, k_end + 1)
        tg = k / self.rate_hz
        valid: np.ndarray | None = None  # None: all valid
        values: dict[str, np.ndarray] = {}
        for name, s in streams.items():
            ok, values[name] = self._interpolate(s, tg)
            if ok is None:
                s.in_gap = False
            else:
                self._note_gaps(name, s, ok, tg)
                valid = ok if valid is None else valid & ok

        self._k_done = k_end
        t_done = k_end / self.rate_hz
        for s in streams.values():
            keep_from = int(s.t.searchsorted(t_done, side="right")) - 1
            if keep_from > 0:
                s.t = s.t[keep_from:]
                s.v = s.v[keep_from:]

        if valid is None:
            k_out = k
        else:
            if not valid.any():
                return None
            k_out = k[valid]
            tg = tg[valid]
            values = {name: val[valid] for name, val in values.items()}
        segment_start = np.zeros(k_out.shape[0], dtype=bool)
        segment_start[1:] = k_out[1:] != k_out[:-1] + 1
        last = self._k_last_emitted
        segment_start[0] = last is None or int(k_out[0]) != last + 1
        self._k_last_emitted = int(k_out[-1])
        return AlignedBatch(tg, values, segment_start)

    # ------------------------------------------------------------------ internals
    def _floor_k(self, x: float) -> int:
        """Largest k with k / rate_hz <= x."""
        k = math.floor(x * self.rate_hz)
        while (k + 1) / self.rate_hz <= x:
            k += 1
        while k / self.rate_hz > x:
            k -= 1
        return k

    def _ceil_k(self, x: float) -> int:
        """Smallest k with k / rate_hz >= x."""
        k = math.ceil(x * self.rate_hz)
        while (k - 1) / self.rate_hz >= x:
            k -= 1
        while k / self.rate_hz < x:
            k += 1
        return k

    def _restart(self, name: str, newest: float, t_new: float) -> None:
        self.health.report(
            CLOCK_JUMP,
            f"time jumped back by {newest - t_new:.3f} s (from {newest:.6f} to {t_new:.6f} s); "
            "all buffers cleared and alignment restarted",
            name,
        )
        self.reset()

    def _add_pending(self, name: str, s: _Stream, t: np.ndarray, v: np.ndarray) -> None:
        s.pending_t.append(t)
        s.pending_v.append(v)
        s.pending_rows += t.shape[0]
        if s.pending_rows > self._MERGE_ROWS or len(s.pending_t) > self._MERGE_CHUNKS:
            self._merge(name, s)

    def _merge(self, name: str, s: _Stream) -> None:
        """Validate the pending samples of one stream and insert them into its buffer."""
        if not s.pending_t:
            return
        if len(s.pending_t) == 1:
            nt, nv = s.pending_t[0], s.pending_v[0]
        else:
            nt, nv = np.concatenate(s.pending_t), np.concatenate(s.pending_v)
        s.pending_t.clear()
        s.pending_v.clear()
        s.pending_rows = 0

        # push kept only finite, in-range samples.
        # Fast path: strictly increasing and newer than anything merged before.
        if nt[0] > s.newest_merged and (nt.shape[0] == 1 or (nt[1:] > nt[:-1]).all()):
            s.newest_merged = float(nt[-1])
            s.t = np.concatenate((s.t, nt))
            s.v = np.concatenate((s.v, nv))
            self._cap(name, s)
            return
        if self._k_done is not None:
            t_done = self._k_done / self.rate_hz
            late = nt <= t_done
            if late.any():
                bad = int(late.sum())
                self.health.report(
                    TOO_LATE,
                    f"{bad} samples dropped: stamped at or before {t_done:.6f} s, "
                    "which has already been emitted (raise reorder_window_s if this persists)",
                    name,
                    bad,
                )
                nt, nv = nt[~late], nv[~late]
        if nt.shape[0] == 0:
            return

        running = np.maximum.accumulate(np.concatenate(([s.newest_merged], nt)))
        before = running[:-1]
        s.newest_merged = float(running[-1])
        ooo = nt < before
        if not ooo.any():
            dup = nt == before
            n_dup = int(dup.sum())
            if n_dup:
                nt, nv = nt[~dup], nv[~dup]
            s.t = np.concatenate((s.t, nt))
            s.v = np.concatenate((s.v, nv))
        else:
            nb = s.t.shape[0]
            all_t = np.concatenate((s.t, nt))
            all_v = np.concatenate((s.v, nv))
            order = np.argsort(all_t, kind="stable")
            all_t = all_t[order]
            dup = np.zeros(all_t.shape[0], dtype=bool)
            dup[1:] = all_t[1:] == all_t[:-1]
            n_dup = int(dup.sum())
            if n_dup:
                # Buffered rows come first among equal stamps, so a duplicate is always new.
                ooo[order[dup] - nb] = False
                keep = order[~dup]
                s.t = all_t[~dup]
                s.v = all_v[keep]
            else:
                s.t = all_t
                s.v = all_v[order]
            n_ooo = int(ooo.sum())
            if n_ooo:
                self.health.report(
                    OUT_OF_ORDER, f"{n_ooo} samples arrived out of order (reordered)", name, n_ooo
                )
        if n_dup:
            self.health.report(
                DUPLICATE_STAMP, f"{n_dup} samples with an already received stamp dropped", name, n_dup
            )

        self._cap(name, s)

    def _cap(self, name: str, s: _Stream) -> None:
        """Drop the oldest samples of a stream whose buffer spans more than max_buffer_s."""
        if s.t[-1] - s.t[0] > self.max_buffer_s:
            cut = int(np.searchsorted(s.t, s.t[-1] - self.max_buffer_s, side="left"))
            dropped = s.t[:cut]
            if self._k_done is not None:
                dropped = dropped[dropped > self._k_done / self.rate_hz]
            if dropped.shape[0]:
                self.health.report(
                    BUFFER_OVERFLOW,
                    f"{dropped.shape[0]} unused samples dropped: the buffer spans more than "
                    f"{self.max_buffer_s:g} s while waiting for another stream "
                    "(silent stream or clocks out of step?)",
                    name,
                    int(dropped.shape[0]),
                )
            s.t = s.t[cut:]
            s.v = s.v[cut:]

    def _interpolate(self, s: _Stream, tg: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """Return ``(ok, values)`` of one stream at increasing grid times ``tg``.

        ``ok`` (M,) is None when every time is ok; ``values`` is (M, C). ``ok`` is False where the stream
        has no sample at or before ``tg``, none at or after it, or the two around it are more than
        ``max_gap_s`` apart. A grid time equal to a stamp takes that sample's value.
        """
        ts, vs = s.t, s.v
        n = ts.shape[0]
        il = ts.searchsorted(tg, side="right") - 1
        if il[0] >= 0 and il[-1] < n - 1:  # il is non-decreasing: every point bracketed
            ir = il + 1
            tl = ts[il]
            span = ts[ir] - tl
            w = (tg - tl) / span  # 0 where tg equals a stamp
            if span.max() <= self.max_gap_s:
                ok = None
            else:
                ok = (span <= self.max_gap_s) | (w == 0.0)
        else:
            ilc = np.maximum(il, 0)
            ir = np.minimum(ilc + 1, n - 1)
            tl = ts[ilc]
            span = ts[ir] - tl
            exact = tl == tg
            ok = (il >= 0) & (exact | ((il + 1 < n) & (span <= self.max_gap_s)))
            w = np.zeros(tg.shape[0])
            interp = ok & ~exact
            w[interp] = (tg[interp] - tl[interp]) / span[interp]
            il = ilc
        vl = vs[il]
        return ok, vl + w[:, None] * (vs[ir] - vl)

    def _note_gaps(self, name: str, s: _Stream, ok: np.ndarray, tg: np.ndarray) -> None:
        """Count runs of skipped grid times caused by stream ``s`` (a run spanning pulls once)."""
        bad = ~ok
        starts = bad.copy()
        starts[1:] &= ok[:-1]
        if s.in_gap:
            starts[0] = False
        n_runs = int(starts.sum())
        s.in_gap = bool(bad[-1])
        if n_runs:
            first = int(np.argmax(starts))
            self.health.report(
                GAP,
                f"{n_runs} gap(s) with no sample within {self.max_gap_s:g} s (max_gap_s); "
                f"no output from {tg[first]:.6f} s",
                name,
                n_runs,
            )
