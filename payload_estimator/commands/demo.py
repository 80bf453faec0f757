"""``payload-estimator demo``: a simulated arm with a known payload, through the whole pipeline.

MuJoCo simulates the robot tracking an excitation trajectory with the payload
on its F/T sensor (noise, offset and drift included); the measured joint
states and wrench are then played through the estimation pipeline at control
rate, exactly as the ROS node would receive them. At the end: truth beside
estimate, the errors of Nadeau et al.'s eqs. (10)-(12), the URDF ``<inertial>``
fragment and a PNG of the estimate converging.

``--scenario cycle``: a work cycle instead of one payload. The arm picks and places four
catalogue payloads in turn (a claw hammer, the workshop's 68 g ruler, the drill, the
hammer), meets a push and a bump, and sets the drill down while still holding it; MuJoCo changes
the held payload and applies the contacts. The estimator follows the payload: at the end, each
payload change with its detection delay and the errors 1, 1.5 and 3 s after it, each contact with
what became of it, and a PNG of truth and estimate over time (``--payload``, ``--trajectory`` and
``--duration`` do not apply: the cycle has its own).

``--wrench-source joint_torques``: no F/T sensor, the payload from the joint torques. The
simulated arm is a real one: its links differ from the URDF the estimator has (masses ±15 %, COMs
±1 cm; which arm: ``--seed``), its joints have friction, and its efforts are a torque sensor's
(Franka τ_J) or a current-based estimate (xArm), with their noise. First the arm without
payload runs a calibration motion (all joints, 20 s) and is calibrated
as ``payload-estimator calibrate`` does (the calibration is written beside the other outputs); then,
holding the payload, it runs another motion (``--trajectory``, default all-joint sinusoids of
another seed) and the payload is estimated from the efforts less the calibrated arm's torques. At
the end: the calibration's figures per joint, then truth beside estimate as above.

The estimator and its options are the node's settings (``--estimator``, ``--c1``, ...): the demo
builds its estimator exactly as the node does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import (
    DEFAULT_TRAJECTORY,
    SIM_RATE_HZ,
    add_out_dir_argument,
    add_real_arm_arguments,
    add_robot_arguments,
    add_trajectory_arguments,
    console_and_progress,
    ft_drift,
    joint_stamps,
    nonnegative_int,
    real_arm_residual,
    resolve_trajectory,
    robot_from_args,
    wrench_rate,
)
from payload_estimator.commands.options import ESTIMATOR_OPTION_SETTINGS, add_estimator_options, setting_overrides
from payload_estimator.settings import WrenchSource

__all__ = ["add_parser", "run"]

NOISE = ("none", "low", "moderate", "high")
SCENARIOS = ("single", "cycle")
WRENCH_SOURCES = (WrenchSource.FT_SENSOR.value, WrenchSource.JOINT_TORQUES.value)
"""The wrench sources a simulated arm offers: its wrist F/T sensor, or its joint torques."""
CALIBRATION_DURATION_S = 20.0
"""s: the unloaded arm's calibration motion of ``--wrench-source joint_torques``."""
JOINT_TORQUE_TRAJECTORY = "thesis"
"""The motions of ``--wrench-source joint_torques`` (calibration, and estimation unless ``--trajectory``): all
joints move (a wrist-only motion hardly loads the joints the payload estimate leans on)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``demo`` subcommand and its options."""
    from payload_estimator.sim.payloads import PAYLOADS

    p = sub.add_parser(
        "demo",
        help="simulate an arm holding a known payload and estimate it live (no robot, no ROS)",
        description=__doc__,
    )
    add_robot_arguments(p)
    p.add_argument("--payload", choices=sorted(PAYLOADS), default="claw_hammer", metavar="NAME",
                   help=f"what the arm holds, from the catalogue: {', '.join(sorted(PAYLOADS))} (default "
                        "claw_hammer)")
    add_trajectory_arguments(p, default=None, default_note="default; thesis with --wrench-source joint_torques")
    p.add_argument("--noise", choices=NOISE, default="moderate",
                   help="sensor noise (F/T force and torque, IMU accelerations), a level of Nadeau et al.'s "
                        "Table II (default moderate)")
    p.add_argument("--ft-drift", type=ft_drift, default=1.0, metavar="FACTOR",
                   help="how many times the simulator's default F/T offset drift (0.1 %% of the payload's weight per "
                        "second per axis, plus a random walk): 0 for a constant offset, 10 for a sensor warming "
                        "up fast (default 1)")
    p.add_argument("--scenario", choices=SCENARIOS, default="single",
                   help="single: one payload held throughout (default); cycle: picks and places of four "
                        "payloads with contacts, the estimate following the payload")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of every random draw, >= 0 (default 0)")
    p.add_argument("--wrench-rate", type=wrench_rate, default=None,
                   help=f"F/T rate, Hz, a divisor of the {SIM_RATE_HZ:g} Hz joint-state rate (default {SIM_RATE_HZ:g})")
    p.add_argument("--no-bias", action="store_true", help="do not estimate the F/T offsets")
    add_estimator_options(p)
    add_out_dir_argument(p, "demo")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    p.add_argument("--force", action="store_true",
                   help="write the URDF fragment even when the estimate may not be handed over (physically "
                        "inconsistent, a poor model fit, mass, COM or inertia not determined by the data); "
                        "it says so in a comment, and the JSON status says forced")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of tables")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also print the figures behind the model fit and the motion's dynamism (explained in "
                        "docs/trust.md)")
    p.add_argument("--track", action=argparse.BooleanOptionalAction, default=True,
                   help="follow the payload as the node does (track_payload; default on); --no-track: a plain "
                        "estimator")
    p.add_argument("--wrench-source", choices=WRENCH_SOURCES, default=WrenchSource.FT_SENSOR.value,
                   type=lambda text: text.replace("-", "_"),
                   help="ft_sensor: a wrist F/T sensor (default); joint_torques: no sensor, the joint efforts of "
                        "an arm unlike its URDF, calibrated unloaded on one motion, then estimating on another")
    add_real_arm_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the demo the options describe; 0 on success."""
    args.arm = robot_from_args(args)  # a built-in robot's name, or the spec of an arm from its URDF
    joint_torques = WrenchSource(args.wrench_source) is WrenchSource.JOINT_TORQUES
    if args.scenario == "cycle":
        if joint_torques:
            raise CommandError("--wrench-source joint_torques applies to --scenario single")
        return _run_cycle(args)
    if args.duration is not None and not args.duration > 0.5:
        raise CommandError("--duration must be more than 0.5 s")
    if joint_torques:
        return _run_joint_torques(args)
    if args.real_arm or args.irregular_stamps:
        raise CommandError("--real-arm and --irregular-stamps apply to --wrench-source joint_torques")
    return _run_single(args)


# ------------------------------------------------------------ shared steps


def _estimator_name(args: argparse.Namespace) -> str:
    from payload_estimator.settings import Settings

    return args.estimator or Settings().estimator


def _stream_for(args: argparse.Namespace, run_: Any, shape: Any, **settings: Any) -> Any:
    """The node's stream for a simulated run, with the command's estimator options."""
    from payload_estimator.errors import ShapeError
    from payload_estimator.pipeline.build import build_stream
    from payload_estimator.sim.run_settings import settings_for_run

    overrides = {"estimate_bias": not args.no_bias, "track_payload": args.track,
                 **setting_overrides(args, ESTIMATOR_OPTION_SETTINGS), **settings}
    try:
        return build_stream(settings_for_run(run_, args.arm, **overrides), run_.urdf, shape=shape)
    except ShapeError as exc:  # the payload's shape as the options sample it
        raise CommandError(f"the payload's shape: {' '.join(str(exc).split())}") from None


def _resolve_trajectory(args: argparse.Namespace, console: Any, default: str) -> Any:
    """Set ``args.trajectory`` (its label) and ``args.duration``; warn about a motion a robot would refuse."""
    label, trajectory, args.duration, check = resolve_trajectory(args.arm, args.trajectory or default,
                                                                 args.duration, seed=args.seed)
    args.trajectory = label
    if check is not None and not check.ok:
        console.print(f"warning: the trajectory breaks the motion limits a robot would be held to: "
                      f"{check.violations[0]}", markup=False, highlight=False, soft_wrap=True)
    return trajectory, check


def _simulated(progress: Any, what: str, share: float = 1.0, **kwargs: Any) -> Any:
    """A MuJoCo run (:func:`~payload_estimator.sim.mujoco_sim.simulate`) with a progress bar."""
    from payload_estimator.sim.mujoco_sim import simulate

    task = progress.add_task(what, total=1.0, status="")
    kwargs.setdefault("rate_hz", SIM_RATE_HZ)
    return simulate(progress=lambda f: progress.update(task, completed=share * f), **kwargs)


def _drift(args: argparse.Namespace) -> float:
    return float(getattr(args, "ft_drift", 1.0))


def _played(progress: Any, what: str, stream: Any, recording: Any,
            status: Callable[[Any], str] | None = None) -> Any:
    """Play a recording through the stream, the latest estimate on the progress bar; returns the history."""
    from payload_estimator.pipeline.playback import play

    task = progress.add_task(what, total=recording.end - recording.start, status="")

    def on_estimate(out: Any) -> None:
        if status is not None:
            text = status(out)
        else:
            e = out.estimate
            text = f"m={e.mass:.3f} kg  {'converged' if out.converged else out.reason}"
        progress.update(task, completed=out.t - recording.start, status=text)

    history = play(stream, recording, on_estimate=on_estimate)
    progress.update(task, completed=recording.end - recording.start)
    return history


def _report(args: argparse.Namespace, stream: Any, history: Any, payload: Any, title: str, t_start: float) -> Any:
    """The run's report (truth beside estimate), its files written into ``--out``."""
    from payload_estimator.outputs.run_report import RunReport

    final = stream.last
    if final is None:
        raise CommandError("no estimate: the pipeline produced no samples")
    report = RunReport(
        final, history, stream.config.sensor_frame, stream.config.flange_frame or stream.config.sensor_frame,
        stream.health.counts, title=title, truth=payload.params, bbox_lengths=payload.bbox_lengths,
        wall_time_s=time.perf_counter() - t_start, force=args.force)
    report.write(args.out, plot=not args.no_plot)
    return report


