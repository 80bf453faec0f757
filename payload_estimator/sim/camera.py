"""A simulated depth camera without OpenGL: one ray per pixel, cast at the payload's shape in MuJoCo.

:class:`DepthCamera` builds a MuJoCo scene of its own from a payload's shape in the sensor frame ``S``
(each part of a :class:`~payload_estimator.core.solids.Union` a geom: boxes, cylinders and spheres
exactly, meshes as their own triangles) and, for a payload pose ``T_world_sensor`` and a camera pose
``T_world_camera``, casts one ray per pixel with ``mj_multiRay`` (MuJoCo's ray caster, in C). It
returns the visible cloud in the camera's optical frame (z forward, x right, y down: ROS's
``*_optical_frame``), with the part each ray hit (:class:`DepthView`). Only the pixels within the
image of the scene's bounding box are cast; ``stride`` casts every k-th pixel of each row and column.
``benchmarks/partial_views.py --camera-speed`` measured it against trimesh's ray caster (rtree, no
Embree): on a 640 x 480 image of a hand tool 0.6 m away, 11 to 28 ms with MuJoCo, 0.15 to 1.4 s with
trimesh on the same rays.

The simulator's own arm model is not used: its payload geoms draw a mesh as its bounding box and
its arm has no geometry. Nor has it a gripper: the payload is welded to the sensor face, so no
finger hides any of it. Fingers, or anything else that hides the payload, can be given as
``occluders`` (shapes in ``S``): their hits are dropped, as a segmentation would drop them.

Range noise: Nguyen, Izadi and Lovell, "Modeling Kinect Sensor Noise for Improved 3D Reconstruction
and Tracking" (3DIMPVT 2012), the axial noise of a structured-light depth camera:
``sigma_z = 0.0012 + 0.0019 (z - 0.4)² + 0.0001 / sqrt(z) * theta² / (pi/2 - theta)²`` m, ``z`` the
depth (m), ``theta`` the angle between the ray and the surface's normal (:class:`RangeNoise`). Pixels
whose ``theta`` exceeds ``max_incidence_deg`` (75°: nearly grazing) or whose depth is outside the
working range are missing, as on a real camera. Lateral noise (their 0.8 px) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import mujoco
import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import cKDTree
from scipy.spatial.transform import Rotation

from payload_estimator.core.solids import Box, Cylinder, Mesh, Shape, Sphere, Union
from payload_estimator.errors import ConfigurationError, ShapeError

__all__ = ["Intrinsics", "RangeNoise", "NO_NOISE", "DepthView", "DepthCamera", "look_at", "transform"]


@dataclass(frozen=True)
class Intrinsics:
    """A pinhole camera: ``width`` x ``height`` pixels, ``fov_deg`` across the width, square pixels, centred."""

    width: int = 640
    height: int = 480
    fov_deg: float = 60.0

    def __post_init__(self) -> None:
        if not (self.width >= 1 and self.height >= 1 and 0.0 < self.fov_deg < 180.0):
            raise ConfigurationError(f"camera intrinsics: {self.width} x {self.height} pixels, {self.fov_deg}° "
                                     "field of view; expected at least one pixel and a field of view in (0, 180)°")

    @property
    def focal_px(self) -> float:
        """Focal length, pixels."""
        return 0.5 * self.width / np.tan(np.radians(0.5 * self.fov_deg))

    def rays(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n, 3) unit rays in the optical frame through the centres of pixels (``u`` column, ``v`` row)."""
        f = self.focal_px
        d = np.column_stack([(u + 0.5 - 0.5 * self.width) / f, (v + 0.5 - 0.5 * self.height) / f,
                             np.ones(len(u))])
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    def project(self, points_in_camera: np.ndarray) -> np.ndarray:
        """(n, 2) pixel coordinates ``(u, v)`` of points in the optical frame (in front of the camera)."""
        p = np.asarray(points_in_camera, dtype=float)
        f = self.focal_px
        return np.column_stack([f * p[:, 0] / p[:, 2] + 0.5 * self.width, f * p[:, 1] / p[:, 2] + 0.5 * self.height])


