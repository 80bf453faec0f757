"""``payload-estimator replay BAG``: a rosbag2 recording through the node's own pipeline, without ROS.

The messages of the configured topics are read in record order and fed to
the same estimation pipeline the ROS node builds from the same parameters,
with the record time as the receive time, through the node's own loop: the
pipeline processes every 10 ms and an estimate is taken at ``publish_rate_hz``.

Settings: ``--config`` (a ROS parameter file such as ``config/panda.yaml``) or
the ``--robot`` preset; by default the robot is recognised from its
description, else from the topics recorded (each preset has its own), else
from the joint names recorded.
``--estimator``, ``--shape`` and ``--set name=value`` override any parameter.
The robot model is ``--urdf FILE``, else the bag's ``/robot_description`` when
recorded (unless ``use_builtin_description``), else the package's own URDF of
the preset (panda when nothing says otherwise; a one-line warning says so). An
arm that is no built-in preset works from its description alone: name its
flange and topics, e.g. ``--urdf ur5e.urdf --set flange_frame=tool0
--set joint_states_topic=/joint_states --set wrench_topic=/ft/wrench``.

Topics the settings name but the bag lacks are found by their message types: one
sensor_msgs/JointState topic (naming the arm's joints) and one geometry_msgs/WrenchStamped
topic are taken, read as an F/T sensor's in its messages' frame, and one line gives the
equivalent --set settings. A sensor frame the robot description lacks stops the replay with
one line naming every setting to give, its mounting on the flange (sensor_xyz, sensor_rpy)
left for the user to fill in: no bag holds it. Several topics of a type: one line lists them.

Without a wrist sensor, ``--set wrench_source=joint_torques`` takes the payload from the joint
states' efforts: the preset's joint-torque variant (``config/<robot>_joint_torques.yaml``: no
wrench topic read, the estimate at the flange) with ``--set arm_calibration=CAL.yaml`` from
``payload-estimator calibrate`` (empty: the description's inertias, no friction; rough). Joint
states without an effort per arm joint, a calibration of another robot or joint set, or efforts that
are not torques (currents read as N·m, a flipped sign: checked once 2 s of samples tell) stop
with one line; what the calibration did not determine, and joints faster than it saw, are warnings.
``--json`` has ``estimate_in_flange`` (and ``truth_in_flange``) for every wrench source.

A camera's ``sensor_msgs/PointCloud2`` of the held payload (``--cloud-topic TOPIC``; without it, the bag's
only PointCloud2 topic, said in the output) becomes PMD's shape at each cloud's stamp, as in the node: placed
from the joint states recorded (a frame the URDF lacks from the bag's ``/tf_static``), checked, completed,
merged; ``--json`` has ``clouds`` (applied, refused, the last refusal, the shape at the end).

Any rosbag2 a user records is read: split
into several files, without ``metadata.yaml``, with other topics and custom
message types; what had to be worked around is printed as one warning line
each (and listed under ``bag_warnings`` with ``--json``). A path that is not a
readable bag, a bad ``--config``, an unknown ``--robot`` or an ``--out`` that
cannot hold files stop with one line and exit status 2, before the replay.
``--out`` defaults to ``$XDG_CACHE_HOME/payload_estimator/replay`` (``~/.cache``).

At the end: the estimate (beside the truth and Nadeau et al.'s errors when the
bag has ``/payload_estimator/ground_truth``, as simulated bags do, or
``/payload_sim/truth``, as a ``ros2 bag record`` of the simulator node does), the input
problems counted, the URDF ``<inertial>`` in the flange frame and a PNG of
the convergence in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import config_error, parse_override, read_urdf
from payload_estimator.core.tracking import CHANGE, PayloadTracker
from payload_estimator.settings import PRESET_VARIANTS, MotionSource, WrenchSource

__all__ = ["add_parser", "run", "detect_robot", "robot_from_topics", "robot_from_joint_names"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``replay`` command and its options to ``sub``; return its parser."""
    from payload_estimator.commands.common import add_out_dir_argument
    from payload_estimator.commands.options import add_estimator_options
    from payload_estimator.commands.replay_clouds import add_cloud_argument
    from payload_estimator.robots import ROBOT_NAMES

    p = sub.add_parser(
        "replay",
        help="estimate the payload from a rosbag2 recording (mcap or sqlite3), without ROS",
        description=__doc__,
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory (or a single .mcap/.db3 file)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--robot", choices=ROBOT_NAMES, metavar="NAME",
                        help=f"robot preset: {', '.join(ROBOT_NAMES)} (default: recognised from the robot "
                             "description, else from the topics recorded)")
    source.add_argument("--config", metavar="YAML", help="ROS 2 parameter file, e.g. config/panda.yaml")
    p.add_argument("--urdf", metavar="FILE", help="robot description (default: the bag's /robot_description)")
    add_estimator_options(p, default="the setting's")
    p.add_argument("--shape", metavar="SPEC",
                   help="payload shape for PMD (the setting payload_shape), e.g. box:0.1,0.1,0.2@0,0,0.1, or "
                        "points:FILE, a point cloud (.ply, .pcd, CSV or .npy; as estimate --points; its points "
                        "within cloud_max_distance of the sensor origin: --set cloud_max_distance=...)")
    p.add_argument("--set", metavar="NAME=VALUE", action="append", default=[], dest="overrides",
                   help="override a parameter (repeatable), e.g. --set cutoff_hz=8")
    add_cloud_argument(p)
    add_out_dir_argument(p, "replay")
    p.add_argument("--zero-phase", action="store_true",
                   help="offline: filter the whole recording forward and backward (no phase lag) before "
                        "estimating, instead of the node's causal pipeline; one estimate at the end")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    p.add_argument("--force", action="store_true",
                   help="write the URDF fragment even when the estimate may not be handed over (physically "
                        "inconsistent, a poor model fit, mass, COM or inertia not determined by the data); "
                        "it says so in a comment, and the JSON status says forced")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of tables")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also print the figures behind the model fit and the motion's dynamism (explained in "
                        "docs/trust.md)")
    p.add_argument("--track", action=argparse.BooleanOptionalAction, default=None,
                   help="follow the payload (the setting track_payload, on by default): contacts held out, "
                        "payload changes detected and the estimate restarted; the summary lists the events "
                        "(times from the bag's start) and counts. --no-track: a plain estimator that takes "
                        "every sample")
    return p