def _where(report: Any, out_dir: Any) -> str:
    written = [p.name for p in (report.fragment_path, report.plot_path) if p is not None]
    return f"wrote {', '.join(written)} in {out_dir}"


def _dump(summary: dict) -> None:
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")


def _tracking_counts(stream: Any) -> dict | None:
    from payload_estimator.core.tracking import PayloadTracker

    return asdict(stream.estimator.counts) if isinstance(stream.estimator, PayloadTracker) else None


# ------------------------------------------------------------ one payload


def _run_single(args: argparse.Namespace) -> int:
    """One payload held throughout, read by the wrist F/T sensor."""
    from payload_estimator.sim.payloads import get_payload
    from payload_estimator.sim.run_settings import recording_from_run

    payload = get_payload(args.payload)
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    trajectory, check = _resolve_trajectory(args, console, DEFAULT_TRAJECTORY)
    method = _estimator_name(args)
    with progress_display as progress:
        run_ = _simulated(progress, f"simulating {args.robot} + {args.payload}", robot=args.arm, payload=payload,
                          trajectory=trajectory, duration=args.duration, noise=args.noise, seed=args.seed,
                          wrench_rate_hz=args.wrench_rate, ft_drift=_drift(args))
        # as the node runs it (track_payload, on by default): one payload here, so nothing to follow,
        # but a contact-like glitch would be held out as it is there; --no-track: a plain estimator
        stream = _stream_for(args, run_, payload.envelope)
        history = _played(progress, f"estimating ({method})", stream, recording_from_run(run_))
    report = _report(args, stream, history, payload, t_start=t_start,
                     title=f"{args.robot} + {args.payload}: {method}, {args.trajectory}, {args.noise} noise")
    where = _where(report, args.out)
    if args.json:
        summary = report.summary(robot=args.robot, payload=args.payload, estimator=method,
                                 trajectory=args.trajectory, duration_s=args.duration, noise=args.noise,
                                 out_dir=str(args.out))
        counts = _tracking_counts(stream)
        if counts is not None:
            summary["tracking"] = counts
        if check is not None:
            summary["trajectory_check"] = check.summary()
        _dump(summary)
        console.print(where, markup=False, highlight=False, soft_wrap=True)  # stderr: stdout carries the JSON
        return 0
    report.print(console, what=f"of motion; simulated {args.duration:.0f} s and estimated",
                 verbose=args.verbose, shape_option="")
    console.print(where, markup=False, highlight=False, soft_wrap=True)
    return 0


