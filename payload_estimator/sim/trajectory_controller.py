"""A joint trajectory controller for the live simulated arm (ROS-free).

It is the logic of the simulator node's ``control_msgs/action/FollowJointTrajectory`` server.

It behaves like ros2_controllers' ``joint_trajectory_controller`` (JTC) where a client can tell:

* A goal (:class:`TrajectoryGoal`: the message's fields as arrays) is refused, with the
  ``FollowJointTrajectory`` error code and a one-line reason (:class:`GoalError`), when its joint
  names are not exactly the arm's (any order; INVALID_JOINTS), when it has no point, its times do
  not increase, a point has the wrong number of values, a non-finite value or a position outside
  the joint limits, when its first point is at time 0 but away from the current position (more
  than ``start_tolerance``), or when reaching the first point would need more than the joints'
  speed limits (INVALID_GOAL), or when it ends before now (OLD_HEADER_TIMESTAMP).
* Times are ``time_from_start`` after the goal's header stamp, or after its arrival when the stamp
  is zero. The arm goes from its current reference state (position, velocity, acceleration) to the
  first point, then through the points (:class:`~payload_estimator.excitation.trajectory.PointTrajectory`:
  quintic segments with velocities and accelerations, a rest-to-rest spline with positions only).
  A first point at time 0 is the current state. A new goal replaces the running one from the
  current reference state (JTC's preemption), so the motion stays continuous.
* While it runs (:meth:`TrajectoryController.progress`): a joint further than its path tolerance
  from the reference aborts the goal (PATH_TOLERANCE_VIOLATED, the arm brakes to rest); at the end
  the goal succeeds once every joint is within its goal tolerance of the last point, or aborts
  (GOAL_TOLERANCE_VIOLATED) if that has not happened ``goal_time_tolerance`` after the end.
  Tolerances of a goal: > 0 is used, 0 means the controller's default, < 0 means not checked.
* Cancelling (:meth:`TrajectoryController.cancel`) brakes to rest within the acceleration limits
  (:meth:`~payload_estimator.sim.live_arm.LiveArm.stop`).

Units: rad, rad/s, rad/s², s (arm time: :class:`~payload_estimator.sim.live_arm.LiveArm`'s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from payload_estimator.errors import GoalError
from payload_estimator.excitation.trajectory import PointTrajectory
from payload_estimator.sim.live_arm import ArmState, LiveArm

__all__ = [
    "TrajectoryGoal",
    "GoalError",
    "Progress",
    "TrajectoryController",
    "SUCCESSFUL",
    "INVALID_GOAL",
    "INVALID_JOINTS",
    "OLD_HEADER_TIMESTAMP",
    "PATH_TOLERANCE_VIOLATED",
    "GOAL_TOLERANCE_VIOLATED",
    "RUNNING",
    "SUCCEEDED",
    "ABORTED",
]

# control_msgs/action/FollowJointTrajectory result codes
SUCCESSFUL = 0
INVALID_GOAL = -1
INVALID_JOINTS = -2
OLD_HEADER_TIMESTAMP = -3
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5

RUNNING, SUCCEEDED, ABORTED = "running", "succeeded", "aborted"
"""States of a goal in :class:`Progress`."""

_AT_START_S = 1e-6
"""A first point this close to the goal's start is "at time 0"."""


@dataclass(frozen=True, eq=False)
class TrajectoryGoal:
    """A FollowJointTrajectory goal's fields as arrays.

    Attributes:
        joint_names: the goal's joints (its column order).
        time_from_start: (K,) s.
        positions: (K, n) rad. velocities, accelerations: (K, n) or None (empty in every point).
        start_time: arm time of the header stamp, s, or None for a zero stamp (start on arrival).
        path_tolerance, goal_tolerance: position tolerance per joint name, rad (> 0 used,
            0 the controller's default, < 0 not checked); joints not named get the default.
        goal_time_tolerance: s (0: the controller's default).
    """

    joint_names: tuple[str, ...]
    time_from_start: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None
    start_time: float | None = None
    path_tolerance: Mapping[str, float] = field(default_factory=dict)
    goal_tolerance: Mapping[str, float] = field(default_factory=dict)
    goal_time_tolerance: float = 0.0


@dataclass(frozen=True)
class Progress:
    """Where the running goal is.

    Attributes:
        status: :data:`RUNNING`, :data:`SUCCEEDED` or :data:`ABORTED`.
        code: its error code (SUCCESSFUL while running and on success). message: why it ended.
        state: the arm: reference (desired) and simulated (actual) joint state.
    """

    status: str
    code: int
    message: str
    state: ArmState


def _rows(values: object, K: int, n: int, what: str, optional: bool) -> np.ndarray | None:
    if values is None:
        if optional:
            return None
        raise GoalError(INVALID_GOAL, f"the points have no {what}")
    a = np.asarray(values, dtype=float)
    if a.shape != (K, n):
        raise GoalError(INVALID_GOAL, f"every point needs {n} {what}, got shape {a.shape[1:] or a.shape}")
    if not np.all(np.isfinite(a)):
        k = int(np.argmax(~np.all(np.isfinite(a), axis=1)))
        raise GoalError(INVALID_GOAL, f"point {k} has a {what[:-1]} that is not finite")
    return a