# ------------------------------------------------------------------- settings


def detect_robot(urdf: str | None) -> str | None:
    """The built-in preset a robot description belongs to (:func:`~payload_estimator.robots.detect_preset`)."""
    from payload_estimator.robots import ROBOT_NAMES, detect_preset

    return detect_preset(urdf, ROBOT_NAMES)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def robot_from_topics(bag: Path, topics: dict[str, tuple[str, int]], wrench: bool = True) -> str | None:
    """Return the built-in preset whose joint-state and wrench topics the bag holds, or None.

    Only the joint states without ``wrench`` (the wrench from joint torques);
    :func:`~payload_estimator.robots.detection.detect_preset_from_topics`, reading joint names
    from the bag."""
    from payload_estimator.io.bag import JOINT_STATE_TYPE, bag_first_message
    from payload_estimator.robots.detection import detect_preset_from_topics

    def joint_names_on(topic: str) -> list[str]:
        msg = bag_first_message(bag, topic, JOINT_STATE_TYPE)
        return [] if msg is None else [str(n) for n in msg.name]

    return detect_preset_from_topics(set(topics), joint_names_on, wrench=wrench)


def robot_from_joint_names(bag: Path, topics: dict[str, tuple[str, int]]) -> str | None:
    """The built-in preset whose arm joints the bag's joint states name (its vendor's names), or None.

    The first message of every ``sensor_msgs/JointState`` topic is read; None unless they agree
    on one robot (:func:`~payload_estimator.robots.detect_preset`'s joint patterns).

    Raises:
        CommandError: the names fit several robots alike (the UR5e and UR10e name their joints alike):
            ``--robot`` must say which."""
    from payload_estimator.io.bag import JOINT_STATE_TYPE, bag_first_message
    from payload_estimator.robots import ROBOT_NAMES, ROBOTS

    found = set()
    for topic, (msgtype, _) in sorted(topics.items()):
        if msgtype != JOINT_STATE_TYPE:
            continue
        msg = bag_first_message(bag, topic, JOINT_STATE_TYPE)
        names = set() if msg is None else {str(n) for n in msg.name}
        fits = [(ROBOTS[r].n_joints, r) for r in ROBOT_NAMES
                if (pattern := ROBOTS[r].detection) is not None and pattern.matches_joints(names)
                and set(ROBOTS[r].joint_names) <= names]
        if fits:
            most = max(n for n, _ in fits)
            best = sorted(r for n, r in fits if n == most)
            if len(best) > 1:
                raise CommandError(f"the joint states on {topic} fit {' and '.join(best)} alike: "
                                   "give --robot (or record /robot_description)")
            found.add(best[0])
    return found.pop() if len(found) == 1 else None


