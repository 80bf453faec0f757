"""Payload shapes, and the point masses that discretise them (paper 004, Section III-B).

Every shape is placed in the sensor frame ``S`` by a pose (``xyz`` in m, ``rpy``
in rad, URDF convention: fixed-axis roll, pitch, yaw). :func:`sample_points`
fills a shape with points on a regular grid at a given density (paper 004 uses
0.04 points/cm³), every point strictly inside the shape, and thins large
clouds evenly down to a cap. :meth:`Shape.solid_inertia` gives the inertial
parameters of the shape as a uniform solid, which builds ground truths and
priors.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from payload_estimator.core.inertia import InertialParameters, vech
from payload_estimator.errors import ShapeError

if TYPE_CHECKING:
    import trimesh

__all__ = [
    "Shape",
    "Box",
    "Cylinder",
    "Sphere",
    "Mesh",
    "Union",
    "sample_parts",
    "SampledShape",
    "own_inertia",
    "DEFAULT_DENSITY",
    "DEFAULT_MAX_POINTS",
    "sample_points",
    "downsample_evenly",
    "parse_shape_spec",
    "format_shape_spec",
    "load_points",
    "ShapeError",
]

DEFAULT_DENSITY = 0.04e6
"""Points per m³: 0.04 points/cm³, paper 004 Section V-C."""
DEFAULT_MAX_POINTS = 1000
MIN_POINTS = 10


def _triple(values: Sequence[float]) -> tuple[float, float, float]:
    x, y, z = values
    return (x, y, z)


def rpy_to_matrix(rpy: ArrayLike) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z) -> rotation matrix."""
    return Rotation.from_euler("xyz", np.asarray(rpy, dtype=float)).as_matrix()


@dataclass(frozen=True, kw_only=True)
class Shape(abc.ABC):
    """A solid placed in the sensor frame.

    Attributes:
        xyz: position of the shape's own frame in S, m.
        rpy: orientation of the shape's own frame in S (URDF roll, pitch, yaw), rad.
    """

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def R_sensor_shape(self) -> np.ndarray:
        return rpy_to_matrix(self.rpy)

    @property
    def p_sensor_shape(self) -> np.ndarray:
        return np.asarray(self.xyz, dtype=float)

    def to_local(self, points_in_sensor: np.ndarray) -> np.ndarray:
        """(N, 3) points in S -> in the shape's frame."""
        return (np.asarray(points_in_sensor, dtype=float) - self.p_sensor_shape) @ self.R_sensor_shape

    def contains(self, points_in_sensor: np.ndarray) -> np.ndarray:
        """(N,) True for points strictly inside the shape."""
        return self._contains_local(self.to_local(points_in_sensor))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounding box in S: (lower corner, upper corner), m."""
        corners = self._local_corners() @ self.R_sensor_shape.T + self.p_sensor_shape
        return corners.min(axis=0), corners.max(axis=0)

    def solid_inertia(self, mass: float) -> InertialParameters:
        """Inertial parameters in S of the shape filled uniformly with ``mass`` kg."""
        local = InertialParameters.from_mass_com_inertia(
            mass, self._local_centroid(), self._local_inertia_com(mass)
        )
        return local.transformed(self.R_sensor_shape, self.p_sensor_shape)

    @property
    @abc.abstractmethod
    def volume(self) -> float:
        """m³."""

    @abc.abstractmethod
    def _contains_local(self, p: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _local_corners(self) -> np.ndarray: ...

    def _local_centroid(self) -> np.ndarray:
        return np.zeros(3)

    @abc.abstractmethod
    def _local_inertia_com(self, mass: float) -> np.ndarray: ...


def _box_corners(half: np.ndarray) -> np.ndarray:
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    return signs * half


@dataclass(frozen=True, kw_only=True)
class Box(Shape):
    """A box of side lengths ``size`` (m), centred on its frame."""

    size: tuple[float, float, float] = (0.1, 0.1, 0.1)

    def __post_init__(self) -> None:
        if len(self.size) != 3 or min(self.size) <= 0 or not np.all(np.isfinite(self.size)):
            raise ShapeError(f"box sizes must be 3 positive lengths, got {self.size}")

    @property
    def volume(self) -> float:
        return float(np.prod(self.size))

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        return np.all(np.abs(p) < 0.5 * np.asarray(self.size), axis=1)

    def _local_corners(self) -> np.ndarray:
        return _box_corners(0.5 * np.asarray(self.size))

    def _local_inertia_com(self, mass: float) -> np.ndarray:
        x, y, z = self.size
        return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])


@dataclass(frozen=True, kw_only=True)
class Cylinder(Shape):
    """A solid cylinder of ``radius`` and ``height`` (m) along its frame's z axis, centred."""

    radius: float = 0.05
    height: float = 0.1

    def __post_init__(self) -> None:
        if not (self.radius > 0 and self.height > 0):
            raise ShapeError(f"cylinder needs positive radius and height, got {self.radius}, {self.height}")

    @property
    def volume(self) -> float:
        return float(np.pi * self.radius**2 * self.height)

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        return (p[:, 0] ** 2 + p[:, 1] ** 2 < self.radius**2) & (np.abs(p[:, 2]) < 0.5 * self.height)

    def _local_corners(self) -> np.ndarray:
        return _box_corners(np.array([self.radius, self.radius, 0.5 * self.height]))

    def _local_inertia_com(self, mass: float) -> np.ndarray:
        r, h = self.radius, self.height
        side = mass * (3 * r * r + h * h) / 12.0
        return np.diag([side, side, 0.5 * mass * r * r])


