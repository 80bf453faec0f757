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

CLOUD_MAX_POINTS = 100
"""The default budget of point masses a cloud is merged down to (the setting ``cloud_max_points``).

On the eight hand tools of ``benchmarks/real_objects.py`` as 100,000-point clouds of one material (a camera's
segmentation), PMD's inertia is 5.3 % off the truth with 100 point masses, 5.8 % with 300 and 9.3 % with the
whole cloud: its regulariser sums over the point masses, so more of them hold a tool of several materials
harder to one density (``benchmarks/clouds.py``). With the parts labelled, more are better (2.8 % with 100,
2.1 % with 300): raise the budget for such clouds. 100 also keeps a new cloud's cost low
(``benchmarks/speed.py``, table 5)."""
MIN_CLOUD_POINTS = 4
"""The fewest points of a cloud that can hold an inertia (four points not in one plane)."""
MAX_COORDINATE_M = 100.0
"""The largest coordinate a cloud's point may have in the sensor frame, m: a point farther away is no
payload's (a cloud in millimetres, a depth camera's invalid points)."""
_FILL = 0.85
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
        points = np.asarray(points_in_sensor, dtype=float)
    except (TypeError, ValueError):
        raise ShapeError("a point cloud must be an (n, 3) array of numbers (x, y, z in m)") from None
    if points.ndim != 2 or points.shape[1] != 3:
        raise ShapeError(f"a point cloud must be an (n, 3) array (x, y, z in m), got shape {points.shape}")
    n = len(points)
    if n < MIN_CLOUD_POINTS:
        raise ShapeError(f"the cloud has {n} point(s); one that can hold an inertia needs at least "
                         f"{MIN_CLOUD_POINTS} not in one plane")
    lowest, highest = float(points.min()), float(points.max())  # NaN when any is (one pass over all values each)
    if not (np.isfinite(lowest) and np.isfinite(highest)):
        finite = np.isfinite(points).all(axis=1)
        raise ShapeError(f"{int(n - finite.sum())} of the cloud's {n} points have a value that is not finite "
                         f"(the first: point {int(np.argmin(finite))})")
    far = max(-lowest, highest)
    if far > MAX_COORDINATE_M:
        raise ShapeError(f"a point of the cloud is {far:.3g} m from the sensor frame's origin, beyond "
                         f"{MAX_COORDINATE_M:g} m: are its coordinates in metres, in the sensor frame?")
    labels = np.zeros(n, dtype=np.int64) if part is None else _labels(part, n)
    volumes = np.ones(n) if volume is None else np.asarray(volume, dtype=float).reshape(-1)
    if volumes.shape != (n,):
        raise ShapeError(f"the cloud has {n} points but {volumes.size} volumes")
    if not (np.isfinite(volumes.sum()) and volumes.min() > 0.0):
        raise ShapeError("every point's volume must be positive and finite "
                         f"({int(np.sum(~(np.isfinite(volumes) & (volumes > 0.0))))} are not)")
    sample = points[_spread(n, _FLATNESS_SAMPLE)]  # (a flat cloud's sample is flat)
    centred = sample - sample.mean(axis=0)
    second = centred.T @ centred  # (3, 3): the cloud's spread; flat when its smallest axis is nothing
    axes = np.linalg.eigvalsh(second / max(float(np.trace(second)), 1e-300))
    if not axes[0] > _FLAT**2:
        raise ShapeError("the cloud's points lie in one plane (or on a line); the inertia needs a 3-D cloud")
    return SampledShape(points, labels, volumes, np.broadcast_to(np.zeros(6), (n, 6)))


_FLATNESS_SAMPLE = 8192
"""Points whose spread tells whether a cloud is flat (all of a smaller cloud)."""


def _spread(n: int, most: int) -> np.ndarray | slice:
    """Indices of at most ``most`` of ``n`` points, spread over them whatever their order; all as a slice.

    Knuth's multiplicative hash modulo n: a fixed stride with no pattern."""
    return slice(None) if n <= most else (np.arange(most, dtype=np.int64) * 2_654_435_761) % n


