"""The designed identification motion against Nadeau et al.'s wrist sinusoids of the same duration.

For each robot and payload, MuJoCo simulates the arm tracking (a) Nadeau et al.'s wrist sinusoids
(the three wrist joints, 45 degrees, the time scale capped by the TCP and joint speed limits)
and (b) the motion `payload-estimator excite` designs from the home pose (design seed 0, what a
user gets), both ``--duration`` seconds from rest to rest, with the same sensor noise (Nadeau et
al.'s Table II, moderate by default; offsets and drift), and the whole pipeline estimates the payload
as the node does. Per estimator: the errors at the end (their eqs. 10-12), when mass and COM
and when everything converged, and whether the motion kept every limit of the default
`MotionLimits` (1 kHz check).

Payloads: the two target pairs (Panda + the 845 g claw hammer, xArm 7 + the 1.55 kg drill), a
non-uniform object of Nadeau et al.'s kind (the 316 g hammer: steel head on a plastic frame) and a light one
(the workshop's 68 g steel ruler), so that no object flatters the motion. PMD has the payload's
outer box as its shape prior; WLS has none.

Run:  python benchmarks/excitation.py [--seeds 3] [--duration 5] [--methods pmd wls] [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from payload_estimator.core.history import EstimateHistory
from payload_estimator.core.metrics import paper_errors
from payload_estimator.excitation import ArmLimits, MotionLimits, check_trajectory, design_excitation, flange_kinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.robots import get_robot
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import PaperWristSinusoids
from payload_estimator.sim.workshop import get_tool

CASES = (("panda", "claw_hammer"), ("xarm7", "drill"), ("panda", "hammer"), ("xarm7", "ws_ruler"))
QUICK_CASES = CASES[:2]
TARGET_RATIO = 0.8
"""Target: the designed motion's inertia error at most this fraction of the sinusoids'."""
TARGET_CONVERGENCE_S = 2.5


def _payload(name: str):
    return get_tool(name) if name.startswith("ws_") else get_payload(name)


def run_one(robot: str, payload, trajectory, duration: float, method: str, seed: int, noise: str) -> dict:
    """Errors at the end and convergence times of one simulated run through the pipeline."""
    run = simulate(robot=robot, payload=payload, trajectory=trajectory, duration=duration, noise=noise,
                   seed=seed)
    stream = stream_for_run(run, payload.envelope, estimator=method)
    history: EstimateHistory = play(stream, recording_from_run(run))
    final = stream.last
    assert final is not None
    err = paper_errors(final.estimate.params, payload.params, payload.bbox_lengths)
    return {
        "mass": err.mass, "com": err.com, "inertia": err.inertia,
        "converged": history.first_converged_time(),
        "mass_com": history.first_converged_time(mass_com=True),
        "consistent": bool(final.estimate.physically_consistent),
    }


def _median(values: list) -> str:
    known = [v for v in values if v is not None]
    if len(known) < len(values):
        return f"{np.median(known):.1f} ({len(values) - len(known)} not)" if known else "never"
    return f"{np.median(known):.1f}"


def _worst(values: list) -> str:
    return "never" if any(v is None for v in values) else f"{max(values):.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="noise seeds per case (default 3)")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds of motion (default 5)")
    ap.add_argument("--methods", nargs="+", default=["pmd", "wls"])
    ap.add_argument("--noise", default="moderate")
    ap.add_argument("--quick", action="store_true", help="the two target pairs, one seed, PMD (CI)")
    args = ap.parse_args()
    cases = QUICK_CASES if args.quick else CASES
    seeds = 1 if args.quick else args.seeds
    methods = ["pmd"] if args.quick else args.methods
    limits = MotionLimits(duration=args.duration)

    designs, design_times, paper_checks = {}, {}, {}
    for robot in sorted({r for r, _ in cases}):
        spec = get_robot(robot)
        kin, arm = flange_kinematics(robot), ArmLimits.from_robot(spec)
        started = time.perf_counter()
        designs[robot] = design_excitation(kin, arm, spec.q_home, limits, seed=0)
        design_times[robot] = time.perf_counter() - started
        paper = PaperWristSinusoids(spec, duration=args.duration)
        paper_checks[robot] = check_trajectory(paper, kin, arm, spec.q_home, limits)

    print(f"## Designed motions ({args.duration:g} s, default MotionLimits)\n")
    print("| robot | design time | peak joint speed / accel / jerk (of limit) | peak TCP speed | cond | "
          "limits kept | Nadeau et al.'s sinusoids keep them |")
    print("|---|---|---|---|---|---|---|")
    for robot, d in designs.items():
        c, pc = d.check, paper_checks[robot]
        paper_note = "yes" if pc.ok else f"no: {pc.violations[0]}"
        print(f"| {robot} | {design_times[robot]:.1f} s | {np.max(c.peak_velocity_fraction):.0%} / "
              f"{np.max(c.peak_acceleration_fraction):.0%} / {np.max(c.peak_jerk_fraction):.1%} | "
              f"{c.peak_tcp_speed:.3f} m/s | {d.condition_number:.0f} | {'yes' if c.ok else 'NO'} | {paper_note} |")

    results: dict[tuple, list] = defaultdict(list)
    for robot, payload_name in cases:
        payload = _payload(payload_name)
        spec = get_robot(robot)
        for seed in range(seeds):
            motions = {"wrist": PaperWristSinusoids(spec, duration=args.duration),
                       "designed": designs[robot].trajectory}
            for motion, trajectory in motions.items():
                for method in methods:
                    results[(robot, payload_name, method, motion)].append(
                        run_one(robot, payload, trajectory, args.duration, method, seed, args.noise))

    print(f"\n## Errors after {args.duration:g} s of motion, {args.noise} noise, {seeds} seed(s) "
          "(mean; convergence: median / worst, s of motion)\n")
    print("| robot + payload | estimator | motion | mass % | COM % | inertia % | inertia ratio | "
          "mass+COM converged | all converged | consistent |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    verdicts = []
    for robot, payload_name in cases:
        for method in methods:
            base = results[(robot, payload_name, method, "wrist")]
            base_inertia = np.mean([r["inertia"] for r in base])
            for motion in ("wrist", "designed"):
                rows = results[(robot, payload_name, method, motion)]
                inertia = np.mean([r["inertia"] for r in rows])
                ratio = "" if motion == "wrist" else f"{inertia / base_inertia:.2f}"
                conv = [r["converged"] for r in rows]
                print(f"| {robot} + {payload_name} | {method.upper()} | {motion} | "
                      f"{np.mean([r['mass'] for r in rows]):.2f} | {np.mean([r['com'] for r in rows]):.2f} | "
                      f"{inertia:.1f} | {ratio} | {_median([r['mass_com'] for r in rows])} / "
                      f"{_worst([r['mass_com'] for r in rows])} | {_median(conv)} / {_worst(conv)} | "
                      f"{sum(r['consistent'] for r in rows)}/{len(rows)} |")
                if motion == "designed" and (robot, payload_name) in QUICK_CASES and method == "pmd":
                    in_time = sum(c is not None and c <= TARGET_CONVERGENCE_S for c in conv)
                    met = inertia <= TARGET_RATIO * base_inertia and in_time == len(conv)
                    verdicts.append(f"{robot} + {payload_name} (PMD): inertia {inertia / base_inertia:.2f}x the "
                                    f"sinusoids' (target <= {TARGET_RATIO}), converged within "
                                    f"{TARGET_CONVERGENCE_S} s in {in_time}/{len(conv)} runs: "
                                    f"{'met' if met else 'NOT met'}")
    print("\nTargets:")
    for line in verdicts:
        print(f"- {line}")


if __name__ == "__main__":
    main()