def _settings(args: argparse.Namespace, urdf: str | None, info, bag: Path, warnings: list[str]):
    """(settings, where they came from, how the robot was chosen).

    A line goes to ``warnings`` when the inputs were found by their types
    (:func:`~payload_estimator.commands.bag_topics.find_inputs`)."""
    import yaml

    from payload_estimator.commands.bag_topics import find_inputs
    from payload_estimator.commands.options import ESTIMATOR_OPTION_SETTINGS, setting_overrides
    from payload_estimator.core.estimators import ESTIMATORS
    from payload_estimator.core.shapes import ShapeError, parse_shape_spec, payload_points
    from payload_estimator.io.bag import CUSTOM_DATA_PREFIX
    from payload_estimator.settings import Settings, load_parameters_yaml, settings_for_robot

    overrides = dict(parse_override(text) for text in args.overrides)
    overrides.update(setting_overrides(args, ESTIMATOR_OPTION_SETTINGS))
    # no wrist sensor: a preset's joint-torque variant (config/<robot>_joint_torques.yaml), estimate at the flange
    joint_torques = _source_override(overrides) is WrenchSource.JOINT_TORQUES
    if args.config:
        try:
            base, origin = load_parameters_yaml(args.config), f"config {args.config}"
        except (ValueError, TypeError, OSError, yaml.YAMLError) as exc:
            raise config_error(args.config, exc) from None
        how = f"named in {args.config}"
    else:
        robot = args.robot or detect_robot(urdf)
        source = "--urdf" if args.urdf else "the bag's robot_description"
        how = "given by --robot" if args.robot else f"from {source}"
        if robot is None and urdf is None:
            robot = robot_from_topics(bag, info.topics, wrench=not joint_torques)
            how = "from the topics recorded"
            if robot is None:
                robot = robot_from_joint_names(bag, info.topics)
                how = ("from the joint names recorded" if robot is not None
                       else "the default: no robot description, no preset's topics or joint names recorded")
            robot = robot or "panda"
        elif robot is None:
            robot, how = "", "an arm known from its robot description"
        variant = PRESET_VARIANTS[1] if joint_torques and robot else ""
        origin = ((f"{robot}{' joint-torque' if variant else ''} preset" + ("" if args.robot else f" ({how})"))
                  if robot else f"no preset ({how})")
        base = settings_for_robot(robot, variant)
    if args.shape:
        overrides["payload_shape"] = args.shape
    if args.track is not None:
        overrides["track_payload"] = args.track
    hint = info.custom_data.get(CUSTOM_DATA_PREFIX + "payload_shape")
    if hint and not args.config and "payload_shape" not in overrides:
        overrides["payload_shape"] = hint  # a simulated bag knows its payload's envelope
        origin += ", payload shape from the bag"
    for name, value in overrides.items():  # one at a time, so an error names the setting
        try:
            Settings.from_dict({name: value})
        except (ValueError, TypeError) as exc:
            raise CommandError(_one_line(exc) if name in str(exc) else f"{name}={value!r}: {_one_line(exc)}") from None
    try:
        settings = Settings.from_dict({**base.to_dict(), **overrides})
        if not args.config:  # the configured topics not recorded: the bag's, by their types
            found, line = find_inputs(bag, info.topics, settings, set(overrides), urdf)
            if found:
                settings = Settings.from_dict({**base.to_dict(), **overrides, **found})
                origin += ", inputs found by their types"
            if line:
                warnings.append(line)
        if (ESTIMATORS[settings.estimator].needs_points
                and payload_points(settings.payload_shape, settings.cloud_max_distance) is None):
            parse_shape_spec(settings.payload_shape)
    except (ValueError, ShapeError, TypeError) as exc:
        raise CommandError(_one_line(exc)) from None
    return settings, origin, how


