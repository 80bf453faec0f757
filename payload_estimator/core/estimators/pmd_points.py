"""The point masses of point-mass discretisation (PMD, :mod:`~payload_estimator.core.estimators.pmd`).

:func:`point_set` checks a set of candidate point masses (positions, parts, volumes, own inertias) and
makes what PMD solves with: :func:`point_mass_matrix`, each point's share of the volume, its density
group. :func:`carried_densities` carries one set's answer over to another (a new cloud of the same
payload): each new point starts at the density of the old point nearest to it. :func:`density_parts`
splits a cloud into the eighths its covariance's prior lets vary.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree

__all__ = ["PointSet", "point_set", "point_mass_matrix", "carried_densities", "density_parts"]


class PointSet(NamedTuple):
    """PMD's point masses, checked (:func:`point_set`)."""

    points: np.ndarray
    """(n, 3) positions in the sensor frame, m."""
    P: np.ndarray
    """(10, n) ``phi`` of a unit mass at each point (:func:`point_mass_matrix`, own inertias included)."""
    cell_share: np.ndarray
    """(n,) each point's share of the volume, relative to the mean."""
    part_labels: np.ndarray | None
    """(n,) each point's density group as 0, 1, ...; None: one group."""


def point_set(points_in_sensor: np.ndarray, part_labels: np.ndarray | None = None,
              point_volumes: np.ndarray | None = None, own_inertia: np.ndarray | None = None) -> PointSet:
    """Check candidate point masses and make PMD's :class:`PointSet` of them.

    Raises:
        ValueError: positions that are not (n, 3) finite values, n >= 1; volumes, labels or own inertias
            that are not one per point (volumes positive, own inertias finite).
    """
    points = np.asarray(points_in_sensor, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3 or len(points) < 1:
        raise ValueError("points_in_sensor must be an (n, 3) array with n >= 1")
    if not np.all(np.isfinite(points)):
        raise ValueError("points_in_sensor has non-finite coordinates")
    n = len(points)
    cells = np.ones(n) if point_volumes is None else np.asarray(point_volumes, dtype=float)
    if cells.shape != (n,) or not np.all(np.isfinite(cells)) or np.any(cells <= 0):
        raise ValueError("point_volumes must be one positive volume per point")
    if own_inertia is not None and (np.shape(own_inertia) != (n, 6) or not np.all(np.isfinite(own_inertia))):
        raise ValueError("own_inertia must be (n, 6) finite vech rows, one per point")
    labels = None if part_labels is None else np.asarray(part_labels)
    if labels is not None and labels.shape != (n,):
        raise ValueError(f"part_labels must have one label per point ({n}), got shape {labels.shape}")
    groups = None if labels is None else np.unique(labels, return_inverse=True)[1].reshape(-1)
    return PointSet(points, point_mass_matrix(points, own_inertia), cells * (n / float(cells.sum())), groups)


def carried_densities(old: PointSet, u_old: np.ndarray, new: PointSet) -> np.ndarray:
    """(n_new,) densities relative to a uniform body for ``new``'s points, carried over from ``old``'s ``u_old``.

    Each new point takes the density of the old point nearest to it; they are then scaled so that the new
    points hold the mass the old ones held (``sum u c`` over the points' mean volume share is kept), the
    mass the data determine alike for both."""
    _, nearest = cKDTree(old.points).query(new.points)
    u = np.clip(np.asarray(u_old, dtype=float), 0.0, None)[nearest]
    held = float(u @ new.cell_share) / len(u)
    kept = float(np.clip(u_old, 0.0, None) @ old.cell_share) / len(u_old)
    return u * (kept / held) if held > 0.0 else np.ones(len(u))


def point_mass_matrix(points: np.ndarray, own_inertia: np.ndarray | None = None) -> np.ndarray:
    """``P`` (10 x n): column ``i`` is ``phi`` of a unit point mass at ``points[i]``.

    ``phi = [1, p, vech(|p|² I - p p^T)]`` (Nadeau et al.'s eq. (5) with ``k`` = 0, 1, 2). With
    ``own_inertia`` (n, 6), m², each point also carries that inertia per kg about itself
    (:func:`~payload_estimator.core.shapes.own_inertia`): points of equal mass then have their
    solid's inertia, where bare points miss the spread within each grid cell (a tool sampled by
    a few dozen points: several percent of its inertia, which noise-free data would otherwise
    "correct" by making a uniform part non-uniform).
    """
    p = np.asarray(points, dtype=float)
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    r2 = x * x + y * y + z * z
    P = np.stack([np.ones_like(x), x, y, z, r2 - x * x, -x * y, -x * z, r2 - y * y, -y * z, r2 - z * z])
    if own_inertia is not None:
        P[4:] += np.asarray(own_inertia, dtype=float).T
    return P

def density_parts(points: np.ndarray) -> list[np.ndarray]:
    """Indices of the points in each eighth of the cloud: split at the centroid along its principal axes."""
    centred = points - points.mean(axis=0)
    if len(points) < 2:
        return [np.arange(len(points))]
    _, _, Vt = np.linalg.svd(centred, full_matrices=False)
    signs = (centred @ Vt.T > 0.0).astype(int)
    code = signs @ (2 ** np.arange(signs.shape[1]))
    return [np.flatnonzero(code == c) for c in np.unique(code)]
