"""A camera's one-sided point cloud of the payload made into point masses that fill it.

A depth camera sees the side of the held object that faces it. PMD needs point masses that fill the
whole object (:mod:`~payload_estimator.core.point_masses`), so :func:`complete_cloud` guesses the
hidden side, one of :data:`COMPLETIONS`:

* ``none``: the visible points themselves, thinned evenly to ``max_points``: a shell of the near side.
* ``hull``: each part's convex hull of its visible points, filled on a grid: nothing behind what is seen.
* ``extrude``: each visible point's view ray, from the point on to the far side, filled on a grid: a
  ray's far end is the mirror of its near end about the plane through the gripper's approach axis
  facing the camera (a parallel gripper centres what it holds, so its far side is as far behind that
  plane as its near side is in front), never behind the gripper (its xy plane), and no further than
  ``max_depth`` (default: the cloud's largest extent across the view; alone when the camera looks
  along the approach axis).
* ``mirror``: the points and their mirror images about the plane through the cloud's principal axis
  facing the camera, placed at the cloud's far edge (where a round object's outline is), each part's
  convex hull of both filled on a grid.
* ``mirror_gripper``: the points mirrored about both of the gripper's planes (its xz and yz planes,
  through its approach axis z), each part's convex hull of the four filled on a grid: the object taken
  as symmetric about the gripper's planes, as a parallel gripper centres what it holds.

A completion that guesses too much volume does less harm than one that guesses too little: PMD's point
masses are never negative, so it can leave a point empty, but cannot put mass where it has no point.

The cloud and the viewpoint (the camera's origin) are in the sensor frame ``S`` (a node reads the
camera's pose from tf), m; so is the gripper's frame, ``T_sensor_gripper`` (default: the sensor's own:
hand tools are held along its z axis, :mod:`~payload_estimator.sim.workshop`). Points keep their part
labels (a segmentation's: one unknown density each in PMD); each part is filled on a grid of its own
as :func:`~payload_estimator.core.point_masses.sample_parts` fills a shape's parts. A part too small
or too flat to fill (fewer than four points, a face seen straight on) is a box about its points, one
point spacing thick. The cloud's ranges are smoothed first (:data:`SMOOTHING_NEIGHBOURS`) but for
``none``. ``benchmarks/partial_views.py`` compares them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import product
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import ConvexHull, cKDTree
from scipy.spatial.transform import Rotation

from payload_estimator.core.point_clouds import voxel_downsample
from payload_estimator.core.point_masses import (
    DEFAULT_DENSITY,
    DEFAULT_MAX_POINTS,
    SampledShape,
    downsample_evenly,
    sample_parts,
)
from payload_estimator.core.solids import Box, Mesh, Shape, Union
from payload_estimator.errors import ShapeError

__all__ = ["COMPLETIONS", "DEFAULT_COMPLETION", "SMOOTHING_NEIGHBOURS", "WORKING_POINTS", "complete_cloud"]

COMPLETIONS = ("none", "hull", "extrude", "mirror", "mirror_gripper")
"""The ways :func:`complete_cloud` fills the hidden side (module docstring)."""
DEFAULT_COMPLETION = "mirror_gripper"
"""The setting ``cloud_completion``'s default (``benchmarks/partial_views.py``; docs: the estimators' page)."""
_FLAT = 1e-6
"""A cloud is flat (coplanar, collinear) when its smallest spread is below this share of its largest."""


@dataclass(frozen=True)
class _Cloud:
    """A checked cloud: points and labels (0 to k - 1), the viewpoint, and each point's view ray."""

    points: np.ndarray
    part: np.ndarray
    viewpoint: np.ndarray
    rays: np.ndarray = field(init=False)
    ranges: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        offset = self.points - self.viewpoint
        ranges = np.linalg.norm(offset, axis=1)
        object.__setattr__(self, "ranges", ranges)
        object.__setattr__(self, "rays", offset / ranges[:, None])

    @cached_property
    def spacing(self) -> float:
        """The median angle between neighbouring rays, rad (a pixel's, for a full-resolution cloud)."""
        distance, _ = cKDTree(self.rays).query(self.rays, k=2)
        gaps = distance[:, 1]
        positive = gaps[gaps > 0.0]
        return float(np.median(positive)) if len(positive) else 1e-3

    @property
    def view(self) -> np.ndarray:
        """(3,) the mean view direction, from the viewpoint into the cloud."""
        mean = self.rays.mean(axis=0)
        return mean / np.linalg.norm(mean)

    def lateral_extent(self) -> float:
        """The cloud's largest extent across the mean view direction, m."""
        d = self.points - self.points.mean(axis=0)
        d = d - np.outer(d @ self.view, self.view)
        return float(np.max(np.ptp(d @ np.linalg.svd(d, full_matrices=False)[2].T, axis=0)))


