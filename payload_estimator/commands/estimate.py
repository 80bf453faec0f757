"""``payload-estimator estimate SAMPLES``: estimate a payload from a sensor-frame sample table."""

from __future__ import annotations

import argparse
import csv
import json
import sys

import numpy as np

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import positive_float
from payload_estimator.commands.options import (
    ESTIMATOR_OPTION_SETTINGS,
    add_estimator_options,
    add_setting_options,
    setting_overrides,
)
from payload_estimator.core.clouds import MAX_CLOUD_DISTANCE_M
from payload_estimator.core.estimators import ESTIMATORS, InsufficientData
from payload_estimator.core.point_clouds import voxel_downsample
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import SampledShape, ShapeError, load_point_cloud, parse_shape_spec
from payload_estimator.core.tracking import CHANGE, CONTACT, PayloadTracker
from payload_estimator.io.samples_file import COLUMNS, SamplesFileError, read_samples
from payload_estimator.outputs.handover import check_handover
from payload_estimator.pipeline.build import PayloadShape, build_estimator, estimator_points
from payload_estimator.settings import Settings

__all__ = ["add_parser", "run", "add_shape_arguments", "shape_from_args"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``estimate`` command and its options to ``sub``; return its parser."""
    p = sub.add_parser(
        "estimate",
        help="estimate mass, COM and inertia from a sensor-frame sample table (CSV or NPZ)",
        description=(
            "Estimate the payload from SAMPLES, a CSV with a header row or an NPZ with the "
            f"columns {' '.join(COLUMNS)} (sensor frame, SI units; f, t: the wrench the payload "
            "exerts on the sensor, torque about the sensor origin; a: gravity excluded; g: the "
            "gravity vector in the sensor frame). Rows with NaN/inf or values beyond 1e6 are skipped and "
            "counted; a UTF-8 BOM and extra columns are fine."
        ),
    )
    p.add_argument("samples", help="CSV or NPZ sample table")
    add_shape_arguments(p)
    p.add_argument("--bias", action="store_true", help="also estimate the six F/T offsets")
    add_estimator_options(p)
    p.add_argument("--force", action="store_true",
                   help="print the URDF fragment (and a JSON status) even when the estimate may not be handed "
                        "over: physically inconsistent, a poor model fit, mass, COM or inertia not determined by "
                        "the data; marked as forced")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also print the figures behind the model fit and the motion's dynamism (explained in "
                        "docs/trust.md)")
    p.add_argument("--track", action="store_true",
                   help="follow the payload through the samples: contacts held out, payload changes detected "
                        "and the estimate restarted (the F/T offsets kept); prints one line per --every "
                        f"seconds of data ({', '.join(TRACK_COLUMNS)}; JSON lines with --json), then the final "
                        "estimate of the last payload as without --track")
    p.add_argument("--every", type=track_every, default=0.1, metavar="S",
                   help="seconds of data per --track line (default 0.1)")
    return p


MIN_EVERY_S = 0.001
"""The shortest ``--every``, s: a line per millisecond of data is already one per sample of a 1 kHz sensor."""


def track_every(text: str) -> float:
    """``--every``: seconds of data per line, at least :data:`MIN_EVERY_S`."""
    value = positive_float(text)
    if value < MIN_EVERY_S:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_EVERY_S:g} s, got {text!r}")
    return value


def add_shape_arguments(p: argparse.ArgumentParser) -> None:
    """``--shape`` / ``--points``: where the point masses of the estimators that need them come from."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--shape",
        help=(
            "payload shape for pmd, sensor frame, m and rad: box:SX,SY,SZ[@X,Y,Z[,R,P,Y]], "
            "cylinder:R,H[@...], sphere:R[@X,Y,Z], mesh:FILE[*SCALE][@...], meshparts:FILE[*SCALE][@...] "
            "(each body of the file a part); join parts with +"
        ),
    )
    g.add_argument("--points", metavar="FILE",
                   help="candidate point masses for pmd, sensor frame, m: a point cloud, .ply (ASCII or binary) or "
                        ".pcd (ascii, binary, binary_compressed) with the fields x, y, z and optionally a part label "
                        "(part, label or segment) and volume (points of non-finite position dropped), or rows "
                        "x,y,z[,part[,volume]] (CSV with an optional header line naming the columns, or .npy); "
                        "points of one integer part share one density (a segmented cloud), volume weights each "
                        "point's share of its part")
    add_setting_options(p, CLOUD_OPTION_SETTINGS)


