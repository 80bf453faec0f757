"""End to end: simulated robots, raw joint states and wrench, every estimator, errors over time.

MuJoCo simulates a Panda and an xArm 7 holding each payload while tracking an
excitation at cobot speed (TCP <= 0.25 m/s); the measured joint states
(1 kHz, encoder noise) and wrench (Table II noise, offset and drift) go
through the full pipeline (alignment, matched filtering, pinocchio
kinematics, statistics) exactly as the ROS node runs it. Errors use Nadeau
et al.'s metrics after 2, 5 and 10 s of motion, averaged over payloads and
seeds. The last table is the pipeline's throughput (alignment + filtering +
kinematics + statistics + estimates at 10 Hz), in input samples per second.

Run:  python benchmarks/end_to_end.py [--robots panda xarm7] [--seeds 2] [--trajectory wrist] [--c1 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from payload_estimator.core.estimators import C1_DEFAULT, METHODS
from payload_estimator.core.metrics import paper_errors
from payload_estimator.pipeline.playback import play
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

PAYLOADS = ("hammer", "corner", "tower", "claw_hammer", "drill", "offset_box", "alu_block")

CHECKPOINTS = (2.0, 5.0, 10.0)


def errors_over_time(history, payload) -> dict[float, tuple[float, float, float, bool]]:
    """Errors of the last estimate at or before each checkpoint (s of motion)."""
    t = np.array(history.t)
    out = {}
    for T in CHECKPOINTS:
        k = int(np.searchsorted(t, T + 1e-6)) - 1
        if k < 0:
            continue
        from payload_estimator.core.inertia import InertialParameters

        mass, com, I = history.mass[k], history.com[k], history.inertia_com[k]
        params = InertialParameters.from_mass_com_inertia(mass, com, I)
        e = paper_errors(params, payload.params, payload.bbox_lengths)
        out[T] = (e.mass, e.com, e.inertia, history.consistent[k])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="+", default=["panda", "xarm7"])
    ap.add_argument("--payloads", nargs="+", default=list(PAYLOADS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--trajectory", default="wrist", choices=("wrist", "thesis", "pickplace"))
    ap.add_argument("--noise", default="moderate")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--c1", type=float, default=C1_DEFAULT)
    ap.add_argument("--no-bias", action="store_true", help="do not estimate F/T offsets")
    args = ap.parse_args()

    results: dict[tuple[str, str], list[dict]] = {}
    throughput = []
    t0 = time.perf_counter()
    for robot in args.robots:
        for name in args.payloads:
            payload = get_payload(name)
            for seed in range(args.seeds):
                run = simulate(robot=robot, payload=name, trajectory=args.trajectory, duration=max(CHECKPOINTS),
                               noise=args.noise, seed=seed)
                recording = recording_from_run(run)
                for method in args.methods:
                    stream = stream_for_run(run, payload.envelope, estimator=method, estimate_bias=not args.no_bias,
                                            c1=args.c1, track_payload=False)
                    t_play = time.perf_counter()
                    history = play(stream, recording)
                    wall = time.perf_counter() - t_play
                    throughput.append((method, (len(run.joint_t) + len(run.wrench_t)) / wall,
                                       len(run.joint_t) / wall))
                    results.setdefault((robot, method), []).append(errors_over_time(history, payload))

    print(f"\nEnd to end: {args.trajectory} at cobot speed, {args.noise} noise, payloads {', '.join(args.payloads)}, "
          f"{args.seeds} seed(s), F/T offsets {'not ' if args.no_bias else ''}estimated, PMD c1 = {args.c1:g}.")
    print("Errors in % (Nadeau et al.'s eqs. 10-12) after 2 / 5 / 10 s of motion, mean over payloads and seeds.\n")
    print("| robot | method | mass % | COM % | inertia % | consistent % (at 5 s) |")
    print("|---|---|---|---|---|---|")
    for (robot, method), rows in results.items():
        cols = []
        for k in range(3):
            vals = [np.mean([r[T][k] for r in rows if T in r]) for T in CHECKPOINTS]
            cols.append(" / ".join((">500" if v > 500 else f"{v:.2f}" if v < 100 else f"{v:.0f}") for v in vals))
        cons = 100 * np.mean([r[5.0][3] for r in rows if 5.0 in r])
        print(f"| {robot} | {method} | {cols[0]} | {cols[1]} | {cols[2]} | {cons:.0f} |")

    print("\nPipeline throughput (same runs; 1 kHz joint states + 1 kHz wrench, estimates at 10 Hz):\n")
    print("| method | input messages/s | joint-state samples/s | share of one core at 1 kHz + 1 kHz |")
    print("|---|---|---|---|")
    for method in args.methods:
        rows = [r for r in throughput if r[0] == method]
        msgs = float(np.median([r[1] for r in rows]))
        joints = float(np.median([r[2] for r in rows]))
        print(f"| {method} | {msgs:,.0f} | {joints:,.0f} | {100 * 2000 / msgs:.1f} % |")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
