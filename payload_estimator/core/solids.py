"""Solids placed in the sensor frame: boxes, cylinders, spheres, meshes and their unions.

Every shape is placed in the sensor frame ``S`` by a pose (``xyz`` in m, ``rpy`` in rad, URDF
convention: fixed-axis roll, pitch, yaw). A shape says which points lie strictly inside it, its
bounding box and volume, and (:meth:`Shape.solid_inertia`) the inertial parameters of the shape
as a uniform solid, which build ground truths and priors. The point masses that fill a shape are
in :mod:`~payload_estimator.core.point_masses`, its command-line text in
:mod:`~payload_estimator.core.shapes`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import ShapeError

if TYPE_CHECKING:
    import trimesh

__all__ = ["Shape", "Box", "Cylinder", "Sphere", "Mesh", "Union", "MESH_FORMATS", "rpy_to_matrix", "float_triple"]

MESH_FORMATS = "STL (binary or ASCII), OBJ, PLY, OFF, GLB or another format trimesh reads, closed"
"""What a mesh file of a shape may be (for messages)."""


def float_triple(values: Sequence[float]) -> tuple[float, float, float]:
    """``(x, y, z)`` of a sequence of exactly three numbers (a pose's ``xyz`` or ``rpy``)."""
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
        """(3, 3) the shape's axes in S."""
        return rpy_to_matrix(self.rpy)

    @property
    def p_sensor_shape(self) -> np.ndarray:
        """(3,) the shape's origin in S, m."""
        return np.asarray(self.xyz, dtype=float)

    def to_local(self, points_in_sensor: np.ndarray) -> np.ndarray:
        """(N, 3) points in S -> in the shape's frame."""
        return (np.asarray(points_in_sensor, dtype=float) - self.p_sensor_shape) @ self.R_sensor_shape

    def contains(self, points_in_sensor: np.ndarray) -> np.ndarray:
        """(N,) True for points strictly inside the shape."""
        return self._contains_local(self.to_local(points_in_sensor))

    def corners(self) -> np.ndarray:
        """(8, 3) the corners of a box about the shape, in its own axes, placed in S, m (the shape lies within)."""
        return self._local_corners() @ self.R_sensor_shape.T + self.p_sensor_shape

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounding box in S: (lower corner, upper corner), m."""
        corners = self.corners()
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
        """m³."""
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
        """m³."""
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
        """m³."""
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
        flat = ShapeError(f"mesh {self.source or ''} encloses no volume (flat: not a closed solid, and its convex "
                          "hull has no volume either)".replace("  ", " "))
        try:
            if not mesh.is_watertight:
                mesh = mesh.convex_hull
                object.__setattr__(self, "mesh", mesh)
            volume = float(mesh.volume)
        except Exception:  # Qhull and trimesh's repairs fail many ways on a flat or degenerate mesh
            raise flat from None
        if not (volume > 0 and np.isfinite(volume)):
            raise flat

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        xyz: tuple[float, float, float] = (0.0, 0.0, 0.0),
        rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
        scale: float = 1.0,
    ) -> Mesh:
        """Load a mesh file; ``scale`` converts its units to m (0.001 for mm).

        ``FILE#K`` (no such file, but ``FILE`` is one) is the ``K``-th of its bodies (:meth:`parts_from_file`)."""
        import trimesh

        name, hash_, index = str(path).rpartition("#")
        if hash_ and not Path(path).exists() and Path(name).is_file():
            if not index.isdigit():
                raise ShapeError(f"{path}: a body of {name} is FILE#K with K a whole number, got {index!r}")
            parts = cls.parts_from_file(name, xyz, rpy, scale)
            if int(index) >= len(parts):
                raise ShapeError(f"{path}: {name} has {len(parts)} bod{'y' if len(parts) == 1 else 'ies'} "
                                 f"(#0 to #{len(parts) - 1})")
            return parts[int(index)]
        path = Path(path)
        expected = f"expected a triangle mesh file: {MESH_FORMATS}"
        if path.is_dir():
            raise ShapeError(f"{path}: a directory, not a mesh file ({expected})")
        if not path.is_file():
            raise ShapeError(f"mesh file not found: {path}")
        if path.stat().st_size == 0:
            raise ShapeError(f"{path}: empty file ({expected})")
        kind = path.suffix.lower().lstrip(".")
        if kind not in trimesh.available_formats():
            raise ShapeError(f"{path}: not a mesh format trimesh reads ({path.suffix or 'no suffix'}; {expected})")
        try:
            mesh = trimesh.load(str(path), force="mesh")
        except Exception:  # trimesh raises many kinds (and, on bytes it takes for text, a missing text codec)
            raise ShapeError(f"{path}: not a readable {kind.upper()} file ({expected})") from None
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            raise ShapeError(f"{path}: not a readable {kind.upper()} file: no triangles in it ({expected})")
        if scale != 1.0:
            mesh = mesh.copy()
            mesh.apply_scale(scale)
        return cls(xyz=float_triple(xyz), rpy=float_triple(rpy), mesh=mesh, source=str(path))

    @classmethod
    def parts_from_file(
        cls,
        path: str | Path,
        xyz: tuple[float, float, float] = (0.0, 0.0, 0.0),
        rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
        scale: float = 1.0,
    ) -> list[Mesh]:
        """Load a mesh file made of several bodies: each connected component one mesh, the largest first.

        A part's :attr:`source` is ``FILE#K`` (``K`` its place in that order), which :meth:`from_file`
        reads back as that part alone."""
        whole = cls.from_file(path, xyz, rpy, scale)
        bodies = [b for b in whole._solid.split(only_watertight=False) if len(b.faces)]
        if len(bodies) <= 1:
            return [replace(whole, source=f"{whole.source}#0")]
        parts = [cls(xyz=whole.xyz, rpy=whole.rpy, mesh=b, source="") for b in bodies]
        parts.sort(key=lambda m: -m.volume)
        return [replace(m, source=f"{whole.source}#{k}") for k, m in enumerate(parts)]

    @property
    def _solid(self) -> trimesh.Trimesh:
        """The mesh (``__post_init__`` has checked that there is one)."""
        if self.mesh is None:
            raise ShapeError("Mesh needs a trimesh.Trimesh (use Mesh.from_file)")
        return self.mesh

    @property
    def volume(self) -> float:
        """m³."""
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
        """m³."""
        return float(sum(p.volume for p in self.parts))

    def contains(self, points_in_sensor: np.ndarray) -> np.ndarray:
        """(N,) True for points strictly inside any part."""
        pts = np.asarray(points_in_sensor, dtype=float)
        inside = np.zeros(len(pts), dtype=bool)
        for part in self.parts:
            inside |= part.contains(pts)
        return inside

    def corners(self) -> np.ndarray:
        """(8 k, 3) the corners of each of the k parts' boxes, in S, m."""
        return np.concatenate([part.corners() for part in self.parts])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounding box of every part in S: (lower corner, upper corner), m."""
        los, his = zip(*(p.bounds() for p in self.parts))
        return np.min(los, axis=0), np.max(his, axis=0)

    def solid_inertia(self, mass: float) -> InertialParameters:
        """Inertial parameters in S of the parts filled uniformly with ``mass`` kg in all (mass by volume)."""
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