CLOUD_OPTION_SETTINGS = ("cloud_max_distance",)
"""The settings ``--points`` reads: how far from the sensor a point may be, how many point masses a cloud keeps."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


def shape_from_args(args: argparse.Namespace, max_distance: float = MAX_CLOUD_DISTANCE_M) -> PayloadShape | None:
    """The shape of ``--shape``, or the positions of ``--points`` (None when neither is given).

    ``max_distance``: how far from the sensor origin a point of ``--points`` may be, m."""
    try:
        if args.points:
            return load_point_cloud(args.points, max_distance)
        if args.shape:
            return parse_shape_spec(args.shape)
    except ShapeError as exc:
        raise CommandError(f"{'--points' if args.points else '--shape'} {exc}") from None
    return None


def _positions(points: np.ndarray | SampledShape) -> np.ndarray:
    return points.points_in_sensor if isinstance(points, SampledShape) else points


TRACK_COLUMNS = ("t", "mass", "com", "changed", "contact", "status")
"""What each ``--track`` line carries (JSON keys, table columns)."""


def _track(
    tracker: PayloadTracker, samples: SensorSamples, every_s: float, as_json: bool, force: bool
) -> PayloadTracker:
    """Feed the samples in slices of ``every_s`` seconds of data and print one line per slice.

    Returns the tracker, whose estimate is the final line's."""
    t = samples.t
    edges = np.searchsorted(t, np.arange(t[0] + every_s, t[-1] + every_s, every_s), side="right")
    start = 0
    console = None
    if not as_json:
        from payload_estimator.commands.common import make_console

        console = make_console()
        console.print(" ".join(f"{c:>9}" for c in ("t (s)", "mass (kg)")) + "  " + f"{'COM (mm)':>24}"
                      + "  changed  contact  status")
    for stop in [*edges, len(samples)]:
        if stop <= start:
            continue
        events = tracker.update(samples.select(slice(start, stop)))
        start = stop
        changed = any(e.kind == CHANGE for e in events)
        contact = tracker.contact or any(e.kind == CONTACT for e in events)
        try:
            est = tracker.estimate()
            mass: float | None = est.params.mass
            com: list[float] | None = [float(c) for c in est.params.com]
            status = check_handover(est, inertia=True, force=force).status
        except (InsufficientData, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            mass, com, status = None, None, f"no estimate: {_one_line(exc)}"
        line = dict(zip(TRACK_COLUMNS, (float(t[stop - 1]), mass, com, changed, contact, status)))
        if console is None:
            sys.stdout.write(json.dumps(line) + "\n")
        else:
            com_text = "-" if com is None else " ".join(f"{1e3 * c:+7.1f}" for c in com)
            mass_text = "-" if mass is None else f"{mass:9.4f}"
            console.print(f"{line['t']:9.2f} {mass_text:>9}  {com_text:>24}  {'CHANGE' if changed else '':>7}  "
                          f"{'contact' if contact else '':>7}  {status.split(':')[0]}", markup=False, highlight=False)
    return tracker


def run(args: argparse.Namespace) -> int:
    """Run ``estimate`` with the parsed ``args``; return the exit status."""
    try:
        loaded = read_samples(args.samples)
    except SamplesFileError as exc:
        raise CommandError(str(exc)) from None
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as exc:  # whatever the reader did not name
        raise CommandError(f"{args.samples}: not a readable CSV or NPZ sample table ({_one_line(exc)})") from None
    overrides = setting_overrides(args, (*ESTIMATOR_OPTION_SETTINGS, *CLOUD_OPTION_SETTINGS))
    settings = Settings.from_dict({"estimate_bias": args.bias, "track_payload": args.track, **overrides})
    shape = shape_from_args(args, settings.cloud_max_distance)
    cls = ESTIMATORS[settings.estimator]
    if cls.needs_points and shape is None:
        raise CommandError(f"--estimator {settings.estimator} needs the payload's shape: give --shape or --points")
    try:
        points = estimator_points(settings, shape) if shape is not None else None
        if isinstance(points, SampledShape) and args.points:  # a point cloud: merged down to its budget
            points = voxel_downsample(points, settings.cloud_max_points)
        if isinstance(points, np.ndarray) and len(points) > settings.max_points:
            from payload_estimator.core.shapes import downsample_evenly

            points = downsample_evenly(points, settings.max_points)
        estimator = build_estimator(settings, points)
    except ShapeError as exc:  # the shape as sampled: the options that say how
        given = f"--shape {args.shape}" if args.shape else f"--points {args.points}"
        if args.point_density is not None:
            given += f" --point-density {args.point_density:g}"
        raise CommandError(f"{given}: {exc}") from None
    except ValueError as exc:
        raise CommandError(f"--estimator {settings.estimator}: {exc}") from None
    if isinstance(estimator, PayloadTracker):
        estimator = _track(estimator, loaded.samples, args.every, args.json, args.force)
    try:
        if not args.track:
            estimator.update(loaded.samples)
        est = estimator.estimate()
    except InsufficientData as exc:
        raise CommandError(f"too few samples: {_one_line(exc)}") from None
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        raise CommandError(f"--estimator {settings.estimator}: no estimate from these samples "
                           f"({_one_line(exc)})") from None
    handover = check_handover(est, inertia=True, force=args.force)

    if args.json:
        out = est.to_dict()
        out["status"] = handover.status
        out["forced"] = handover.forced
        out["skipped_rows"] = loaded.skipped_rows
        out["n_points"] = None if points is None else int(len(_positions(points)))
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 0

    from payload_estimator.commands.common import make_console
    from payload_estimator.outputs.report import estimate_table, next_steps, quality_table
    from payload_estimator.outputs.urdf import urdf_inertial

    console = make_console()
    if loaded.skipped_rows:
        console.print(f"[yellow]skipped {loaded.skipped_rows} row(s) with NaN/inf or out-of-range values[/]")
    console.print(estimate_table(est))
    console.print(quality_table(est, verbose=args.verbose))
    for line in next_steps(est):
        console.print(line, markup=False, highlight=False)
    if est.model_fit.checked and not est.model_fit.good:
        console.print(f"[yellow]warning: the model does not fit the data: {est.model_fit.cause}[/]")
    if not handover:
        console.print(f"[yellow]no URDF fragment: {'; '.join(handover.reasons)}"
                      + ("" if handover.hard else " (--force prints it anyway, marked)") + "[/]")
        return 0
    note = f"FORCED: {'; '.join(handover.reasons)}" if handover.forced else ""
    console.print("URDF fragment (sensor frame):")
    console.print(urdf_inertial(est.params, frame="sensor", note=note), markup=False, highlight=False,
                  soft_wrap=True)
    return 0