SMOOTHING_NEIGHBOURS = 9
"""The cloud's ranges are smoothed before a completion: each point's is the median of its part's this many
nearest view rays' (its own among them: a 3 x 3 median filter of a depth image). A depth camera's noise
(millimetres) is a large share of a handle's radius, and a hull takes the outliers (grazing pixels') for
the outline; a median keeps edges within a pixel or two (``benchmarks/partial_views.py``: a median did
better than a plane fitted to the same neighbours, and than none)."""


def _smoothed(cloud: _Cloud) -> _Cloud:
    """The cloud with each point moved along its view ray to its neighbours' median range."""
    ranges = cloud.ranges.copy()
    for k in range(int(cloud.part.max()) + 1):
        mine = np.flatnonzero(cloud.part == k)
        count = min(SMOOTHING_NEIGHBOURS, len(mine))
        if count < 3:
            continue
        _, near = cKDTree(cloud.rays[mine]).query(cloud.rays[mine], k=count)
        ranges[mine] = np.median(cloud.ranges[mine][near], axis=1)
    return _Cloud(cloud.viewpoint + ranges[:, None] * cloud.rays, cloud.part, cloud.viewpoint)


def _checked(points_in_sensor: ArrayLike, viewpoint_in_sensor: ArrayLike, part: ArrayLike | None) -> _Cloud:
    """The cloud, or a ShapeError saying what is wrong with it."""
    try:
        points = np.asarray(points_in_sensor, dtype=float)
        viewpoint = np.asarray(viewpoint_in_sensor, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ShapeError("the cloud and the viewpoint must be numbers (points (n, 3), viewpoint (3,), m)") from None
    if points.size == 0:
        raise ShapeError("the camera's cloud is empty: no point of the payload was seen")
    if points.ndim != 2 or points.shape[1] != 3:
        raise ShapeError(f"the cloud must be (n, 3) points, m, sensor frame; got an array of shape {points.shape}")
    if viewpoint.shape != (3,) or not np.all(np.isfinite(viewpoint)):
        raise ShapeError(f"the viewpoint must be 3 finite numbers (the camera's origin in the sensor frame, m), "
                         f"got {viewpoint}")
    finite = np.all(np.isfinite(points), axis=1)
    if not finite.all():
        raise ShapeError(f"{int((~finite).sum())} point(s) of the cloud not finite (a depth camera's missing "
                         "pixels are NaN: drop them first)")
    if len(points) < 4:
        raise ShapeError(f"{len(points)} point(s) seen; a cloud that can hold an inertia needs at least 4")
    labels = np.zeros(len(points), dtype=int)
    if part is not None:
        raw = np.asarray(part).reshape(-1)
        if raw.shape != (len(points),) or not np.issubdtype(raw.dtype, np.number):
            raise ShapeError(f"part labels: one integer per point expected ({len(points)}), got {raw.shape}")
        if not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
            raise ShapeError("part labels must be integers")
        labels = np.unique(raw, return_inverse=True)[1].reshape(-1)
    if np.min(np.linalg.norm(points - viewpoint, axis=1)) < 1e-6:
        raise ShapeError(f"a point of the cloud lies at the viewpoint {viewpoint}: the viewpoint must be the "
                         "camera's origin in the same frame as the cloud (the sensor frame)")
    cloud = _Cloud(points, labels, viewpoint)
    _check_viewpoint_outside(cloud)
    return cloud


def _spreads(points: np.ndarray) -> np.ndarray:
    """The singular values of the centred points, largest first (their spread along the principal axes)."""
    return np.linalg.svd(points - points.mean(axis=0), compute_uv=False)


def _check_viewpoint_outside(cloud: _Cloud) -> None:
    spread = _spreads(cloud.points)
    if spread[1] <= _FLAT * spread[0]:
        raise ShapeError("the cloud's points lie on a line: it cannot hold an inertia")
    if spread[2] <= _FLAT * spread[0]:
        normal = np.linalg.svd(cloud.points - cloud.points.mean(axis=0), full_matrices=False)[2][2]
        if abs(normal @ (cloud.viewpoint - cloud.points.mean(axis=0))) < _FLAT * spread[0]:
            raise ShapeError("the viewpoint lies in the plane of the cloud: a camera cannot see a face edge-on; "
                             "is the viewpoint in the cloud's frame?")
        return
    hull = ConvexHull(cloud.points)
    if np.max(hull.equations[:, :3] @ cloud.viewpoint + hull.equations[:, 3]) < 0.0:
        raise ShapeError(f"the viewpoint {np.round(cloud.viewpoint, 4)} lies inside the cloud: it must be the "
                         "camera's origin in the sensor frame (from tf), outside the payload")


def _is_flat(points: np.ndarray) -> bool:
    spread = _spreads(points)
    return bool(spread[2] <= _FLAT * spread[0])


@dataclass(frozen=True, kw_only=True)
class _Hull(Mesh):
    """A convex hull: trimesh's mesh for its volume and inertia, Qhull's planes ``n.x + d <= 0`` for its inside."""

    planes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)), repr=False, compare=False)

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        inside = np.empty(len(p), dtype=bool)
        for start in range(0, len(p), 20000):
            chunk = p[start:start + 20000]
            inside[start:start + 20000] = np.all((self.planes[:, :3] @ chunk.T).T + self.planes[:, 3] < 0.0, axis=1)
        return inside


