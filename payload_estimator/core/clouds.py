"""A payload's point cloud: its named fields read into columns, and the checks it must pass to become a shape.

Every way a cloud comes in (a points file, a camera's ``sensor_msgs/PointCloud2``, a bag's cloud topic) ends
here, so the node, ``replay`` and the command line accept and refuse the same clouds:

* :func:`cloud_columns` picks the position, part label and volume out of a cloud's named fields
  (:data:`PART_FIELDS`, :data:`VOLUME_FIELDS`), drops the points whose position is not finite (a depth
  camera's holes) and counts them, and checks the labels and volumes of the points it keeps;
* :func:`check_payload_cloud` is what a cloud must pass before it may become the payload's shape: at least
  :data:`MIN_CLOUD_POINTS` finite points, not coplanar, and none farther than ``max_distance``
  (the setting ``cloud_max_distance``, default :data:`MAX_CLOUD_DISTANCE_M`) from the sensor origin, so that a
  cloud of the table or of the whole scene, or one in millimetres, is refused;
* :func:`cloud_shape` makes the checked cloud the candidate point masses of PMD
  (:class:`~payload_estimator.core.point_masses.SampledShape`).

Positions are in m. Each refusal is a :class:`~payload_estimator.errors.ShapeError` of one line that names
the reason and its figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from payload_estimator.core.point_masses import SampledShape
from payload_estimator.errors import ShapeError

__all__ = [
    "MAX_CLOUD_DISTANCE_M",
    "MIN_CLOUD_POINTS",
    "MIN_THICKNESS_RATIO",
    "PART_FIELDS",
    "VOLUME_FIELDS",
    "CloudColumns",
    "cloud_columns",
    "check_payload_cloud",
    "cloud_shape",
]

MAX_CLOUD_DISTANCE_M = 0.5
"""How far from the sensor origin a payload's point may be, m (the setting ``cloud_max_distance``): a payload
held at the wrist reaches a few tens of cm; a cloud of the table, of the scene or in mm reaches further."""
MIN_CLOUD_POINTS = 4
"""The fewest points a cloud that can hold an inertia has (four not in one plane)."""
MIN_THICKNESS_RATIO = 1e-4
"""A cloud whose RMS distance to its best-fit plane is below this share of its RMS spread along its longest
axis is coplanar: a plane up to rounding (a float32 cloud's seven digits), not a solid. A 1 mm ruler blade
300 mm long is 30 times thicker than that."""
PART_FIELDS = ("part", "label", "segment")
"""The names a cloud's part label may have, the first one present counting (PCL's ``PointXYZL`` and most
segmentation pipelines write ``label``): points of one integer label are one material, with one unknown
density."""
VOLUME_FIELDS = ("volume",)
"""The names a cloud's per-point volume may have: each point's share of its part's mass at uniform density
(any unit, positive)."""
_LABEL_LIMIT = 2.0**53
"""The largest floating-point label that is surely a whole number."""


class CloudColumns(NamedTuple):
    """A cloud's positions, part labels and volumes, its points of non-finite position dropped."""

    points: np.ndarray
    """(N, 3) finite positions, float64, m, in the cloud's own frame."""
    part: np.ndarray | None
    """(N,) int64 part labels as given (any integers), or None without a part field."""
    volume: np.ndarray | None
    """(N,) float64 positive volumes, or None without a volume field."""
    non_finite: int
    """How many points were dropped because their position was not finite."""


def _first_field(fields: Mapping[str, np.ndarray], names: tuple[str, ...]) -> tuple[str, np.ndarray] | None:
    for name in names:
        if name in fields:
            return name, np.asarray(fields[name]).reshape(-1)
    return None


