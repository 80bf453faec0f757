"""A simulated run replayed in real time, as a robot's drivers would publish it (ROS-free).

The ROS simulator node (``payload_estimator/ros/sim_node.py``) simulates one
run with :func:`~payload_estimator.sim.mujoco_sim.simulate` and hands it to a
:class:`LiveRun`, which

* converts the wrench into the convention of the robot's configuration
  (:func:`payload_estimator.sim.bag_writer.source_wrench`, as for simulated bags): the F/T sensor's own
  frame for the xArm, the Franka's external wrench in the stiffness frame with
  sign -1 for the Panda and the FR3, ... so that the estimator node, configured
  with the same ``config/<robot>.yaml``, reads it exactly as it would read the
  real robot;
* says which samples of each stream are due at a given time since the start
  (:meth:`LiveRun.due`), looping over the run or holding the last sample, repeated
  at the stream's rate, after the end.

A run that ends as it began (:func:`ends_where_it_began`: the same pose, at rest, holding the same
payload; :func:`looping_trajectory` makes such a motion, as the simulator node does) loops seamlessly:
the stamps go on at the stream's rate across the restart, the F/T offsets' net drift is taken out
along the run (:func:`offsets_closed`), and the estimator sees one continuous motion.
A run that does not is looped with a short silence (:data:`LOOP_GAP_S`) at each restart, so that the
estimator's alignment starts a new segment instead of differentiating across the jump from the last
pose to the first (and reports the gap, as it would a robot's).

Times are "run time", s, from the first joint sample of the first pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.excitation.trajectory import JointTrajectory
from payload_estimator.settings import Settings
from payload_estimator.sim.run import SimulatedRun

__all__ = ["LiveRun", "Due", "LOOP_GAP_S", "JOINTS", "WRENCH", "IMU", "ends_where_it_began", "looping_trajectory",
           "offsets_closed"]

JOINTS, WRENCH, IMU = "joint_states", "wrench", "imu"
LOOP_GAP_S = 0.1
"""Silence between two passes of a looping run that does not end as it began, s: longer than the
estimator's default ``max_gap_s`` (0.05 s), so the aligner restarts its filters, and shorter than
``stale_after_s``."""
CLOSED_POSE_TOL_RAD = 1e-3
""":func:`ends_where_it_began`: the largest joint position difference between the run's ends, rad."""
CLOSED_SPEED_TOL_RAD_S = 1e-2
""":func:`ends_where_it_began`: the largest joint speed at either end, rad/s."""


def ends_where_it_began(run: SimulatedRun) -> bool:
    """Whether ``run`` ends as it began: the same joint positions, at rest, holding the same payload.

    Judged on the simulated truth (``true_q``, ``true_dq``, the held payload's parameters), not on the
    noisy samples. Such a run repeats without a jump: :class:`LiveRun` loops it seamlessly.
    """
    if len(run.true_q) < 2:
        return False
    same_pose = np.max(np.abs(run.true_q[-1] - run.true_q[0])) <= CLOSED_POSE_TOL_RAD
    at_rest = max(np.max(np.abs(run.true_dq[0])), np.max(np.abs(run.true_dq[-1]))) <= CLOSED_SPEED_TOL_RAD_S
    held = run.phi_at(np.array([run.joint_t[0], run.joint_t[-1]]))
    return bool(same_pose and at_rest and np.array_equal(held[0], held[1]))


def offsets_closed(run: SimulatedRun) -> SimulatedRun:
    """``run`` with its F/T offsets' net drift taken out along it: the offsets end where they began.

    The simulated offsets drift (a trend and a random walk, :class:`~payload_estimator.sim.sensor_noise.FtOffset`);
    replayed in a loop, they would step back at every restart, a jump of a few tenths of a newton that the
    payload tracker takes for a change. A line through the wrench samples' times, from none at the first to
    the net drift at the last, is subtracted from the wrench and from the offsets: they still wander within
    the run, and come back, as a real sensor's do over a repeated cycle.
    """
    t = np.asarray(run.wrench_t, dtype=float)
    if len(t) < 2 or t[-1] <= t[0]:
        return run
    line = ((t - t[0]) / (t[-1] - t[0]))[:, None] * (run.true_ft_bias[-1] - run.true_ft_bias[0])
    return replace(run, wrench_in_sensor=run.wrench_in_sensor - line, true_ft_bias=run.true_ft_bias - line)


def looping_trajectory(robot: str, kind: str, duration: float, seed: int = 0) -> JointTrajectory:
    """The excitation ``kind`` for ``duration`` s, then back to its start: a motion whose run loops seamlessly.

    The excitation is built as :func:`~payload_estimator.sim.mujoco_sim.simulate` builds it, the way back by
    :class:`~payload_estimator.sim.trajectories.ReturnToStart`. A kind that already ends where it began
    (``pickplace``) is returned as it is.
    """
    from payload_estimator.robots import resolve_robot
    from payload_estimator.sim.trajectories import ReturnToStart, make_trajectory

    spec = resolve_robot(robot)
    trajectory = make_trajectory(kind, spec, duration=duration, **({"seed": seed} if kind == "thesis" else {}))
    closed = ReturnToStart(trajectory, spec)
    return trajectory if closed.back_duration == 0.0 else closed


