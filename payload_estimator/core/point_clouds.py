"""A camera's point cloud as PMD's point masses: checked, then merged voxel by voxel down to a budget.

A segmented cloud of the grasped object (20,000-200,000 points from a depth camera, or a dense file) has
far more points than point-mass discretisation (PMD, :mod:`~payload_estimator.core.estimators.pmd`) can
solve for online: its cost grows with the number of point masses. :func:`voxel_downsample` merges the
points of each voxel of a regular grid into one point mass, separately for each part label (points of two
materials are never merged), and chooses the voxel size so that at most ``max_points`` point masses
remain:

* a point mass sits at the volume-weighted mean of the points it merges, and stands for the sum of
  their volumes (equal volumes: its count of points): at uniform density, the downsampled cloud has
  the full cloud's mass and centre of mass exactly;
* it carries, per kg of its mass, the second moment of its points about it (``own_inertia``, with the
  merged points' own): at uniform density, the downsampled cloud's inertia is the full cloud's too
  (the spread within each voxel that bare points lose; ``benchmarks/clouds.py`` measures both).

The voxel size: the number of occupied voxels falls with their size ``s`` about as ``s^-d``, ``d`` the
cloud's dimension (2 for a surface a camera sees, 3 for a filled volume). A first size from the box
about the cloud, a second at 0.7 times it, then secant steps in ``log count`` against ``log s`` reach
the budget from below in three to five counts, each one pass over the points with integer voxel keys
counted in a dense array (no sort); the final pass merges with ``numpy.bincount``. Deterministic: the
same cloud gives the same point masses, in the order of their voxels.

:func:`cloud_shape` checks a cloud before any of this (a NaN, too few points, a flat cloud, coordinates
that cannot be metres in the sensor frame): one :class:`~payload_estimator.errors.ShapeError` line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.core.point_masses import SampledShape
from payload_estimator.errors import ShapeError

__all__ = ["CLOUD_MAX_POINTS", "MAX_COORDINATE_M", "MIN_CLOUD_POINTS", "VoxelPlan", "cloud_shape",
           "voxel_downsample", "voxel_plan"]

CLOUD_MAX_POINTS = 300
"""The default budget of point masses a cloud is merged down to (the setting ``cloud_max_points``).

On the eight hand tools of ``benchmarks/real_objects.py`` (100,000-point clouds of their solids), 300
point masses keep the uniform-density inertia of the full cloud exactly (with each point mass's own
spread) and PMD's estimate within a few tenths of a percent of the one with 3,000 (``benchmarks/clouds.py``),
and a new cloud's estimate takes a few milliseconds (``benchmarks/speed.py``, "a new cloud")."""
MIN_CLOUD_POINTS = 4
"""The fewest points of a cloud that can hold an inertia (four points not in one plane)."""
MAX_COORDINATE_M = 100.0
"""The largest coordinate a cloud's point may have in the sensor frame, m: a point farther away is no
payload's (a cloud in millimetres, a depth camera's invalid points)."""
_FILL = 0.9
"""The voxel size is accepted once the point masses fill this share of the budget (never more than it)."""
_MAX_COUNTS = 8
"""Voxel counts tried at most before the largest size that kept the budget is taken."""
_DENSE_KEYS = 1 << 22
"""Voxel keys counted in a dense array up to this many cells (32 MB); beyond, by sorting the keys."""


def cloud_shape(points_in_sensor: np.ndarray, part: np.ndarray | None = None,
                volume: np.ndarray | None = None) -> SampledShape:
    """Return a checked cloud as a :class:`~payload_estimator.core.point_masses.SampledShape`.

    Args:
        points_in_sensor: (n, 3) positions in the sensor frame, m.
        part: (n,) integer part labels (any values; one unknown density each), or None: one part.
        volume: (n,) positive volume each point stands for (any unit), or None: equal volumes.

    Raises:
        ShapeError: one line saying what is wrong: not (n, 3), empty or fewer than
            :data:`MIN_CLOUD_POINTS` points, a value that is not finite, a coordinate beyond
            :data:`MAX_COORDINATE_M`, all points in one plane, labels or volumes that do not fit.
    """
    try:
        points = np.array(points_in_sensor, dtype=float)
    except (TypeError, ValueError):
        raise ShapeError("a point cloud must be an (n, 3) array of numbers (x, y, z in m)") from None
    if points.ndim != 2 or points.shape[1] != 3:
        raise ShapeError(f"a point cloud must be an (n, 3) array (x, y, z in m), got shape {points.shape}")
    n = len(points)
    if n < MIN_CLOUD_POINTS:
        raise ShapeError(f"the cloud has {n} point(s); one that can hold an inertia needs at least "
                         f"{MIN_CLOUD_POINTS} not in one plane")
    finite = np.isfinite(points).all(axis=1)
    if not finite.all():
        raise ShapeError(f"{int(n - finite.sum())} of the cloud's {n} points have a value that is not finite "
                         f"(the first: point {int(np.argmin(finite))})")
    far = float(np.max(np.abs(points)))
    if far > MAX_COORDINATE_M:
        raise ShapeError(f"a point of the cloud is {far:.3g} m from the sensor frame's origin, beyond "
                         f"{MAX_COORDINATE_M:g} m: are its coordinates in metres, in the sensor frame?")
    labels = np.zeros(n, dtype=int) if part is None else _labels(part, n)
    volumes = np.ones(n) if volume is None else np.array(volume, dtype=float).reshape(-1)
    if volumes.shape != (n,):
        raise ShapeError(f"the cloud has {n} points but {volumes.size} volumes")
    if not (np.all(np.isfinite(volumes)) and np.all(volumes > 0.0)):
        raise ShapeError("every point's volume must be positive and finite "
                         f"({int(np.sum(~(np.isfinite(volumes) & (volumes > 0.0))))} are not)")
    centred = points - points.mean(axis=0)
    scale = max(float(np.max(np.abs(centred))), 1e-300)
    if np.linalg.matrix_rank(centred / scale, tol=1e-9 * np.sqrt(n)) < 3:
        raise ShapeError("the cloud's points lie in one plane (or on a line); the inertia needs a 3-D cloud")
    return SampledShape(points, labels, volumes, np.zeros((n, 6)))


