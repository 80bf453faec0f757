"""``payload-estimator replay BAG``: a rosbag2 recording through the node's own pipeline, without ROS.

The messages of the configured topics are read in record order and fed to
the same :class:`~payload_estimator.pipeline.stream.EstimationStream` the ROS
node builds from the same parameters (:func:`~payload_estimator.pipeline.build.build_stream`,
:mod:`payload_estimator.io.ros_inbound`), with the record time as the
receive time, through the node's own loop (:class:`~payload_estimator.pipeline.driver.Driver`):
the stream processes every 10 ms and an estimate is taken at ``publish_rate_hz``.

Settings: ``--config`` (a ROS parameter file such as ``config/panda.yaml``) or
the ``--robot`` preset; by default the robot is recognised from its
description. ``--estimator``, ``--shape`` and ``--set name=value`` override any
parameter. The robot model is ``--urdf FILE``, else the bag's
``/robot_description`` when recorded (unless ``use_builtin_description``), else
the package's own URDF of the preset (panda when nothing says otherwise). An
arm that is no built-in preset works from its description alone: name its
flange and topics, e.g. ``--urdf ur5e.urdf --set flange_frame=tool0
--set joint_states_topic=/joint_states --set wrench_topic=/ft/wrench``.

At the end: the estimate (beside the truth and paper 004's errors when the
bag has ``/payload_estimator/ground_truth``, as simulated bags do), the input
problems counted, the URDF ``<inertial>`` in the flange frame and a PNG of
the convergence in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from payload_estimator.commands import CommandError

__all__ = ["add_parser", "run", "detect_robot"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from payload_estimator.core.estimators import ESTIMATORS
    from payload_estimator.robots import ROBOT_NAMES

    p = sub.add_parser(
        "replay",
        help="estimate the payload from a rosbag2 recording (mcap or sqlite3), without ROS",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory (or a single .mcap/.db3 file)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--robot", choices=ROBOT_NAMES,
                        help="robot preset (default: recognised from the robot description)")
    source.add_argument("--config", metavar="YAML", help="ROS 2 parameter file, e.g. config/panda.yaml")
    p.add_argument("--urdf", metavar="FILE", help="robot description (default: the bag's /robot_description)")
    p.add_argument("--estimator", choices=list(ESTIMATORS), help="estimator (default: the setting's)")
    p.add_argument("--shape", metavar="SPEC", help="payload shape for PMD, e.g. box:0.1,0.1,0.2@0,0,0.1")
    p.add_argument("--set", metavar="NAME=VALUE", action="append", default=[], dest="overrides",
                   help="override a parameter (repeatable), e.g. --set cutoff_hz=8")
    p.add_argument("--out", default="payload_replay", help="directory for the plot and the URDF fragment")
    p.add_argument("--zero-phase", action="store_true",
                   help="offline: filter the whole recording forward and backward (no phase lag) before "
                        "estimating, instead of the node's causal pipeline; one estimate at the end")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of tables")
    return p


# ------------------------------------------------------------------- settings


def detect_robot(urdf: str | None) -> str | None:
    """The built-in preset a robot description belongs to (:func:`~payload_estimator.robots.detect_preset`)."""
    from payload_estimator.robots import ROBOT_NAMES, detect_preset

    return detect_preset(urdf, ROBOT_NAMES)


def _parse_override(text: str) -> tuple[str, Any]:
    import yaml

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise CommandError(f"--set expects NAME=VALUE, got {text!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return name.strip(), "" if parsed is None else parsed


def _settings(args: argparse.Namespace, urdf: str | None, custom: dict[str, str]):
    """(settings, where they came from)."""
    import yaml

    from payload_estimator.core.shapes import ShapeError, parse_shape_spec
    from payload_estimator.io.bag import CUSTOM_DATA_PREFIX
    from payload_estimator.settings import Settings, load_parameters_yaml, settings_for_robot

    try:
        if args.config:
            base, origin = load_parameters_yaml(args.config), f"config {args.config}"
        else:
            robot = args.robot or detect_robot(urdf)
            source = "--urdf" if args.urdf else "the bag's robot_description"
            origin = f"{robot} preset" + ("" if args.robot else f" (from {source})")
            if robot is None and urdf is None:
                robot, origin = "panda", "panda preset (no robot description)"
            elif robot is None:
                robot, origin = "", "no preset (an arm known from its robot description)"
            base = settings_for_robot(robot)
    except FileNotFoundError as exc:
        raise CommandError(f"--config: {exc.filename or exc}: no such file") from None
    except (ValueError, OSError, yaml.YAMLError) as exc:
        raise CommandError(f"{exc}") from None
    overrides = dict(_parse_override(text) for text in args.overrides)
    if args.estimator:
        overrides["estimator"] = args.estimator
    if args.shape:
        overrides["payload_shape"] = args.shape
    hint = custom.get(CUSTOM_DATA_PREFIX + "payload_shape")
    if hint and not args.config and "payload_shape" not in overrides:
        overrides["payload_shape"] = hint  # a simulated bag knows its payload's envelope
        origin += ", payload shape from the bag"
    for name, value in overrides.items():  # one at a time, so an error names the setting
        try:
            Settings.from_dict({name: value})
        except (ValueError, TypeError) as exc:
            raise CommandError(str(exc) if name in str(exc) else f"{name}={value!r}: {exc}") from None
    try:
        settings = Settings.from_dict({**base.to_dict(), **overrides})
        if settings.estimator == "pmd":
            parse_shape_spec(settings.payload_shape)
    except (ValueError, ShapeError, TypeError) as exc:
        raise CommandError(str(exc)) from None
    return settings, origin


def _first_imu_frame(bag: Path, settings) -> str | None:
    from payload_estimator.io.bag import read_bag

    for item in read_bag(bag, settings):
        if item.kind == "imu":
            return str(item.msg.header.frame_id).lstrip("/") or None
    return None


# ----------------------------------------------------------------------- truth


def _truth_in_sensor_frame(truth, stream):
    """The ground truth moved into the stream's sensor frame (None if it cannot be)."""
    sensor = stream.config.sensor_frame
    if truth.frame_id in ("", sensor):
        return truth.params
    try:
        R, p = stream.kinematics.rigid_pose(truth.frame_id, sensor)
    except ValueError:
        return None  # unknown, or not rigidly attached to the sensor frame
    return truth.params.transformed(R, p)


