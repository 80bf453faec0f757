"""Sensor-frame sample tables: the CSV/NPZ format of ``payload-estimator estimate``.

Columns (CSV header row) or arrays (NPZ), all in the sensor frame, SI units::

    t                        s
    ax ay az                 linear acceleration of the sensor origin, gravity excluded, m/s²
    wx wy wz                 angular velocity, rad/s
    alphax alphay alphaz     angular acceleration, rad/s²
    gx gy gz                 gravity vector in the sensor frame (|g| ≈ 9.81), m/s²
    fx fy fz tx ty tz        wrench the payload exerts on the sensor, N and N·m about the sensor origin

A CSV is UTF-8 text (a byte-order mark, as Excel's "CSV UTF-8" writes, is
fine), comma-separated, with a header row naming at least these columns, in any
order; other columns are ignored. Rows with a NaN/inf, or a value beyond
:data:`~payload_estimator.core.samples.MAX_ABS_VALUE` (no sensor reports it: a
glitch or a unit error), are skipped and counted. Anything else that is not such a
table (a missing or repeated column, another separator, a binary file, a cell
that is no number, a short or long line, an empty table, a time column that does
not increase, an NPZ array of another length or of non-numbers) is a
:class:`SamplesFileError` whose message names the file and the problem in one line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_estimator.core.samples import MAX_ABS_VALUE, SensorSamples
from payload_estimator.errors import SamplesFileError
from payload_estimator.files import atomic_path

__all__ = ["COLUMNS", "SamplesFileError", "LoadedSamples", "read_samples", "write_samples"]

COLUMNS: tuple[str, ...] = (
    "t",
    "ax", "ay", "az",
    "wx", "wy", "wz",
    "alphax", "alphay", "alphaz",
    "gx", "gy", "gz",
    "fx", "fy", "fz", "tx", "ty", "tz",
)  # fmt: skip

_OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", " ": "spaces", "|": "bars"}


@dataclass(frozen=True)
class LoadedSamples:
    """Samples read from a file, and how many rows were skipped (NaN/inf or out of range)."""

    samples: SensorSamples
    skipped_rows: int


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _table_from_csv(path: Path) -> dict[str, np.ndarray]:
    try:
        # utf-8-sig: a byte-order mark is not part of the first column's name
        with path.open(newline="", encoding="utf-8-sig") as fh:
            return _parse_csv(path, csv.reader(fh))
    except UnicodeDecodeError:
        raise SamplesFileError(
            f"{path}: not UTF-8 text (a binary file, or another encoding); expected a comma-separated table"
        ) from None
    except csv.Error as exc:
        raise SamplesFileError(f"{path}: not a readable CSV table ({_one_line(exc)})") from None


def _parse_csv(path: Path, reader: Iterator[list[str]]) -> dict[str, np.ndarray]:
    header = next(reader, None)
    if header is None:
        raise SamplesFileError(f"{path}: the file is empty")
    names = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        line = ",".join(header)
        for sep, what in _OTHER_SEPARATORS.items():
            if all(c in [x.strip() for x in line.split(sep)] for c in COLUMNS):
                raise SamplesFileError(f"{path}: the columns are separated by {what}; "
                                       "separate them by commas (with '.' as the decimal point)")
        raise SamplesFileError(f"{path}: missing column(s) {', '.join(missing)}")
    repeated = [c for c in COLUMNS if names.count(c) > 1]
    if repeated:
        raise SamplesFileError(f"{path}: column(s) {', '.join(repeated)} given more than once")
    index = [names.index(c) for c in COLUMNS]
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if not row or all(cell.strip() == "" for cell in row):
            continue
        if len(row) < len(names) or any(cell.strip() for cell in row[len(names):]):
            raise SamplesFileError(f"{path}: line {lineno} has {len(row)} values, expected {len(names)}")
        values = []
        for column, i in zip(COLUMNS, index):
            cell = row[i].strip()
            try:
                values.append(float(cell))
            except ValueError:
                if cell.lower() in ("", "nan", "na", "null", "none"):
                    values.append(np.nan)
                else:
                    raise SamplesFileError(
                        f"{path}: line {lineno}, column {column}: {cell[:40]!r} is not a number"
                    ) from None
        rows.append(values)
    data = np.array(rows, dtype=float).reshape(-1, len(COLUMNS))
    return {c: data[:, k] for k, c in enumerate(COLUMNS)}


def _column(path: Path, name: str, values: np.ndarray) -> np.ndarray:
    if values.dtype.kind not in "iuf":
        raise SamplesFileError(f"{path}: array {name} holds {values.dtype} values, expected real numbers")
    return values.astype(float).reshape(-1)


def _table_from_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with path.open("rb") as fh:
            npz = np.load(fh, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise SamplesFileError(f"{path}: one array (.npy), not an NPZ archive of the named arrays "
                                       f"{', '.join(COLUMNS)}")
            with npz:
                missing = [c for c in COLUMNS if c not in npz.files]
                if missing:
                    raise SamplesFileError(f"{path}: missing array(s) {', '.join(missing)}")
                table = {c: _column(path, c, npz[c]) for c in COLUMNS}
    except SamplesFileError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc):  # numpy's advice to load it unsafely is not ours to give
            raise SamplesFileError(f"{path}: not an NPZ file of arrays (its data are not numbers; an NPZ "
                                   f"archive of the named arrays {', '.join(COLUMNS)} is)") from None
        raise SamplesFileError(f"{path}: not a readable NPZ file ({_one_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - zipfile, numpy's format and I/O errors alike
        raise SamplesFileError(f"{path}: not a readable NPZ file ({_one_line(exc)})") from None
    lengths = {len(v) for v in table.values()}
    if len(lengths) != 1:
        raise SamplesFileError(f"{path}: arrays have different lengths {sorted(lengths)}")
    return table


def read_samples(path: str | Path) -> LoadedSamples:
    """Read a CSV or NPZ sample table (see the module docstring).

    Raises:
        SamplesFileError: the file is no such table (one line naming the file and the problem).
    """
    path = Path(path)
    if path.is_dir():
        raise SamplesFileError(f"{path}: a directory, not a sample table (a .csv or .npz file; a bag: "
                               "payload-estimator replay)")
    if not path.exists():
        raise SamplesFileError(f"{path}: no such file")
    if not path.is_file():
        raise SamplesFileError(f"{path}: not a regular file (a device or a pipe); expected a sample table "
                               "(a .csv or .npz file)")
    try:
        if path.stat().st_size == 0:
            raise SamplesFileError(f"{path}: the file is empty")
        table = _table_from_npz(path) if path.suffix.lower() == ".npz" else _table_from_csv(path)
    except OSError as exc:
        raise SamplesFileError(f"{path}: cannot be read ({exc.strerror or _one_line(exc)})") from None
    n = len(table["t"])
    if n == 0:
        raise SamplesFileError(f"{path}: the file has a header but no samples")
    data = np.column_stack([table[c] for c in COLUMNS])
    samples = SensorSamples(data[:, 0], data[:, 1:4], data[:, 4:7], data[:, 7:10], data[:, 10:13], data[:, 13:19])
    usable = samples.usable_mask()
    skipped = int(n - usable.sum())
    if skipped == n:
        raise SamplesFileError(f"{path}: every row has a NaN/inf or a value beyond {MAX_ABS_VALUE:g} (SI units)")
    samples = samples.select(usable)
    t = samples.t
    not_increasing = t[1:] <= t[:-1]  # compared, not subtracted: no overflow for huge stamps
    if np.any(not_increasing):
        k = int(np.argmax(not_increasing))
        raise SamplesFileError(
            f"{path}: time does not increase (t = {t[k]:.6g} s is followed by {t[k + 1]:.6g} s)"
        )
    return LoadedSamples(samples, skipped)


def write_samples(path: str | Path, samples: SensorSamples) -> None:
    """Write samples as CSV (with header) or NPZ, by the file's suffix."""
    path = Path(path)
    data = np.column_stack(
        [
            samples.t,
            samples.lin_acc_in_sensor,
            samples.ang_vel_in_sensor,
            samples.ang_acc_in_sensor,
            samples.gravity_in_sensor,
            samples.wrench_in_sensor,
        ]
    )
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        if path.suffix.lower() == ".npz":
            # numpy's stub also matches **arrays against savez's allow_pickle: bool
            np.savez(fh, **{c: data[:, k] for k, c in enumerate(COLUMNS)})  # type: ignore[arg-type]
        else:
            np.savetxt(fh, data, delimiter=",", header=",".join(COLUMNS), comments="", fmt="%.10g")