def _source_override(overrides: dict) -> WrenchSource | None:
    """Return the wrench source a ``--set wrench_source=...`` names.

    None: none, or not a source's name (the settings' check reports the latter)."""
    try:
        return WrenchSource(str(overrides["wrench_source"]))
    except (KeyError, ValueError):
        return None


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
    """Side lengths of the configured payload shape's bounding box (Nadeau et al.'s error scale), m."""
    from payload_estimator.core.shapes import ShapeError, parse_shape_spec, payload_points

    try:
        cloud = payload_points(settings.payload_shape, settings.cloud_max_distance)
        if cloud is not None:
            lo, hi = cloud.points_in_sensor.min(axis=0), cloud.points_in_sensor.max(axis=0)
        else:
            lo, hi = parse_shape_spec(settings.payload_shape).bounds()
    except (ShapeError, ValueError, OSError):
        return None
    lengths = np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)
    return lengths if np.all(lengths > 0) else None


# ------------------------------------------------------------------------- run


def _tracking(stream, t0: float) -> dict | None:
    """The payload tracker's events (times from the bag's start) and counts, when it ran."""
    tracker = stream.estimator
    if not isinstance(tracker, PayloadTracker):
        return None
    events = [{"kind": e.kind, "t_start": e.t_start - t0, "t_decided": e.t_decided - t0,
               "mass_change": e.mass_change if e.kind == CHANGE and np.isfinite(e.mass_change) else None}
              for e in tracker.events]
    return {**asdict(tracker.counts), "events": events}


def _warn(line: str) -> None:
    print(f"payload-estimator replay: warning: {line}", file=sys.stderr)


def _check_efforts(bag: Path, topic: str, joint_names) -> None:
    """The wrench from joint torques needs an effort per arm joint: checked on the first joint state."""
    from payload_estimator.io.bag import JOINT_STATE_TYPE, BagError, bag_first_message, effort_problem

    try:
        msg = bag_first_message(bag, topic, JOINT_STATE_TYPE)
    except BagError as exc:
        raise CommandError(_one_line(exc)) from None
    problem = None if msg is None else effort_problem(msg, joint_names)
    if problem is not None:
        raise CommandError(f"{bag}: the joint states on {topic} {problem}; the wrench source joint_torques needs "
                           "each arm joint's effort (a wrist F/T sensor's wrench: wrench_source=ft_sensor)")


def run(args: argparse.Namespace) -> int:
    """Replay the bag; warnings (one line each) are printed with the result, or folded into the one error line."""
    warnings: list[str] = []
    try:
        return _replay(args, warnings)
    except CommandError as exc:
        if warnings:
            raise CommandError(f"{exc} [warnings: {'; '.join(warnings)}]") from None
        raise


def _replay(args: argparse.Namespace, warnings: list[str]) -> int:
    """Read, build, play and report (each step stops with one line on bad input)."""
    import payload_estimator.io.bag  # noqa: F401 (rosbags: without the sim extra, say so before anything else)

    bag = Path(args.bag)
    if not bag.exists():
        raise CommandError(f"{bag}: no such bag")
    setup = _set_up(args, bag, warnings)
    run_ = _play(args, bag, setup, warnings)
    return _output(args, bag, setup, run_, warnings)


