"""``payload-estimator replay BAG``: a rosbag2 recording through the node's own pipeline, without ROS.

The messages of the configured topics are read in record order and fed to
the same :class:`~payload_estimator.pipeline.stream.EstimationStream` the ROS
node builds from the same parameters (:func:`~payload_estimator.settings.build_stream`,
:mod:`payload_estimator.io.ros_messages`), with the record time as the
receive time: the stream processes every 10 ms and an estimate is taken at
``publish_rate_hz``, as the node's timers do.

Settings: ``--config`` (a ROS parameter file such as ``config/panda.yaml``) or
the ``--robot`` preset; by default the robot is recognised from the bag's
``/robot_description`` (else panda). ``--estimator``, ``--shape`` and
``--set name=value`` override any parameter. The robot model is the bag's
``/robot_description`` when recorded (unless ``use_builtin_description``), else
the package's own URDF.

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

__all__ = ["add_parser", "run", "detect_robot", "PROCESS_PERIOD_S"]

PROCESS_PERIOD_S = 0.01
"""Record time between two calls of ``stream.process()``, s (the node's processing timer)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from payload_estimator.robots import ROBOT_NAMES

    p = sub.add_parser(
        "replay",
        help="estimate the payload from a rosbag2 recording (mcap or sqlite3), without ROS",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory (or a single .mcap/.db3 file)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--robot", choices=ROBOT_NAMES, help="robot preset (default: from the bag's robot_description)")
    source.add_argument("--config", metavar="YAML", help="ROS 2 parameter file, e.g. config/panda.yaml")
    p.add_argument("--estimator", choices=("ols", "wls", "rls", "rtls", "pmd"), help="estimator (default: the setting's)")
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
            origin = f"{robot} preset" + ("" if args.robot else " (from the bag's robot_description)")
            if robot is None:
                robot, origin = "panda", "panda preset (robot not recognised)"
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
    kin = stream.kinematics
    sensor = stream.config.sensor_frame
    if truth.frame_id in ("", sensor):
        return truth.params
    if not kin.has_frame(truth.frame_id):
        return None
    n = len(stream.joint_names)
    q = np.vstack([np.zeros(n), np.full(n, 0.3)])
    R, p = kin.frame_pose(q, truth.frame_id, sensor)
    if not (np.allclose(R[0], R[1], atol=1e-9) and np.allclose(p[0], p[1], atol=1e-9)):
        return None  # not rigidly attached to the sensor frame
    return truth.params.transformed(R[0], p[0])


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


def run(args: argparse.Namespace) -> int:
    from payload_estimator.commands.common import console_and_progress

    from payload_estimator.core.history import EstimateHistory
    from payload_estimator.core.metrics import paper_errors
    from payload_estimator.io.bag import BagError, bag_ground_truth, bag_info, bag_robot_description, read_bag
    from payload_estimator.io.ros_messages import feed_many
    from payload_estimator.pipeline.build import build_stream, builtin_description

    bag = Path(args.bag)
    if not bag.exists():
        raise CommandError(f"{bag}: no such bag")
    try:
        info = bag_info(bag)
        recorded_urdf = bag_robot_description(bag)
        settings, origin = _settings(args, recorded_urdf, info.custom_data)
        messages = read_bag(bag, settings)
        imu_frame = (_first_imu_frame(bag, settings)
                     if settings.motion_source == "imu" and not settings.imu_frame else None)
    except BagError as exc:
        raise CommandError(str(exc)) from None
    use_recorded = recorded_urdf is not None and not settings.use_builtin_description
    urdf = recorded_urdf if use_recorded else builtin_description(settings)
    try:
        stream = build_stream(settings, urdf, imu_frame=imu_frame, zero_phase=args.zero_phase)
    except ValueError as exc:
        raise CommandError(f"cannot build the pipeline: {exc}") from None

    console, progress_display = console_and_progress(args.json)
    history = EstimateHistory()
    counts = {"joint_states": 0, "wrench": 0, "imu": 0}
    accepted = dict(counts)
    ticks_per_publish = max(1, int(round(1.0 / (settings.publish_rate_hz * PROCESS_PERIOD_S))))
    t_start = time.perf_counter()
    t0: float | None = None
    tick = 0  # processing ticks done; tick k runs at t0 + k * PROCESS_PERIOD_S
    last_t = 0.0

    def publish(t: float) -> None:
        out = stream.update_estimate()
        if out is not None:
            history.append(t - t0, out.estimate, out.converged)
            flag = "converged" if out.converged else out.reason
            progress.update(task, completed=t - t0, status=f"m={out.estimate.mass:.3f} kg  {flag}")

    with progress_display as progress:
        task = progress.add_task(f"replaying {bag.name}", total=max(info.duration, 1e-9), status="")
        pending: list = []  # messages received since the last processing tick, fed in one go like the node

        def tick_process() -> None:
            for kind, n in feed_many(stream, pending).items():
                accepted[kind] += n
            pending.clear()
            stream.process()

        try:
            for kind, msg, t in messages:
                if t0 is None:
                    t0 = t
                # the node's timers: process every 10 ms, publish every ticks_per_publish of those;
                # across a pause in the recording they would only repeat themselves, so skip it
                due = int((t - t0) / PROCESS_PERIOD_S)
                if due - tick > 2 * ticks_per_publish:
                    tick = due - 1
                while t >= t0 + (tick + 1) * PROCESS_PERIOD_S:
                    tick += 1
                    tick_process()
                    if tick % ticks_per_publish == 0:
                        publish(t0 + tick * PROCESS_PERIOD_S)
                counts[kind] += 1
                pending.append((kind, msg, t))
                last_t = t
        except BagError as exc:
            raise CommandError(str(exc)) from None
        if t0 is None:
            raise CommandError(f"{bag}: no messages on the input topics")
        tick_process()
        if args.zero_phase:
            try:
                stream.finish()
            except ValueError as exc:
                raise CommandError(f"zero-phase processing failed: {exc}") from None
        publish(last_t)
    wall = time.perf_counter() - t_start

    final = stream.update_estimate()
    if final is None:
        problems = ", ".join(f"{n} {r}" for r, n in stream.health.counts.items()) or "none counted"
        raise CommandError(f"no estimate: the pipeline produced no samples (input problems: {problems})")
    est = final.estimate
    sensor = stream.config.sensor_frame
    flange = stream.config.flange_frame or sensor

    truth = err = None
    recorded_truth = bag_ground_truth(bag)
    if recorded_truth is not None:
        truth = _truth_in_sensor_frame(recorded_truth, stream)
    bbox = _bbox_lengths(settings)
    if truth is not None and bbox is not None and truth.mass > 0:
        err = paper_errors(est.params, truth, bbox)

    from payload_estimator.outputs.urdf import urdf_inertial

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    fragment = urdf_inertial(final.params_in_flange, frame=flange)
    fragment_path = out_dir / "payload_inertial.urdf.xml"
    fragment_path.write_text(fragment + "\n")
    plot_path = None
    if not args.no_plot and len(history):
        from payload_estimator.outputs.plots import plot_convergence

        plot_path = plot_convergence(history, out_dir / "convergence.png", truth=truth,
                                     title=f"{bag.name}: {settings.robot}, {settings.estimator}")
    t_conv = history.first_converged_time()

    summary = {
        "bag": str(bag),
        "robot": settings.robot,
        "settings": origin,
        "estimator": settings.estimator,
        "payload_shape": settings.payload_shape if settings.estimator == "pmd" else None,
        "sensor_frame": sensor,
        "flange_frame": flange,
        "robot_description": "bag" if use_recorded else "builtin",
        "duration_s": info.duration,
        "messages": counts,
        "accepted": accepted,
        "estimate": est.to_dict(),
        "estimate_in_flange": {"mass": final.params_in_flange.mass, "com": final.params_in_flange.com.tolist(),
                               "inertia_com": final.params_in_flange.inertia_com.tolist()},
        "converged": bool(final.converged),
        "status": "converged" if final.converged else final.reason,
        "converged_after_s": t_conv,
        "truth": None if truth is None else {"mass": truth.mass, "com": truth.com.tolist(),
                                             "inertia_com": truth.inertia_com.tolist()},
        "errors_percent": None if err is None else {"mass": err.mass, "com": err.com, "inertia": err.inertia},
        "input_problems": stream.health.counts,
        "input_problems_by_stream": stream.health.snapshot()["counts_by_stream"],
        "urdf_fragment": str(fragment_path),
        "plot": str(plot_path) if plot_path else None,
        "wall_time_s": wall,
    }
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0

    from payload_estimator.outputs.report import estimate_table, quality_table

    console.print(f"{bag}: {info.duration:.1f} s; settings: {origin}; "
                  + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    console.print(estimate_table(est, truth=truth, frame=sensor))
    console.print(quality_table(est))
    if err is not None:
        console.print(f"errors (paper 004 eqs. 10-12): mass {err.mass:.2f} %, COM {err.com:.2f} %, "
                      f"inertia {err.inertia:.1f} %")
    problems = stream.health.counts
    console.print("input problems: " + (", ".join(f"{n} {r}" for r, n in sorted(problems.items())) or "none"))
    conv = (f"converged after {t_conv:.1f} s of the recording" if t_conv is not None
            else f"not converged ({final.reason})")
    console.print(f"{conv}; replayed in {wall:.1f} s of wall time")
    console.print(f"\nURDF <inertial> in '{flange}' (also in {fragment_path}):")
    console.print(fragment, markup=False, highlight=False)
    if plot_path:
        console.print(f"\nconvergence plot: {plot_path}")
    return 0