@dataclass(frozen=True, kw_only=True)
class Sphere(Shape):
    """A solid ball of ``radius`` (m) centred on its frame."""

    radius: float = 0.05

    def __post_init__(self) -> None:
        if not self.radius > 0:
            raise ShapeError(f"sphere needs a positive radius, got {self.radius}")

    @property
    def volume(self) -> float:
        return float(4.0 / 3.0 * np.pi * self.radius**3)

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", p, p) < self.radius**2

    def _local_corners(self) -> np.ndarray:
        return _box_corners(np.full(3, self.radius))

    def _local_inertia_com(self, mass: float) -> np.ndarray:
        return np.eye(3) * 0.4 * mass * self.radius**2


@dataclass(frozen=True, kw_only=True)
class Mesh(Shape):
    """A closed triangle mesh (STL, OBJ, PLY... through trimesh), vertices in m in its own frame.

    Build it with :meth:`from_file`. A mesh that is not watertight is replaced by
    its convex hull (the only inside it defines).
    """

    mesh: trimesh.Trimesh | None = field(default=None, repr=False, compare=False)
    source: str = ""

    def __post_init__(self) -> None:
        mesh = self.mesh
        if mesh is None or not hasattr(mesh, "contains"):
            raise ShapeError("Mesh needs a trimesh.Trimesh (use Mesh.from_file)")
        if not mesh.is_watertight:
            mesh = mesh.convex_hull
            object.__setattr__(self, "mesh", mesh)
        if not (mesh.volume > 0 and np.isfinite(mesh.volume)):
            raise ShapeError(f"mesh {self.source or ''} encloses no volume".replace("  ", " "))

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        xyz: tuple[float, float, float] = (0.0, 0.0, 0.0),
        rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
        scale: float = 1.0,
    ) -> Mesh:
        """Load a mesh file; ``scale`` converts its units to m (0.001 for mm)."""
        import trimesh

        path = Path(path)
        if not path.is_file():
            raise ShapeError(f"mesh file not found: {path}")
        try:
            mesh = trimesh.load(str(path), force="mesh")
        except Exception as exc:  # trimesh raises many kinds
            raise ShapeError(f"cannot read mesh {path}: {exc}") from exc
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            raise ShapeError(f"no triangles in mesh {path}")
        if scale != 1.0:
            mesh = mesh.copy()
            mesh.apply_scale(scale)
        return cls(xyz=_triple(xyz), rpy=_triple(rpy), mesh=mesh, source=str(path))

    @property
    def _solid(self) -> trimesh.Trimesh:
        """The mesh (``__post_init__`` has checked that there is one)."""
        if self.mesh is None:
            raise ShapeError("Mesh needs a trimesh.Trimesh (use Mesh.from_file)")
        return self.mesh

    @property
    def volume(self) -> float:
        return float(self._solid.volume)

    def _contains_local(self, p: np.ndarray) -> np.ndarray:
        if len(p) == 0:
            return np.zeros(0, dtype=bool)
        return np.asarray(self._solid.contains(p), dtype=bool)

    def _local_corners(self) -> np.ndarray:
        bounds = self._solid.bounds
        if bounds is None:  # no vertices; a mesh that encloses a volume has some
            raise ShapeError(f"mesh {self.source or ''} has no vertices".replace("  ", " "))
        lo, hi = bounds
        c = 0.5 * (lo + hi)
        return c + _box_corners(0.5 * (hi - lo))

    def _local_centroid(self) -> np.ndarray:
        return np.asarray(self._solid.center_mass, dtype=float)

    def _local_inertia_com(self, mass: float) -> np.ndarray:
        # trimesh reports the inertia about the centre of mass for unit density.
        mesh = self._solid
        return np.asarray(mesh.moment_inertia, dtype=float) * (mass / mesh.volume)


