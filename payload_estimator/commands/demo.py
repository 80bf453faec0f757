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
from pathlib import Path

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import (
    PIPELINE_C1,
    build_estimator,
    console_and_progress,
    recording_from_run,
    stream_for_run,
)

__all__ = ["add_parser", "run"]

TRAJECTORIES = ("paper004", "thesis", "pickplace")
NOISE = ("none", "low", "moderate", "high")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from payload_estimator.core.estimators import METHODS
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
    p.add_argument("--method", choices=METHODS, default="pmd")
    p.add_argument("--trajectory", choices=TRAJECTORIES, default="paper004",
                   help="paper004: wrist sinusoids; thesis: all-joint sinusoids; pickplace: a pick-and-place move")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of motion (default 10)")
    p.add_argument("--noise", choices=NOISE, default="moderate", help="F/T noise level, paper 004 Table II")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wrench-rate", type=float, default=None, help="F/T rate, Hz (default: 1000)")
    p.add_argument("--no-bias", action="store_true", help="do not estimate the F/T offsets")
    p.add_argument("--c1", type=float, default=PIPELINE_C1, help=f"PMD c1 (default {PIPELINE_C1:g})")
    p.add_argument("--out", default="payload_demo", help="directory for the plot and the URDF fragment")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of tables")
    return p


def run(args: argparse.Namespace) -> int:
    from payload_estimator.core.metrics import paper_errors
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.mujoco_sim import simulate
    from payload_estimator.sim.payloads import get_payload

    if not args.duration > 0.5:
        raise CommandError("--duration must be more than 0.5 s")
    payload = get_payload(args.payload)
    console, progress_display = console_and_progress(args.json)
    t_start = time.perf_counter()
    with progress_display as progress:
        sim_task = progress.add_task(f"simulating {args.robot} + {args.payload}", total=1.0, status="")
        run_ = simulate(
            robot=args.robot, payload=payload, trajectory=args.trajectory, duration=args.duration,
            noise=args.noise, seed=args.seed, wrench_rate_hz=args.wrench_rate,
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
    wall = time.perf_counter() - t_start

    final = stream.update_estimate()
    if final is None:
        raise CommandError("no estimate: the pipeline produced no samples")
    est = final.estimate
    truth = payload.params
    err = paper_errors(est.params, truth, payload.bbox_lengths)
    t_conv = history.first_converged_time()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    from payload_estimator.outputs.urdf import urdf_inertial

    flange = stream.config.flange_frame or stream.config.sensor_frame
    fragment = urdf_inertial(final.params_in_flange, frame=flange)
    (out_dir / "payload_inertial.urdf.xml").write_text(fragment + "\n")
    plot_path = None
    if not args.no_plot:
        from payload_estimator.outputs.plots import plot_convergence

        plot_path = plot_convergence(
            history, out_dir / "convergence.png", truth=truth,
            title=f"{args.robot} + {args.payload}: {args.method}, {args.trajectory}, {args.noise} noise",
        )

    summary = {
        "robot": args.robot, "payload": args.payload, "method": args.method, "trajectory": args.trajectory,
        "duration_s": args.duration, "noise": args.noise,
        "truth": {"mass": truth.mass, "com": truth.com.tolist(), "inertia_com": truth.inertia_com.tolist()},
        "estimate": est.to_dict(),
        "errors_percent": {"mass": err.mass, "com": err.com, "inertia": err.inertia},
        "converged": bool(final.converged), "converged_after_s": t_conv,
        "wall_time_s": wall, "plot": str(plot_path) if plot_path else None,
        "urdf_fragment": str(out_dir / "payload_inertial.urdf.xml"),
        "input_problems": stream.health.counts,
    }
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0

    from payload_estimator.outputs.report import estimate_table, quality_table

    console.print(estimate_table(est, truth=truth, frame=stream.config.sensor_frame))
    console.print(quality_table(est))
    console.print(
        f"errors (paper 004 eqs. 10-12): mass {err.mass:.2f} %, COM {err.com:.2f} %, inertia {err.inertia:.1f} %"
    )
    conv = f"converged after {t_conv:.1f} s of motion" if t_conv is not None else f"not converged ({final.reason})"
    console.print(f"{conv}; simulated {args.duration:.0f} s and estimated in {wall:.1f} s of wall time")
    console.print(f"\nURDF <inertial> in '{flange}' (also in {out_dir / 'payload_inertial.urdf.xml'}):")
    console.print(fragment, markup=False, highlight=False)
    if plot_path:
        console.print(f"\nconvergence plot: {plot_path}")
    return 0
