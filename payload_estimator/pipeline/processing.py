"""Aligned signals -> sensor-frame samples, causally (online) or forward and backward (recordings).

Both modes share one sample maker: filtered joint states through the description give the sensor
frame's kinematics (:class:`~payload_estimator.pipeline.kinematics.SensorKinematics`), the motion source
may replace the angular rate and accelerations (an IMU), and the wrench source turns its filtered
signal into the payload's wrench on ``S`` (:mod:`payload_estimator.pipeline.sources`).

* :class:`CausalProcessing`: the same causal low-pass ``G`` on every signal; joint accelerations by
  central differences one sample behind, every other signal delayed by that one sample too, so the
  phase lags match (:mod:`payload_estimator.pipeline.filters`). After every restart of the filters (the
  start, a gap) their transient is held back for the settling time.
* :class:`ZeroPhaseProcessing`: the aligned data are kept and, at the end, filtered forward and backward
  (no phase lag at all) and differentiated with central differences.

Either keeps the samples on the estimator's sub-grid (``estimator_rate_hz``), whatever the batching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.pipeline.filters import (
    MatchedDelay,
    MatchedDifferentiator,
    PositionVelocityDifferentiator,
    second_derivative_noise_gain,
    settling_time_s,
    zero_phase_lowpass,
)
from payload_estimator.pipeline.sources.strategies import JOINTS, WRENCH, MotionInput, WrenchInput

if TYPE_CHECKING:
    from payload_estimator.core.estimators.base import KinematicNoise
    from payload_estimator.pipeline.align import AlignedBatch
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.pipeline.stream_config import StreamConfig

__all__ = ["SampleMaker", "CausalProcessing", "ZeroPhaseProcessing"]


class SampleMaker:
    """Filtered joint states and the filtered wrench signal -> :class:`SensorSamples`.

    Args:
        config: the stream's configuration (rates, the joints' layout).
        kinematics: the robot description with the sensor frame.
        wrench: the wrench source's strategy.
        motion: the motion source's strategy.
    """

    def __init__(self, config: StreamConfig, kinematics: SensorKinematics, wrench: WrenchInput,
                 motion: MotionInput) -> None:
        self.config = config
        self.kinematics = kinematics
        self.wrench = wrench
        self.motion = motion
        self.n = kinematics.n_joints
        self._decimation = max(1, int(round(config.rate_hz / config.estimator_rate_hz)))
        extra = self.wrench.channels(self.n) if wrench.needs_efforts else 0
        self.joint_columns = self.n * (1 + int(config.use_joint_velocities)) + extra
        """Columns of a joint-state row on the grid: positions, velocities (when used), efforts (when needed)."""

    def decimated(self, t: np.ndarray) -> np.ndarray:
        """Rows on the estimator's sub-grid (deterministic whatever the batching)."""
        return np.round(t * self.config.rate_hz).astype(np.int64) % self._decimation == 0

    def source_values(self, values: dict[str, np.ndarray], seg: slice) -> np.ndarray:
        """The wrench source's aligned values of a segment: the wrench stream, or the joint rows' efforts."""
        if self.wrench.needs_efforts:
            return values[JOINTS][seg][:, self.joint_columns - self.wrench.channels(self.n):]
        return values[WRENCH][seg]

    def samples(self, t: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, signal: np.ndarray,
                advanced: object, keep: np.ndarray) -> SensorSamples:
        """Return the samples of the rows ``keep`` selects.

        Made from filtered joint states, the filtered wrench signal and what the motion source
        made of the segment."""
        q, dq, ddq = q[keep], dq[keep], ddq[keep]
        joints = self.kinematics.compute(q, dq, ddq)
        ang_vel, ang_acc, lin_acc = self.motion.motion(advanced, joints, keep)
        wrench, information = self.wrench.sample_wrench(q, dq, ddq, signal[keep])
        return SensorSamples(t[keep], lin_acc, ang_vel, ang_acc, joints.gravity_in_sensor, wrench, information)