@dataclass
class _Setup:
    """What the replay runs: the bag's contents, the settings and the stream built from them."""

    info: Any
    settings: Any
    origin: str
    messages: Any
    stream: Any
    given_urdf: bool
    use_recorded: bool
    out_dir: Path
    cloud_how: str = ""
    """How the cloud topic was chosen ("" when given or none)."""


def _set_up(args: argparse.Namespace, bag: Path, warnings: list[str]) -> _Setup:
    """The bag read, the settings resolved and the stream built through the front door."""
    from payload_estimator.commands.replay_clouds import cloud_topic_setting
    from payload_estimator.files import check_writable_dir
    from payload_estimator.io.bag import (
        ROBOT_DESCRIPTION_TOPIC,
        BagError,
        bag_info,
        bag_robot_description,
        bag_static_frames,
        read_bag,
    )
    from payload_estimator.pipeline.build import build_stream, builtin_description
    from payload_estimator.settings import Settings

    given_urdf = read_urdf(args.urdf) if args.urdf else None
    try:
        info = bag_info(bag)
        warnings += info.notes
        recorded_urdf = bag_robot_description(bag) if given_urdf is None else None
        settings, origin, how = _settings(args, given_urdf or recorded_urdf, info, bag, warnings)
        cloud_topic, cloud_how = cloud_topic_setting(args, settings, info.topics)
        settings = Settings.from_dict({**settings.to_dict(), "cloud_topic": cloud_topic})
        messages = read_bag(bag, settings)
        imu_frame = (_first_imu_frame(bag, settings)
                     if settings.motion_source is MotionSource.IMU and not settings.imu_frame else None)
    except BagError as exc:
        raise CommandError(_one_line(exc)) from None
    description = given_urdf or recorded_urdf
    use_recorded = description is not None and not settings.use_builtin_description
    if description is None and not settings.robot:
        raise CommandError(f"{bag} has no {ROBOT_DESCRIPTION_TOPIC} and the settings name no built-in robot: "
                           "give the arm's URDF with --urdf FILE")
    try:
        urdf = description if use_recorded and description is not None else builtin_description(settings)
        stream = build_stream(settings, urdf, imu_frame=imu_frame, zero_phase=args.zero_phase)
        if cloud_topic:  # a camera's frame the URDF lacks: from the bag's /tf_static
            stream.clouds.frame_lookup = bag_static_frames(bag).lookup
    except (ValueError, BagError) as exc:
        raise CommandError(f"cannot build the pipeline: {_one_line(exc)}") from None
    if stream.needs_efforts:
        _check_efforts(bag, settings.joint_states_topic, stream.joint_names)
        source: Any = stream.wrench_input  # joint torques: the efforts' source, with the arm model
        calibration = source.torque_wrench.dynamics.calibration
        if calibration is not None:  # what the calibration did not determine, the estimate carries
            warnings += [f"{settings.arm_calibration}: {caveat}" for caveat in calibration.caveats()]
    if description is None and not settings.use_builtin_description:
        warnings.append(f"no {ROBOT_DESCRIPTION_TOPIC} in the bag: using the package's URDF of the "
                        f"{settings.robot} preset ({how}); give --urdf FILE if the robot recorded differs")
    try:  # checked while the options were parsed; created now, before the replay
        out_dir = check_writable_dir(args.out)
    except OSError as exc:
        raise CommandError(f"--out: {_one_line(exc)}") from None
    return _Setup(info, settings, origin, messages, stream, given_urdf is not None, use_recorded, out_dir, cloud_how)