@dataclass(frozen=True, kw_only=True)
class Union(Shape):
    """Several shapes taken together (poses of the parts are in S; the union's own pose is ignored).

    Volume and solid inertia assume the parts do not overlap.
    """

    parts: tuple[Shape, ...] = ()

    def __post_init__(self) -> None:
        if not self.parts:
            raise ShapeError("a union needs at least one part")

    @property
    def volume(self) -> float:
        return float(sum(p.volume for p in self.parts))

    def contains(self, points_in_sensor: np.ndarray) -> np.ndarray:
        pts = np.asarray(points_in_sensor, dtype=float)
        inside = np.zeros(len(pts), dtype=bool)
        for part in self.parts:
            inside |= part.contains(pts)
        return inside

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        los, his = zip(*(p.bounds() for p in self.parts))
        return np.min(los, axis=0), np.max(his, axis=0)

    def solid_inertia(self, mass: float) -> InertialParameters:
        total = InertialParameters.zero()
        for part in self.parts:
            total = total + part.solid_inertia(mass * part.volume / self.volume)
        return total

    def _contains_local(self, p: np.ndarray) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError

    def _local_corners(self) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError

    def _local_inertia_com(self, mass: float) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError


# ------------------------------------------------------------------ point masses
def _grid_inside(shape: Shape, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Cell centres inside ``shape`` of a grid over its bounding box, and the cells' (3,) size."""
    lo, hi = shape.bounds()
    extent = hi - lo
    counts = np.maximum(np.ceil(extent / spacing).astype(int), 2)
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
        density: points per m³ (default 0.04 points/cm³).
    """
    return _sample_cells(shape, density, max_points, min_points)[0]


def _sample_cells(shape: Shape, density: float, max_points: int, min_points: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sample_points` and the (3,) size of the grid cell each point stands for (grown
    in proportion when the grid was thinned)."""
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
    """(6,) ``vech`` of the inertia per kg (m²) that each of ``points`` (equal masses, filling
    ``shape``) must carry about itself for them to have the solid's inertia about their centroid.

    The solid's inertia per kg about its centre, less the points' own, made physically valid (a
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
        raise ValueError("max_points must be at least 1")
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


def load_points(path: str | Path) -> np.ndarray:
    """Candidate point-mass positions from a ``.npy`` or CSV file (x y z per row, m, sensor frame).

    A CSV may have a header row and use commas or whitespace.
    """
    path = Path(path)
    if not path.is_file():
        raise ShapeError(f"points file not found: {path}")
    try:
        if path.suffix == ".npy":
            pts = np.load(path)
        else:
            text = path.read_text().strip().splitlines()
            rows = []
            for line in text:
                cells = line.replace(",", " ").split()
                if not cells:
                    continue
                try:
                    rows.append([float(c) for c in cells])
                except ValueError:
                    if rows:
                        raise
                    continue  # header
            pts = np.array(rows, dtype=float)
    except Exception as exc:
        raise ShapeError(f"cannot read points from {path}: {exc}") from exc
    if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) == 0:
        raise ShapeError(f"{path}: expected rows of x y z, got an array of shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ShapeError(f"{path}: non-finite point coordinates")
    if np.linalg.matrix_rank(pts - pts.mean(axis=0), tol=1e-9) < 3:
        raise ShapeError(f"{path}: the points are coplanar; the inertia needs a 3-D cloud")
    return pts


# ------------------------------------------------------------------ CLI specs
def _floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(v) for v in text.split(",") if v.strip() != ""]
    except ValueError as exc:
        raise ShapeError(f"{what}: expected comma-separated numbers, got {text!r}") from exc
    if not np.all(np.isfinite(vals)):
        raise ShapeError(f"{what}: non-finite number in {text!r}")
    return vals


def _parse_pose(text: str | None) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    if text is None:
        return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    vals = _floats(text, "pose")
    if len(vals) not in (3, 6):
        raise ShapeError(f"pose must be x,y,z or x,y,z,roll,pitch,yaw, got {text!r}")
    xyz = _triple(vals[:3])
    rpy = _triple(vals[3:]) if len(vals) == 6 else (0.0, 0.0, 0.0)
    return xyz, rpy


def parse_shape_spec(spec: str) -> Shape:
    """Parse a command-line shape specification.

    Forms (lengths in m, angles in rad, pose of the shape's centre in the sensor frame)::

        box:SX,SY,SZ[@X,Y,Z[,ROLL,PITCH,YAW]]
        cylinder:RADIUS,HEIGHT[@...]        (axis along the shape's z)
        sphere:RADIUS[@X,Y,Z]
        mesh:FILE[*SCALE][@...]             (SCALE converts file units to m)
        SPEC+SPEC+...                        (union of parts)
    """
    spec = spec.strip()
    if "+" in spec and not spec.startswith("mesh:"):
        return Union(parts=tuple(parse_shape_spec(s) for s in spec.split("+")))
    kind, sep, rest = spec.partition(":")
    if not sep:
        raise ShapeError(f"shape {spec!r}: expected KIND:PARAMS, e.g. box:0.1,0.04,0.2@0,0,0.1")
    body, at, pose_text = rest.rpartition("@") if "@" in rest else (rest, "", None)
    xyz, rpy = _parse_pose(pose_text if at else None)
    kind = kind.strip().lower()
    if kind == "box":
        vals = _floats(body, "box")
        if len(vals) != 3:
            raise ShapeError(f"box needs 3 sizes, got {body!r}")
        return Box(xyz=xyz, rpy=rpy, size=_triple(vals))
    if kind == "cylinder":
        vals = _floats(body, "cylinder")
        if len(vals) != 2:
            raise ShapeError(f"cylinder needs radius,height, got {body!r}")
        return Cylinder(xyz=xyz, rpy=rpy, radius=vals[0], height=vals[1])
    if kind == "sphere":
        vals = _floats(body, "sphere")
        if len(vals) != 1:
            raise ShapeError(f"sphere needs a radius, got {body!r}")
        return Sphere(xyz=xyz, rpy=rpy, radius=vals[0])
    if kind == "mesh":
        path, star, scale_text = body.rpartition("*") if "*" in body else (body, "", "")
        scale = _floats(scale_text, "mesh scale")[0] if star else 1.0
        return Mesh.from_file(path, xyz=xyz, rpy=rpy, scale=scale)
    raise ShapeError(f"unknown shape kind {kind!r}: use box, cylinder, sphere or mesh")


def _num(x: float) -> str:
    return f"{float(x):.6g}"


def _pose_text(shape: Shape, with_rpy: bool = True) -> str:
    vals = list(shape.xyz)
    if with_rpy and any(abs(v) > 0 for v in shape.rpy):
        vals += list(shape.rpy)
    return ",".join(_num(v) for v in vals)


def format_shape_spec(shape: Shape) -> str:
    """The specification text of ``shape``, the inverse of :func:`parse_shape_spec` (6 significant digits)."""
    if isinstance(shape, Union):
        return "+".join(format_shape_spec(part) for part in shape.parts)
    if isinstance(shape, Box):
        return f"box:{','.join(_num(v) for v in shape.size)}@{_pose_text(shape)}"
    if isinstance(shape, Cylinder):
        return f"cylinder:{_num(shape.radius)},{_num(shape.height)}@{_pose_text(shape)}"
    if isinstance(shape, Sphere):
        return f"sphere:{_num(shape.radius)}@{_pose_text(shape, with_rpy=False)}"
    if isinstance(shape, Mesh) and shape.source:
        return f"mesh:{shape.source}@{_pose_text(shape)}"
    raise ShapeError(f"no specification text for a {type(shape).__name__} without a source file")