def _any(values: np.ndarray) -> bool:
    """Whether any value is not zero (a broadcast row, such as a cloud's no own inertia, read once)."""
    return bool(np.any(values[:1]) if values.strides[0] == 0 else np.any(values))


_FLAT = 1e-7
"""A cloud whose thinnest spread is below this share of its size is flat (a plane, up to rounding)."""


def _labels(part: np.ndarray, n: int) -> np.ndarray:
    """(n,) part labels as 0, 1, ... (their order kept); ShapeError when they do not fit."""
    raw = np.asarray(part).reshape(-1)
    if raw.shape != (n,):
        raise ShapeError(f"the cloud has {n} points but {raw.size} part labels")
    if raw.dtype.kind not in "iu":
        try:
            values = raw.astype(float)
        except (TypeError, ValueError):
            raise ShapeError("part labels must be integers") from None
        if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
            raise ShapeError("part labels must be integers")
        return np.unique(values, return_inverse=True)[1].reshape(-1)
    low, high = int(raw.min()), int(raw.max())
    if low == high:
        return np.zeros(n, dtype=np.int64)
    if high - low > 4 * n:  # labels far apart: sorted
        return np.unique(raw, return_inverse=True)[1].reshape(-1)
    present = np.bincount(raw - low) > 0  # (a linear pass where few labels span a small range)
    return (np.cumsum(present) - 1)[raw - low]


@dataclass(frozen=True)
class VoxelPlan:
    """The voxel grid :func:`voxel_plan` chose for a cloud."""

    size_m: float
    """The voxels' edge, m (0: the cloud was within the budget and is kept as it is)."""
    point_masses: int
    """The point masses it gives (occupied voxels, counted per part label)."""
    sample_counts: int
    """Voxel counts of a sample of the points it took to find (each a pass over the sample) ..."""
    full_counts: int
    """... and of all the points (each a pass over them all; the last one's keys are the merge's)."""


