"""Regenerate the packaged default URDFs: ``python -m payload_estimator.robots.generate``.

Each ``urdf/<name>.urdf`` is :func:`~payload_estimator.robots.robot_urdf` with
the sensor frame at the flange (zero mount offset) and an IMU frame at
:data:`DEFAULT_IMU_XYZ_IN_SENSOR` (m) in the sensor frame.

Generated files are written into a checkout only (the repository, with
``package.xml`` beside the package directory), or into an explicit ``--out
DIR``: never into an installed ``site-packages`` tree. ``--check`` writes
nothing and exits 1 when a file differs from what would be generated.
:func:`write_or_check` is that command line, shared with ``python -m
payload_estimator.settings`` (the ``config/`` files).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from payload_estimator.files import check_writable_dir, write_text_atomic
from payload_estimator.robots.spec import ROBOT_NAMES, default_urdf_path
from payload_estimator.robots.urdf_writer import robot_urdf

__all__ = [
    "DEFAULT_IMU_XYZ_IN_SENSOR",
    "default_urdf",
    "checkout_root",
    "write_or_check",
    "main",
]

DEFAULT_IMU_XYZ_IN_SENSOR: tuple[float, float, float] = (0.012, -0.008, 0.015)
"""IMU origin in the sensor frame of the packaged URDFs, m (a small, non-axial lever arm)."""


def default_urdf(name: str) -> str:
    """The text of the packaged URDF of robot ``name``."""
    return robot_urdf(name, imu_xyz_in_sensor=DEFAULT_IMU_XYZ_IN_SENSOR)


def checkout_root() -> Path | None:
    """Return the repository checkout the package is imported from, or None for an installed package.

    A checkout has ``package.xml`` beside the ``payload_estimator`` directory, as after
    ``git clone`` or ``pip install -e``; an installed package is ``pip install .`` or colcon's
    install space."""
    package_dir = Path(__file__).resolve().parent.parent
    root = package_dir.parent
    return root if (root / "package.xml").is_file() and package_dir.name == "payload_estimator" else None


def write_or_check(
    files: Mapping[str, str],
    default_dir: Path | None,
    prog: str,
    what: str,
    argv: Sequence[str] | None = None,
) -> int:
    """Run the command line of a generator: write ``files`` or, with ``--check``, only compare them.

    ``files`` (name -> text) go into ``--out DIR`` or ``default_dir`` (None when the package is
    not in a checkout). Exit status: 0 written or up to date, 1 out of date, 2 no place to
    write."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"Regenerate {what}. Without --out they are written into the checkout; an installed "
                    "package (site-packages) is never written to.",
    )
    parser.add_argument("--out", metavar="DIR", help="write (or with --check, compare) the files in DIR instead")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a file is missing or differs from what would be generated")
    args = parser.parse_args(argv)
    if args.out:
        directory = Path(args.out).expanduser()
    elif default_dir is not None:
        directory = default_dir
    else:
        here = Path(__file__).resolve().parent.parent
        print(f"{prog}: error: payload_estimator is installed ({here}), not a checkout with package.xml: "
              "give --out DIR", file=sys.stderr)
        return 2
    if args.check:
        stale = [name for name, text in files.items()
                 if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text]
        if stale:
            again = f"{prog} --out {args.out}" if args.out else prog
            print(f"{prog}: out of date in {directory}: {', '.join(stale)} (run: {again})", file=sys.stderr)
            return 1
        print(f"up to date: {len(files)} files in {directory}")
        return 0
    try:
        check_writable_dir(directory)
        for name, text in files.items():
            write_text_atomic(directory / name, text)
            print(f"wrote {directory / name}")
    except OSError as exc:
        print(f"{prog}: error: cannot write in {directory}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m payload_estimator.robots.generate [--out DIR] [--check]``."""
    root = checkout_root()
    return write_or_check(
        {f"{name}.urdf": default_urdf(name) for name in ROBOT_NAMES},
        default_urdf_path(ROBOT_NAMES[0]).parent if root is not None else None,
        prog="python -m payload_estimator.robots.generate",
        what="the packaged default URDFs (payload_estimator/robots/urdf/<robot>.urdf)",
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