def _hull(points: np.ndarray) -> Shape | None:
    """The convex hull of ``points`` as a shape, or None when they span no volume."""
    import trimesh

    if len(points) < 4 or _is_flat(points):
        return None
    try:
        hull = ConvexHull(points)
    except (RuntimeError, ValueError):  # Qhull's error is a RuntimeError
        return None
    faces = hull.simplices.copy()
    corners = points[faces]
    outward = np.einsum("ij,ij->i", np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]),
                        hull.equations[:, :3]) >= 0.0
    faces[~outward] = faces[~outward][:, ::-1]
    used, inverse = np.unique(faces, return_inverse=True)
    mesh = trimesh.Trimesh(points[used], inverse.reshape(-1, 3), process=False)
    try:
        return _Hull(mesh=mesh, source="convex hull of a cloud's points", planes=hull.equations)
    except ShapeError:
        return None


def _slab(points: np.ndarray, thickness: float) -> Box:
    """A box about ``points`` along their principal axes, at least ``thickness`` thick each way."""
    centre = points.mean(axis=0)
    axes = np.linalg.svd(points - centre, full_matrices=False)[2] if len(points) > 1 else np.eye(3)
    if len(axes) < 3 or np.linalg.det(axes) < 0.0:
        axes = _completed_basis(axes)
    local = (points - centre) @ axes.T
    lo, hi = local.min(axis=0), local.max(axis=0)
    size = np.maximum(hi - lo, thickness)

    with warnings.catch_warnings():  # a gimbal lock's angles are as good (the third set to zero, the first takes it)
        warnings.simplefilter("ignore", UserWarning)
        rpy = Rotation.from_matrix(axes.T).as_euler("xyz")
    return Box(size=tuple(size), xyz=tuple(centre + (0.5 * (lo + hi)) @ axes), rpy=tuple(rpy))


def _completed_basis(rows: np.ndarray) -> np.ndarray:
    """A right-handed orthonormal basis (rows) whose first rows span those of ``rows``."""
    q = np.linalg.qr(np.vstack([rows, np.eye(3)]).T)[0][:, :3].T
    return q if np.linalg.det(q) > 0 else q * np.array([[1.0], [1.0], [-1.0]])


def _filled(shapes: Sequence[Shape], density: float, max_points: int) -> SampledShape:
    """Point masses filling ``shapes`` (one part each), as a shape's parts are filled.

    Each part's points are moved to have its solid's centroid: a grid over a completed part, ragged
    where a cloud is, is not centred in it as in a box or a cylinder (their spread about it is the
    solid's already, :func:`sample_parts`)."""
    shape = shapes[0] if len(shapes) == 1 else Union(parts=tuple(shapes))
    sampled = sample_parts(shape, density=density, max_points=max_points)
    points = sampled.points_in_sensor.copy()
    for k, part in enumerate(shapes):
        mine = sampled.part == k
        points[mine] += part.solid_inertia(1.0).com - points[mine].mean(axis=0)
    return sampled._replace(points_in_sensor=points)


