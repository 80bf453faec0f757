"""Play recorded signals through an :class:`EstimationStream` as a robot would deliver them.

Recorded arrays (a simulated run) are fed in time order through the one
driver loop (:class:`~payload_estimator.pipeline.driver.Driver`), one
processing turn at a time: every stream's samples up to the turn's time are
pushed, the stream processes what it can, and an estimate is taken at the
publish rate, just as the ROS node's timer does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from payload_estimator.core.history import EstimateHistory
from payload_estimator.errors import InputError
from payload_estimator.pipeline.driver import PROCESS_PERIOD_S, Driver
from payload_estimator.pipeline.stream import EstimationStream, StreamEstimate

__all__ = ["Recording", "play"]


@dataclass(frozen=True)
class Recording:
    """Signals as the robot delivers them (stamps in s, SI units).

    Attributes:
        joint_t, joint_q: (N,), (N, n) joint positions in the stream's joint order;
            ``joint_dq`` (N, n) when the driver's velocities are used.
        wrench_t, wrench: (M,), (M, 6) force and torque as the wrench source reports them
            (empty when the wrench comes from joint torques).
        imu_t, imu_gyro, imu_specific_force: (K,), (K, 3), (K, 3) or empty.
        joint_effort: (N, n) the joints' efforts, N·m (joint torques), or None.
    """

    joint_t: np.ndarray
    joint_q: np.ndarray
    wrench_t: np.ndarray
    wrench: np.ndarray
    joint_dq: np.ndarray | None = None
    imu_t: np.ndarray | None = None
    imu_gyro: np.ndarray | None = None
    imu_specific_force: np.ndarray | None = None
    joint_effort: np.ndarray | None = None

    @property
    def start(self) -> float:
        """Time of the first joint state or wrench, s."""
        return float(min(self.joint_t[0], self.wrench_t[0])) if len(self.wrench_t) else float(self.joint_t[0])

    @property
    def end(self) -> float:
        """Time of the last joint state or wrench, s."""
        return float(max(self.joint_t[-1], self.wrench_t[-1])) if len(self.wrench_t) else float(self.joint_t[-1])


def _push_arrays(stream: EstimationStream, items: list) -> None:
    """Feed of :func:`play`: each item is ``(kind, stamps, values..., wall_time)`` of recorded arrays."""
    for kind, *args, wall in items:
        if kind == "joints":
            t, q, dq, effort = args
            stream.push_joint_states(t, q, velocities=dq, wall_time=wall, efforts=effort)
        elif kind == "wrench":
            t, w = args
            stream.push_wrench(t, w[:, :3], w[:, 3:], wall_time=wall)
        else:
            t, gyro, specific_force = args
            stream.push_imu(t, gyro, specific_force, wall_time=wall)


def play(
    stream: EstimationStream,
    recording: Recording,
    period_s: float = PROCESS_PERIOD_S,
    publish_period_s: float = 0.1,
    on_estimate: Callable[[StreamEstimate], None] | None = None,
    until: float | None = None,
) -> EstimateHistory:
    """Feed ``recording`` turn by turn through a :class:`Driver`; return the estimates.

    The estimates are taken every ``publish_period_s`` (times from the recording's start).

    The recorded time stands in for the wall clock, so input rates and
    staleness in :meth:`EstimationStream.diagnostics` refer to the recording.
    """
    history = EstimateHistory()
    driver = Driver(stream, _push_arrays, publish_period_s, period_s, history, on_estimate)
    rec = recording
    imu: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    if rec.imu_t is not None and len(rec.imu_t) > 0:
        if rec.imu_gyro is None or rec.imu_specific_force is None:
            raise InputError("a recording with IMU stamps needs imu_gyro and imu_specific_force")
        imu = (rec.imu_t, rec.imu_gyro, rec.imu_specific_force)
    start = rec.start
    end = rec.end if until is None else min(rec.end, start + until)
    driver.t0 = start
    cursors = {"j": 0, "w": 0, "i": 0}

    def advance(key: str, stamps: np.ndarray, upto: float) -> slice:
        a = cursors[key]
        b = max(a, int(np.searchsorted(stamps, upto, side="right")))
        cursors[key] = b
        return slice(a, b)

    k = 0
    while True:
        k += 1
        t = min(start + k * period_s, end)
        items: list = []
        sj = advance("j", rec.joint_t, t)
        if sj.stop > sj.start:
            items.append(("joints", rec.joint_t[sj], rec.joint_q[sj],
                          None if rec.joint_dq is None else rec.joint_dq[sj],
                          None if rec.joint_effort is None else rec.joint_effort[sj], t))
        sw = advance("w", rec.wrench_t, t)
        if sw.stop > sw.start:
            items.append(("wrench", rec.wrench_t[sw], rec.wrench[sw], t))
        if imu is not None:
            imu_t, imu_gyro, imu_specific_force = imu
            si = advance("i", imu_t, t)
            if si.stop > si.start:
                items.append(("imu", imu_t[si], imu_gyro[si], imu_specific_force[si], t))
        if t >= end:
            driver.finish(t, items)
            break
        driver.tick(t, items)
    return history
