"""Play recorded signals through an :class:`EstimationStream` as a robot would deliver them.

Recorded arrays (a simulated run, or messages read from a bag) are fed in
time order, one control period at a time: every stream's samples up to the
period's end are pushed, the stream processes what it can, and an estimate is
taken at the publish rate, just as the ROS node's timer does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from payload_estimator.core.history import EstimateHistory
from payload_estimator.pipeline.stream import EstimationStream, StreamEstimate

__all__ = ["Recording", "play"]


@dataclass(frozen=True)
class Recording:
    """Signals as the robot delivers them (stamps in s, SI units).

    Attributes:
        joint_t, joint_q: (N,), (N, n) joint positions in the stream's joint order;
            ``joint_dq`` (N, n) when the driver's velocities are used.
        wrench_t, wrench: (M,), (M, 6) force and torque as the wrench source reports them.
        imu_t, imu_gyro, imu_specific_force: (K,), (K, 3), (K, 3) or empty.
    """

    joint_t: np.ndarray
    joint_q: np.ndarray
    wrench_t: np.ndarray
    wrench: np.ndarray
    joint_dq: np.ndarray | None = None
    imu_t: np.ndarray | None = None
    imu_gyro: np.ndarray | None = None
    imu_specific_force: np.ndarray | None = None

    @property
    def start(self) -> float:
        return float(min(self.joint_t[0], self.wrench_t[0]))

    @property
    def end(self) -> float:
        return float(max(self.joint_t[-1], self.wrench_t[-1]))


def play(
    stream: EstimationStream,
    recording: Recording,
    period_s: float = 0.01,
    publish_period_s: float = 0.1,
    on_estimate: Callable[[StreamEstimate], None] | None = None,
    until: float | None = None,
) -> EstimateHistory:
    """Feed ``recording`` period by period; returns the estimates taken every ``publish_period_s``.

    The recorded time stands in for the wall clock, so input rates and
    staleness in :meth:`EstimationStream.diagnostics` refer to the recording.
    """
    history = EstimateHistory()
    rec = recording
    has_imu = rec.imu_t is not None and len(rec.imu_t) > 0
    t = rec.start
    end = rec.end if until is None else min(rec.end, rec.start + until)
    next_publish = t + publish_period_s
    cursors = {"j": 0, "w": 0, "i": 0}

    def advance(key: str, stamps: np.ndarray, upto: float) -> slice:
        a = cursors[key]
        b = int(np.searchsorted(stamps, upto, side="right"))
        cursors[key] = max(a, b)
        return slice(a, max(a, b))

    while t < end:
        t = min(t + period_s, end)
        sj = advance("j", rec.joint_t, t)
        if sj.stop > sj.start:
            dq = None if rec.joint_dq is None else rec.joint_dq[sj]
            stream.push_joint_states(rec.joint_t[sj], rec.joint_q[sj], dq, wall_time=t)
        sw = advance("w", rec.wrench_t, t)
        if sw.stop > sw.start:
            stream.push_wrench(rec.wrench_t[sw], rec.wrench[sw, :3], rec.wrench[sw, 3:], wall_time=t)
        if has_imu:
            si = advance("i", rec.imu_t, t)
            if si.stop > si.start:
                stream.push_imu(rec.imu_t[si], rec.imu_gyro[si], rec.imu_specific_force[si], wall_time=t)
        stream.process()
        if t >= next_publish - 1e-9 or t >= end:
            next_publish += publish_period_s
            out = stream.estimate()
            if out is not None:
                history.append(t - rec.start, out.estimate, out.converged)
                if on_estimate is not None:
                    on_estimate(out)
    return history
