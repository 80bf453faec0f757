"""The point masses that discretise a payload shape, the candidates of point-mass discretisation (PMD).

:func:`sample_points` fills a shape with points on a regular grid at a given density (0.04
points/cm³ by default, :data:`DEFAULT_DENSITY`), every point strictly inside the shape, and
thins large clouds evenly down to a cap (:func:`downsample_evenly`). :func:`sample_parts` samples
each part of a union on its own grid, a density group of PMD each. Points files and clouds are read in
:mod:`~payload_estimator.core.cloud_files` and checked in :mod:`~payload_estimator.core.clouds`. Positions
are in the sensor frame, m (the estimator: :mod:`~payload_estimator.core.estimators.pmd`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from payload_estimator.core.inertia import vech
from payload_estimator.core.solids import Shape, Union
from payload_estimator.errors import ShapeError

__all__ = [
    "DEFAULT_DENSITY",
    "DEFAULT_MAX_POINTS",
    "MIN_POINTS",
    "MAX_GRID_POINTS",
    "SampledShape",
    "sample_points",
    "sample_parts",
    "own_inertia",
    "downsample_evenly",
]

DEFAULT_DENSITY = 0.04e6
"""Points per m³: 0.04 points/cm³, Nadeau et al.'s Section V-C."""
DEFAULT_MAX_POINTS = 1000
MIN_POINTS = 10
MAX_GRID_POINTS = 1_000_000
"""The most grid cells a shape is sampled on (before thinning to the cap on point masses): about 100 MB and
half a minute; a denser grid (a shape's size in mm taken for m, a point density per m³ taken for cm³) is
refused."""


