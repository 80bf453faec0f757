"""``payload-estimator demo``: a simulated arm with a known payload, through the whole pipeline.

MuJoCo simulates the robot tracking an excitation trajectory with the payload
on its F/T sensor (noise, offset and drift included); the measured joint
states and wrench are then played through the estimation stream at control
rate, exactly as the ROS node would receive them. At the end: truth beside
estimate, the paper-004 errors, the URDF ``<inertial>`` fragment and a PNG of
the estimate converging.

``--scenario cycle``: a work cycle instead of one payload. The arm picks and places four
catalogue payloads in turn (paper 004's claw hammer, the workshop's 68 g ruler, the drill, the
hammer), meets a push and a bump, and sets the drill down while still holding it; MuJoCo changes
the held payload and applies the contacts. The estimator follows the payload
(``core/tracking.py``): at the end, each payload change with its detection delay and the errors
1, 1.5 and 3 s after it, each contact with what became of it, and a PNG of truth and estimate
over time (``--payload``, ``--trajectory`` and ``--duration`` do not apply: the cycle has its own).

``--wrench-source joint-torques``: no F/T sensor, the payload from the joint torques (issue 9). The
simulated arm is a real one: its links differ from the URDF the estimator has (masses ±15 %, COMs
±1 cm; which arm: ``--seed``), its joints have friction, and its efforts are a torque sensor's
(Franka τ_J) or a current-based estimate (xArm), with their noise. First the arm *without
payload* runs a calibration motion (all joints, :data:`CALIBRATION_DURATION_S`) and is calibrated
as ``payload-estimator calibrate`` does; then, holding the payload, it runs *another* motion
(``--trajectory``, default all-joint sinusoids of another seed) and the payload is estimated from
the efforts less the calibrated arm's torques. At the end: the calibration's figures per joint,
then truth beside estimate as above.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import (
    DEFAULT_TRAJECTORY,
    SIM_RATE_HZ,
    add_out_dir_argument,
    add_trajectory_arguments,
    build_estimator,
    console_and_progress,
    nonnegative_int,
    positive_float,
    recording_from_run,
    resolve_trajectory,
    stream_for_run,
    wrench_rate,
)
from payload_estimator.core.estimators import C1_DEFAULT, ESTIMATORS

__all__ = ["add_parser", "run"]

NOISE = ("none", "low", "moderate", "high")
SCENARIOS = ("single", "cycle")
WRENCH_SOURCES = ("ft-sensor", "joint-torques")
CALIBRATION_DURATION_S = 20.0
"""s: the unloaded arm's calibration motion of ``--wrench-source joint-torques``."""
JOINT_TORQUE_TRAJECTORY = "thesis"
"""The motions of ``--wrench-source joint-torques`` (calibration, and estimation unless ``--trajectory``): all
joints move (a wrist-only motion hardly loads the joints the payload estimate leans on)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from payload_estimator.robots import ROBOT_NAMES
    from payload_estimator.sim.payloads import PAYLOADS

    p = sub.add_parser(
        "demo",
        help="simulate an arm holding a known payload and estimate it live (no robot, no ROS)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--robot", choices=ROBOT_NAMES, default="panda")
    p.add_argument("--payload", choices=sorted(PAYLOADS), default="claw_hammer")
    p.add_argument("--method", choices=list(ESTIMATORS), default="pmd",
                   help="; ".join(f"{name}: {cls.summary}" for name, cls in ESTIMATORS.items()))
    add_trajectory_arguments(p, default=None, default_note="default; thesis with --wrench-source joint-torques")
    p.add_argument("--noise", choices=NOISE, default="moderate", help="F/T noise level, paper 004 Table II")
    p.add_argument("--scenario", choices=SCENARIOS, default="single",
                   help="single: one payload held throughout (default); cycle: picks and places of four "
                        "payloads with contacts, the estimate following the payload")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of every random draw, >= 0 (default 0)")
    p.add_argument("--wrench-rate", type=wrench_rate, default=None,
                   help=f"F/T rate, Hz, a divisor of the {SIM_RATE_HZ:g} Hz joint-state rate (default {SIM_RATE_HZ:g})")
    p.add_argument("--no-bias", action="store_true", help="do not estimate the F/T offsets")
    p.add_argument("--c1", type=positive_float, default=C1_DEFAULT,
                   help=f"PMD c1 (default {C1_DEFAULT:g}, pmd.C1_DEFAULT)")
    add_out_dir_argument(p, "demo")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    p.add_argument("--force", action="store_true",
                   help="write the URDF fragment even when the estimate may not be handed over (physically "
                        "inconsistent, a poor model fit, mass, COM or inertia not determined by the data); "
                        "it says so in a comment, and the JSON status says forced")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of tables")
    p.add_argument("--track", action=argparse.BooleanOptionalAction, default=True,
                   help="follow the payload as the node does (track_payload; default on); --no-track: a plain "
                        "estimator")
    p.add_argument("--wrench-source", choices=WRENCH_SOURCES, default="ft-sensor",
                   help="ft-sensor: a wrist F/T sensor (default); joint-torques: no sensor, the joint efforts of "
                        "an arm unlike its URDF, calibrated unloaded on one motion, then estimating on another")
    return p


def run(args: argparse.Namespace) -> int:
    from payload_estimator.core.tracking import PayloadTracker
    from payload_estimator.outputs.run_report import RunReport
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.mujoco_sim import simulate
    from payload_estimator.sim.payloads import get_payload

    if args.scenario == "cycle":
        if args.wrench_source == "joint-torques":
            raise CommandError("--wrench-source joint-torques applies to --scenario single")
        return _run_cycle(args)
    if args.wrench_source == "joint-torques":
        return _run_joint_torques(args)
    if args.duration is not None and not args.duration > 0.5:
        raise CommandError("--duration must be more than 0.5 s")
    args.trajectory = args.trajectory or DEFAULT_TRAJECTORY
    out_dir = args.out  # checked while parsing the options, before the work
    payload = get_payload(args.payload)
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    label, trajectory, args.duration, check = resolve_trajectory(args.robot, args.trajectory, args.duration,
                                                                 seed=args.seed)
    args.trajectory = label
    if check is not None and not check.ok:
        console.print(f"warning: the trajectory breaks the motion limits a robot would be held to: "
                      f"{check.violations[0]}", markup=False, highlight=False, soft_wrap=True)
    with progress_display as progress:
        sim_task = progress.add_task(f"simulating {args.robot} + {args.payload}", total=1.0, status="")
        run_ = simulate(
            robot=args.robot, payload=payload, trajectory=trajectory, duration=args.duration,
            noise=args.noise, seed=args.seed, rate_hz=SIM_RATE_HZ, wrench_rate_hz=args.wrench_rate,
            progress=lambda f: progress.update(sim_task, completed=f),
        )
        def make(bias: bool):
            return build_estimator(args.method, payload.envelope, bias=bias, c1=args.c1)

        # as the node runs it (track_payload, on by default): one payload here, so nothing to follow,
        # but a contact-like glitch would be held out as it is there; --no-track: a plain estimator
        estimator = PayloadTracker(make, bias=not args.no_bias, detect=args.track)
        stream = stream_for_run(run_, estimator)
        recording = recording_from_run(run_)
        est_task = progress.add_task(f"estimating ({args.method})", total=recording.end - recording.start,
                                     status="")

        def on_estimate(out) -> None:
            e = out.estimate
            com_mm = ", ".join(f"{1e3 * c:+.0f}" for c in e.com)
            flag = "converged" if out.converged else out.reason
            progress.update(est_task, completed=out.t - recording.start,
                            status=f"m={e.mass:.3f} kg  c=[{com_mm}] mm  {flag}")

        history = play(stream, recording, on_estimate=on_estimate)
        progress.update(est_task, completed=recording.end - recording.start)

    final = stream.last
    if final is None:
        raise CommandError("no estimate: the pipeline produced no samples")
    report = RunReport(
        final, history, stream.config.sensor_frame, stream.config.flange_frame or stream.config.sensor_frame,
        stream.health.counts, title=f"{args.robot} + {args.payload}: {args.method}, {args.trajectory}, "
                                    f"{args.noise} noise",
        truth=payload.params, bbox_lengths=payload.bbox_lengths, wall_time_s=time.perf_counter() - t_start,
        force=args.force)
    report.write(out_dir, plot=not args.no_plot)
    written = [p.name for p in (report.fragment_path, report.plot_path) if p is not None]
    where = f"wrote {', '.join(written)} in {out_dir}"
    if args.json:
        summary = report.summary(robot=args.robot, payload=args.payload, method=args.method,
                                 trajectory=args.trajectory, duration_s=args.duration, noise=args.noise,
                                 out_dir=str(out_dir))
        if args.track:
            summary["tracking"] = asdict(estimator.counts)
        if check is not None:
            summary["trajectory_check"] = check.summary()
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        console.print(where, markup=False, highlight=False, soft_wrap=True)  # stderr: stdout carries the JSON
        return 0
    report.print(console, what=f"of motion; simulated {args.duration:.0f} s and estimated")
    console.print(where, markup=False, highlight=False, soft_wrap=True)
    return 0


def _run_cycle(args: argparse.Namespace) -> int:
    """``--scenario cycle`` (module docstring)."""
    import numpy as np

    from payload_estimator.core.tracking import PayloadTracker
    from payload_estimator.outputs.cycle_report import ERROR_TIMES_S, plot_work_cycle, score_cycle
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.cycle import arm_work_cycle

    out_dir = args.out
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    cycle = arm_work_cycle(args.robot, seed=args.seed)
    with progress_display as progress:
        sim_task = progress.add_task(f"simulating a work cycle on the {args.robot}", total=1.0, status="")
        run_ = cycle.simulate(noise=args.noise, seed=args.seed, rate_hz=SIM_RATE_HZ, wrench_rate_hz=args.wrench_rate,
                              progress=lambda f: progress.update(sim_task, completed=f))
        shape = cycle.envelope
        tracker = PayloadTracker(lambda bias: build_estimator(args.method, shape, bias=bias, c1=args.c1),
                                 bias=not args.no_bias, detect=args.track)  # --no-track: see what it is for
        stream = stream_for_run(run_, tracker)
        recording = recording_from_run(run_)
        est_task = progress.add_task(f"following the payload ({args.method})", total=recording.end - recording.start,
                                     status="")
        rows: list[tuple[float, float, np.ndarray]] = []

        def on_estimate(out) -> None:
            e = out.estimate
            rows.append((out.t, e.mass, np.array(e.com)))
            state = "contact" if tracker.contact else f"{tracker.counts.changes} changes"
            progress.update(est_task, completed=out.t - recording.start, status=f"m={e.mass:.3f} kg  {state}")

        play(stream, recording, on_estimate=on_estimate)
        progress.update(est_task, completed=recording.end - recording.start)
    if not rows:
        raise CommandError("no estimate: the pipeline produced no samples")
    t = np.array([r[0] for r in rows])
    mass = np.array([r[1] for r in rows])
    com = np.array([r[2] for r in rows])
    contacts = [(c.name, c.t_start, c.t_end) for c in cycle.contacts]
    score = score_cycle(run_.truth_change_t, [name for _, name in cycle.held], cycle.phi_after(), contacts,
                        tracker.events, t, mass, com, mass_before=cycle.first.mass)
    truth_phi = run_.phi_at(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        com_error = 1e3 * np.linalg.norm(com - truth_phi[:, 1:4] / truth_phi[:, :1], axis=1)
    title = f"{args.robot} work cycle: {args.method}, {args.noise} noise"
    plot_path = None
    if not args.no_plot:
        t_truth = run_.joint_t
        plot_path = plot_work_cycle(out_dir / "cycle.png", t_truth, run_.phi_at(t_truth)[:, 0], t, mass, com_error,
                                    tracker.events, contacts, title=title)
    wall = time.perf_counter() - t_start
    counts = tracker.counts
    if args.json:
        summary = {"robot": args.robot, "method": args.method, "noise": args.noise, "scenario": "cycle",
                   "seed": args.seed, "duration_s": cycle.duration, **score.summary(),
                   "counts": asdict(counts),
                   "events": [{"kind": e.kind, "t_start": float(e.t_start), "t_decided": float(e.t_decided)}
                              for e in tracker.events],
                   "plot": str(plot_path) if plot_path else None, "wall_time_s": wall}
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    from rich.table import Table

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
    if plot_path is not None:
        console.print(f"wrote {plot_path.name} in {out_dir}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _run_joint_torques(args: argparse.Namespace) -> int:
    """``--wrench-source joint-torques`` (module docstring)."""
    from dataclasses import replace

    import numpy as np

    from payload_estimator.commands.calibrate import (
        calibration_summary,
        calibration_table,
        consistency_line,
        friction_warnings,
        motion_coverage,
    )
    from payload_estimator.core.tracking import PayloadTracker
    from payload_estimator.outputs.run_report import RunReport
    from payload_estimator.pipeline.arm_dynamics import ArmDynamics, calibrate_arm, joint_recording
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
    from payload_estimator.sim.payloads import get_payload

    if args.duration is not None and not args.duration > 0.5:
        raise CommandError("--duration must be more than 0.5 s")
    out_dir = args.out
    payload = get_payload(args.payload)
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    # the estimation motion: the user's, else all-joint sinusoids of another seed than the calibration's
    label, trajectory, args.duration, check = resolve_trajectory(
        args.robot, args.trajectory or JOINT_TORQUE_TRAJECTORY, args.duration, seed=args.seed)
    args.trajectory = label
    if check is not None and not check.ok:
        console.print(f"warning: the trajectory breaks the motion limits a robot would be held to: "
                      f"{check.violations[0]}", markup=False, highlight=False, soft_wrap=True)
    efforts, arm = EffortModel.for_robot(args.robot), ArmMismatch(seed=args.seed)  # one physical arm for both runs
    cal_seed = args.seed + 1  # another motion (and other noise draws) than the estimation's
    with progress_display as progress:
        task = progress.add_task(f"calibrating the unloaded {args.robot}", total=1.0, status="")
        cal_run = simulate(robot=args.robot, payload=NO_PAYLOAD, trajectory=JOINT_TORQUE_TRAJECTORY,
                           duration=CALIBRATION_DURATION_S, noise=args.noise, seed=cal_seed, rate_hz=SIM_RATE_HZ,
                           efforts=efforts, arm_mismatch=arm, imu=False,
                           progress=lambda f: progress.update(task, completed=0.8 * f))
        kinematics = SensorKinematics(cal_run.urdf, cal_run.sensor_frame, cal_run.joint_names)
        rec = joint_recording(cal_run.joint_t, cal_run.joint_q, cal_run.joint_effort)
        calibration, fit = calibrate_arm(kinematics, rec, robot=args.robot,
                                         info={"source": f"demo: {JOINT_TORQUE_TRAJECTORY} seed {cal_seed}"})
        progress.update(task, completed=1.0)
        sim_task = progress.add_task(f"simulating {args.robot} + {args.payload}", total=1.0, status="")
        run_ = simulate(robot=args.robot, payload=payload, trajectory=trajectory, duration=args.duration,
                        noise=args.noise, seed=args.seed, rate_hz=SIM_RATE_HZ, efforts=efforts, arm_mismatch=arm,
                        imu=False, progress=lambda f: progress.update(sim_task, completed=f))

        def make(bias: bool):
            return build_estimator(args.method, payload.envelope, bias=bias, c1=args.c1)

        estimator = PayloadTracker(make, bias=False, detect=args.track)  # no F/T offsets without a sensor
        stream = stream_for_run(run_, estimator, joint_torques=True, arm_calibration=calibration, wrench=None,
                                saturation=None)
        recording = replace(recording_from_run(run_), wrench_t=np.zeros(0), wrench=np.zeros((0, 6)))
        est_task = progress.add_task(f"estimating from joint torques ({args.method})",
                                     total=recording.end - recording.start, status="")

        def on_estimate(out) -> None:
            e = out.estimate
            flag = "converged" if out.converged else out.reason
            progress.update(est_task, completed=out.t - recording.start, status=f"m={e.mass:.3f} kg  {flag}")

        history = play(stream, recording, on_estimate=on_estimate)
        progress.update(est_task, completed=recording.end - recording.start)

    final = stream.last
    if final is None:
        raise CommandError("no estimate: the pipeline produced no samples")
    sensor = stream.config.sensor_frame
    flange = stream.config.flange_frame or sensor
    report = RunReport(
        final, history, sensor, flange, stream.health.counts,
        title=f"{args.robot} + {args.payload} from joint torques ({efforts.name}): {args.method}, {args.trajectory}",
        truth=payload.params, bbox_lengths=payload.bbox_lengths, wall_time_s=time.perf_counter() - t_start,
        force=args.force)
    report.write(out_dir, plot=not args.no_plot)
    written = [p.name for p in (report.fragment_path, report.plot_path) if p is not None]
    where = f"wrote {', '.join(written)} in {out_dir}"
    truth_flange = payload.params.transformed(stream.R_flange_sensor, stream.p_flange_sensor)
    coverage = motion_coverage(rec)
    cal_warnings = friction_warnings(ArmDynamics(kinematics, calibration), coverage)
    if args.json:
        summary = report.summary(robot=args.robot, payload=args.payload, method=args.method,
                                 wrench_source="joint_torques", effort_model=efforts.name,
                                 trajectory=args.trajectory, duration_s=args.duration, noise=args.noise,
                                 out_dir=str(out_dir))
        summary["truth_in_flange"] = {"mass": truth_flange.mass, "com": truth_flange.com.tolist(),
                                      "inertia_com": truth_flange.inertia_com.tolist()}
        summary["calibration"] = {"trajectory": JOINT_TORQUE_TRAJECTORY, "seed": cal_seed,
                                  **calibration_summary(calibration, fit, coverage), "warnings": cal_warnings}
        if args.track:
            summary["tracking"] = asdict(estimator.counts)
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        console.print(where, markup=False, highlight=False, soft_wrap=True)
        return 0
    console.print(f"calibration of the unloaded {args.robot}: {CALIBRATION_DURATION_S:g} s of "
                  f"{JOINT_TORQUE_TRAJECTORY} (seed {cal_seed}), {fit.samples} samples, efforts {efforts.name}",
                  markup=False, highlight=False, soft_wrap=True)
    console.print(calibration_table(calibration, fit, coverage))
    console.print(consistency_line(calibration), markup=False, highlight=False, soft_wrap=True)
    for line in cal_warnings:
        console.print(f"warning: {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"\nestimate from joint torques, {args.trajectory} (seed {args.seed}), another motion:",
                  markup=False, highlight=False)
    report.print(console, what=f"of motion; simulated {args.duration:.0f} s and estimated")
    est_f = final.params_in_flange
    console.print(f"in the flange frame '{flange}': mass {est_f.mass:.4f} kg (truth {truth_flange.mass:.4f}), COM "
                  f"[{', '.join(f'{1e3 * c:+.1f}' for c in est_f.com)}] mm (truth "
                  f"[{', '.join(f'{1e3 * c:+.1f}' for c in truth_flange.com)}] mm)",
                  markup=False, highlight=False, soft_wrap=True)
    console.print(where, markup=False, highlight=False, soft_wrap=True)
    return 0