@dataclass(frozen=True)
class RangeNoise:
    """Axial (depth) noise and missing pixels of a depth camera (module docstring: Nguyen et al.'s model).

    Attributes:
        base_m, quadratic_per_m, quadratic_from_m: ``sigma = base + quadratic (z - from)² + ...``, m.
        angle_m: the incidence term's factor, ``angle / sqrt(z) * theta² / (pi/2 - theta)²``, m^1.5.
        max_incidence_deg: a pixel whose ray meets the surface more obliquely is missing.
        min_range_m, max_range_m: the working range of the depth (along the optical axis), m.
    """

    base_m: float = 0.0012
    quadratic_per_m: float = 0.0019
    quadratic_from_m: float = 0.4
    angle_m: float = 0.0001
    max_incidence_deg: float = 75.0
    min_range_m: float = 0.2
    max_range_m: float = 4.0

    def sigma(self, depth_m: np.ndarray, incidence_rad: np.ndarray) -> np.ndarray:
        """The depth's standard deviation, m, at depth ``depth_m`` and incidence ``incidence_rad``."""
        z = np.asarray(depth_m, dtype=float)
        theta = np.minimum(np.asarray(incidence_rad, dtype=float), np.radians(89.0))
        return (self.base_m + self.quadratic_per_m * (z - self.quadratic_from_m) ** 2
                + self.angle_m / np.sqrt(z) * theta**2 / (0.5 * np.pi - theta) ** 2)


NO_NOISE = RangeNoise(base_m=0.0, quadratic_per_m=0.0, angle_m=0.0, max_incidence_deg=90.0, min_range_m=0.0,
                      max_range_m=100.0)
"""Exact depths, every pixel that sees the payload."""


class DepthView(NamedTuple):
    """What the camera saw of the payload."""

    points_in_camera: np.ndarray
    """(n, 3) points in the camera's optical frame, m."""
    part: np.ndarray
    """(n,) index of the part of the shape each point lies on (0 for a single shape)."""
    pixels: np.ndarray
    """(n, 2) integer ``(u, v)``: column and row of each point's pixel."""
    T_sensor_camera: np.ndarray
    """(4, 4) the camera's pose in the sensor frame: ``points_in_sensor = R p + t``; ``t`` is the viewpoint."""

    @property
    def points_in_sensor(self) -> np.ndarray:
        """(n, 3) the points in the sensor frame, m."""
        return transform(self.T_sensor_camera, self.points_in_camera)

    @property
    def viewpoint_in_sensor(self) -> np.ndarray:
        """(3,) the camera's origin in the sensor frame, m."""
        return self.T_sensor_camera[:3, 3].copy()


def transform(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(n, 3) ``points`` moved by the (4, 4) pose ``T``."""
    T = np.asarray(T, dtype=float)
    return _rotated(T[:3, :3], np.asarray(points, dtype=float)) + T[:3, 3]


def _rotated(R: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(n, 3) ``vectors`` turned by ``R``: ``R v`` each.

    As ``(R @ V.T).T``: numpy's ``V @ R.T`` with a small transposed ``R`` takes a slow loop (0.3 s for an
    image's rays, where this takes a millisecond)."""
    return (R @ vectors.T).T


def look_at(eye_in_world: ArrayLike, target_in_world: ArrayLike,
            up_in_world: ArrayLike = (0.0, 0.0, 1.0)) -> np.ndarray:
    """(4, 4) ``T_world_camera`` of a camera at ``eye_in_world`` looking at ``target_in_world``, m.

    Optical frame: z along the view, x to the right, y down (``up_in_world`` is up in the image)."""
    eye, target, up = (np.asarray(a, dtype=float).reshape(3) for a in (eye_in_world, target_in_world, up_in_world))
    z = target - eye
    if not (np.all(np.isfinite(z)) and np.linalg.norm(z) > 0.0):
        raise ConfigurationError(f"camera at {eye} looking at {target}: the two must be distinct, finite points")
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:  # looking along `up`: any right will do
        x = np.cross(z, [1.0, 0.0, 0.0] if abs(z[0]) < 0.9 else [0.0, 1.0, 0.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    T[:3, 3] = eye
    return T


def _pose(T: ArrayLike, what: str) -> np.ndarray:
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ConfigurationError(f"{what}: expected a finite (4, 4) pose, got shape {T.shape}")
    R = T[:3, :3]
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0.0:
        raise ConfigurationError(f"{what}: its rotation is not a rotation (orthonormal, det +1)")
    return T


def _flat_parts(shape: Shape) -> list[Shape]:
    return [p for part in shape.parts for p in _flat_parts(part)] if isinstance(shape, Union) else [shape]


def _quat_wxyz(rpy: Sequence[float]) -> list[float]:
    x, y, z, w = Rotation.from_euler("xyz", np.asarray(rpy, dtype=float)).as_quat()
    return [float(w), float(x), float(y), float(z)]


class _Surface:
    """One solid of the scene: its MuJoCo geom and the outward normal at points of its surface."""

    def __init__(self, shape: Shape, spec: mujoco.MjSpec, name: str) -> None:
        self.shape = shape
        common = dict(name=name, pos=[float(v) for v in shape.xyz], quat=_quat_wxyz(shape.rpy), contype=0,
                      conaffinity=0, mass=0.0, density=0.0)
        if isinstance(shape, Box):
            spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.5 * s for s in shape.size], **common)
        elif isinstance(shape, Cylinder):
            spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[shape.radius, 0.5 * shape.height, 0.0],
                                    **common)
        elif isinstance(shape, Sphere):
            spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[shape.radius, 0.0, 0.0], **common)
        elif isinstance(shape, Mesh) and shape.mesh is not None:
            mesh = shape.mesh
            spec.add_mesh(name=name, uservert=np.asarray(mesh.vertices, dtype=float).ravel().tolist(),
                          userface=np.asarray(mesh.faces, dtype=int).ravel().tolist())
            spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name, **common)
            samples, self._face_of_sample = _surface_samples(mesh)
            self._face_normals = np.asarray(mesh.face_normals, dtype=float)
            self._face_offsets = np.einsum("ij,ij->i", self._face_normals, np.asarray(mesh.triangles)[:, 0])
            self._tree = cKDTree(samples)
        else:
            raise ShapeError(f"the camera sees boxes, cylinders, spheres and meshes; not a {type(shape).__name__}")

    def normals(self, points_in_sensor: np.ndarray) -> np.ndarray:
        """(n, 3) outward unit normals in S at ``points_in_sensor`` (on the surface)."""
        q = self.shape.to_local(points_in_sensor)
        s = self.shape
        if isinstance(s, Box):
            scaled = np.abs(q) / (0.5 * np.asarray(s.size))
            axis = np.argmax(scaled, axis=1)
            n = np.zeros_like(q)
            n[np.arange(len(q)), axis] = np.sign(q[np.arange(len(q)), axis])
        elif isinstance(s, Cylinder):
            radial = np.hypot(q[:, 0], q[:, 1])
            cap = np.abs(q[:, 2]) / (0.5 * s.height) > radial / s.radius
            n = np.column_stack([q[:, 0], q[:, 1], np.zeros(len(q))])
            n[cap] = np.column_stack([np.zeros((cap.sum(), 2)), np.sign(q[cap, 2])])
        elif isinstance(s, Sphere):
            n = q
        else:
            n = self._mesh_normals(q)
        n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
        return _rotated(s.R_sensor_shape, n)


    def _mesh_normals(self, q: np.ndarray) -> np.ndarray:
        """The normal of the face, among those of the nearest surface samples, whose plane ``q`` lies on."""
        faces = self._face_of_sample[self._tree.query(q, k=8)[1]]  # (n, 8): an edge's or a corner's faces too
        off_plane = np.abs(np.einsum("ijk,ik->ij", self._face_normals[faces], q) - self._face_offsets[faces])
        return self._face_normals[faces[np.arange(len(q)), np.argmin(off_plane, axis=1)]]


