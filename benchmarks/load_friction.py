"""Load-dependent friction: what it does to the payload from joint torques, and what its calibration recovers.

On real gearboxes the Coulomb friction grows with the torque the joint transmits (Hamon, Gautier and
Garrec, "Dynamic identification of robots with a dry friction model depending on load and velocity",
IROS 2010: ``F_c = F_c0 + mu |tau_load|``). The simulator applies it opt-in (``EffortModel.for_robot(...,
load_friction=mu)``, ``simulate --efforts --load-friction MU``), on top of the robot's own friction, to an
arm that is not its URDF (``ArmMismatch``). Per robot and arm (mismatch seed), for a simulator without and
with that friction:

1. calibration: the unloaded arm runs ``--calibration-s`` seconds of Lambert's sinusoids; ``calibrate_arm``
   fits it without and with its load-dependent term (``load_friction=True``, ``calibrate --load-friction``:
   one coefficient for the arm; ``--per-joint`` also one per joint),
   and with the term and a second recording of the arm holding a known payload (``--known-payload``, another
   motion: ``calibrate --known-payload-bag``), whose load tells ``mu`` on the joints the arm's own links
   hardly load;
2. estimation: the arm holding the payload runs ``--duration`` seconds of another motion (Lambert's
   sinusoids, other frequencies), and the joint-torque pipeline estimates the payload (WLS).

Tables: the calibration's ``mu`` per joint against the simulator's, and the effort residual; the payload's
errors (mass %, COM mm, inertia %, Nadeau et al.'s eq. 12) and the mass error over the estimate's own mass
std (|z|: about 1 when the uncertainty covers the error).

Run:  python benchmarks/load_friction.py [--robots xarm7 panda] [--seeds 2] [--mu 0.05] [--effort-scale-error E]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.metrics import mean_and_worst, paper_errors
from payload_estimator.pipeline.arm_dynamics import calibrate_arm, joint_recording
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.pipeline.sources.joint_effort import JointEfforts
from payload_estimator.robots import get_robot
from payload_estimator.settings import WrenchSource
from payload_estimator.sim.efforts import ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import known_payload_recording, recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import make_trajectory
from payload_estimator.sim.workshop import get_tool


def _payload(name: str):
    return get_tool(name) if name.startswith("ws_") else get_payload(name)


def _efforts(robot: str, mu: float, scale_error: float, seed: int) -> EffortModel:
    return EffortModel.for_robot(robot, effort_scale_error=scale_error, seed=seed, load_friction=mu)


def _estimate(run, payload, calibration) -> dict:
    stream = stream_for_run(run, None, estimator="wls", track_payload=False, wrench_source=WrenchSource.JOINT_TORQUES,
                            wrench=JointEfforts(calibration))
    play(stream, recording_from_run(run))
    final = stream.last
    nan = {"mass": np.nan, "com_mm": np.nan, "inertia": np.nan, "z": np.nan}
    if final is None:
        return nan
    truth = InertialParameters(run.payload_phi)
    err = paper_errors(final.estimate.params, truth, payload.bbox_lengths)
    cov = final.estimate.covariance
    z = np.nan if cov is None else abs(final.estimate.params.mass - truth.mass) / np.sqrt(max(cov[0, 0], 1e-300))
    return {"mass": err.mass, "com_mm": 1000.0 * float(np.linalg.norm(final.estimate.params.com - truth.com)),
            "inertia": err.inertia, "z": float(z)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="+", default=["xarm7", "panda"])
    ap.add_argument("--seeds", type=int, default=2, help="arms (mismatch and noise seeds) per robot (default 2)")
    ap.add_argument("--payload", default="ws_club_hammer")
    ap.add_argument("--mu", type=float, default=0.05,
                    help="the simulator's load-dependent Coulomb coefficient, N·m per N·m of load (default 0.05)")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of estimation motion (default 15)")
    ap.add_argument("--calibration-s", type=float, default=30.0, help="seconds of calibration motion (default 30)")
    ap.add_argument("--known-payload", default="offset_box",
                    help="the known payload of the third calibration (default offset_box; none: skip it)")
    ap.add_argument("--per-joint", action="store_true", help="also calibrate one mu per joint")
    ap.add_argument("--effort-scale-error", type=float, default=0.0, metavar="E",
                    help="each joint's effort scale off by up to E (then calibrated with the scales; default 0)")
    args = ap.parse_args()
    payload = _payload(args.payload)
    scale = args.effort_scale_error > 0.0
    results: dict[tuple, list] = defaultdict(list)
    print(f"## Calibration ({args.calibration_s:g} s, unloaded): mu per joint (simulator {args.mu:g}) and effort "
          "residual RMS (N·m, mean over joints)\n")
    print("| robot | arm | simulator mu | calibration | mu found per joint | residual |")
    print("|---|---|---|---|---|---|")
    for robot in args.robots:
        spec = get_robot(robot)
        calib_motion = make_trajectory("thesis", spec, duration=args.calibration_s, seed=1000)
        motion = make_trajectory("thesis", spec, duration=args.duration, seed=7)
        known_motion = make_trajectory("thesis", spec, duration=args.calibration_s, seed=2000)
        for seed in range(args.seeds):
            mismatch = ArmMismatch(seed=seed)
            for mu in (0.0, args.mu):
                efforts = _efforts(robot, mu, args.effort_scale_error, seed)
                cal_run = simulate(robot=robot, payload=NO_PAYLOAD, trajectory=calib_motion,
                                   duration=args.calibration_s, noise="moderate", seed=1000 + seed, imu=False,
                                   efforts=efforts, arm_mismatch=mismatch)
                kin = SensorKinematics(cal_run.urdf, cal_run.sensor_frame, cal_run.joint_names)
                rec = joint_recording(cal_run.joint_t, cal_run.joint_q, cal_run.joint_effort)
                run = simulate(robot=robot, payload=payload, trajectory=motion, duration=args.duration,
                               noise="moderate", seed=seed, imu=False, efforts=efforts, arm_mismatch=mismatch)
                kinds = ["without", "with load term"] + (["load term per joint"] if args.per_joint else []) + (
                    ["load term, known payload"] if args.known_payload != "none" else [])
                for kind in kinds:
                    fit_load = kind != "without"
                    extra = {}
                    if kind == "load term, known payload":
                        known_run = simulate(robot=robot, payload=_payload(args.known_payload),
                                             trajectory=known_motion, duration=args.calibration_s, noise="moderate",
                                             seed=2000 + seed, imu=False, efforts=efforts, arm_mismatch=mismatch)
                        extra = known_payload_recording(known_run, kin)
                    cal, fit = calibrate_arm(kin, rec, robot=robot, effort_scale=scale, load_friction=fit_load,
                                             load_friction_per_joint=kind == "load term per joint", **extra)
                    label = kind
                    found = " ".join(f"{v:.3f}" for v in cal.load_friction.sum(axis=1)) if fit_load else "-"
                    print(f"| {robot} | {seed} | {mu:g} | {label} | {found} | {np.mean(fit.rms_calibrated):.3f} |",
                          flush=True)
                    results[robot, mu, kind].append(_estimate(run, payload, cal))

    print(f"\n## Payload ({args.payload}) from joint torques after {args.duration:g} s, WLS, {args.seeds} arm(s): "
          "mean (worst)\n")
    print("| robot | simulator load friction | calibration | mass % | COM mm | inertia % | mass error / std |")
    print("|---|---|---|---|---|---|---|")
    for (robot, mu, kind), rows in results.items():
        cells = [mean_and_worst([r[k] for r in rows]) for k in ("mass", "com_mm", "inertia", "z")]
        print(f"| {robot} | {'mu ' + format(mu, 'g') if mu else 'off'} | {kind} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