def _labels(part: np.ndarray, n: int) -> np.ndarray:
    """(n,) part labels as 0, 1, ... (their order kept); ShapeError when they do not fit."""
    raw = np.asarray(part).reshape(-1)
    if raw.shape != (n,):
        raise ShapeError(f"the cloud has {n} points but {raw.size} part labels")
    try:
        values = raw.astype(float)
    except (TypeError, ValueError):
        raise ShapeError("part labels must be integers") from None
    if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
        raise ShapeError("part labels must be integers")
    return np.unique(values, return_inverse=True)[1].reshape(-1)


@dataclass(frozen=True)
class VoxelPlan:
    """The voxel grid :func:`voxel_plan` chose for a cloud."""

    size_m: float
    """The voxels' edge, m (0: the cloud was within the budget and is kept as it is)."""
    point_masses: int
    """The point masses it gives (occupied voxels, counted per part label)."""
    counts: int
    """How many voxel counts it took to find (passes over the points)."""


class _Keys:
    """Integer voxel keys of a cloud's points for any voxel size, one pass each (module docstring).

    The passes reuse their buffers: a fresh array of 100,000 values costs as much as the arithmetic on it."""

    def __init__(self, shape: SampledShape) -> None:
        columns = np.array(shape.points_in_sensor, dtype=float).T.copy()  # x, y, z contiguous: each pass is fast
        self.lo = np.array([c.min() for c in columns])
        self.extent = np.array([c.max() for c in columns]) - self.lo
        columns -= self.lo[:, None]
        self.columns = columns
        self.part = np.asarray(shape.part, dtype=np.int64)
        self.n_parts = int(self.part.max()) + 1
        n = columns.shape[1]
        self._scaled = np.empty(n)
        self._index = np.empty(n, dtype=np.int64)
        self._key = np.empty(n, dtype=np.int64)

    def keys(self, size: float) -> tuple[np.ndarray, int]:
        """Return the (n,) key of each point's voxel and part at voxel edge ``size``, and the number of keys.

        The keys are a buffer the next call overwrites."""
        dims = np.floor(self.extent / size).astype(np.int64) + 1
        key, index = self._key, self._index
        key[:] = 0
        for k in range(3):
            np.multiply(self.columns[k], 1.0 / size, out=self._scaled)
            np.copyto(index, self._scaled, casting="unsafe")  # truncation: the coordinates are not negative
            np.minimum(index, dims[k] - 1, out=index)  # (a coordinate at the far edge may round up past it)
            key *= dims[k]
            key += index
        if self.n_parts > 1:
            key *= self.n_parts
            key += self.part
        return key, int(np.prod(dims)) * self.n_parts

    def count(self, size: float) -> int:
        """The number of occupied voxels (per part) at voxel edge ``size``."""
        key, cells = self.keys(size)
        if cells <= _DENSE_KEYS:
            return int(np.count_nonzero(np.bincount(key, minlength=cells)))
        return int(np.unique(key).size)


def voxel_plan(shape: SampledShape, max_points: int) -> VoxelPlan:
    """Choose the voxel edge at which ``shape``'s points merge into at most ``max_points`` point masses.

    The smallest edge found (the most point masses within the budget, at least :data:`_FILL` of it
    when the cloud allows) in at most :data:`_MAX_COUNTS` counts (module docstring).

    Raises:
        ShapeError: the budget is below the number of part labels (each part keeps a point mass).
    """
    n = len(shape.points_in_sensor)
    return VoxelPlan(0.0, n, 0) if n <= max_points else _plan(_Keys(shape), max_points)