def _part_shapes(cloud: _Cloud, points: np.ndarray, labels: np.ndarray) -> list[Shape]:
    """Each part's convex hull of ``points`` (the cloud's, or more), or a slab where that spans no volume."""
    shapes: list[Shape] = []
    for k in range(int(labels.max()) + 1):
        mine = points[labels == k]
        hull = _hull(mine)
        thick = cloud.spacing * float(np.median(cloud.ranges))
        shapes.append(hull if hull is not None else _slab(mine, thick))
    return shapes


class _Gripper(NamedTuple):
    """The gripper's frame in S: its origin, the normals of its two planes (its x and y axes), its approach axis."""

    origin: np.ndarray
    normals: tuple[np.ndarray, np.ndarray]
    approach: np.ndarray

    def facing(self, viewpoint: np.ndarray) -> np.ndarray | None:
        """The unit normal of the plane through the approach axis facing ``viewpoint``; None on the axis."""
        towards = viewpoint - self.origin
        across = towards - (towards @ self.approach) * self.approach
        if np.linalg.norm(across) <= 1e-3 * np.linalg.norm(towards):
            return None
        return across / np.linalg.norm(across)


def _gripper(T_sensor_gripper: ArrayLike) -> _Gripper:
    T = np.asarray(T_sensor_gripper, dtype=float)
    R = T[:3, :3] if T.shape == (4, 4) else np.zeros((3, 3))
    if T.shape != (4, 4) or not np.all(np.isfinite(T)) or not np.allclose(R.T @ R, np.eye(3), atol=1e-6):
        raise ShapeError(f"T_sensor_gripper must be a finite (4, 4) pose with a rotation, got an array of shape "
                         f"{T.shape}")
    return _Gripper(T[:3, 3].copy(), (R[:, 0].copy(), R[:, 1].copy()), R[:, 2].copy())


def _mirrored(points: np.ndarray, normal: np.ndarray, on_plane: np.ndarray) -> np.ndarray:
    return points - 2.0 * np.outer((points - on_plane) @ normal, normal)


def _principal_plane(cloud: _Cloud) -> tuple[np.ndarray, np.ndarray]:
    """The plane through the cloud's principal axis facing the camera, at the cloud's far edge: normal, a point."""
    centre = cloud.points.mean(axis=0)
    axis = np.linalg.svd(cloud.points - centre, full_matrices=False)[2][0]
    towards = cloud.viewpoint - centre
    across = towards - (towards @ axis) * axis
    if np.linalg.norm(across) <= 1e-3 * np.linalg.norm(towards):
        raise ShapeError("the camera looks along the cloud's principal axis: no plane through it faces the camera "
                         "(use extrude or hull)")
    normal = across / np.linalg.norm(across)
    far = np.percentile((cloud.points - centre) @ normal, 2.0)
    return normal, centre + far * normal


