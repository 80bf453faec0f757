"""What rviz should draw for an estimate, as plain values (the ROS shell turns them into Markers).

* the COM as a sphere sized like rviz's own mass display (a lead ball of the
  payload's mass: diameter ``2 (0.75 m / (pi 11340))^(1/3)``);
* the equivalent inertia box, as rviz draws a link's inertia: a uniform box
  with the same principal moments, side ``x = sqrt(6 (Iy + Iz - Ix) / m)`` and
  cyclic, centred on the COM and aligned with the principal axes;
* the point masses of PMD, each a small sphere whose opacity grows with its mass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.inertia import InertialParameters

__all__ = ["MarkerSpec", "estimate_markers", "equivalent_box", "LEAD_DENSITY"]

LEAD_DENSITY = 11340.0  # kg/m³, what rviz uses for its mass spheres


@dataclass(frozen=True)
class MarkerSpec:
    """One rviz marker in the estimate's frame.

    Attributes:
        ns, marker_id: namespace and id (unique pair).
        kind: ``"sphere"``, ``"cube"`` or ``"sphere_list"``.
        position: (3,) m. orientation_xyzw: (4,) unit quaternion.
        scale: (3,) m (diameters for spheres, sides for cubes).
        color: (4,) RGBA in [0, 1].
        points: (n, 3) for ``sphere_list``; colors: (n, 4) per point.
    """

    ns: str
    marker_id: int
    kind: str
    position: np.ndarray
    orientation_xyzw: np.ndarray
    scale: np.ndarray
    color: tuple[float, float, float, float]
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    colors: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))


def equivalent_box(params: InertialParameters) -> tuple[np.ndarray, np.ndarray] | None:
    """(sides (3,), R_frame_box (3x3)) of the uniform box with the same inertia, or None if impossible."""
    m = params.mass
    if not (m > 0 and np.all(np.isfinite(params.phi))):
        return None
    moments, axes = np.linalg.eigh(params.inertia_com)
    Ix, Iy, Iz = moments
    squares = 6.0 / m * np.array([Iy + Iz - Ix, Ix + Iz - Iy, Ix + Iy - Iz])
    if np.any(squares < -1e-12 * max(np.abs(squares).max(), 1e-300)) or np.any(moments < 0):
        return None
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return np.sqrt(np.clip(squares, 0.0, None)), axes


def estimate_markers(
    params: InertialParameters,
    point_positions: np.ndarray | None = None,
    point_masses: np.ndarray | None = None,
    consistent: bool = True,
) -> list[MarkerSpec]:
    """Markers for the COM, the inertia box and (optionally) the point masses."""
    markers: list[MarkerSpec] = []
    identity = np.array([0.0, 0.0, 0.0, 1.0])
    if not np.all(np.isfinite(params.phi)) or params.mass <= 0:
        return markers
    com = params.com
    diameter = 2.0 * (0.75 * params.mass / (np.pi * LEAD_DENSITY)) ** (1.0 / 3.0)
    color = (0.9, 0.2, 0.1, 1.0) if consistent else (0.6, 0.6, 0.6, 1.0)
    markers.append(MarkerSpec("com", 0, "sphere", com, identity, np.full(3, diameter), color))
    box = equivalent_box(params)
    if box is not None:
        sides, R = box
        quat = Rotation.from_matrix(R).as_quat()
        markers.append(
            MarkerSpec("inertia", 0, "cube", com, quat, np.maximum(sides, 1e-4), (0.2, 0.5, 0.9, 0.35))
        )
    if point_positions is not None and point_masses is not None and len(point_positions):
        masses = np.clip(np.asarray(point_masses, dtype=float), 0.0, None)
        alpha = masses / masses.max() if masses.max() > 0 else np.zeros_like(masses)
        colors = np.column_stack([np.full_like(alpha, 0.1), np.full_like(alpha, 0.8), np.full_like(alpha, 0.3),
                                  0.1 + 0.9 * alpha])
        spacing = _typical_spacing(point_positions)
        markers.append(
            MarkerSpec("point_masses", 0, "sphere_list", np.zeros(3), identity, np.full(3, 0.5 * spacing),
                       (0.1, 0.8, 0.3, 1.0), np.asarray(point_positions, dtype=float), colors)
        )
    return markers


def _typical_spacing(points: np.ndarray) -> float:
    pts = np.asarray(points, dtype=float)
    if len(pts) < 2:
        return 0.01
    extent = np.ptp(pts, axis=0)
    volume = float(np.prod(np.maximum(extent, 1e-3)))
    return float(np.clip((volume / len(pts)) ** (1.0 / 3.0), 1e-3, 0.05))