def _labels(name: str, values: np.ndarray, where: str) -> np.ndarray:
    """Integer labels from an integer or integer-valued floating field (int64; unsigned 64-bit wraps, one-to-one)."""
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    with np.errstate(invalid="ignore"):
        values = values.astype(np.float64)
        bad = ~(np.isfinite(values) & (values == np.round(values)) & (np.abs(values) <= _LABEL_LIMIT))
    if bad.any():
        raise ShapeError(f"{where}part labels must be integers, got {values[bad][0]:g} ({int(bad.sum())} of the "
                         f"field {name} are not)")
    return values.astype(np.int64)


def _volumes(name: str, values: np.ndarray, where: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        values = values.astype(np.float64)
        bad = ~(np.isfinite(values) & (values > 0.0))
    if bad.any():
        what = "not positive" if np.isfinite(values).all() else "not positive or not finite"
        raise ShapeError(f"{where}{int(bad.sum())} volume(s) {what} (the smallest {np.min(values[bad]):g}); each "
                         f"point's volume ({name}) must be positive")
    return values


def cloud_columns(fields: Mapping[str, np.ndarray], where: str = "") -> CloudColumns:
    """Pick the positions, part labels and volumes out of a cloud's named fields.

    Args:
        fields: one (N,) array per field name (``x``, ``y``, ``z``, any of :data:`PART_FIELDS` and
            :data:`VOLUME_FIELDS`; other fields, colours, normals, intensities, are ignored).
        where: what the cloud is, to begin each message with (e.g. ``"cloud.pcd: "``).

    Returns:
        The columns of the points whose x, y and z are all finite; the others are dropped and counted.

    Raises:
        ShapeError: one line: no x, y or z field; fields of different lengths; an empty cloud; no point of
            finite position; among the points kept, a part label that is not a whole number or a volume that
            is not positive.
    """
    missing = [axis for axis in "xyz" if axis not in fields]
    if missing:
        given = ", ".join(sorted(fields)) or "none"
        raise ShapeError(f"{where}no {', '.join(missing)} field (fields: {given[:120]}); a cloud's positions are "
                         "its fields x, y and z")
    xyz = [np.asarray(fields[axis]).reshape(-1) for axis in "xyz"]
    part = _first_field(fields, PART_FIELDS)
    volume = _first_field(fields, VOLUME_FIELDS)
    lengths = {len(column) for column in [*xyz, *(f[1] for f in (part, volume) if f is not None)]}
    if len(lengths) > 1:
        raise ShapeError(f"{where}fields of different lengths ({', '.join(map(str, sorted(lengths)))})")
    count = lengths.pop()
    if count == 0:
        raise ShapeError(f"{where}an empty cloud (no points)")
    with np.errstate(invalid="ignore", over="ignore"):  # a huge integer's cast
        finite = np.isfinite(xyz[0]) & np.isfinite(xyz[1]) & np.isfinite(xyz[2])  # on the fields as they are: fast
        kept = int(np.count_nonzero(finite))
        if kept == 0:
            raise ShapeError(f"{where}none of its {count} points has a finite position")
        rows = None if kept == count else np.flatnonzero(finite)
        points = np.empty((kept, 3))
        for i, column in enumerate(xyz):  # only finite values are cast: casting NaNs can be 10 times slower
            points[:, i] = column if rows is None else column[rows]

    def kept_of(values: np.ndarray) -> np.ndarray:
        return values if rows is None else values[rows]

    return CloudColumns(
        points=points,
        part=None if part is None else _labels(part[0], kept_of(part[1]), where),
        volume=None if volume is None else _volumes(volume[0], kept_of(volume[1]), where),
        non_finite=count - kept,
    )


def check_payload_cloud(points_in_sensor: np.ndarray, max_distance: float = MAX_CLOUD_DISTANCE_M,
                        where: str = "") -> np.ndarray:
    """Check that a cloud can be the payload's shape; return its (N, 3) positions as float64.

    Args:
        points_in_sensor: (N, 3) positions in the sensor frame, m.
        max_distance: the farthest a point may be from the sensor origin, m (the setting
            ``cloud_max_distance``; ``math.inf``: no limit).
        where: what the cloud is, to begin each message with (e.g. ``"cloud.pcd: "``).

    Raises:
        ShapeError: one line naming the reason and its figures: not (N, 3) numbers, a position that is not
            finite, fewer than :data:`MIN_CLOUD_POINTS` points, coplanar points (thinner than
            :data:`MIN_THICKNESS_RATIO` of their length), or points farther than ``max_distance``.
    """
    if not max_distance > 0.0:
        raise ShapeError(f"the cloud's largest distance from the sensor origin must be positive, got {max_distance}")
    try:
        points = np.asarray(points_in_sensor, dtype=np.float64)
    except (TypeError, ValueError):
        raise ShapeError(f"{where}the cloud's positions are not numbers") from None
    if points.ndim != 2 or points.shape[1] != 3:
        raise ShapeError(f"{where}expected (N, 3) positions, got an array of shape {points.shape}")
    finite = np.isfinite(points).all(axis=1)
    if not finite.all():
        raise ShapeError(f"{where}{int((~finite).sum())} of its {len(points)} points have a position that is not "
                         "finite")
    if len(points) < MIN_CLOUD_POINTS:
        raise ShapeError(f"{where}{len(points)} point(s); a point cloud that can hold an inertia needs at least "
                         f"{MIN_CLOUD_POINTS}")
    _check_not_flat(points, where)
    distance = np.linalg.norm(points, axis=1)
    far = distance > max_distance
    if far.any():
        raise ShapeError(f"{where}{int(far.sum())} of its {len(points)} points are farther than {max_distance:g} m "
                         f"from the sensor origin (the farthest {distance.max():.3g} m): a cloud of the table or "
                         "the scene, not the payload alone, or not in metres? (cloud_max_distance sets the limit)")
    return points


def _check_not_flat(points: np.ndarray, where: str) -> None:
    """Refuse points that lie in one plane (or on one line, or at one point): they hold no 3-D inertia."""
    centred = points - points.mean(axis=0)
    scale = float(np.max(np.abs(centred)))  # scaled to 1 first: no overflow for any finite coordinates
    unit = centred / scale if scale > 0.0 and math.isfinite(scale) else np.zeros_like(centred)
    spread = np.sqrt(np.clip(np.linalg.eigvalsh(unit.T @ unit / len(points)), 0.0, None))  # RMS, ascending
    thickness, length = scale * float(spread[0]), scale * float(spread[2])
    if not thickness > MIN_THICKNESS_RATIO * length:
        raise ShapeError(f"{where}the points are coplanar (RMS distance {1e3 * thickness:.3g} mm from their "
                         f"best-fit plane, RMS spread {1e3 * length:.3g} mm along their longest axis); the inertia "
                         "needs a 3-D cloud")


def cloud_shape(points_in_sensor: np.ndarray, part: np.ndarray | None = None, volume: np.ndarray | None = None,
                max_distance: float = MAX_CLOUD_DISTANCE_M, where: str = "") -> SampledShape:
    """The candidate point masses of PMD a checked cloud gives (:func:`check_payload_cloud`).

    Points of one ``part`` label (any integers) share one unknown density, numbered 0, 1, ... in the
    labels' order; ``volume`` weights each point's share of its part. Without them, one part of equal volumes.

    Raises:
        ShapeError: the cloud fails :func:`check_payload_cloud`, or ``part``/``volume`` do not match it.
    """
    points = check_payload_cloud(points_in_sensor, max_distance, where)
    n = len(points)
    labels = np.zeros(n, dtype=int)
    if part is not None:
        part = np.asarray(part).reshape(-1)
        if len(part) != n:
            raise ShapeError(f"{where}{len(part)} part labels for {n} points")
        labels = np.unique(part, return_inverse=True)[1].reshape(-1)
    volumes = np.ones(n)
    if volume is not None:
        volumes = _volumes("volume", np.asarray(volume).reshape(-1), where)
        if len(volumes) != n:
            raise ShapeError(f"{where}{len(volumes)} volumes for {n} points")
    return SampledShape(points, labels, volumes, np.zeros((n, 6)))
