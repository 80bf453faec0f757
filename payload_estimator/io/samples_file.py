"""Sensor-frame sample tables: the CSV/NPZ format of ``payload-estimator estimate``.

Columns (CSV header row) or arrays (NPZ), all in the sensor frame, SI units::

    t                        s
    ax ay az                 linear acceleration of the sensor origin, gravity excluded, m/s²
    wx wy wz                 angular velocity, rad/s
    alphax alphay alphaz     angular acceleration, rad/s²
    gx gy gz                 gravity vector in the sensor frame (|g| ≈ 9.81), m/s²
    fx fy fz tx ty tz        wrench the payload exerts on the sensor, N and N·m about the sensor origin

Rows with a non-finite value are skipped and counted; a missing column, an
empty table or a time column that does not increase is an error.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_estimator.core.samples import SensorSamples
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


class SamplesFileError(ValueError):
    """The file cannot be turned into samples; the message names the problem."""


@dataclass(frozen=True)
class LoadedSamples:
    """Samples read from a file, and how many rows were skipped for non-finite values."""

    samples: SensorSamples
    skipped_rows: int


def _table_from_csv(path: Path) -> dict[str, np.ndarray]:
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise SamplesFileError(f"{path}: the file is empty")
        names = [h.strip() for h in header]
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise SamplesFileError(f"{path}: missing column(s) {', '.join(missing)}")
        index = [names.index(c) for c in COLUMNS]
        rows = []
        for lineno, row in enumerate(reader, start=2):
            if not row or all(cell.strip() == "" for cell in row):
                continue
            if len(row) < len(names):
                raise SamplesFileError(f"{path}: line {lineno} has {len(row)} values, expected {len(names)}")
            values = []
            for i in index:
                cell = row[i].strip()
                try:
                    values.append(float(cell))
                except ValueError:
                    if cell.lower() in ("", "nan", "na", "null", "none"):
                        values.append(np.nan)
                    else:
                        raise SamplesFileError(
                            f"{path}: line {lineno}, column {COLUMNS[index.index(i)]}: {cell!r} is not a number"
                        ) from None
            rows.append(values)
    data = np.array(rows, dtype=float).reshape(-1, len(COLUMNS))
    return {c: data[:, k] for k, c in enumerate(COLUMNS)}


def _table_from_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [c for c in COLUMNS if c not in npz.files]
            if missing:
                raise SamplesFileError(f"{path}: missing array(s) {', '.join(missing)}")
            table = {c: np.asarray(npz[c], dtype=float).reshape(-1) for c in COLUMNS}
    except SamplesFileError:
        raise
    except Exception as exc:
        raise SamplesFileError(f"{path}: not a readable NPZ file ({exc})") from exc
    lengths = {len(v) for v in table.values()}
    if len(lengths) != 1:
        raise SamplesFileError(f"{path}: arrays have different lengths {sorted(lengths)}")
    return table


def read_samples(path: str | Path) -> LoadedSamples:
    """Read a CSV or NPZ sample table (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise SamplesFileError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise SamplesFileError(f"{path}: the file is empty")
    table = _table_from_npz(path) if path.suffix.lower() == ".npz" else _table_from_csv(path)
    n = len(table["t"])
    if n == 0:
        raise SamplesFileError(f"{path}: the file has a header but no samples")
    data = np.column_stack([table[c] for c in COLUMNS])
    finite = np.all(np.isfinite(data), axis=1)
    skipped = int(n - finite.sum())
    data = data[finite]
    if len(data) == 0:
        raise SamplesFileError(f"{path}: every row has a non-finite value")
    t = data[:, 0]
    steps = np.diff(t)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise SamplesFileError(
            f"{path}: time does not increase (t = {t[k]:.6g} s is followed by {t[k + 1]:.6g} s)"
        )
    samples = SensorSamples(
        t, data[:, 1:4], data[:, 4:7], data[:, 7:10], data[:, 10:13], data[:, 13:19]
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
