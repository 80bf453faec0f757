"""A camera's cloud of the payload, received mid-run, made the shape the payload's estimator solves with.

One chain for every way a cloud comes in (the node's ``cloud_topic``, ``replay``'s ``--cloud-topic``), so
they accept and refuse the same clouds. A ``sensor_msgs/PointCloud2`` (rclpy's, rosbags', anything alike)
goes in through :func:`~payload_estimator.io.ros_inbound.feed_cloud` (or, a loop's turn at a time,
:func:`~payload_estimator.io.ros_inbound.take_clouds`), which:

1. decodes it (:func:`~payload_estimator.io.point_cloud2.cloud_from_message`): points in the message's
   frame, part labels, volumes, frame, stamp (a message that is no cloud: :meth:`PayloadClouds.unreadable`);

and :meth:`PayloadClouds.receive` takes the decoded cloud on:
2. finds the pose of the cloud's frame in the sensor frame *at the cloud's stamp*, ``T_sensor_cloud``:

   * a frame of the robot's URDF (the stream's kinematics): from the joint positions at the stamp,
     interpolated in :class:`JointHistory`, a short bounded history (:data:`JOINT_HISTORY_S`) the stream
     fills as it takes joint states; a stamp outside it is refused (a frame fixed to the sensor, such as
     the flange or a wrist camera's, needs no joint positions);
   * a frame the URDF lacks (a camera on a tripod): its pose relative to a frame of the URDF from
     :attr:`PayloadClouds.frame_lookup` (tf2 in the node, ``/tf_static`` in a bag: :class:`StaticFrames`),
     combined with that frame's pose in the sensor frame at the stamp; a frame found nowhere is refused
     by name;

3. moves the points into the sensor frame and checks them
   (:func:`~payload_estimator.core.clouds.cloud_shape`: ``cloud_max_distance`` and the rest);
4. completes the visible side into point masses that fill the payload
   (:func:`~payload_estimator.core.cloud_completion.complete_cloud`, the setting ``cloud_completion``;
   the viewpoint is the cloud frame's origin in the sensor frame; with ``none`` the cloud is taken as it
   is, its ``volume`` field used);
5. gives them to :meth:`~payload_estimator.pipeline.stream.EstimationStream.set_payload_shape`, which
   merges them down to ``cloud_max_points`` and refuses a cloud captured before the last payload change.

The payload is held rigidly, so its points in the sensor frame do not depend on when they are used: a
cloud captured while the arm moved lands where the payload was in the sensor frame at its stamp.

Nothing raises: the result is a :class:`CloudOutcome` (applied: how many points, from what; refused:
one line why). A refusal is counted in the stream's shape diagnostics (``clouds_refused``,
``cloud_refusal``) and logged rate-limited as the stream's other warnings (:data:`CLOUD_REFUSED`);
the shape in use stays.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.cloud_completion import DEFAULT_COMPLETION, WORKING_POINTS, complete_cloud
from payload_estimator.core.clouds import MAX_CLOUD_DISTANCE_M, cloud_shape
from payload_estimator.core.point_masses import DEFAULT_DENSITY, DEFAULT_MAX_POINTS
from payload_estimator.errors import ConfigurationError, ShapeError

if TYPE_CHECKING:
    from payload_estimator.pipeline.stream import EstimationStream

__all__ = [
    "CLOUD",
    "CLOUD_REFUSED",
    "JOINT_HISTORY_S",
    "CloudOutcome",
    "FrameLookup",
    "JointHistory",
    "PayloadClouds",
    "StaticFrames",
    "transform",
]

CLOUD = "cloud"
"""The kind of a cloud item in the node's input queue, and the stream name its refusals are logged under."""
CLOUD_REFUSED = "cloud_refused"
"""The reason a refused cloud is counted and logged under (the stream's health)."""
JOINT_HISTORY_S = 5.0
"""How much joint-state history is kept to place a cloud at its stamp, s (a camera's latency is well within)."""