# ------------------------------------------------------------ a work cycle


def _run_cycle(args: argparse.Namespace) -> int:
    """``--scenario cycle`` (module docstring)."""
    import numpy as np

    from payload_estimator.core.tracking import PayloadTracker
    from payload_estimator.sim.arm_cycle import arm_work_cycle
    from payload_estimator.sim.run_settings import recording_from_run

    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    cycle = arm_work_cycle(args.arm, seed=args.seed)
    method = _estimator_name(args)
    with progress_display as progress:
        task = progress.add_task(f"simulating a work cycle on the {args.robot}", total=1.0, status="")
        run_ = cycle.simulate(noise=args.noise, seed=args.seed, rate_hz=SIM_RATE_HZ, wrench_rate_hz=args.wrench_rate,
                              ft_drift=_drift(args), progress=lambda f: progress.update(task, completed=f))
        stream = _stream_for(args, run_, cycle.envelope)
        tracker = stream.estimator if isinstance(stream.estimator, PayloadTracker) else None
        rows: list[tuple[float, float, np.ndarray]] = []

        def status(out: Any) -> str:
            e = out.estimate
            rows.append((out.t, e.mass, np.array(e.com)))
            state = "" if tracker is None else "contact" if tracker.contact else f"{tracker.counts.changes} changes"
            return f"m={e.mass:.3f} kg  {state}"

        _played(progress, f"following the payload ({method})", stream, recording_from_run(run_), status)
    if not rows:
        raise CommandError("no estimate: the pipeline produced no samples")
    return _cycle_report(args, cycle, run_, tracker, rows, method, time.perf_counter() - t_start, console)