@dataclass(frozen=True, kw_only=True)
class _RayRegion(Shape):
    """The union of view rays' segments: ray ``i`` from ``near[i]`` to ``far[i]`` (m from the viewpoint).

    A point is inside when the ray through it is within ``footprint`` (rad) of a segment's ray and within
    that segment's range; each ray stands for a pixel's solid angle, ``footprint²``."""

    viewpoint: np.ndarray = field(repr=False, compare=False)
    rays: np.ndarray = field(repr=False, compare=False)
    near: np.ndarray = field(repr=False, compare=False)
    far: np.ndarray = field(repr=False, compare=False)
    footprint: float = 1e-3

    @cached_property
    def _tree(self) -> cKDTree:
        return cKDTree(self.rays)

    @cached_property
    def _moments(self) -> tuple[float, np.ndarray, np.ndarray]:
        """Volume (m³), centroid (3,) and inertia per kg about it (3, 3), by eight Gauss-Legendre nodes a ray."""
        nodes, weights = np.polynomial.legendre.leggauss(8)
        half = 0.5 * (self.far - self.near)
        r = self.near[:, None] + half[:, None] * (nodes[None, :] + 1.0)
        dv = self.footprint**2 * r**2 * half[:, None] * weights[None, :]  # solid angle x r² dr
        x = self.viewpoint + r[..., None] * self.rays[:, None, :]
        volume = float(dv.sum())
        centroid = np.einsum("ij,ijk->k", dv, x) / volume
        d = x - centroid
        second = np.einsum("ij,ijk,ijl->kl", dv, d, d) / volume
        return volume, centroid, np.trace(second) * np.eye(3) - second

    @property
    def volume(self) -> float:
        """m³."""
        return self._moments[0]

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        offset = p - self.viewpoint
        r = np.linalg.norm(offset, axis=1)
        gap, nearest = self._tree.query(offset / np.maximum(r, 1e-300)[:, None])
        return (gap <= self.footprint) & (r >= self.near[nearest]) & (r <= self.far[nearest])

    def _local_corners(self) -> np.ndarray:
        ends = np.concatenate([self.viewpoint + self.near[:, None] * self.rays,
                               self.viewpoint + self.far[:, None] * self.rays])
        pad = self.footprint * float(self.far.max())
        lo, hi = ends.min(axis=0) - pad, ends.max(axis=0) + pad
        return np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]] for i, j, k in product((0, 1), repeat=3)])

    def _local_centroid(self) -> np.ndarray:
        return self._moments[1]

    def _local_inertia_com(self, mass: float) -> np.ndarray:
        return mass * self._moments[2]


def _extruded(cloud: _Cloud, gripper: _Gripper, max_depth: float | None) -> list[Shape]:
    """Each part's view rays from its points to the far side (module docstring), as regions."""
    depth = cloud.lateral_extent() if max_depth is None else float(max_depth)
    if not depth > 0.0:
        raise ShapeError(f"max_depth must be positive, got {max_depth}")
    length = np.full(len(cloud.points), depth)
    normal = gripper.facing(cloud.viewpoint)
    with np.errstate(divide="ignore", invalid="ignore"):
        if normal is not None:
            height = (cloud.points - gripper.origin) @ normal  # in front of the gripper's plane
            slope = -(cloud.rays @ normal)  # how fast a ray goes behind it
            length = np.minimum(np.where(slope > 1e-6, 2.0 * height / slope, depth), depth)
        ahead = (cloud.points - gripper.origin) @ gripper.approach  # nothing held lies behind the gripper
        along = cloud.rays @ gripper.approach
        length = np.where((ahead > 0.0) & (along < -1e-6), np.minimum(length, ahead / -along), length)
    length = np.maximum(length, cloud.spacing * cloud.ranges)  # at least as deep as a pixel is wide
    near = cloud.ranges
    return [_RayRegion(viewpoint=cloud.viewpoint, rays=cloud.rays[cloud.part == k], near=near[cloud.part == k],
                       far=(near + length)[cloud.part == k], footprint=cloud.spacing)
            for k in range(int(cloud.part.max()) + 1)]