FrameLookup = Callable[[str, Callable[[str], bool]], "tuple[str, np.ndarray] | None"]
"""``lookup(frame, known) -> (anchor, T_anchor_frame)``: a frame the URDF lacks placed relative to a frame
``anchor`` of the URDF (``known(anchor)`` true), as a (4, 4) transform, m; None: found nowhere."""


def transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The (4, 4) homogeneous transform of rotation ``R`` and translation ``p``."""
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _inverse(T: np.ndarray) -> np.ndarray:
    return transform(T[:3, :3].T, -T[:3, :3].T @ T[:3, 3])


class JointHistory:
    """The joint positions of the last :data:`JOINT_HISTORY_S` seconds, interpolated at any stamp within.

    Args:
        span_s: how far back from the newest stamp positions are kept, s.
    """

    def __init__(self, span_s: float = JOINT_HISTORY_S) -> None:
        self.span_s = float(span_s)
        self._chunks: deque[tuple[np.ndarray, np.ndarray]] = deque()
        self._newest = -np.inf

    def add(self, t: np.ndarray, q: np.ndarray) -> None:
        """Keep positions ``q`` (N, n) at stamps ``t`` (N,), s (rows not finite are left out)."""
        t, q = np.asarray(t, dtype=float).reshape(-1), np.asarray(q, dtype=float)
        if q.ndim != 2 or len(q) != len(t):
            return
        good = np.isfinite(t) & np.isfinite(q).all(axis=1)
        if not good.any():
            return
        t, q = t[good], q[good]
        if self._chunks and (self._chunks[0][1].shape[1] != q.shape[1] or float(t.max()) < self._newest - self.span_s):
            self._chunks.clear()  # another joint set, or the clock jumped back (a restart): another time's history
            self._newest = -np.inf
        self._chunks.append((t, q))
        self._newest = max(self._newest, float(t.max()))
        while self._chunks and float(self._chunks[0][0].max()) < self._newest - self.span_s:
            self._chunks.popleft()

    def span(self) -> tuple[float, float] | None:
        """(oldest, newest) stamp held, s; None when empty."""
        if not self._chunks:
            return None
        return min(float(c[0].min()) for c in self._chunks), self._newest

    def at(self, t: float) -> np.ndarray:
        """The (n,) positions at ``t``, linearly interpolated. ShapeError (one line) when ``t`` is outside."""
        span = self.span()
        if span is None:
            raise ShapeError("no joint states yet: the arm's pose at the cloud's stamp is unknown")
        if not span[0] <= t <= span[1]:
            where = "before the oldest" if t < span[0] else "after the newest"
            raise ShapeError(f"its stamp t = {t:.3f} s is {where} joint state kept (t = {span[0]:.3f} to "
                             f"{span[1]:.3f} s): the arm's pose at the cloud's stamp is unknown")
        stamps = np.concatenate([c[0] for c in self._chunks])
        positions = np.concatenate([c[1] for c in self._chunks])
        order = np.argsort(stamps, kind="stable")
        stamps, positions = stamps[order], positions[order]
        return np.array([np.interp(t, stamps, positions[:, j]) for j in range(positions.shape[1])])


class StaticFrames:
    """Fixed transforms (a bag's ``/tf_static``), to place a frame the URDF lacks relative to one it has.

    The transforms form a graph walked either way (a camera's parent may be ``world``, itself the parent
    of the robot's base); :meth:`lookup` is a :data:`FrameLookup`.
    """

    def __init__(self) -> None:
        self._edges: dict[str, dict[str, np.ndarray]] = {}

    def __len__(self) -> int:
        return sum(len(e) for e in self._edges.values()) // 2

    def add(self, parent: str, child: str, xyz: Iterable[float], quat_xyzw: Iterable[float]) -> None:
        """The pose of ``child`` in ``parent``: translation (m) and quaternion (x, y, z, w)."""
        try:
            T = transform(Rotation.from_quat(list(quat_xyzw)).as_matrix(), np.asarray(list(xyz), dtype=float))
        except ValueError:  # a zero quaternion: not a transform
            return
        parent, child = parent.lstrip("/"), child.lstrip("/")
        self._edges.setdefault(parent, {})[child] = T
        self._edges.setdefault(child, {})[parent] = _inverse(T)

    def add_message(self, msg: Any) -> None:
        """Every transform of a ``tf2_msgs/TFMessage`` (unreadable ones are skipped)."""
        for tf in getattr(msg, "transforms", []):
            try:
                t, r = tf.transform.translation, tf.transform.rotation
                self.add(str(tf.header.frame_id), str(tf.child_frame_id), (t.x, t.y, t.z), (r.x, r.y, r.z, r.w))
            except AttributeError:
                continue

    def lookup(self, frame: str, known: Callable[[str], bool]) -> tuple[str, np.ndarray] | None:
        """``(anchor, T_anchor_frame)`` for the nearest frame ``anchor`` that ``known`` accepts; None if none."""
        seen, todo = {frame}, deque([(frame, np.eye(4))])  # T_node_frame
        while todo:
            node, T_node_frame = todo.popleft()
            if node != frame and known(node):
                return node, T_node_frame
            for other, T_node_other in self._edges.get(node, {}).items():
                if other not in seen:
                    seen.add(other)
                    todo.append((other, _inverse(T_node_other) @ T_node_frame))
        return None


@dataclass(frozen=True)
class CloudOutcome:
    """What became of a cloud (:meth:`PayloadClouds.receive`)."""

    applied: bool
    t: float
    """The cloud's stamp, s (NaN when it has none)."""
    frame: str
    points: int
    """Points of the cloud as decoded (finite positions)."""
    point_masses: int = 0
    """The point masses the estimator solves with from it (0 when refused)."""
    reason: str = ""
    """Why not (one line), "" when applied."""

    @property
    def line(self) -> str:
        """One line for a log or a printout."""
        if self.applied:
            return (f"cloud of {self.points} points in {self.frame or '?'} at t = {self.t:.3f} s applied: "
                    f"{self.point_masses} point masses")
        return self.reason


class PayloadClouds:
    """The chain from a received cloud to the stream's payload shape (module docstring).

    Args:
        stream: the stream whose payload the clouds show.
        completion: the setting ``cloud_completion``.
        max_distance: the setting ``cloud_max_distance``, m.
        density: grid points per m³ filling the completed cloud.
        max_points: the most point masses the completion gives (the stream then merges to ``cloud_max_points``).
    """

    def __init__(self, stream: EstimationStream, completion: str = DEFAULT_COMPLETION,
                 max_distance: float = MAX_CLOUD_DISTANCE_M, density: float = DEFAULT_DENSITY,
                 max_points: int = DEFAULT_MAX_POINTS) -> None:
        self.stream = stream
        self.completion = completion
        self.max_distance = float(max_distance)
        self.density = float(density)
        self.max_points = int(max_points)
        self.history = JointHistory()
        """Filled by the stream as it takes joint states (in its joint order)."""
        self.frame_lookup: FrameLookup | None = None
        """Where frames the URDF lacks are found (tf2, a bag's /tf_static); None: nowhere."""
        self.last: CloudOutcome | None = None
        self._pending: list[Any] = []
        self._rigid: dict[str, np.ndarray | None] = {}

    # --------------------------------------------------------------- the node
    def take(self, items: list[tuple[str, Any, float]]) -> tuple[list[tuple[str, Any, float]], list[Any]]:
        """One turn of a loop: ``(items without the clouds, the clouds of the last turn, due now)``.

        This turn's clouds are kept for the next: a cloud waits one turn so that the joint states received
        with it are in the history."""
        due, self._pending = self._pending, [msg for kind, msg, _ in items if kind == CLOUD]
        return ([item for item in items if item[0] != CLOUD] if self._pending else items), due

    # -------------------------------------------------------------- the chain
    def unreadable(self, reason: str) -> CloudOutcome:
        """A message that is no cloud (``reason``: the decoder's one line): refused, counted, logged."""
        return self._refused(f"cloud refused: {reason}", float("nan"), "", 0)

    def receive(self, cloud: Any) -> CloudOutcome:
        """Make a decoded cloud the payload's shape at its stamp (module docstring); never raises.

        ``cloud``: a :class:`~payload_estimator.io.point_cloud2.ReceivedCloud` (``points`` in ``frame_id``,
        ``part``, ``volume``, ``stamp_s``) or anything alike."""
        frame, t, n = "", float("nan"), 0
        try:
            frame, t, n = str(cloud.frame_id), float(cloud.stamp_s), len(cloud.points)
            T_sensor_cloud = self.pose(frame, t)
            points = cloud.points @ T_sensor_cloud[:3, :3].T + T_sensor_cloud[:3, 3]
            if self.completion == "none":
                shape = cloud_shape(points, cloud.part, cloud.volume, self.max_distance)
            else:
                cloud_shape(points, cloud.part, None, self.max_distance)  # the checks every cloud passes
                shape = complete_cloud(points, T_sensor_cloud[:3, 3], self.completion, cloud.part,
                                       density=self.density, max_points=self.max_points,
                                       working_points=WORKING_POINTS)
        except (ShapeError, ConfigurationError, ValueError, TypeError, AttributeError) as exc:
            what = f"cloud in {frame or '?'} at t = {t:.3f} s of {n} points" if n else "cloud"
            return self._refused(f"{what} refused: {exc}", t, frame, n)
        update = self.stream.set_payload_shape(shape, t, n)
        if not update.applied:
            return self._refused(update.reason, t, frame, n, counted=True)
        self.last = CloudOutcome(True, t, frame, n, update.point_masses)
        return self.last

    def pose(self, frame: str, t: float) -> np.ndarray:
        """``T_sensor_frame``, (4, 4), at stamp ``t`` (s). ShapeError (one line) when it cannot be known."""
        kinematics = self.stream.kinematics
        anchor, T_anchor_frame = frame, np.eye(4)
        if not frame:
            raise ShapeError("it names no frame (header.frame_id is empty)")
        if not kinematics.has_frame(frame):
            found = self.frame_lookup(frame, kinematics.has_frame) if self.frame_lookup is not None else None
            if found is None:
                raise ShapeError(f"its frame {frame!r} is neither in the robot's description nor in tf "
                                 "(a camera's frame must be on /tf or /tf_static)")
            anchor, T_anchor_frame = found
        rigid = self._rigid_pose(anchor)
        if rigid is not None:
            return rigid @ T_anchor_frame
        q = self.history.at(t)
        R, p = kinematics.frame_pose(q[None, :], anchor, kinematics.sensor_frame)
        return transform(R[0], p[0]) @ T_anchor_frame

    def _rigid_pose(self, frame: str) -> np.ndarray | None:
        """``T_sensor_frame`` when ``frame`` is fixed to the sensor (no joint between), else None (cached)."""
        if frame not in self._rigid:
            try:
                self._rigid[frame] = transform(*self.stream.kinematics.rigid_pose(frame, self.stream.kinematics.
                                                                                  sensor_frame))
            except ConfigurationError:
                self._rigid[frame] = None
        return self._rigid[frame]

    def _refused(self, reason: str, t: float, frame: str, n: int, counted: bool = False) -> CloudOutcome:
        stream = self.stream
        if not counted:
            stream.shapes.refuse(reason, t, n)
        stream.health.report(CLOUD_REFUSED, f"{reason}; the shape in use is kept", CLOUD)
        self.last = CloudOutcome(False, t, frame, n, 0, reason)
        return self.last