def _cycle_report(args: argparse.Namespace, cycle: Any, run_: Any, tracker: Any, rows: list, method: str,
                  wall: float, console: Any) -> int:
    """Score the cycle against its truth; JSON or a table, and the plot."""
    import numpy as np

    from payload_estimator.core.tracking import TrackingCounts
    from payload_estimator.outputs.cycle_report import plot_work_cycle, score_cycle

    events = tracker.events if tracker is not None else []
    counts = tracker.counts if tracker is not None else TrackingCounts()
    t = np.array([r[0] for r in rows])
    mass = np.array([r[1] for r in rows])
    com = np.array([r[2] for r in rows])
    contacts = [(c.name, c.t_start, c.t_end) for c in cycle.contacts]
    score = score_cycle(cycle.transfer_ends, [name for _, name in cycle.held], cycle.phi_after(), contacts,
                        events, t, mass, com, mass_before=cycle.first.mass, transfer_start_t=cycle.transfer_starts)
    truth_phi = run_.phi_at(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        com_error = 1e3 * np.linalg.norm(com - truth_phi[:, 1:4] / truth_phi[:, :1], axis=1)
    title = f"{args.robot} work cycle: {method}, {args.noise} noise"
    plot_path = None
    if not args.no_plot:
        t_truth = run_.joint_t
        plot_path = plot_work_cycle(args.out / "cycle.png", t_truth, run_.phi_at(t_truth)[:, 0], t, mass, com_error,
                                    events, contacts, title=title)
    if args.json:
        _dump({"robot": args.robot, "estimator": method, "noise": args.noise, "scenario": "cycle",
               "seed": args.seed, "duration_s": cycle.duration, **score.summary(), "counts": asdict(counts),
               "events": [{"kind": e.kind, "t_start": float(e.t_start), "t_decided": float(e.t_decided)}
                          for e in events],
               "plot": str(plot_path) if plot_path else None, "wall_time_s": wall})
        return 0
    _print_cycle(console, title, score, counts, wall)
    if plot_path is not None:
        console.print(f"wrote {plot_path.name} in {args.out}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _print_cycle(console: Any, title: str, score: Any, counts: Any, wall: float) -> None:
    """The cycle's table: each change with its delay and errors after it, then each contact."""
    import numpy as np
    from rich.table import Table

    from payload_estimator.outputs.cycle_report import ERROR_TIMES_S

    table = Table(title=title)
    table.add_column("at [s]", justify="right")
    table.add_column("now held")
    table.add_column("kg", justify="right")
    table.add_column("flagged", justify="right")
    for after in ERROR_TIMES_S:
        table.add_column(f"mass +{after:g} s", justify="right")
    table.add_column(f"COM +{ERROR_TIMES_S[-1]:g} s", justify="right")
    for sw in score.switches:
        delay = "missed" if sw.delay is None else f"+{sw.delay:.2f} s"
        if sw.mass > 0.0:
            errs = [f"{100 * sw.mass_error[a]:+.1f} %" for a in ERROR_TIMES_S]
            com_err = f"{sw.com_error_mm[ERROR_TIMES_S[-1]]:.1f} mm"
        else:
            errs = [f"{1e3 * sw.mass_error[a]:+.0f} g" for a in ERROR_TIMES_S]
            com_err = ""
        table.add_row(f"{sw.t:.2f}", sw.held, f"{sw.mass:.3f}", delay, *errs, com_err)
    console.print(table)
    for c in score.contacts:
        move = "" if not np.isfinite(c.mass_error) else f", worst mass error meanwhile {100 * c.mass_error:.2f} %"
        console.print(f"contact {c.name} ({c.t_start:.2f}-{c.t_end:.2f} s): {c.outcome}{move}", highlight=False)
    console.print(f"{counts.changes} change(s) flagged ({score.changes_from_contacts} from a contact that "
                  f"persisted, {len(score.false_changes)} false), {counts.contacts} contact(s) held out "
                  f"({len(score.false_contacts)} where there was none), {counts.held_out_samples} sample(s) held "
                  f"out; {wall:.1f} s", highlight=False)


# ------------------------------------------------------------ joint torques


def _run_joint_torques(args: argparse.Namespace) -> int:
    """``--wrench-source joint_torques`` (module docstring)."""
    from payload_estimator.sim.efforts import ArmMismatch
    from payload_estimator.sim.payloads import get_payload
    from payload_estimator.sim.run_settings import recording_from_run

    payload = get_payload(args.payload)
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    # the estimation motion: the user's, else all-joint sinusoids of another seed than the calibration's
    trajectory, _ = _resolve_trajectory(args, console, JOINT_TORQUE_TRAJECTORY)
    efforts, arm = _effort_model(args), ArmMismatch(seed=args.seed)  # one physical arm for both runs
    stamps = joint_stamps(args)
    method = _estimator_name(args)
    with progress_display as progress:
        cal = _calibrated(args, progress, efforts, arm)
        run_ = _simulated(progress, f"simulating {args.robot} + {args.payload}", robot=args.arm, payload=payload,
                          trajectory=trajectory, duration=args.duration, noise=args.noise, seed=args.seed,
                          efforts=efforts, arm_mismatch=arm, imu=False, **stamps)
        stream = _stream_for(args, run_, payload.envelope, wrench_source=WrenchSource.JOINT_TORQUES,
                             arm_calibration=str(cal.path), effort_unit=_effort_unit(args))
        history = _played(progress, f"estimating from joint torques ({method})", stream,
                          recording_from_run(run_, wrench=False))
    report = _report(args, stream, history, payload, t_start=t_start,
                     title=f"{args.robot} + {args.payload} from joint torques ({efforts.name}): {method}, "
                           f"{args.trajectory}")
    return _joint_torque_output(args, console, stream, report, payload, cal, efforts.name, method)


def _effort_model(args: argparse.Namespace) -> Any:
    """The simulated arm's joint-torque sensor (Franka tau_J, xArm current-based): a built-in robot's."""
    from payload_estimator.sim.efforts import EffortModel

    try:
        model = EffortModel.for_robot(args.arm)
    except ValueError as exc:
        raise CommandError(f"--wrench-source joint_torques: {exc}") from None
    return model.with_residual(real_arm_residual(args, seed=args.seed))


def _effort_unit(args: argparse.Namespace) -> str:
    """What the robot's efforts are (its preset's ``effort_unit``; torque for an arm from its URDF)."""
    from payload_estimator.robots import resolve_robot

    return str(resolve_robot(args.arm).parameters.get("effort_unit", "torque"))


def _calibrated(args: argparse.Namespace, progress: Any, efforts: Any, arm: Any) -> Any:
    """Calibrate the simulated unloaded arm, as ``payload-estimator calibrate`` does.

    The calibration is written into ``--out``, where the estimation reads it like the node would. Efforts
    that are currents (the robot's ``effort_unit``; no torque constants) get their scales fitted, as
    ``calibrate --effort-scale`` does."""
    from types import SimpleNamespace

    from payload_estimator.commands.calibrate import motion_coverage
    from payload_estimator.pipeline.arm_dynamics import calibrate_arm, joint_recording
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.sim.mujoco_sim import NO_PAYLOAD

    cal_seed = args.seed + 1  # another motion (and other noise draws) than the estimation's
    cal_run = _simulated(progress, f"calibrating the unloaded {args.robot}", share=0.8, robot=args.arm,
                         payload=NO_PAYLOAD, trajectory=JOINT_TORQUE_TRAJECTORY, duration=CALIBRATION_DURATION_S,
                         noise=args.noise, seed=cal_seed, efforts=efforts, arm_mismatch=arm, imu=False,
                         **joint_stamps(args))
    kinematics = SensorKinematics(cal_run.urdf, cal_run.sensor_frame, cal_run.joint_names)
    rec = joint_recording(cal_run.joint_t, cal_run.joint_q, cal_run.joint_effort)
    unit = _effort_unit(args)
    calibration, fit = calibrate_arm(kinematics, rec, robot=args.arm if isinstance(args.arm, str) else "",
                                     effort_scale=unit == "current",
                                     info={"source": f"demo: {JOINT_TORQUE_TRAJECTORY} seed {cal_seed}",
                                           "effort_unit": unit, "torque_constants": []})
    path = args.out / "arm_calibration.yaml"
    args.out.mkdir(parents=True, exist_ok=True)
    calibration.save(path)
    return SimpleNamespace(calibration=calibration, fit=fit, seed=cal_seed, kinematics=kinematics,
                           coverage=motion_coverage(rec), path=path)


def _joint_torque_output(args: argparse.Namespace, console: Any, stream: Any, report: Any, payload: Any,
                         cal: Any, effort_model: str, method: str) -> int:
    """JSON, or the calibration's table then truth beside estimate (also in the flange frame)."""
    from payload_estimator.commands.calibrate import (
        calibration_summary,
        calibration_table,
        consistency_line,
        friction_warnings,
    )
    from payload_estimator.pipeline.arm_dynamics import ArmDynamics

    where = _where(report, args.out)
    flange = stream.config.flange_frame or stream.config.sensor_frame
    truth_flange = payload.params.transformed(stream.R_flange_sensor, stream.p_flange_sensor)
    cal_warnings = friction_warnings(ArmDynamics(cal.kinematics, cal.calibration), cal.coverage)
    if args.json:
        summary = report.summary(robot=args.robot, payload=args.payload, estimator=method,
                                 wrench_source=WrenchSource.JOINT_TORQUES.value, effort_model=effort_model,
                                 trajectory=args.trajectory, duration_s=args.duration, noise=args.noise,
                                 out_dir=str(args.out))
        summary["truth_in_flange"] = {"mass": truth_flange.mass, "com": truth_flange.com.tolist(),
                                      "inertia_com": truth_flange.inertia_com.tolist()}
        summary["calibration"] = {"trajectory": JOINT_TORQUE_TRAJECTORY, "seed": cal.seed, "path": str(cal.path),
                                  **calibration_summary(cal.calibration, cal.fit, cal.coverage),
                                  "warnings": cal_warnings}
        counts = _tracking_counts(stream)
        if counts is not None:
            summary["tracking"] = counts
        _dump(summary)
        console.print(where, markup=False, highlight=False, soft_wrap=True)
        return 0
    console.print(f"calibration of the unloaded {args.robot}: {CALIBRATION_DURATION_S:g} s of "
                  f"{JOINT_TORQUE_TRAJECTORY} (seed {cal.seed}), {cal.fit.samples} samples, efforts {effort_model}; "
                  f"written to {cal.path}", markup=False, highlight=False, soft_wrap=True)
    console.print(calibration_table(cal.calibration, cal.fit, cal.coverage))
    console.print(consistency_line(cal.calibration), markup=False, highlight=False, soft_wrap=True)
    for line in cal_warnings:
        console.print(f"warning: {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"\nestimate from joint torques, {args.trajectory} (seed {args.seed}), another motion:",
                  markup=False, highlight=False)
    report.print(console, what=f"of motion; simulated {args.duration:.0f} s and estimated",
                 verbose=args.verbose, shape_option="")
    est_f = stream.last.params_in_flange
    console.print(f"in the flange frame '{flange}': mass {est_f.mass:.4f} kg (truth {truth_flange.mass:.4f}), COM "
                  f"[{', '.join(f'{1e3 * c:+.1f}' for c in est_f.com)}] mm (truth "
                  f"[{', '.join(f'{1e3 * c:+.1f}' for c in truth_flange.com)}] mm)",
                  markup=False, highlight=False, soft_wrap=True)
    console.print(where, markup=False, highlight=False, soft_wrap=True)
    return 0