def _grid_inside(shape: Shape, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Cell centres inside ``shape`` of a grid over its bounding box, and the cells' (3,) size."""
    lo, hi = shape.bounds()
    extent = hi - lo
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        cells = np.maximum(np.ceil(extent / spacing), 2.0)
        total = float(np.prod(cells))
        per_cm3 = float(np.float64(spacing) ** -3 * 1e-6)
    if not total <= MAX_GRID_POINTS:
        size = " x ".join(f"{e:.3g}" for e in extent)
        raise ShapeError(f"filling the shape ({size} m) at {per_cm3:.3g} points per cm³ takes a grid of "
                         f"{total:.3g} points, more than the maximum of {MAX_GRID_POINTS:,}: lower the point "
                         "density, or check that the shape's sizes are in metres")
    counts = cells.astype(int)
    axes = [lo[i] + (np.arange(counts[i]) + 0.5) * extent[i] / counts[i] for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid[shape.contains(grid)], extent / counts


def sample_points(
    shape: Shape,
    density: float = DEFAULT_DENSITY,
    max_points: int = DEFAULT_MAX_POINTS,
    min_points: int = MIN_POINTS,
) -> np.ndarray:
    """Point-mass positions filling ``shape``: (n, 3) in S, m.

    Cell centres of a regular grid of spacing ``density^(-1/3)`` over the
    shape's bounding box (at least two cells per axis), kept when strictly
    inside the shape. The grid is refined until at least ``min_points`` fall
    inside, and the result is thinned evenly to at most ``max_points``.

    Args:
        shape: the shape to fill, in S.
        density: points per m³ (default 0.04 points/cm³).
        max_points: the most points returned.
        min_points: the fewest points the grid is refined to reach.
    """
    return _sample_cells(shape, density, max_points, min_points)[0]


def _sample_cells(shape: Shape, density: float, max_points: int, min_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Return :func:`sample_points` and the (3,) size of the grid cell each point stands for, m.

    The cell grows in proportion when the grid is thinned."""
    if not density > 0:
        raise ShapeError("point density must be positive")
    if shape.volume <= 0:
        raise ShapeError("the shape encloses no volume")
    spacing = density ** (-1.0 / 3.0)
    points, cell = _grid_inside(shape, spacing)
    for _ in range(12):
        if len(points) >= min_points:
            break
        spacing /= 1.5
        points, cell = _grid_inside(shape, spacing)
    if len(points) < min(min_points, 4):
        raise ShapeError("could not place points inside the shape (is it degenerate?)")
    if len(points) > max_points:
        thinned = downsample_evenly(points, max_points)
        cell = cell * (len(points) / len(thinned)) ** (1.0 / 3.0)
        points = thinned
    return points, cell


_MIN_PART_POINTS = 8
"""Points a part of a union gets at least (a 2 x 2 x 2 grid: its centroid and principal axes)."""


class SampledShape(NamedTuple):
    """Point masses filling a shape, with the part and the volume each stands for."""

    points_in_sensor: np.ndarray
    """(n, 3) positions, m."""
    part: np.ndarray
    """(n,) index of the part each point lies in (zeros for a single shape)."""
    volume: np.ndarray
    """(n,) volume each point stands for, m³ (its part's volume shared among its points)."""
    own_inertia: np.ndarray
    """(n, 6) ``vech`` of the inertia each point carries about itself per kg of its mass, m²: what
    its part's solid has beyond its bare points (the spread within each grid cell, the round of a
    cylinder the grid squares off), so that points of equal mass in a part have exactly the part's
    solid inertia (see :func:`own_inertia`). Zeros for a single shape: one shape is most often an
    envelope (a box around the payload), which real objects do not fill, and there the bare
    points' smaller inertia is the better prior (workshop tools, box only: 10.9 % inertia error
    with bare points, 12.4 % with the box's exact solid inertia; ``benchmarks/tools.py``)."""


def sample_parts(
    shape: Shape,
    density: float = DEFAULT_DENSITY,
    max_points: int = DEFAULT_MAX_POINTS,
    min_points: int = MIN_POINTS,
) -> SampledShape:
    """Point masses filling ``shape``, each with the part it lies in and the volume it stands for.

    A single shape is :func:`sample_points`. Each part of a union is a density group of PMD (one
    unknown density) and is sampled on its own grid, centred in the part, so that its points at
    equal masses have the part's own centroid and nearly its inertia, however thin the part is
    (a 1 mm ruler blade, a 3 mm shaft): labelling one grid laid over the whole union would leave
    thin parts without points and shift every part's centroid by up to half a cell. Each part
    gets its share of ``max_points`` by volume, at least eight points.
    """
    parts = shape.parts if isinstance(shape, Union) else (shape,)
    volumes = np.array([p.volume for p in parts])
    if not np.all(volumes > 0.0):
        raise ShapeError("the shape encloses no volume")
    share = volumes / volumes.sum()
    chunks, labels, cells, own = [], [], [], []
    for k, part in enumerate(parts):
        if len(parts) == 1:
            most, least = max_points, min_points
        else:
            most = max(int(max_points * share[k]), _MIN_PART_POINTS)
            least = min(max(int(np.ceil(min_points * share[k])), _MIN_PART_POINTS), most)
        pts = sample_points(part, density, most, least)
        chunks.append(pts)
        labels.append(np.full(len(pts), k))
        cells.append(np.full(len(pts), part.volume / len(pts)))
        own.append(np.tile(own_inertia(part, pts) if len(parts) > 1 else np.zeros(6), (len(pts), 1)))
    return SampledShape(np.concatenate(chunks), np.concatenate(labels), np.concatenate(cells), np.concatenate(own))


def own_inertia(shape: Shape, points_in_sensor: np.ndarray) -> np.ndarray:
    """Return the (6,) ``vech`` of the inertia per kg (m²) each point must carry about itself.

    ``points_in_sensor`` (n, 3), m, are equal masses filling ``shape``; with this inertia each,
    they have the solid's inertia about their centroid. It is the solid's inertia per kg about
    its centre, less the points' own, made physically valid (a
    rigid body's: its second moment ``tr(D)/2 I - D`` positive semi-definite, clipped where the
    points already exceed the solid along some axis).
    """
    pts = np.asarray(points_in_sensor, dtype=float)
    d = pts - pts.mean(axis=0)
    second = d.T @ d / len(pts)
    bare = np.trace(second) * np.eye(3) - second
    D = shape.solid_inertia(1.0).inertia_com - bare
    sigma = 0.5 * np.trace(D) * np.eye(3) - D
    lam, V = np.linalg.eigh(0.5 * (sigma + sigma.T))
    sigma = (V * np.clip(lam, 0.0, None)) @ V.T
    D = np.trace(sigma) * np.eye(3) - sigma
    return vech(D)


def downsample_evenly(points: np.ndarray, max_points: int) -> np.ndarray:
    """Thin a point cloud to at most ``max_points`` spread evenly over its extent.

    Voxel-grid thinning: the voxel size is found by bisection so that the
    number of occupied voxels is at most ``max_points``; each voxel keeps the
    input point nearest to the mean of its points. Every output point is an
    input point, so points inside a shape stay inside.
    """
    points = np.asarray(points, dtype=float)
    if len(points) <= max_points:
        return points
    if max_points < 1:
        raise ShapeError("max_points must be at least 1")
    lo = points.min(axis=0)
    extent = float(np.max(points.max(axis=0) - lo))
    if extent == 0.0:
        return points[:1]

    def voxelise(size: float) -> tuple[np.ndarray, np.ndarray]:
        keys = np.floor((points - lo) / size).astype(np.int64)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        return inverse.reshape(-1), inverse.max() + 1

    small, large = 0.0, extent * 1.0001
    best = None
    for _ in range(40):
        size = 0.5 * (small + large) if small > 0 else large / 2.0
        inverse, count = voxelise(size)
        if count <= max_points:
            large, best = size, (inverse, count)
        else:
            small = size
        if small > 0 and large - small < 1e-6 * extent:
            break
    if best is None:
        best = voxelise(large)
    inverse, count = best
    sums = np.zeros((count, 3))
    np.add.at(sums, inverse, points)
    centroids = sums / np.bincount(inverse, minlength=count)[:, None]
    dist = np.linalg.norm(points - centroids[inverse], axis=1)
    order = np.lexsort((dist, inverse))
    first = np.ones(len(order), dtype=bool)
    first[1:] = inverse[order][1:] != inverse[order][:-1]
    return points[np.sort(order[first])]