@dataclass(frozen=True)
class Due:
    """Samples of one stream due in a time window.

    Attributes:
        index: (k,) rows of the run's arrays to publish, in order.
        t: (k,) their run times, s (increasing across passes).
    """

    index: np.ndarray
    t: np.ndarray

    def __len__(self) -> int:
        return len(self.index)


class _Schedule:
    """When each sample of a stream is due, looping over the recording or holding its last row.

    Sample ``n``: row ``n % N`` at ``t[n % N] + (n // N) * period`` (loop), or the last row
    repeated every ``dt`` after the end (hold)."""

    def __init__(self, t: np.ndarray, period: float, loop: bool) -> None:
        self.t = np.asarray(t, dtype=float)
        self.N = len(self.t)
        self.period = float(period)
        self.loop = loop
        self.dt = float(np.median(np.diff(self.t))) if self.N > 1 else 1e-3
        self.next = 0

    def time(self, n: np.ndarray) -> np.ndarray:
        n = np.asarray(n, dtype=np.int64)
        if self.loop:
            return self.t[n % self.N] + (n // self.N) * self.period
        return np.where(n < self.N, self.t[np.minimum(n, self.N - 1)],
                        self.t[-1] + (n - self.N + 1) * self.dt)

    def row(self, n: np.ndarray) -> np.ndarray:
        n = np.asarray(n, dtype=np.int64)
        return n % self.N if self.loop else np.minimum(n, self.N - 1)

    def count_until(self, t_end: float) -> int:
        """Number of samples with time <= t_end."""
        if self.N == 0:
            return 0
        if self.loop:
            passes = int(np.floor(t_end / self.period)) if t_end >= 0 else 0
            within = int(np.searchsorted(self.t, t_end - passes * self.period, side="right"))
            return passes * self.N + within
        if t_end <= self.t[-1]:
            return int(np.searchsorted(self.t, t_end, side="right"))
        return self.N + int(np.floor((t_end - self.t[-1]) / self.dt + 1e-9))

    def due(self, t_end: float, max_samples: int) -> Due:
        stop = self.count_until(t_end)
        start = max(self.next, stop - max_samples)
        n = np.arange(start, max(start, stop))
        self.next = max(self.next, stop)
        return Due(self.row(n), self.time(n))


class LiveRun:
    """A :class:`SimulatedRun` as the robot described by ``settings`` would publish it.

    Args:
        run: the simulated run (its sensor frame ``S`` carries the payload).
        settings: the estimator configuration of the robot (wrench source and
            frames, sign); ``settings.robot`` must be ``run.robot``.
        loop: replay the run again and again; else hold the last sample.
        loop_gap_s: silence between two passes, s; None: none for a run that
            :func:`ends_where_it_began` (the stamps go on at the stream's rate), else :data:`LOOP_GAP_S`.

    Attributes:
        wrench_frame_id: the frame_id the wrench messages carry.
        loop_gap_s: the silence between two passes, s.
        period: time from one pass's start to the next's, s.
        wrench_force, wrench_torque: (M, 3) the wrench as the source reports it, N, N·m.
    """

    def __init__(self, run: SimulatedRun, settings: Settings, loop: bool = True,
                 loop_gap_s: float | None = None) -> None:
        from payload_estimator.sim.bag_writer import source_wrench

        if settings.robot != run.robot:
            raise ConfigurationError(f"settings are for {settings.robot}, the run is of {run.robot}")
        if loop_gap_s is None:
            loop_gap_s = 0.0 if loop and ends_where_it_began(run) else LOOP_GAP_S
        if loop and loop_gap_s == 0.0:  # seamless: no step in the wrench either
            run = offsets_closed(run)
        self.run = run
        self.settings = settings
        self.loop = bool(loop)
        # the same conversion that writes simulated bags (the exact inverse of the stream's)
        wrench, conv = source_wrench(run, settings)
        self.wrench_frame_id = conv.expressed_in
        self.wrench_force, self.wrench_torque = wrench[:, :3], wrench[:, 3:]
        t0 = float(run.joint_t[0]) if len(run.joint_t) else 0.0
        end = max(float(run.joint_t[-1]) if len(run.joint_t) else 0.0,
                  float(run.wrench_t[-1]) if len(run.wrench_t) else 0.0) - t0
        self.loop_gap_s = float(loop_gap_s)
        self.period = end + 1.0 / max(run.rate_hz, 1e-9) + self.loop_gap_s
        self._schedules = {
            JOINTS: _Schedule(run.joint_t - t0, self.period, self.loop),
            WRENCH: _Schedule(run.wrench_t - t0, self.period, self.loop),
        }
        if len(run.imu_t):
            self._schedules[IMU] = _Schedule(run.imu_t - t0, self.period, self.loop)

    @property
    def streams(self) -> tuple[str, ...]:
        """The input kinds this run publishes (joints, wrench, IMU when recorded)."""
        return tuple(self._schedules)

    def due(self, t_now: float, max_backlog_s: float = 1.0) -> dict[str, Due]:
        """Samples of every stream with run time in (last call, ``t_now``], s.

        A consumer that fell behind by more than ``max_backlog_s`` skips the
        older samples rather than publishing a burst.
        """
        out = {}
        for name, sched in self._schedules.items():
            max_samples = max(1, int(np.ceil(max_backlog_s / sched.dt)))
            out[name] = sched.due(t_now, max_samples)
        return out

    def rewind(self) -> None:
        """Start again from the first sample."""
        for sched in self._schedules.values():
            sched.next = 0