def _plan(grid: _Keys, max_points: int) -> VoxelPlan:
    """:func:`voxel_plan` of a cloud over its budget, from its voxel keys."""
    if grid.n_parts > max_points:
        raise ShapeError(f"the cloud has {grid.n_parts} parts, more than the budget of {max_points} point masses "
                         "(each part keeps at least one): raise cloud_max_points")
    longest = float(np.max(grid.extent))
    span = np.maximum(grid.extent, 1e-3 * longest)
    tried: list[tuple[float, int]] = []
    size = float(np.prod(span) / max_points) ** (1.0 / 3.0)  # a filled box: about the budget
    for _ in range(_MAX_COUNTS):
        tried.append((size, grid.count(size)))
        within = [t for t in tried if t[1] <= max_points]
        if within and max(c for _, c in within) >= _FILL * max_points:
            break
        size = _next_size(tried, max_points, longest)
    within = [t for t in tried if t[1] <= max_points]
    if not within:  # every count overshot: the whole cloud's box, one voxel per part
        size = longest * 1.0001 if longest > 0.0 else 1.0
        return VoxelPlan(size, grid.count(size), len(tried) + 1)
    size, count = max(within, key=lambda t: (t[1], -t[0]))
    return VoxelPlan(size, count, len(tried))


def _next_size(tried: list[tuple[float, int]], target: int, longest: float) -> float:
    """The next voxel edge to count: a secant step in ``log count`` against ``log size`` towards the target.

    Aimed a little below the target (counts scatter about the power law). The slope from the two counts
    nearest the target (clipped to the dimensions a cloud can have, 1 to 3); from one count, a first step
    by 0.7."""
    aim = 0.97 * target
    if len(tried) == 1:
        size, count = tried[0]
        return size * (0.7 if count < aim else 1.4)
    (s1, c1), (s2, c2) = sorted(tried, key=lambda t: abs(np.log(max(t[1], 1) / aim)))[:2]
    if s1 != s2 and c1 != c2:
        slope = float(np.clip(-np.log(max(c1, 1) / max(c2, 1)) / np.log(s1 / s2), 1.0, 3.0))
    else:
        slope = 2.0
    size = s1 * (max(c1, 1) / aim) ** (1.0 / slope)
    over = [s for s, c in tried if c > target]
    under = [s for s, c in tried if c <= target]
    low, high = (max(over) if over else 0.0), (min(under) if under else 4.0 * max(longest, 1e-300))
    if not low < size < high:  # outside what the counts bracket: their geometric middle
        size = np.sqrt(low * high) if low > 0.0 else 0.7 * high
    return float(size)


def voxel_downsample(shape: SampledShape, max_points: int) -> SampledShape:
    """Merge ``shape``'s points voxel by voxel, per part, into at most ``max_points`` point masses.

    Each point mass is at the volume-weighted mean of its voxel's points of one part, stands for the sum
    of their volumes, and carries their own inertia and their spread about it, per kg (module docstring).
    A cloud within the budget is returned as it is.

    Raises:
        ShapeError: ``max_points`` below 1, or below the number of parts.
    """
    if not (isinstance(max_points, (int, np.integer)) and max_points >= 1):
        raise ShapeError(f"the budget of point masses must be a positive integer, got {max_points!r}")
    if len(shape.points_in_sensor) <= max_points:
        return shape
    grid = _Keys(shape)
    plan = _plan(grid, int(max_points))
    key, cells = grid.keys(plan.size_m)
    if cells <= _DENSE_KEYS:
        occupied = np.flatnonzero(np.bincount(key, minlength=cells))
        index = np.empty(cells, dtype=np.int64)
        index[occupied] = np.arange(occupied.size)
        voxel = index[key]
    else:
        occupied, voxel = np.unique(key, return_inverse=True)
        voxel = voxel.reshape(-1)
    m = occupied.size
    v = np.asarray(shape.volume, dtype=float)
    volume = np.bincount(voxel, weights=v, minlength=m)
    buffer = grid._scaled
    mean = np.empty((m, 3))
    for k, c in enumerate(grid.columns):
        mean[:, k] = np.bincount(voxel, weights=np.multiply(v, c, out=buffer), minlength=m) / volume
    # each point mass's spread about itself: the volume-weighted second moment of its points about their mean
    d = grid.columns  # (about the means, in place: the grid is not used again)
    for k in range(3):
        d[k] -= np.take(mean[:, k], voxel, out=buffer)
    S = {}
    for a in range(3):
        for b in range(a, 3):
            np.multiply(d[a], d[b], out=buffer)
            S[a, b] = np.bincount(voxel, weights=np.multiply(buffer, v, out=buffer), minlength=m) / volume
    trace = S[0, 0] + S[1, 1] + S[2, 2]
    own = np.stack([trace - S[0, 0], -S[0, 1], -S[0, 2], trace - S[1, 1], -S[1, 2], trace - S[2, 2]], axis=1)
    if np.any(shape.own_inertia):
        for k in range(6):
            own[:, k] += np.bincount(voxel, weights=np.multiply(v, shape.own_inertia[:, k], out=buffer),
                                     minlength=m) / volume
    part = occupied % grid.n_parts if grid.n_parts > 1 else np.zeros(m, dtype=int)
    return SampledShape(mean + grid.lo, part.astype(int), volume, own)

