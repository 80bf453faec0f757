"""Which point masses the payload's estimator solves with: the configured shape, or a cloud that arrived mid-run.

A camera that sees the grasped object sends its segmented point cloud (at about 1 Hz, or once per grasp).
:meth:`PayloadShapes.set` checks it (:func:`~payload_estimator.core.point_clouds.cloud_shape`), merges it
down to the budget of point masses (:func:`~payload_estimator.core.point_clouds.voxel_downsample`) and
gives it to the current payload's estimators that solve with point masses (PMD and its division, through
:meth:`~payload_estimator.core.estimators.pmd.PointMassDiscretization.replace_points`): every sample
they hold is kept, and their next estimate is the one they would give had the cloud been there from the
start. An estimator without point masses (least squares, RLS, RTLS) has no use for a shape: the cloud is
counted as ignored, and the call says so.

Inside a :class:`~payload_estimator.core.tracking.PayloadTracker`, the shape belongs to one payload:

* a cloud applies to the payload held at its time ``t`` (the camera's stamp, the clock of the samples);
* after a detected change, the new payload solves with the configured shape (``payload_shape``, or the
  preset's box) until its own cloud arrives: the last payload's cloud is another object's (a tool put
  down, another picked up), and the configured shape is what the user declared for any payload; a
  box about the gripper's reach holds the mass and centre of mass of whatever is grasped;
* a cloud whose ``t`` is before the last change's start shows the previous payload (captured before a
  release, delivered after it): it is refused, and the new payload keeps what it has;
* a cloud captured after a change began but delivered before the change was detected went to the
  previous payload's estimator, which the change discards: it is given again to the new payload's.

A :meth:`PayloadShapes.reset` (a new payload the caller knows of) goes back to the configured shape.
Bad input never raises: a cloud that cannot be used is refused with one line saying why, and the shape
in use stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from payload_estimator.core.estimators.pmd import PointMassDiscretization, point_mass_matrix
from payload_estimator.core.point_clouds import CLOUD_MAX_POINTS, cloud_shape, voxel_downsample
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.core.tracking import PayloadModel, PayloadTracker
from payload_estimator.errors import ShapeError

__all__ = ["PayloadShapes", "ShapeUpdate", "CONFIGURED", "CLOUD"]

CONFIGURED = "configured"
CLOUD = "cloud"


@dataclass(frozen=True)
class ShapeUpdate:
    """What became of a cloud given to :meth:`PayloadShapes.set`."""

    applied: bool
    """Whether the current payload's estimators solve with it from the next estimate on."""
    reason: str
    """Why not, one line ("" when applied)."""
    t: float
    """s, the cloud's time."""
    cloud_points: int
    """Points of the cloud as it came."""
    point_masses: int = 0
    """Point masses it was merged into (0 when refused before)."""


