"""Payload shapes as a user writes them, and the one place to import shapes and point masses from.

:func:`parse_shape_spec` reads a command-line shape (``box:0.1,0.04,0.2@0,0,0.1``, unions joined
by ``+``), :func:`format_shape_spec` writes one. The solids themselves are in
:mod:`~payload_estimator.core.solids` and the point masses that discretise them in
:mod:`~payload_estimator.core.point_masses`; both are importable from here. Lengths in m, angles
in rad, poses in the sensor frame (URDF roll, pitch, yaw).
"""

from __future__ import annotations

import math
import re

import numpy as np
from scipy.spatial import ConvexHull

from payload_estimator.core.cloud_files import load_point_cloud, load_points
from payload_estimator.core.clouds import MAX_CLOUD_DISTANCE_M
from payload_estimator.core.point_masses import (
    DEFAULT_DENSITY,
    DEFAULT_MAX_POINTS,
    MIN_POINTS,
    SampledShape,
    downsample_evenly,
    own_inertia,
    sample_parts,
    sample_points,
)
from payload_estimator.core.solids import Box, Cylinder, Mesh, Shape, Sphere, Union, float_triple, rpy_to_matrix
from payload_estimator.errors import ShapeError

__all__ = [
    "Shape",
    "Box",
    "Cylinder",
    "Sphere",
    "Mesh",
    "Union",
    "rpy_to_matrix",
    "sample_parts",
    "SampledShape",
    "own_inertia",
    "DEFAULT_DENSITY",
    "DEFAULT_MAX_POINTS",
    "MIN_POINTS",
    "sample_points",
    "downsample_evenly",
    "parse_shape_spec",
    "format_shape_spec",
    "load_points",
    "load_point_cloud",
    "POINTS_PREFIX",
    "payload_points",
    "outermost_points",
    "ShapeError",
]


MAX_SHAPE_NUMBER = 100.0
"""The largest number a shape specification takes: no payload is 100 m in size or away."""


def _floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(v) for v in text.split(",") if v.strip() != ""]
    except ValueError as exc:
        raise ShapeError(f"{what}: expected comma-separated numbers, got {text!r}") from exc
    if not np.all(np.isfinite(vals)):
        raise ShapeError(f"{what}: non-finite number in {text!r}")
    if any(abs(v) > MAX_SHAPE_NUMBER for v in vals):
        raise ShapeError(f"{what}: a number beyond {MAX_SHAPE_NUMBER:g} in {text!r} (sizes and positions are in m, "
                         "angles in rad)")
    return vals


def _parse_pose(text: str | None) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    if text is None:
        return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    vals = _floats(text, "pose")
    if len(vals) not in (3, 6):
        raise ShapeError(f"pose must be x,y,z or x,y,z,roll,pitch,yaw, got {text!r}")
    xyz = float_triple(vals[:3])
    rpy = float_triple(vals[3:]) if len(vals) == 6 else (0.0, 0.0, 0.0)
    return xyz, rpy


def parse_shape_spec(spec: str) -> Shape:
    """Parse a command-line shape specification.

    Forms (lengths in m, angles in rad, pose of the shape's centre in the sensor frame)::

        box:SX,SY,SZ[@X,Y,Z[,ROLL,PITCH,YAW]]
        cylinder:RADIUS,HEIGHT[@...]        (axis along the shape's z)
        sphere:RADIUS[@X,Y,Z]
        mesh:FILE[*SCALE][@...]             (SCALE converts file units to m)
        mesh:FILE#K[*SCALE][@...]           (the K-th body of a file of several, the largest 0)
        meshparts:FILE[*SCALE][@...]        (every body of the file, each a part)
        SPEC+SPEC+...                        (union of parts; a part begins with its kind)
    """
    spec = spec.strip()
    pieces = _PART_START.split(spec)
    if len(pieces) > 1:
        return Union(parts=tuple(part for piece in pieces for part in _parts(parse_shape_spec(piece))))
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
        return Box(xyz=xyz, rpy=rpy, size=float_triple(vals))
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
    if kind in ("mesh", "meshparts"):
        path, star, scale_text = body.rpartition("*") if "*" in body else (body, "", "")
        scale = _floats(scale_text, "mesh scale")[0] if star else 1.0
        if kind == "mesh":
            return Mesh.from_file(path, xyz=xyz, rpy=rpy, scale=scale)
        bodies = Mesh.parts_from_file(path, xyz=xyz, rpy=rpy, scale=scale)
        return bodies[0] if len(bodies) == 1 else Union(parts=tuple(bodies))
    raise ShapeError(f"unknown shape kind {kind!r}: use box, cylinder, sphere, mesh or meshparts")


_PART_START = re.compile(r"\+(?=\s*(?:box|cylinder|sphere|mesh|meshparts):)", re.IGNORECASE)
"""Where a union's next part begins: a ``+`` before a kind (a file name may hold a ``+`` of its own)."""


def _parts(shape: Shape) -> tuple[Shape, ...]:
    """A union's parts, or the shape itself (a union of unions is one union)."""
    return shape.parts if isinstance(shape, Union) else (shape,)


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


POINTS_PREFIX = "points:"
"""A shape specification ``points:FILE`` is a point cloud (:func:`load_point_cloud`: a text table, ``.npy``,
``.ply`` or ``.pcd``), not a shape."""


def payload_points(spec: str, max_distance: float = MAX_CLOUD_DISTANCE_M) -> SampledShape | None:
    """The point cloud a shape specification ``points:FILE`` names, or None for a shape (:func:`parse_shape_spec`).

    ``max_distance``: the farthest a point may be from the sensor origin, m (the setting ``cloud_max_distance``).
    """
    spec = spec.strip()
    if not spec.startswith(POINTS_PREFIX):
        return None
    return load_point_cloud(spec[len(POINTS_PREFIX):].strip(), max_distance)


def outermost_points(spec: str) -> np.ndarray:
    """(K, 3) points in the sensor frame whose convex hull holds the payload a specification describes, m.

    A shape's (:func:`parse_shape_spec`): the corners of the box about each solid, in the solid's own axes
    (about each part of a union); a point cloud's (``points:FILE``): its points. Only the vertices of their
    convex hull are kept: a function convex in the position, such as the speed of a point fixed to the
    payload, is largest at one of them. A cloud's points may be any distance from the sensor origin here (a
    long tool's reach).

    Raises:
        ShapeError: the specification is not a shape's or a readable point cloud's (one line).
    """
    cloud = payload_points(spec, max_distance=math.inf)
    points = cloud.points_in_sensor if cloud is not None else parse_shape_spec(spec).corners()
    points = np.unique(np.asarray(points, dtype=float), axis=0)
    try:
        return np.asarray(points[ConvexHull(points).vertices])
    except (RuntimeError, ValueError):  # QhullError: flat or too few to span a volume: every point counts
        return np.asarray(points)