class TrajectoryController:
    """Executes :class:`TrajectoryGoal` s on a :class:`LiveArm` (module docstring).

    Not thread-safe: the caller serialises the calls with the arm's stepping.

    Args:
        arm: the arm.
        start_tolerance: largest distance of a first point at time 0 from the current position, rad.
        goal_tolerance: default goal tolerance per joint, rad.
        goal_time_tolerance: default time after the end to reach the goal tolerance, s.
        path_tolerance: default path tolerance per joint, rad (< 0 or 0: not checked).
    """

    def __init__(self, arm: LiveArm, start_tolerance: float = 0.05, goal_tolerance: float = 0.01,
                 goal_time_tolerance: float = 0.5, path_tolerance: float = -1.0) -> None:
        self.arm = arm
        spec = arm.spec
        self.joint_names = tuple(arm.joint_names)
        self.q_min, self.q_max, self.dq_max = spec.q_min, spec.q_max, spec.dq_max
        self.start_tolerance = float(start_tolerance)
        self.default_goal_tolerance = float(goal_tolerance)
        self.default_goal_time_tolerance = float(goal_time_tolerance)
        self.default_path_tolerance = float(path_tolerance)
        self._goal: TrajectoryGoal | None = None
        self._end = 0.0
        self._q_final = np.zeros(len(self.joint_names))
        self._path_tol = self._goal_tol = np.full(len(self.joint_names), -1.0)
        self._goal_time_tol = 0.0
        self._ended: Progress | None = None

    # ---------------------------------------------------------------- checks
    def _order(self, goal: TrajectoryGoal) -> np.ndarray:
        """Column of each of the arm's joints in the goal."""
        names = list(goal.joint_names)
        if len(set(names)) != len(names):
            raise GoalError(INVALID_JOINTS, f"the goal names a joint twice: {', '.join(names)}")
        unknown = [s for s in names if s not in self.joint_names]
        missing = [s for s in self.joint_names if s not in names]
        if unknown or missing:
            parts = ([f"unknown joints {', '.join(unknown)}"] if unknown else []) + (
                [f"missing joints {', '.join(missing)}"] if missing else [])
            raise GoalError(INVALID_JOINTS, f"the goal's joints are not the controller's ({'; '.join(parts)}); "
                                            f"expected {', '.join(self.joint_names)}")
        return np.array([names.index(s) for s in self.joint_names])

    def _tolerances(self, given: Mapping[str, float], default: float) -> np.ndarray:
        tol = np.full(len(self.joint_names), default)
        for name, value in given.items():
            if name in self.joint_names and value != 0.0:
                tol[self.joint_names.index(name)] = float(value)
        return tol

    def validate(self, goal: TrajectoryGoal, t_now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                                   np.ndarray | None]:
        """Check ``goal`` at arm time ``t_now`` s; return its points in the arm's joint order.

        ``(times (K,) in arm time, q (K, n), dq or None, ddq or None)``.

        Raises:
            GoalError: the goal is refused (module docstring).
        """
        order = self._order(goal)
        t = np.asarray(goal.time_from_start, dtype=float).reshape(-1)
        K, n = len(t), len(self.joint_names)
        if K == 0:
            raise GoalError(INVALID_GOAL, "the trajectory has no point")
        if not np.all(np.isfinite(t)) or np.any(t < 0.0):
            raise GoalError(INVALID_GOAL, "time_from_start must be finite and not negative")
        if np.any(np.diff(t) <= 0.0):
            k = int(np.argmax(np.diff(t) <= 0.0)) + 1
            raise GoalError(INVALID_GOAL, f"time_from_start must increase: point {k} is at {t[k]:g} s, "
                                          f"point {k - 1} at {t[k - 1]:g} s")
        q = _rows(goal.positions, K, n, "positions", optional=False)
        dq = _rows(goal.velocities, K, n, "velocities", optional=True)
        ddq = _rows(goal.accelerations, K, n, "accelerations", optional=True)
        if ddq is not None and dq is None:
            raise GoalError(INVALID_GOAL, "accelerations without velocities")
        assert q is not None
        q, dq, ddq = q[:, order], None if dq is None else dq[:, order], None if ddq is None else ddq[:, order]
        outside = (q < self.q_min) | (q > self.q_max)
        if np.any(outside):
            k, j = (int(i[0]) for i in np.nonzero(outside))
            raise GoalError(INVALID_GOAL, f"point {k} puts {self.joint_names[j]} at {q[k, j]:.4g} rad, outside "
                                          f"its limits [{self.q_min[j]:.4g}, {self.q_max[j]:.4g}]")
        start = t_now if goal.start_time is None else float(goal.start_time)
        times = start + t
        if times[-1] < t_now:
            raise GoalError(OLD_HEADER_TIMESTAMP, f"the trajectory ended {t_now - times[-1]:.3f} s ago "
                                                  "(header stamp in the past)")
        q_now = self.arm.reference()[0]
        if times[0] - t_now <= _AT_START_S:
            gap = np.abs(q[0] - q_now)
            if np.max(gap) > self.start_tolerance:
                j = int(np.argmax(gap))
                raise GoalError(INVALID_GOAL, f"the first point is at time 0 but {gap[j]:.3g} rad from the current "
                                              f"position of {self.joint_names[j]} (tolerance "
                                              f"{self.start_tolerance:g} rad)")
        else:
            speed = np.abs(q[0] - q_now) / (times[0] - t_now)
            if np.any(speed > self.dq_max):
                j = int(np.argmax(speed / self.dq_max))
                raise GoalError(INVALID_GOAL, f"reaching the first point in {times[0] - t_now:.3g} s needs "
                                              f"{speed[j]:.3g} rad/s of {self.joint_names[j]} (limit "
                                              f"{self.dq_max[j]:.3g} rad/s): it is far from the current state")
        return times, q, dq, ddq

    # ------------------------------------------------------------- execution
    def start(self, goal: TrajectoryGoal, t_now: float) -> PointTrajectory:
        """Validate ``goal`` and follow it from the current reference state; return the trajectory followed.

        Its time 0 is ``t_now``. Replaces a running goal.

        Raises:
            GoalError: the goal is refused; the running goal, if any, goes on.
        """
        times, q, dq, ddq = self.validate(goal, t_now)
        rel = times - t_now
        q_ref, dq_ref, ddq_ref = self.arm.reference(t_now)
        if rel[0] <= _AT_START_S:  # the first point is the current state
            rel, q = rel[1:], q[1:]
            dq = None if dq is None else dq[1:]
            ddq = None if ddq is None else ddq[1:]
        rel = np.concatenate([[0.0], rel])
        q = np.vstack([q_ref, q])
        if dq is not None:
            dq = np.vstack([dq_ref, dq])
            if ddq is not None:
                ddq = np.vstack([ddq_ref, ddq])
        traj = PointTrajectory(rel, q, dq, ddq, joint_names=self.joint_names)
        self.arm.follow(traj, t_start=t_now)
        self._goal = goal
        self._end = t_now + traj.duration
        self._q_final = q[-1].copy()
        self._path_tol = self._tolerances(goal.path_tolerance, self.default_path_tolerance)
        self._goal_tol = self._tolerances(goal.goal_tolerance, self.default_goal_tolerance)
        self._goal_time_tol = goal.goal_time_tolerance or self.default_goal_time_tolerance
        self._ended = None
        return traj

    @property
    def active(self) -> bool:
        """A goal is running."""
        return self._goal is not None and self._ended is None

    def progress(self, t_now: float) -> Progress:
        """Return the running goal's progress at arm time ``t_now`` (the arm advanced to it).

        A goal that has just failed its path tolerance is aborted here and the arm brakes."""
        state = self.arm.state()
        if self._ended is not None:
            return Progress(self._ended.status, self._ended.code, self._ended.message, state)
        if self._goal is None:
            return Progress(SUCCEEDED, SUCCESSFUL, "no goal", state)
        err = np.abs(state.q_ref - state.q)
        over = (self._path_tol > 0) & (err > self._path_tol)
        if np.any(over) and t_now < self._end:
            j = int(np.argmax(np.where(over, err / np.where(self._path_tol > 0, self._path_tol, 1.0), 0.0)))
            self.arm.stop()
            return self._finish(ABORTED, PATH_TOLERANCE_VIOLATED,
                                f"{self.joint_names[j]} is {err[j]:.4g} rad from its reference (path tolerance "
                                f"{self._path_tol[j]:.4g} rad)", state)
        if t_now < self._end:
            return Progress(RUNNING, SUCCESSFUL, "", state)
        off = np.abs(state.q - self._q_final)
        outside = (self._goal_tol > 0) & (off > self._goal_tol)
        if not np.any(outside):
            return self._finish(SUCCEEDED, SUCCESSFUL, "", state)
        if t_now > self._end + self._goal_time_tol:
            j = int(np.argmax(np.where(outside, off, 0.0)))
            return self._finish(ABORTED, GOAL_TOLERANCE_VIOLATED,
                                f"{self.joint_names[j]} is {off[j]:.4g} rad from the goal {self._goal_time_tol:g} s "
                                f"after the end (goal tolerance {self._goal_tol[j]:.4g} rad)", state)
        return Progress(RUNNING, SUCCESSFUL, "", state)

    def _finish(self, status: str, code: int, message: str, state: ArmState) -> Progress:
        self._ended = Progress(status, code, message, state)
        return self._ended

    def cancel(self) -> float:
        """Brake to rest (the goal ends); returns the arm time when the arm is at rest, s."""
        braking = self.arm.stop()
        self._goal = None
        self._ended = None
        return self.arm.t + braking.duration