def _bbox_lengths(settings) -> np.ndarray | None:
    """Side lengths of the configured payload shape's bounding box (paper 004's error scale), m."""
    from payload_estimator.core.shapes import ShapeError, parse_shape_spec

    try:
        lo, hi = parse_shape_spec(settings.payload_shape).bounds()
    except (ShapeError, ValueError, OSError):
        return None
    lengths = np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)
    return lengths if np.all(lengths > 0) else None


# ------------------------------------------------------------------------- run


def _read_urdf(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"--urdf: {exc.strerror or exc}: {path}") from None


def run(args: argparse.Namespace) -> int:
    from payload_estimator.commands.common import console_and_progress
    from payload_estimator.core.estimators import ESTIMATORS
    from payload_estimator.core.history import EstimateHistory
    from payload_estimator.io.bag import BagError, bag_ground_truth, bag_info, bag_robot_description, read_bag
    from payload_estimator.io.ros_inbound import feed_many
    from payload_estimator.outputs.run_report import RunReport
    from payload_estimator.pipeline.build import build_stream, builtin_description
    from payload_estimator.pipeline.driver import Driver

    bag = Path(args.bag)
    if not bag.exists():
        raise CommandError(f"{bag}: no such bag")
    given_urdf = _read_urdf(args.urdf) if args.urdf else None
    try:
        info = bag_info(bag)
        recorded_urdf = given_urdf or bag_robot_description(bag)
        settings, origin = _settings(args, recorded_urdf, info.custom_data)
        messages = read_bag(bag, settings)
        imu_frame = (_first_imu_frame(bag, settings)
                     if settings.motion_source == "imu" and not settings.imu_frame else None)
    except BagError as exc:
        raise CommandError(str(exc)) from None
    use_recorded = recorded_urdf is not None and not settings.use_builtin_description
    try:
        urdf = recorded_urdf if use_recorded and recorded_urdf is not None else builtin_description(settings)
        stream = build_stream(settings, urdf, imu_frame=imu_frame, zero_phase=args.zero_phase)
    except ValueError as exc:
        raise CommandError(f"cannot build the pipeline: {exc}") from None

    console, progress_display = console_and_progress(args.json)
    counts = {"joint_states": 0, "wrench": 0, "imu": 0}
    accepted = dict(counts)
    t_start = time.perf_counter()

    def feed(stream_, items: list) -> None:
        for kind, n in feed_many(stream_, items).items():
            accepted[kind] += n

    with progress_display as progress:
        task = progress.add_task(f"replaying {bag.name}", total=max(info.duration, 1e-9), status="")

        def on_estimate(out) -> None:
            flag = "converged" if out.converged else out.reason
            progress.update(task, completed=out.t - (driver.t0 or 0.0), status=f"m={out.estimate.mass:.3f} kg  {flag}")

        history = EstimateHistory()
        driver = Driver(stream, feed, publish_period_s=1.0 / settings.publish_rate_hz,
                        history=history, on_estimate=on_estimate)
        try:
            for kind, msg, t in messages:
                counts[kind] += 1
                driver.push(t, (kind, msg, t))
        except BagError as exc:
            raise CommandError(str(exc)) from None
        if driver.t0 is None:
            raise CommandError(f"{bag}: no messages on the input topics")
        driver.finish()
        if args.zero_phase:
            try:
                stream.finish()
            except ValueError as exc:
                raise CommandError(f"zero-phase processing failed: {exc}") from None
            driver.take_estimate(driver.last_time)

    final = stream.last
    if final is None:
        problems = ", ".join(f"{n} {r}" for r, n in stream.health.counts.items()) or "none counted"
        raise CommandError(f"no estimate: the pipeline produced no samples (input problems: {problems})")
    sensor = stream.config.sensor_frame
    flange = stream.config.flange_frame or sensor
    recorded_truth = bag_ground_truth(bag)
    truth = _truth_in_sensor_frame(recorded_truth, stream) if recorded_truth is not None else None
    robot_name = settings.robot or "robot"
    report = RunReport(final, history, sensor, flange, stream.health.counts,
                       title=f"{bag.name}: {robot_name}, {settings.estimator}", truth=truth,
                       bbox_lengths=_bbox_lengths(settings), wall_time_s=time.perf_counter() - t_start)
    report.write(args.out, plot=not args.no_plot)
    if args.json:
        summary = report.summary(
            bag=str(bag), robot=settings.robot, settings=origin, estimator=settings.estimator,
            payload_shape=settings.payload_shape if ESTIMATORS[settings.estimator].needs_points else None,
            robot_description="urdf file" if given_urdf else ("bag" if use_recorded else "builtin"),
            duration_s=info.duration, messages=counts, accepted=accepted,
            input_problems_by_stream=stream.health.snapshot()["counts_by_stream"])
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    report.print(console, headline=f"{bag}: {info.duration:.1f} s; settings: {origin}; "
                 + ", ".join(f"{n} {k}" for k, n in counts.items() if n), what="of the recording")
    return 0