def _visible(cloud: _Cloud, density: float, max_points: int) -> SampledShape:
    """The visible points as point masses, each part thinned evenly to its share of ``max_points`` by count."""
    if _is_flat(cloud.points):
        raise ShapeError("the visible points are coplanar (a face seen straight on): as point masses they hold no "
                         "inertia across it; use extrude or mirror_gripper, which give the cloud depth")
    counts = np.bincount(cloud.part)
    chunks, labels = [], []
    for k, count in enumerate(counts):
        most = max(int(max_points * count / len(cloud.points)), min(8, int(count)))
        mine = cloud.points[cloud.part == k]
        mine = mine[::max(1, len(mine) // (4 * most))]  # a camera's points come row by row: every k-th is even
        kept = downsample_evenly(mine, most)
        chunks.append(kept)
        labels.append(np.full(len(kept), k))
    points = np.concatenate(chunks)
    return SampledShape(points, np.concatenate(labels), np.full(len(points), 1.0 / density), np.zeros((len(points), 6)))


WORKING_POINTS = 2000
"""What a camera's cloud is merged down to before the node and ``replay`` complete it (``complete_cloud``'s
``working_points``): voxel by voxel, part by part (:func:`~payload_estimator.core.point_clouds.voxel_downsample`).
A camera's 20,000-200,000 points hold no more of the object's outline than this, and the smoothing and the
hulls take time in proportion (a 58,000-point view of a 25 cm box: 0.55 s whole, about 30 ms merged first).
``benchmarks/partial_views.py`` completes so too: its figures moved by less than 0.2 % of inertia with it. A
voxel's mean lies a little inside an edge or a corner: on a dense cloud of a 10 cm cube the hull shrinks by
about 4 %."""


def _working_cloud(points_in_sensor: ArrayLike, part: ArrayLike | None,
                   working_points: int) -> tuple[ArrayLike, ArrayLike | None]:
    """The cloud merged down to ``working_points`` points (as it is when smaller or malformed)."""
    points = np.asarray(points_in_sensor)
    if points.ndim != 2 or points.shape[1:] != (3,) or len(points) <= working_points:
        return points_in_sensor, part
    points = points.astype(float)
    labels = np.zeros(len(points), dtype=int) if part is None else np.asarray(part)
    if labels.shape != (len(points),) or not np.all(np.isfinite(points)) or not np.all(labels == np.round(labels)):
        return points_in_sensor, part  # _checked says what is wrong
    merged = voxel_downsample(SampledShape(points, labels.astype(int), np.ones(len(points)),
                                           np.zeros((len(points), 6))), working_points)
    return merged.points_in_sensor, (None if part is None else merged.part)


def complete_cloud(
    points_in_sensor: ArrayLike,
    viewpoint_in_sensor: ArrayLike,
    completion: str = DEFAULT_COMPLETION,
    part: ArrayLike | None = None,
    *,
    T_sensor_gripper: ArrayLike | None = None,
    max_depth: float | None = None,
    density: float = DEFAULT_DENSITY,
    max_points: int = DEFAULT_MAX_POINTS,
    working_points: int | None = None,
) -> SampledShape:
    """Point masses filling the payload a camera saw one side of (module docstring: the completions).

    Args:
        points_in_sensor: (n, 3) the visible points, sensor frame, m.
        viewpoint_in_sensor: (3,) the camera's origin, sensor frame, m.
        completion: one of :data:`COMPLETIONS`.
        part: (n,) integer part label of each point (any values; points of one label share one density).
        T_sensor_gripper: (4, 4) the gripper's frame in the sensor frame: its z the approach axis, its xz
            and yz planes those a parallel gripper centres what it holds on (None: the sensor's frame).
        max_depth: ``extrude``: the longest a ray is extruded, m (default: the cloud's largest extent
            across the view).
        density: grid points per m³ (0.04 points/cm³).
        max_points: the most point masses.
        working_points: a cloud of more points is merged down to this many first (:data:`WORKING_POINTS`);
            None: completed as it is.

    Raises:
        ShapeError: one line saying what is wrong: an empty cloud, fewer than 4 points, non-finite
            values, points on a line, a coplanar cloud where the completion cannot give it depth, a
            viewpoint inside the cloud or in its plane, an unknown completion.
    """
    if completion not in COMPLETIONS:
        raise ShapeError(f"unknown cloud completion {completion!r}; choose one of {', '.join(COMPLETIONS)}")
    if working_points is not None and completion != "none":
        points_in_sensor, part = _working_cloud(points_in_sensor, part, working_points)
    cloud = _checked(points_in_sensor, viewpoint_in_sensor, part)
    gripper = _gripper(np.eye(4) if T_sensor_gripper is None else T_sensor_gripper)
    if completion == "none":
        return _visible(cloud, density, max_points)
    if completion == "hull" and _is_flat(cloud.points):
        raise ShapeError("the visible points are coplanar (a face seen straight on): their hull holds no volume; "
                         "use extrude or mirror_gripper, which give the cloud depth")
    cloud = _smoothed(cloud)
    if completion == "extrude":
        return _filled(_extruded(cloud, gripper, max_depth), density, max_points)
    points, labels = cloud.points, cloud.part
    if completion == "mirror":
        normal, on_plane = _principal_plane(cloud)
        points, labels = np.concatenate([points, _mirrored(points, normal, on_plane)]), np.tile(labels, 2)
    elif completion == "mirror_gripper":
        for normal in gripper.normals:
            points, labels = np.concatenate([points, _mirrored(points, normal, gripper.origin)]), np.tile(labels, 2)
    return _filled(_part_shapes(cloud, points, labels), density, max_points)
