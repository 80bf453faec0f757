"""Effort scales: what ``calibrate --effort-scale`` finds on arms whose efforts are off, and the payload after.

For each robot and arm (seed), MuJoCo simulates an arm unlike its URDF (every link's mass off by up to 15 %,
its COM by up to 1 cm), with realistic joint efforts (friction unlike the calibration's model, noise) whose
scale is off by up to ``--scale-error`` per joint (``EffortModel.for_robot``: each joint's reported effort
times ``1 + U(-e, e)``; the truth of the calibration is its inverse). Per arm:

1. ``--calibration-s`` seconds of the unloaded arm on the motion ``excite --for calibration`` designs
   (``--calibration-motion thesis``: Lambert's sinusoids) and, for the known-payload row, the same motion
   again holding the 0.65 kg offset box (Lambert's: another one);
2. the calibration: without effort scales (``calibrate``), with them from the unloaded arm alone
   (``calibrate --effort-scale``), and with the known payload too (``--known-payload-bag``);
3. ``--duration`` seconds of another motion holding the workshop's 1.08 kg club hammer, the payload estimated
   from the joint torques (WLS) with each calibration.

Columns: each joint's scale error (found / true - 1): mean and worst over the joints (and the arms: mean
(worst)); the joints the calibration marks as not determined; the payload's mass error.

Run:  python benchmarks/effort_scales.py [--robots panda xarm7] [--seeds 2] [--scale-error 0.15]
          [--calibration-motion designed|thesis]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.excitation import ArmLimits, calibration_limits, design_calibration_motion, flange_kinematics
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

MODES = ("no scales", "scales, unloaded arm", "scales, known payload too")


def _run(robot: str, payload, seconds: float, seed: int, efforts: EffortModel, arm_seed: int, motion: str = "thesis"):
    """``seconds`` of ``robot`` holding ``payload``: Lambert's sinusoids (seeded) or the designed calibration motion."""
    spec = get_robot(robot)
    if motion == "designed":  # what `excite --for calibration` designs from home
        trajectory = design_calibration_motion(flange_kinematics(robot), ArmLimits.from_robot(spec),
                                               np.asarray(spec.q_home), calibration_limits(duration=seconds),
                                               seed=arm_seed).trajectory
    else:
        trajectory = make_trajectory("thesis", spec, duration=seconds, seed=seed)
    return simulate(robot=robot, payload=payload, trajectory=trajectory, duration=seconds, noise="moderate",
                    seed=seed, imu=False, efforts=efforts, arm_mismatch=ArmMismatch(seed=arm_seed))


def _mass_error(run, calibration) -> float:
    stream = stream_for_run(run, None, estimator="wls", track_payload=False,
                            wrench_source=WrenchSource.JOINT_TORQUES, wrench=JointEfforts(calibration))
    play(stream, recording_from_run(run))
    if stream.last is None:
        return float("nan")
    truth = InertialParameters(run.payload_phi)
    return 100.0 * abs(stream.last.estimate.params.mass / truth.mass - 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="+", default=["panda", "xarm7"])
    ap.add_argument("--seeds", type=int, default=2, help="arms per robot (default 2)")
    ap.add_argument("--scale-error", type=float, default=0.15, help="each joint's effort scale off by up to this")
    ap.add_argument("--calibration-s", type=float, default=30.0, help="seconds of each calibration recording")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of estimation motion")
    ap.add_argument("--calibration-motion", choices=("designed", "thesis"), default="designed",
                    help="the calibration recordings' motion: what `excite --for calibration` designs (default), or "
                         "Lambert's sinusoids")
    args = ap.parse_args()

    rows: dict[tuple[str, str], list] = defaultdict(list)
    for robot in args.robots:
        for arm in range(args.seeds):
            efforts = EffortModel.for_robot(robot, effort_scale_error=args.scale_error, seed=arm)
            truth = 1.0 / efforts.scale
            cal_run = _run(robot, NO_PAYLOAD, args.calibration_s, 1000 + arm, efforts, arm, args.calibration_motion)
            kin = SensorKinematics(cal_run.urdf, cal_run.sensor_frame, cal_run.joint_names)
            rec = joint_recording(cal_run.joint_t, cal_run.joint_q, cal_run.joint_effort)
            known_run = _run(robot, get_payload("offset_box"), args.calibration_s, 2000 + arm, efforts, arm,
                             args.calibration_motion)
            known = known_payload_recording(known_run, kin)
            est_run = _run(robot, get_tool("ws_club_hammer"), args.duration, 3000 + arm, efforts, arm)
            for mode in MODES:
                options: dict = {}
                if mode != MODES[0]:
                    options["effort_scale"] = True
                if mode == MODES[2]:
                    options.update(known)
                cal, _ = calibrate_arm(kin, rec, robot=robot, **options)
                err = 100.0 * np.abs(cal.effort_scale / truth - 1.0)
                undetermined = [str(j + 1) for j, ok in enumerate(cal.info.get("effort_scale_determined", []))
                                if not ok]
                rows[robot, mode].append((float(err.mean()), float(err.max()), ",".join(undetermined) or "-",
                                          _mass_error(est_run, cal)))

    print(f"## Effort scales off by up to ±{100 * args.scale_error:g} % per joint; {args.seeds} arm(s) per robot, "
          f"{args.calibration_s:g} s per calibration recording; mean (worst) over the arms\n")
    print("| robot | calibration | scale error %, mean over joints | scale error %, worst joint | joints not "
          "determined (per arm) | payload mass error % (1.08 kg) |")
    print("|---|---|---|---|---|---|")
    for (robot, mode), values in rows.items():
        mean, worst, undetermined, mass = zip(*values)
        print(f"| {robot} | {mode} | {np.mean(mean):.2f} ({np.max(mean):.2f}) | {np.mean(worst):.2f} "
              f"({np.max(worst):.2f}) | {' / '.join(undetermined)} | {np.nanmean(mass):.2f} ({np.nanmax(mass):.2f}) |")


if __name__ == "__main__":
    main()