def _surface_samples(mesh: object) -> tuple[np.ndarray, np.ndarray]:
    """Points spread over a mesh's surface (about 1 mm apart, at most 20,000) and the face of each."""
    import trimesh

    count = int(np.clip(float(mesh.area) / 1e-6, 2000, 20000))  # type: ignore[attr-defined]
    points, faces = trimesh.sample.sample_surface(mesh, count, seed=0)
    return np.asarray(points), np.asarray(faces)


class DepthCamera:
    """A depth camera aimed at a payload: one ray per pixel (module docstring).

    Args:
        shape: the payload's shape in the sensor frame S (a payload's ``envelope``); the label of a point
            is the index of the part it lies on (:attr:`~payload_estimator.core.solids.Union.parts`,
            as :func:`~payload_estimator.core.point_masses.sample_parts` numbers them).
        occluders: shapes in S that hide the payload (a gripper's fingers); what they hide is missing.
        intrinsics: the image size and field of view.
        noise: the range noise and missing pixels (:data:`NO_NOISE`: exact).
        stride: cast every ``stride``-th pixel of each row and column (1: every pixel).
        crop: cast only the pixels within the image of the scene's bounding box (False: every pixel).
    """

    def __init__(self, shape: Shape, occluders: Sequence[Shape] = (), intrinsics: Intrinsics = Intrinsics(),
                 noise: RangeNoise = RangeNoise(), stride: int = 1, crop: bool = True) -> None:
        if not (isinstance(stride, (int, np.integer)) and stride >= 1):
            raise ConfigurationError(f"camera stride: expected a whole number >= 1, got {stride!r}")
        self.intrinsics, self.noise, self.stride, self.crop = intrinsics, noise, int(stride), bool(crop)
        solids = [(p, k) for k, part in enumerate(_parts(shape)) for p in _flat_parts(part)]
        solids += [(p, -1) for occluder in occluders for p in _flat_parts(occluder)]
        spec = mujoco.MjSpec()
        self._surfaces = [_Surface(s, spec, f"solid{i}") for i, (s, _) in enumerate(solids)]
        self._label = np.array([k for _, k in solids], dtype=int)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)
        self._surface_of_geom = np.full(self.model.ngeom, -1)
        for i in range(len(solids)):
            self._surface_of_geom[self.model.geom(f"solid{i}").id] = i
        self._corners_in_sensor = np.concatenate([s.corners() for s, _ in solids])
        self.n_parts = len(_parts(shape))
        """How many parts the payload's shape has (labels 0 to n_parts - 1)."""

    def capture(self, T_world_sensor: ArrayLike, T_world_camera: ArrayLike,
                seed: int | np.random.Generator | None = 0) -> DepthView:
        """What the camera at ``T_world_camera`` sees of the payload at ``T_world_sensor`` (both (4, 4), m).

        ``seed`` draws the range noise (the same seed, the same cloud)."""
        T_sensor_camera = np.linalg.inv(_pose(T_world_sensor, "T_world_sensor")) @ _pose(T_world_camera,
                                                                                          "T_world_camera")
        u, v = self.pixels(T_sensor_camera)
        rays_in_camera = self.intrinsics.rays(u.astype(float), v.astype(float))
        rays_in_sensor = _rotated(T_sensor_camera[:3, :3], rays_in_camera)
        origin = T_sensor_camera[:3, 3].copy()
        n = len(u)
        geom = np.full(n, -1, dtype=np.int32)
        dist = np.full(n, -1.0)
        if n:
            normal_out: tuple = (None,) if _RAYS_GIVE_NORMALS else ()
            mujoco.mj_multiRay(self.model, self.data, origin, np.ascontiguousarray(rays_in_sensor).ravel(), None, 1,
                               -1, geom, dist, *normal_out, n, 1e3)
        solid = np.where(geom >= 0, self._surface_of_geom[np.maximum(geom, 0)], -1)
        keep = (solid >= 0) & (self._label[np.maximum(solid, 0)] >= 0)
        idx = np.flatnonzero(keep)
        points_in_camera = dist[idx, None] * rays_in_camera[idx]
        cos_incidence = np.ones(len(idx))
        for s in np.unique(solid[idx]):
            mine = solid[idx] == s
            normals = self._surfaces[s].normals(origin + dist[idx][mine, None] * rays_in_sensor[idx][mine])
            cos_incidence[mine] = -np.einsum("ij,ij->i", normals, rays_in_sensor[idx][mine])
        points_in_camera, seen = self._measured(points_in_camera, np.arccos(np.clip(cos_incidence, -1.0, 1.0)), seed)
        idx = idx[seen]
        return DepthView(points_in_camera, self._label[solid[idx]], np.column_stack([u[idx], v[idx]]),
                         T_sensor_camera)

    def pixels(self, T_sensor_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pixels (columns, rows) cast for a camera at ``T_sensor_camera``.

        With ``crop``, those within the image of the scene's bounding box (no other ray can meet it)."""
        w, h, k = self.intrinsics.width, self.intrinsics.height, self.stride
        corners = transform(np.linalg.inv(T_sensor_camera), self._corners_in_sensor)
        if self.crop and np.all(corners[:, 2] <= 0.0):
            return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
        u0, u1, v0, v1 = 0, w, 0, h
        if self.crop and np.all(corners[:, 2] > 1e-6):
            uv = self.intrinsics.project(corners)
            u0, v0 = (max(0, int(np.floor(c.min())) - 1) for c in uv.T)
            u1, v1 = min(w, int(np.ceil(uv[:, 0].max())) + 1), min(h, int(np.ceil(uv[:, 1].max())) + 1)
        cols = np.arange(-(-u0 // k) * k, u1, k)
        rows = np.arange(-(-v0 // k) * k, v1, k)
        uu, vv = np.meshgrid(cols, rows)
        return uu.ravel(), vv.ravel()

    def _measured(self, points_in_camera: np.ndarray, incidence: np.ndarray,
                  seed: int | np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        """The points with range noise, and which pixels are not missing (grazing, out of range)."""
        noise = self.noise
        depth = points_in_camera[:, 2]
        seen = ((incidence <= np.radians(noise.max_incidence_deg)) & (depth >= noise.min_range_m)
                & (depth <= noise.max_range_m))
        rng = np.random.default_rng(seed)
        draws = rng.standard_normal(len(depth))  # one per pixel hit, missing or not: a pixel's draw never shifts
        p, z, theta = points_in_camera[seen], depth[seen], incidence[seen]
        noisy = z + noise.sigma(z, theta) * draws[seen]
        return p * (np.maximum(noisy, 1e-6) / z)[:, None], seen


_RAYS_GIVE_NORMALS = "normal" in (mujoco.mj_multiRay.__doc__ or "")
"""Later MuJoCo releases take an array for the normals (here None: the camera computes them from the solids, as with
3.3, which has no such argument)."""


def _parts(shape: Shape) -> tuple[Shape, ...]:
    return shape.parts if isinstance(shape, Union) else (shape,)