def _play(args: argparse.Namespace, bag: Path, setup: _Setup, warnings: list[str]):
    """Every message through the node's loop; returns (driver, history, counts, accepted, wall time)."""
    from payload_estimator.commands.common import console_and_progress
    from payload_estimator.core.history import EstimateHistory
    from payload_estimator.io.bag import BagError, input_topics
    from payload_estimator.io.ros_inbound import feed_many, take_clouds
    from payload_estimator.pipeline.driver import Driver

    stream, settings = setup.stream, setup.settings
    _, progress_display = console_and_progress(args.json)
    counts = {"joint_states": 0, "wrench": 0, "imu": 0}
    accepted = dict(counts)
    if settings.cloud_topic:
        counts["cloud"] = 0  # read; what became of them: the shape's counts (--json: clouds)
    t_start = time.perf_counter()

    def feed(stream_, items: list) -> None:
        items = take_clouds(stream_, items)  # clouds: applied at their stamps one turn later, as in the node
        for kind, n in feed_many(stream_, items).items():
            accepted[kind] += n

    with progress_display as progress:
        task = progress.add_task(f"replaying {bag.name}", total=max(setup.info.duration, 1e-9), status="")

        def on_estimate(out) -> None:
            flag = "converged" if out.converged else out.reason
            progress.update(task, completed=out.t - (driver.t0 or 0.0), status=f"m={out.estimate.mass:.3f} kg  {flag}")

        history = EstimateHistory()
        driver = Driver(stream, feed, publish_period_s=1.0 / settings.publish_rate_hz,
                        history=history, on_estimate=on_estimate)
        try:
            for kind, msg, t in setup.messages:
                counts[kind] += 1
                driver.push(t, (kind, msg, t))
        except BagError as exc:
            raise CommandError(_one_line(exc)) from None
        warnings += setup.messages.notes
        if driver.t0 is None:
            raise CommandError(f"{bag}: no readable messages on the input topics "
                               f"({', '.join(input_topics(settings))})")
        required = ("joint_states", "wrench") + (("imu",) if settings.motion_source is MotionSource.IMU else ())
        for kind, topic in ((k, t) for t, k in input_topics(settings).items() if k in required):
            if counts[kind] == 0:
                raise CommandError(f"{bag}: no readable messages on {topic}")
        take_clouds(stream, [])  # the last turn's clouds
        driver.finish()
        if args.zero_phase:
            try:
                stream.finish()
            except ValueError as exc:
                raise CommandError(f"zero-phase processing failed: {_one_line(exc)}") from None
            driver.take_estimate(driver.last_time)
    return driver, history, counts, accepted, t_start


def _output(args: argparse.Namespace, bag: Path, setup: _Setup, played, warnings: list[str]) -> int:
    """The report: truth beside estimate when the bag has it, files in ``--out``, JSON or tables."""
    from payload_estimator.commands.common import console_and_progress
    from payload_estimator.io.bag import BagError, bag_ground_truth
    from payload_estimator.outputs.run_report import RunReport

    driver, history, counts, accepted, t_start = played
    stream, settings = setup.stream, setup.settings
    warnings += stream.wrench_input.caveats()  # e.g. joints faster than the arm calibration saw
    final = stream.last
    refusal = stream.wrench_input.refusal()
    if final is None and refusal:  # e.g. efforts that are currents read as N·m (the stream's check)
        raise CommandError(f"no estimate: {refusal}")
    if final is None:
        problems = ", ".join(f"{n} {r}" for r, n in stream.health.counts.items()) or "none counted"
        raise CommandError(f"no estimate: the pipeline produced no samples (input problems: {problems})")
    sensor = stream.config.sensor_frame
    try:
        recorded_truth = bag_ground_truth(bag)
    except BagError as exc:  # the bag was read a moment ago: only a file changing under us gets here
        raise CommandError(_one_line(exc)) from None
    truth = _truth_in_sensor_frame(recorded_truth, stream) if recorded_truth is not None else None
    report = RunReport(final, history, sensor, stream.config.flange_frame or sensor, stream.health.counts,
                       title=f"{bag.name}: {settings.robot or 'robot'}, {settings.estimator}", truth=truth,
                       bbox_lengths=_bbox_lengths(settings), wall_time_s=time.perf_counter() - t_start,
                       force=args.force)
    try:
        report.write(setup.out_dir, plot=not args.no_plot)
    except OSError as exc:  # checked writable before the replay: a full disk, a directory removed meanwhile
        raise CommandError(f"--out: cannot write the results: {_one_line(exc)}") from None
    for line in warnings:
        _warn(line)
    tracking = _tracking(stream, driver.t0 or 0.0)
    if args.json:
        _print_json(bag, setup, report, truth, counts, accepted, tracking, warnings)
        return 0
    console, _ = console_and_progress(args.json)
    _print_tables(console, bag, setup, report, counts, tracking, args.verbose)
    return 0


