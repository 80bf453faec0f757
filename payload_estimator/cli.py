"""The ``payload-estimator`` command line: ``estimate``, ``demo``, ``simulate``, ``replay``."""

from __future__ import annotations

import argparse
import importlib
import sys

from payload_estimator import __version__
from payload_estimator.commands import CommandError

__all__ = ["main", "build_parser"]

_COMMANDS = ("estimate", "demo", "simulate", "replay")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="payload-estimator",
        description="Estimate a robot payload's mass, centre of mass and inertia tensor.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"payload_estimator.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("payload_estimator.commands"):
                continue  # command not available in this build
            raise
        module.add_parser(sub).set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except CommandError as exc:
        print(f"payload-estimator {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
