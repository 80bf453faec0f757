"""Regenerate the packaged default URDFs: ``python -m payload_estimator.robots.generate``.

Each ``urdf/<name>.urdf`` is :func:`~payload_estimator.robots.robot_urdf` with
the sensor frame at the flange (zero mount offset) and an IMU frame at
:data:`DEFAULT_IMU_XYZ_IN_SENSOR` (m) in the sensor frame.
"""

from __future__ import annotations

import sys
from pathlib import Path

from payload_estimator.files import write_text_atomic
from payload_estimator.robots.spec import ROBOT_NAMES, default_urdf_path
from payload_estimator.robots.urdf_writer import robot_urdf

__all__ = ["DEFAULT_IMU_XYZ_IN_SENSOR", "default_urdf", "write_default_urdfs", "main"]

DEFAULT_IMU_XYZ_IN_SENSOR: tuple[float, float, float] = (0.012, -0.008, 0.015)
"""IMU origin in the sensor frame of the packaged URDFs, m (a small, non-axial lever arm)."""


def default_urdf(name: str) -> str:
    """The text of the packaged URDF of robot ``name``."""
    return robot_urdf(name, imu_xyz_in_sensor=DEFAULT_IMU_XYZ_IN_SENSOR)


def write_default_urdfs() -> list[Path]:
    """Write ``urdf/<name>.urdf`` for every robot; returns the paths written."""
    paths = []
    for name in ROBOT_NAMES:
        path = default_urdf_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, default_urdf(name))
        paths.append(path)
    return paths


def main() -> int:
    for path in write_default_urdfs():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