class _Keys:
    """Integer voxel keys of points for any voxel size, one pass each (module docstring).

    Args:
        columns: (3, n) x, y, z less the cloud's lowest corner ``lo``, m.
        part: (n,) labels 0, 1, ...; n_parts: how many.
        lo, extent: (3,) the cloud's lowest corner and its box's size, m (the grid's).

    The passes reuse their buffers: a fresh array of 100,000 values costs as much as the arithmetic on it."""

    def __init__(self, columns: np.ndarray, part: np.ndarray, n_parts: int, lo: np.ndarray,
                 extent: np.ndarray) -> None:
        self.columns, self.part, self.n_parts, self.lo, self.extent = columns, part, n_parts, lo, extent
        n = columns.shape[1]
        self.scaled = np.empty((3, n))
        """The last pass's coordinates in voxels (their fraction: where in its voxel a point lies)."""
        self._index = np.empty(n, dtype=np.int64)
        self._key = np.empty(n, dtype=np.int64)

    @classmethod
    def of(cls, shape: SampledShape) -> _Keys:
        """The keys of a cloud's points."""
        columns = np.array(shape.points_in_sensor.T, dtype=float, order="C")  # a copy: x, y, z contiguous
        lo = columns.min(axis=1)
        columns -= lo[:, None]
        part = np.asarray(shape.part, dtype=np.int64)
        return cls(columns, part, int(part.max()) + 1, lo, columns.max(axis=1))

    def sample(self, most: int) -> _Keys:
        """At most ``most`` of the points, spread over the cloud whatever its order (a fixed stride modulo n)."""
        pick = _spread(self.columns.shape[1], most)
        if isinstance(pick, slice):
            return self
        return _Keys(self.columns[:, pick], self.part[pick], self.n_parts, self.lo, self.extent)

    def keys(self, size: float, local: bool = False) -> tuple[np.ndarray, int]:
        """Return the (n,) key of each point's voxel and part at voxel edge ``size``, and the number of keys.

        The keys are a buffer the next call overwrites; with ``local``, :attr:`scaled` holds where in its
        voxel each point lies."""
        dims = np.floor(self.extent / size).astype(np.int64) + 1
        key, index = self._key, self._index
        np.multiply(self.columns, 1.0 / size, out=self.scaled)
        for k in range(3):
            np.copyto(index, self.scaled[k], casting="unsafe")  # truncation: the coordinates are not negative
            np.minimum(index, dims[k] - 1, out=index)  # (a coordinate at the far edge may round up past it)
            if local:
                self.scaled[k] -= index
            if k == 0:
                key[:] = index
            else:
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
    when the cloud allows) in at most :data:`_MAX_COUNTS` counts of a sample of the points and one or two
    of them all (module docstring).

    Raises:
        ShapeError: the budget is below the number of part labels (each part keeps a point mass).
    """
    n = len(shape.points_in_sensor)
    return VoxelPlan(0.0, n, 0, 0) if n <= max_points else _plan(_Keys.of(shape), max_points)[0]


_SAMPLE_PER_POINT_MASS = 24
"""The voxel size is searched on a sample of this many points per point mass of the budget (at least
:data:`_SAMPLE_LEAST`): few voxels are missed that hold a point of the cloud (the count of all of them is
then checked once)."""
_SAMPLE_LEAST = 8192
_SAMPLE_SHARE = 0.92
"""... and aimed at this share of the budget: the sample's counts fall short of all the points' by up to 8 %
(the sparse voxels at the cloud's edges)."""


def _plan(grid: _Keys, max_points: int) -> tuple[VoxelPlan, np.ndarray, np.ndarray | None]:
    """:func:`voxel_plan` of a cloud over its budget; with its points' keys at that size and each key's count.

    The size is searched on a sample of the points; then all are counted at it. A sample misses a few
    sparse voxels (a noisy cloud's stray points): when all of them overshoot the budget, the sample is
    aimed lower by what it missed, and searched again. The counts are None for keys too many to count in
    a dense array."""
    if grid.n_parts > max_points:
        raise ShapeError(f"the cloud has {grid.n_parts} parts, more than the budget of {max_points} point masses "
                         "(each part keeps at least one): raise cloud_max_points")
    longest = float(np.max(grid.extent))
    sample = grid.sample(max(_SAMPLE_PER_POINT_MASS * max_points, _SAMPLE_LEAST))
    target = max_points if sample is grid else max(int(_SAMPLE_SHARE * max_points), grid.n_parts)
    size, searched, slope = _search(sample, target, longest)
    for full in range(1, _MAX_COUNTS + 1):
        key, cells = grid.keys(size, local=True)
        occupancy = np.bincount(key, minlength=cells) if cells <= _DENSE_KEYS else None
        count = int(np.count_nonzero(occupancy)) if occupancy is not None else int(np.unique(key).size)
        if count <= max_points:
            return VoxelPlan(size, count, searched, full), key, occupancy
        size *= (count / max_points) ** (1.0 / slope) * 1.02  # the sample's law, a little beyond
    size = longest * 1.0001 if longest > 0.0 else 1.0  # (never seen) the whole cloud's box: one voxel per part
    key, cells = grid.keys(size, local=True)
    return VoxelPlan(size, grid.n_parts, searched, _MAX_COUNTS + 1), key, np.bincount(key, minlength=cells)


def _search(grid: _Keys, target: int, longest: float) -> tuple[float, int, float]:
    """The voxel edge whose count of ``grid``'s points fills ``target`` best (module docstring).

    With the counts made and the slope of ``log count`` against ``log size`` near it (the cloud's
    dimension, 2 to 3)."""
    # the box about most of the points (a stray point far off does not make the first voxels huge)
    low_high = np.partition(grid.columns, (grid.columns.shape[1] // 100, -1 - grid.columns.shape[1] // 100), axis=1)
    span = low_high[:, -1 - grid.columns.shape[1] // 100] - low_high[:, grid.columns.shape[1] // 100]
    span = np.maximum(span, 1e-3 * float(span.max()) + 1e-300)
    tried: list[tuple[float, int]] = []
    size = float(np.prod(span) / target) ** (1.0 / 3.0)  # a filled box: about the target
    for _ in range(_MAX_COUNTS):
        tried.append((size, grid.count(size)))
        within = [t for t in tried if t[1] <= target]
        if within and max(c for _, c in within) >= _FILL * target:
            break
        size = _next_size(tried, target, longest)
    within = [t for t in tried if t[1] <= target]
    best = max(within, key=lambda t: (t[1], -t[0]))[0] if within else longest * 1.0001 if longest > 0.0 else 1.0
    return best, len(tried), _slope(tried, target)


def _slope(tried: list[tuple[float, int]], target: int) -> float:
    """-d log count / d log size from the two counts nearest ``target`` (clipped to 2 to 3; 3 from one)."""
    if len(tried) < 2:
        return 3.0
    (s1, c1), (s2, c2) = sorted(tried, key=lambda t: abs(np.log(max(t[1], 1) / target)))[:2]
    if s1 == s2 or c1 == c2:
        return 3.0
    return float(np.clip(-np.log(max(c1, 1) / max(c2, 1)) / np.log(s1 / s2), 2.0, 3.0))


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
    if c1 < 0.1 * aim:  # a handful of voxels: no slope to read from them yet, a volume's law
        return s1 * (max(c1, 1) / aim) ** (1.0 / 3.0)
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
    grid = _Keys.of(shape)
    plan, key, occupancy = _plan(grid, int(max_points))
    if occupancy is not None:
        occupied = np.flatnonzero(occupancy)
        index = np.empty(occupancy.size, dtype=np.int64)
        index[occupied] = np.arange(occupied.size)
        voxel = index[key]
    else:
        occupied, voxel = np.unique(key, return_inverse=True)
        voxel = voxel.reshape(-1)
    local = grid.scaled  # each point in its voxel, in voxel edges (0 to 1): no large coordinates to cancel
    mean, second, volume = _moments(voxel, occupied.size, local, np.asarray(shape.volume, dtype=float))
    own = plan.size_m**2 * np.stack([second[1, 1] + second[2, 2], -second[0, 1], -second[0, 2],
                                     second[0, 0] + second[2, 2], -second[1, 2], second[0, 0] + second[1, 1]], axis=1)
    if _any(shape.own_inertia):
        v = np.asarray(shape.volume, dtype=float)
        own += np.stack([np.bincount(voxel, weights=v * shape.own_inertia[:, k], minlength=occupied.size)
                         for k in range(6)], axis=1) / volume[:, None]
    cell = occupied // grid.n_parts
    dims = np.floor(grid.extent / plan.size_m).astype(np.int64) + 1
    corner = np.stack([cell // (dims[1] * dims[2]), (cell // dims[2]) % dims[1], cell % dims[2]], axis=1)
    points = grid.lo + plan.size_m * (corner + mean)
    return SampledShape(points, (occupied % grid.n_parts).astype(int), volume, own)


def _moments(voxel: np.ndarray, m: int, local: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                   np.ndarray]:
    """Each voxel's volume-weighted mean position (m, 3), spread about it (3, 3, m) and volume (m,).

    ``local``: (3, n) each point's position in its voxel, in voxel edges; ``v``: (n,) volumes."""
    equal = bool(v.min() == v.max())  # (a camera's cloud: one volume each, no weights to multiply by)
    volume = np.bincount(voxel, minlength=m) * v[0] if equal else np.bincount(voxel, weights=v, minlength=m)
    weighted = local if equal else local * v
    norm = volume / v[0] if equal else volume  # (the counts: the weights' sum)
    mean = np.stack([np.bincount(voxel, weights=weighted[k], minlength=m) for k in range(3)], axis=1) / norm[:, None]
    buffer = np.empty(local.shape[1])
    second = np.empty((3, 3, m))
    for a in range(3):
        for b in range(a, 3):
            np.multiply(weighted[a], local[b], out=buffer)
            moment = np.bincount(voxel, weights=buffer, minlength=m) / norm
            second[a, b] = second[b, a] = moment - mean[:, a] * mean[:, b]
    return mean, second, volume
