"""``payload-estimator demo``: a simulated arm with a known payload, through the whole pipeline.

MuJoCo simulates the robot tracking an excitation trajectory with the payload
on its F/T sensor (noise, offset and drift included); the measured joint
states and wrench are then played through the estimation stream at control
rate, exactly as the ROS node would receive them. At the end: truth beside
estimate, the paper-004 errors, the URDF ``<inertial>`` fragment and a PNG of
the estimate converging.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import (
    MAX_SIM_DURATION_S,
    SIM_RATE_HZ,
    add_out_dir_argument,
    build_estimator,
    console_and_progress,
    nonnegative_int,
    positive_float,
    recording_from_run,
    sim_duration,
    stream_for_run,
    wrench_rate,
)
from payload_estimator.core.estimators import C1_DEFAULT, ESTIMATORS

__all__ = ["add_parser", "run"]

TRAJECTORIES = ("paper004", "thesis", "pickplace")
NOISE = ("none", "low", "moderate", "high")


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
    p.add_argument("--trajectory", choices=TRAJECTORIES, default="paper004",
                   help="paper004: wrist sinusoids; thesis: all-joint sinusoids; pickplace: a pick-and-place move")
    p.add_argument("--duration", type=sim_duration, default=10.0,
                   help=f"seconds of motion, 0.5 to {MAX_SIM_DURATION_S:g} (default 10)")
    p.add_argument("--noise", choices=NOISE, default="moderate", help="F/T noise level, paper 004 Table II")
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
    return p


def run(args: argparse.Namespace) -> int:
    from payload_estimator.outputs.run_report import RunReport
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.mujoco_sim import simulate
    from payload_estimator.sim.payloads import get_payload

    if not args.duration > 0.5:
        raise CommandError("--duration must be more than 0.5 s")
    out_dir = args.out  # checked while parsing the options, before the work
    payload = get_payload(args.payload)
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    with progress_display as progress:
        sim_task = progress.add_task(f"simulating {args.robot} + {args.payload}", total=1.0, status="")
        run_ = simulate(
            robot=args.robot, payload=payload, trajectory=args.trajectory, duration=args.duration,
            noise=args.noise, seed=args.seed, rate_hz=SIM_RATE_HZ, wrench_rate_hz=args.wrench_rate,
            progress=lambda f: progress.update(sim_task, completed=f),
        )
        estimator = build_estimator(args.method, payload.envelope, bias=not args.no_bias, c1=args.c1)
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
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        console.print(where, markup=False, highlight=False, soft_wrap=True)  # stderr: stdout carries the JSON
        return 0
    report.print(console, what=f"of motion; simulated {args.duration:.0f} s and estimated")
    console.print(where, markup=False, highlight=False, soft_wrap=True)
    return 0