def _print_json(bag: Path, setup: _Setup, report, truth, counts: dict, accepted: dict, tracking: dict | None,
                warnings: list[str]) -> None:
    from payload_estimator.commands.replay_clouds import cloud_summary
    from payload_estimator.core.estimators import ESTIMATORS

    stream, settings = setup.stream, setup.settings
    summary = report.summary(
        bag=str(bag), robot=settings.robot, settings=setup.origin, estimator=settings.estimator,
        payload_shape=settings.payload_shape if ESTIMATORS[settings.estimator].needs_points else None,
        robot_description="urdf file" if setup.given_urdf else ("bag" if setup.use_recorded else "builtin"),
        duration_s=setup.info.duration, messages=counts, accepted=accepted, bag_files=list(setup.info.files),
        bag_warnings=warnings,
        input_problems_by_stream=stream.health.snapshot()["counts_by_stream"])
    if truth is not None:
        in_flange = truth.transformed(stream.R_flange_sensor, stream.p_flange_sensor)
        summary["truth_in_flange"] = {"mass": in_flange.mass, "com": in_flange.com.tolist(),
                                      "inertia_com": in_flange.inertia_com.tolist()}
    summary["wrench_source"] = str(settings.wrench_source)
    if stream.needs_efforts:
        summary["arm_calibration"] = settings.arm_calibration or None
    if tracking is not None:
        summary["tracking"] = tracking
    if settings.cloud_topic:
        summary["clouds"] = cloud_summary(stream, settings.cloud_topic, setup.cloud_how, counts["cloud"])
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")


def _print_tables(console, bag: Path, setup: _Setup, report, counts: dict, tracking: dict | None,
                  verbose: bool = False) -> None:
    settings = setup.settings
    source = ""
    if setup.stream.needs_efforts:
        source = "; wrench from joint torques, " + (f"arm calibration {settings.arm_calibration}"
                                                    if settings.arm_calibration else "arm uncalibrated (rough)")
    report.print(console, headline=f"{bag}: {setup.info.duration:.1f} s; settings: {setup.origin}{source}; "
                 + ", ".join(f"{n} {k}" for k, n in counts.items() if n), what="of the recording",
                 verbose=verbose)
    if settings.cloud_topic:
        from payload_estimator.commands.replay_clouds import cloud_line, cloud_summary

        console.print(cloud_line(cloud_summary(setup.stream, settings.cloud_topic, setup.cloud_how, counts["cloud"])))
    if tracking is not None:
        shifts = f", {tracking['offset_shifts']} offset shift(s) after input gaps" if tracking["offset_shifts"] else ""
        console.print(f"followed the payload: {tracking['changes']} change(s), {tracking['contacts']} contact(s), "
                      f"{tracking['held_out_samples']} sample(s) held out{shifts}")
        for e in tracking["events"]:
            extra = ""
            if e["kind"] == CHANGE:  # a change no rigid body explained (restarted from it) has no fitted mass
                extra = (f", mass {e['mass_change']:+.3f} kg" if e["mass_change"] is not None
                         else ", mass change not fitted: the estimate restarted from what persisted")
            console.print(f"  {e['kind']} at {e['t_start']:.2f} s (decided at {e['t_decided']:.2f} s{extra})")