class PayloadShapes:
    """The shape the current payload's estimators solve with, and the clouds given to them (module docstring).

    Args:
        model: the estimator, or the payload tracker that runs it.
        max_points: the budget of point masses a cloud is merged down to (the setting ``cloud_max_points``).
    """

    def __init__(self, model: PayloadModel, max_points: int = CLOUD_MAX_POINTS) -> None:
        if not (isinstance(max_points, (int, np.integer)) and max_points >= 1):
            raise ShapeError(f"cloud_max_points must be a positive integer, got {max_points!r}")
        self.model = model
        self.max_points = int(max_points)
        self.applied = 0
        self.refused = 0
        self.ignored = 0
        self.last_refusal = ""
        """Why the last cloud refused was (one line; "" before any)."""
        self.current: ShapeUpdate | None = None
        """The cloud the current payload solves with; None: the configured shape."""
        self._changes_seen = model.counts.changes if isinstance(model, PayloadTracker) else 0
        self._configured = _point_masses(model) if isinstance(model, PointMassDiscretization) else None
        """An estimator not in a tracker: its configured point masses, for :meth:`reset`."""
        self._last: tuple[SampledShape, ShapeUpdate] | None = None
        """The last cloud applied, merged, and what became of it (given again after a change it belongs to)."""
        self.unsolved = False
        """A shape was applied since the caller last said it estimated (:meth:`solved`): the estimate is old."""

    # ------------------------------------------------------------------ input
    def set(self, cloud: SampledShape | np.ndarray, t: float, points: int | None = None) -> ShapeUpdate:
        """Give the current payload the cloud ``cloud`` captured at ``t`` (s, the samples' clock).

        ``cloud``: (n, 3) points in the sensor frame, m, or a
        :class:`~payload_estimator.core.point_masses.SampledShape` (parts: one unknown density each;
        volumes; own inertias). Never raises: what it did, or why not, is the returned
        :class:`ShapeUpdate` (and :meth:`diagnostics`). ``points``: the camera's points ``cloud`` was made of
        (a completed cloud), as said in the diagnostics; None: ``cloud``'s own."""
        self.follow()
        n = _count(cloud.points_in_sensor if isinstance(cloud, SampledShape) else cloud) if points is None else points
        try:
            t = float(t)
        except (TypeError, ValueError):
            t = float("nan")
        if not np.isfinite(t):
            return self._refuse(f"cloud of {n} points refused: its time is not a finite number of seconds", t, n)
        targets = self._targets()
        if not targets:
            self.ignored += 1
            return ShapeUpdate(False, f"the estimator '{self.model_name}' uses no point masses: a shape changes "
                               "nothing", t, n)
        change_t = self._change_t()
        if change_t is not None and t < change_t:
            return self._refuse(f"cloud at t = {t:.3f} s refused: it was captured before the payload change at "
                                f"t = {change_t:.3f} s, so it shows the previous payload", t, n)
        try:
            shape = self._merged(cloud)
            targets[0].replace_points(shape)  # (checked as the cloud was: it cannot refuse what the others take)
        except (ShapeError, TypeError, ValueError) as exc:
            return self._refuse(f"cloud of {n} points at t = {t:.3f} s refused: {exc}", t, n)
        update = ShapeUpdate(True, "", t, n, len(shape.volume))
        for estimator in targets[1:]:
            estimator.replace_points(shape)
        self.applied += 1
        self.current, self._last = update, (shape, update)
        self.unsolved = True
        return update

    def _merged(self, cloud: SampledShape | np.ndarray) -> SampledShape:
        """The cloud checked and merged down to the budget; ShapeError (one line) when it cannot be used."""
        if isinstance(cloud, SampledShape):
            checked = cloud_shape(cloud.points_in_sensor, cloud.part, cloud.volume)
            own = np.asarray(cloud.own_inertia, dtype=float)
            if own.shape != (len(checked.volume), 6):
                raise ShapeError("the cloud's own inertias must be one row of six per point")
            if own[:1].any() if own.strides[0] == 0 else own.any():  # (none, the most common, read once)
                if not np.isfinite(own.sum()):  # (a sum: NaN if any is)
                    raise ShapeError("the cloud's own inertias must be finite")
                checked = checked._replace(own_inertia=own)
        else:
            checked = cloud_shape(cloud)
        return voxel_downsample(checked, self.max_points)

    def refuse(self, reason: str, t: float, n: int) -> ShapeUpdate:
        """Count a cloud of ``n`` points at ``t`` refused before it got here (its frame unknown...), and why."""
        return self._refuse(reason, t, n)

    def _refuse(self, reason: str, t: float, n: int) -> ShapeUpdate:
        self.refused += 1
        self.last_refusal = reason
        return ShapeUpdate(False, reason, t, n)

    # -------------------------------------------------------------- payloads
    def follow(self) -> None:
        """Follow the tracker's payload changes: a new payload solves with the configured shape ...

        ... or with the last cloud, when that was captured after the change began (module docstring).
        Call it before estimating (the stream does)."""
        if not isinstance(self.model, PayloadTracker) or self.model.counts.changes == self._changes_seen:
            return
        self._changes_seen = self.model.counts.changes
        change_t = self._change_t()
        if self._last is not None and change_t is not None and self._last[1].t >= change_t:
            for estimator in self._targets():
                estimator.replace_points(self._last[0])
            self.current, self.unsolved = self._last[1], True
        else:
            self.current, self._last = None, None

    def solved(self) -> None:
        """Note that an estimate was made with the shape in use (:attr:`unsolved`)."""
        self.unsolved = False

    def reset(self) -> None:
        """A new payload the caller knows of (after the model's own reset): back to the configured shape."""
        if isinstance(self.model, PointMassDiscretization) and self._configured is not None and self.current:
            self.model.replace_points(self._configured)
            self.unsolved = True
        self.current, self._last = None, None
        self._changes_seen = self.model.counts.changes if isinstance(self.model, PayloadTracker) else 0

    def _targets(self) -> list[PointMassDiscretization]:
        """The current payload's estimators that solve with point masses."""
        estimators = self.model.payload_estimators() if isinstance(self.model, PayloadTracker) else [self.model]
        return [e for e in estimators if isinstance(e, PointMassDiscretization)]

    def _change_t(self) -> float | None:
        """s, where the current payload's data begin (the last change's start); None without a change."""
        return self.model.state.change_t if isinstance(self.model, PayloadTracker) else None

    @property
    def model_name(self) -> str:
        """The estimator's name."""
        return str(getattr(self.model, "name", type(self.model).__name__))

    # ------------------------------------------------------------ reporting
    def diagnostics(self) -> dict:
        """A plain dictionary: the shape in use, its point masses, and the clouds applied, refused and ignored."""
        targets = self._targets()
        current = self.current
        return {
            "shape_source": CONFIGURED if current is None else f"{CLOUD} at t = {current.t:.3f} s",
            "shape_point_masses": targets[0].n_points if targets else 0,
            "shape_cloud_points": 0 if current is None else current.cloud_points,
            "clouds_applied": self.applied,
            "clouds_refused": self.refused,
            "clouds_ignored": self.ignored,
            "cloud_refusal": self.last_refusal,
        }


def _point_masses(estimator: PointMassDiscretization) -> SampledShape:
    """The point masses ``estimator`` solves with, as a shape (its own inertias: ``P`` less the bare points')."""
    labels = estimator.part_labels if estimator.part_labels is not None else np.zeros(estimator.n_points, dtype=int)
    own = (estimator.P[4:] - point_mass_matrix(estimator.points)[4:]).T
    return SampledShape(estimator.points, labels, estimator.cell_share, own)


def _count(points: Any) -> int:
    """The number of rows of what came as a cloud (0 when it has none)."""
    try:
        return int(np.shape(points)[0]) if np.ndim(points) >= 1 else 0
    except (TypeError, ValueError):  # ragged rows
        return len(points) if hasattr(points, "__len__") else 0
