"""Points files: the payload's candidate point masses as ``points:FILE`` (``payload_shape``) or ``estimate --points``.

The format is the file's suffix:

* ``.ply``: a PLY file, ASCII or binary (either byte order), read by trimesh's PLY reader. Its ``vertex``
  element's properties are the cloud's fields; faces, colours, normals and other properties are ignored (a
  closed mesh to fill with points is ``mesh:FILE``, not a cloud).
* ``.pcd``: a PCL point cloud file, ``DATA ascii``, ``binary`` or ``binary_compressed``, read by pypcd4.
  An organised cloud (``HEIGHT`` > 1) is read as its ``WIDTH`` x ``HEIGHT`` points; ``VIEWPOINT`` is ignored.
* ``.npy``: an (N, 3-5) array of rows ``x y z[ part[ volume]]``.
* anything else: a text table of those rows, commas or whitespace between the numbers, its first line
  optionally naming the columns in any order.

The fields of a PLY or PCD file (and the columns a text table's header names) are ``x``, ``y``, ``z``, the
part label (``part``, ``label`` or ``segment``, the first present: :data:`~payload_estimator.core.clouds.
PART_FIELDS`) and ``volume``; names are matched exactly, other fields ignored. Positions are in the sensor
frame, in metres, whatever the file: nothing is guessed from the numbers, and a cloud in millimetres is
refused as farther than ``cloud_max_distance`` from the sensor origin (:func:`~payload_estimator.core.clouds.
check_payload_cloud`). A PLY or PCD point whose position is not finite (a depth camera's hole; PCL keeps them
as NaN in an organised cloud) is dropped; in a text table or ``.npy`` a value that is not finite is a mistake,
and refused. Every refusal is one line, a :class:`~payload_estimator.errors.ShapeError` naming the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from payload_estimator.core.clouds import MAX_CLOUD_DISTANCE_M, PART_FIELDS, CloudColumns, cloud_columns, cloud_shape
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.errors import ShapeError

__all__ = ["POINT_COLUMNS", "CLOUD_SUFFIXES", "load_point_cloud", "load_points", "read_cloud_file"]

POINT_COLUMNS = ("x", "y", "z", "part", "volume")
"""The columns of a text or ``.npy`` points file, in their default order: position (m, sensor frame), the part the
point belongs to (an integer: points of one part share one unknown density), the volume it stands for (any unit;
its share of its part's mass at uniform density). A text header may name the part ``label`` or ``segment``."""
CLOUD_SUFFIXES = (".ply", ".pcd")
"""The suffixes of the point cloud files read by a library (PLY: trimesh; PCD: pypcd4)."""
_EXPECTED = ("expected rows of x y z[ part[ volume]] (m, sensor frame; part an integer, volume positive): a CSV or "
             "whitespace-separated text file, optionally with a header line naming the columns, or an (N, 3-5) "
             ".npy; or a .ply or .pcd point cloud")


def load_point_cloud(path: str | Path, max_distance: float = MAX_CLOUD_DISTANCE_M) -> SampledShape:
    """Candidate point masses from a points file (module docstring), with their parts and volumes.

    Points of one part label (integers, any values) share one unknown density (a segmented point cloud: a
    vision pipeline's parts of one material each); ``volume`` weights each point's share of its part (a
    tetrahedral mesh's cells, a voxel grid's occupancy); missing: one part, equal volumes. The cloud must
    pass :func:`~payload_estimator.core.clouds.check_payload_cloud`, its points within ``max_distance`` (m)
    of the sensor origin.

    Raises:
        ShapeError: one line naming the file and what is wrong (unreadable, fewer than 4 points, a
            non-finite value in a table, a part label that is not an integer, a volume that is not positive,
            coplanar points, points too far from the sensor origin).
    """
    path = Path(path)
    columns = read_cloud_file(path)
    return cloud_shape(columns.points, columns.part, columns.volume, max_distance, where=f"{path}: ")


def load_points(path: str | Path) -> np.ndarray:
    """The positions of :func:`load_point_cloud` (rows ``x y z``, m, sensor frame), without parts or volumes."""
    return load_point_cloud(path).points_in_sensor


def read_cloud_file(path: str | Path) -> CloudColumns:
    """The positions, part labels and volumes of a points file, by its suffix (module docstring); unchecked.

    Raises:
        ShapeError: one line naming the file: missing, a directory, empty, unreadable in its format, no x, y or
            z, a value that is not finite in a table, a part label that is not a whole number, a volume that is
            not positive.
    """
    path = Path(path)
    if path.is_dir():
        raise ShapeError(f"{path}: a directory, not a points file ({_EXPECTED})")
    if not path.is_file():
        raise ShapeError(f"points file not found: {path}")
    if path.stat().st_size == 0:
        raise ShapeError(f"{path}: empty file ({_EXPECTED})")
    suffix = path.suffix.lower()
    if suffix == ".ply":
        return cloud_columns(_ply_fields(path), where=f"{path}: ")
    if suffix == ".pcd":
        return cloud_columns(_pcd_fields(path), where=f"{path}: ")
    return _table_columns(path)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _ply_fields(path: Path) -> dict[str, np.ndarray]:
    """A PLY file's scalar vertex properties by name (trimesh's PLY reader); a list property is left out."""
    from trimesh.exchange.ply import load_ply

    try:
        with open(path, "rb") as f:
            loaded = load_ply(f)
    except KeyError as exc:  # trimesh builds the vertices from x, y and z
        raise ShapeError(f"{path}: a PLY file whose vertices have no property {exc}; a cloud's positions are its "
                         "vertices' x, y and z") from None
    except Exception as exc:  # trimesh says a broken file many ways: ValueError, IndexError, struct.error...
        raise ShapeError(f"{path}: not a readable PLY file ({_one_line(exc)})") from None
    vertex = loaded.get("metadata", {}).get("_ply_raw", {}).get("vertex", {}).get("data")
    if isinstance(vertex, np.ndarray) and vertex.dtype.names:  # binary: a structured array
        vertex = {name: vertex[name] for name in vertex.dtype.names}
    if not isinstance(vertex, dict):  # ASCII: a dict of arrays
        raise ShapeError(f"{path}: a PLY file without a vertex element; a cloud's points are its vertices")
    fields = {}
    for name, values in vertex.items():
        array = np.asarray(values)
        if array.dtype.kind in "iufb" and array.ndim >= 1 and array.size == len(array):  # a scalar property
            fields[str(name)] = array.reshape(-1)
    return fields


def _pcd_fields(path: Path) -> dict[str, np.ndarray]:
    """A PCD file's fields by name (pypcd4); a field of several values (``COUNT`` > 1) is left out."""
    try:
        from pypcd4 import PointCloud
    except ImportError:
        raise ShapeError(f"{path}: reading a .pcd file needs pypcd4: pip install pypcd4") from None
    try:
        data = np.atleast_1d(PointCloud.from_path(path).pc_data)
    except Exception as exc:  # pypcd4 says a broken file many ways: pydantic's ValidationError, ValueError...
        raise ShapeError(f"{path}: not a readable PCD file ({_one_line(exc)})") from None
    if data.dtype.names is None:
        raise ShapeError(f"{path}: not a readable PCD file (no fields)")
    return {name: data[name] for name in data.dtype.names}


def _table_columns(path: Path) -> CloudColumns:
    """A text table's or ``.npy``'s columns (:data:`POINT_COLUMNS`); any value that is not finite is refused."""
    columns = list(POINT_COLUMNS)
    if path.suffix.lower() == ".npy":
        try:
            table = np.asarray(np.load(path, allow_pickle=False), dtype=float)
        except Exception:  # not an array file, an array of objects or strings, cut off: numpy says it many ways
            raise ShapeError(f"{path}: not a NumPy array file of numbers ({_EXPECTED})") from None
    else:
        table, header = _read_table(path)
        if header is not None:
            columns = header
    if table.ndim != 2 or not 3 <= table.shape[1] <= 5 or len(table) == 0:
        raise ShapeError(f"{path}: expected rows of x y z[ part[ volume]], got an array of shape {table.shape}")
    columns = columns[:table.shape[1]]
    if not {"x", "y", "z"} <= set(columns):
        raise ShapeError(f"{path}: the header names {', '.join(columns)}; x, y and z are needed ({_EXPECTED})")
    if not np.all(np.isfinite(table)):
        rows = np.flatnonzero(~np.all(np.isfinite(table), axis=1))
        raise ShapeError(f"{path}: {len(rows)} row(s) with a value that is not finite (the first: row {rows[0] + 1})")
    return cloud_columns({name: table[:, i] for i, name in enumerate(columns)}, where=f"{path}: ")


def _header_names(cells: list[str]) -> list[str] | None:
    """The columns a header line names (a part's other names read as ``part``), or None for no header."""
    names = [c.strip().lower() for c in cells]
    names = ["part" if n in PART_FIELDS else n for n in names]
    if set(names) <= set(POINT_COLUMNS) and len(set(names)) == len(names):
        return names
    if any(n in POINT_COLUMNS for n in names):
        unknown = [n for n in names if n not in POINT_COLUMNS]
        raise ShapeError(f"the header names {', '.join(unknown) or 'a column twice'}; columns are "
                         f"{', '.join(POINT_COLUMNS)} (the part also as {' or '.join(PART_FIELDS[1:])})")
    return None


def _read_table(path: Path) -> tuple[np.ndarray, list[str] | None]:
    """A text file's rows of numbers, and the column names of its header line (None without one)."""
    try:
        text = path.read_text(encoding="utf-8-sig").strip().splitlines()
    except (OSError, UnicodeDecodeError):
        raise ShapeError(f"{path}: not a text file ({_EXPECTED})") from None
    rows: list[list[float]] = []
    header = None
    for number, line in enumerate(text, 1):
        cells = line.replace(",", " ").split()
        if not cells:
            continue
        try:
            rows.append([float(c) for c in cells])
        except ValueError:
            if rows or header is not None:
                raise ShapeError(f"{path}: line {number} is not numbers ({' '.join(line.split())[:60]!r}; "
                                 f"{_EXPECTED})") from None
            try:
                header = _header_names(cells)
            except ShapeError as exc:
                raise ShapeError(f"{path}: {exc}") from None
    if not rows:
        raise ShapeError(f"{path}: no rows of numbers ({_EXPECTED})")
    if len({len(r) for r in rows}) > 1:
        raise ShapeError(f"{path}: rows of {min(map(len, rows))} to {max(map(len, rows))} numbers ({_EXPECTED})")
    table = np.array(rows, dtype=float)
    if header is not None and len(header) != table.shape[1]:
        raise ShapeError(f"{path}: the header names {len(header)} columns, the rows hold {table.shape[1]}")
    return table, header