class CausalProcessing:
    """Online: every aligned batch through the causal filters, as it comes (module docstring).

    Args:
        maker: the shared sample maker.
        kinematic_noise: where the estimator takes the accelerations' noise (errors in variables).
    """

    def __init__(self, maker: SampleMaker, kinematic_noise: KinematicNoise) -> None:
        c = maker.config
        self.maker = maker
        self.kinematic_noise = kinematic_noise
        n = maker.n
        args = (c.cutoff_hz, c.rate_hz)
        self._joint_filter: PositionVelocityDifferentiator | MatchedDifferentiator
        if c.use_joint_velocities:
            self._joint_filter = PositionVelocityDifferentiator(*args, n, c.filter_order)
        else:
            self._joint_filter = MatchedDifferentiator(*args, n, c.filter_order)
        self._signal_filter = MatchedDelay(*args, maker.wrench.channels(n), c.filter_order)
        """Delays the wrench, or the efforts, exactly like the joint filter."""
        # Noise the pipeline puts into the accelerations it differentiates (errors in variables): the
        # encoders' white noise on the grid, through the matched second derivative and the arm.
        self._joint_noise = SignalNoise()
        self._lever_sq: float | None = None
        compensated = maker.wrench.compensates_kinematic_noise and maker.motion.compensates_kinematic_noise
        self._ddq_gain = (second_derivative_noise_gain(c.cutoff_hz, c.rate_hz, c.filter_order)
                          if compensated and not c.use_joint_velocities else 0.0)
        self.settling_s = settling_time_s(c.cutoff_hz, c.rate_hz, c.filter_order)
        """After every restart of the filters (the start, a gap), their output is held back this long."""
        self._settled_from = -np.inf
        self.samples_settling = 0

    def reset(self) -> None:
        """Forget every filter's state."""
        self._joint_filter.reset()
        self._signal_filter.reset()
        self.maker.motion.reset()

    def process(self, batch: AlignedBatch, on_break: Callable[[], None]) -> Iterator[SensorSamples]:
        """Yield the samples of an aligned batch, segment by segment.

        ``on_break`` is called at each restart of the filters (where the grid is discontinuous)."""
        maker, n = self.maker, self.maker.n
        motion_stream = maker.motion.stream
        for seg in batch.segments():
            t = batch.t[seg]
            if batch.segment_start[seg.start]:
                self.reset()
                self._settled_from = float(t[0]) + self.settling_s
                on_break()
            joints = batch.values[JOINTS][seg]
            q_raw = joints[:, :n]
            w = self._signal_filter(t, maker.wrench.raw_signal(q_raw, maker.source_values(batch.values, seg)))
            if isinstance(self._joint_filter, PositionVelocityDifferentiator):  # use_joint_velocities
                d = self._joint_filter(t, q_raw, joints[:, n:2 * n])
            else:
                d = self._joint_filter(t, q_raw)
            advanced = maker.motion.advance(t, q_raw, batch.values[motion_stream][seg] if motion_stream else None)
            if len(d.t) == 0:
                continue
            keep = maker.decimated(d.t)
            settling = keep & (d.t < self._settled_from)
            if settling.any():  # the restarted filters' transient: wrong accelerations, not data
                self.samples_settling += int(np.sum(settling))
                keep &= ~settling
            if not keep.any():
                continue
            if self._ddq_gain > 0.0:
                if not self._joint_noise.settled:  # the encoders' noise does not change
                    self._joint_noise.update(q_raw)
                self._supply_kinematic_noise(q_raw[-1])
            yield maker.samples(d.t, d.x, d.dx, d.ddx, w.x, advanced, keep)

    def _supply_kinematic_noise(self, q: np.ndarray) -> None:
        """Tell the estimator the noise of the accelerations this pipeline makes.

        The joint positions' white noise ``s_q`` (measured on the grid before filtering,
        :class:`~payload_estimator.core.signal_noise.SignalNoise`) comes out of the matched second
        derivative with variance ``s_q² g`` (:func:`second_derivative_noise_gain`); the sensor's
        angular acceleration sums one unit axis per joint, ``s_alpha² = n s_q² g / 3`` per axis, and
        its linear acceleration adds the lever arms ``r_i`` from each joint to the sensor,
        ``s_a² = sum r_i² s_q² g / 3``. The samples alone would read the filtered noise as almost none.
        """
        s_q = self._joint_noise.std()
        if not np.isfinite(s_q):
            return
        kin = self.maker.kinematics
        if self._lever_sq is None:
            _, p = kin.frame_pose(q, kin.sensor_frame, kin.base_frame)
            arms = []
            for name in kin.joint_names:
                try:
                    _, pj = kin.frame_pose(q, name, kin.base_frame)
                except ValueError:
                    continue
                arms.append(float(np.sum((p[0] - pj[0]) ** 2)))
            self._lever_sq = float(np.sum(arms))
        var_ddq = s_q * s_q * self._ddq_gain
        n = self.maker.n
        self.kinematic_noise.supply(np.sqrt(var_ddq * self._lever_sq / 3.0), np.sqrt(var_ddq * n / 3.0),
                                    self._joint_noise.relative_variance())


class ZeroPhaseProcessing:
    """Offline: the aligned batches are kept, and filtered forward and backward at :meth:`finish`.

    Args:
        maker: the shared sample maker (its motion source must support zero phase: joint kinematics).
    """

    samples_settling = 0
    """Nothing is held back: the whole recording is filtered at once."""

    def __init__(self, maker: SampleMaker) -> None:
        self.maker = maker
        self._kept: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = []

    def reset(self) -> None:
        """Forget what was kept."""
        self._kept = []

    def keep(self, batch: AlignedBatch) -> None:
        """Keep an aligned batch's raw positions and source values, segment by segment."""
        n = self.maker.n
        for seg in batch.segments():
            if batch.segment_start[seg.start] or not self._kept:
                self._kept.append([])
            q_raw = batch.values[JOINTS][seg][:, :n]
            self._kept[-1].append((batch.t[seg], q_raw, self.maker.source_values(batch.values, seg)))

    def finish(self) -> Iterator[SensorSamples]:
        """Every kept segment filtered forward and backward, as samples; forgets them."""
        c, maker = self.maker.config, self.maker
        for pieces in self._kept:
            t = np.concatenate([p[0] for p in pieces])
            if len(t) < 5:
                continue
            q_raw = np.concatenate([p[1] for p in pieces])
            raw = maker.wrench.raw_signal(q_raw, np.concatenate([p[2] for p in pieces]))
            q = zero_phase_lowpass(q_raw, c.rate_hz, c.cutoff_hz, c.filter_order)
            signal = zero_phase_lowpass(raw, c.rate_hz, c.cutoff_hz, c.filter_order)
            T = 1.0 / c.rate_hz
            dq = np.gradient(q, T, axis=0)
            ddq = np.gradient(dq, T, axis=0)
            keep = maker.decimated(t)
            keep[:2] = keep[-2:] = False  # one-sided differences at the ends
            if not keep.any():
                continue
            yield maker.samples(t, q, dq, ddq, signal, None, keep)
        self._kept = []
