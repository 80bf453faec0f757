"""The payload from a real arm's joint torques: what a calibrated model leaves, payload events, the mass.

Each built-in arm is simulated as a real one (``demo --real-arm``): links unlike its URDF (masses +-15 %, COMs
+-1 cm), the robot's friction in a law the calibration does not fit, the vendors' effort noise, and what a
calibrated rigid-body model leaves of a real arm's torques (``sim.arm_residual.ArmResidual``: torques that
depend on the pose, position- and pose-dependent friction, torque ripple, friction and zero drifting over
minutes), at 1 kHz or at 100 Hz every 2-30 ms (``--irregular-stamps``). Per arm:

1. **Calibration.** 30 s of the motion ``excite --for calibration`` designs, unloaded (``calibrate``), and for
   the UR arms, which report currents, again holding a known 0.65 kg box (``calibrate --effort-scale
   --known-payload-bag``). The residual RMS per joint after calibration, on the calibration's own recording and
   on another motion.
2. **Mass.** 60 s of ``~/identify``'s joint-torque motion holding the 3 kg vise, WLS: mass error and its
   reported std (is the error within 2 std?), at 1 kHz and at 100 Hz with irregular stamps.
3. **Events.** ``--hold`` seconds (default 600) of ordinary motion (Lambert's sinusoids on every joint)
   holding the claw hammer (845 g), the payload tracker on (the default) and off: payload changes and
   contacts raised (there are none), and the two final masses.

Run:  python benchmarks/real_arm.py [--robots panda fr3 xarm7 xarm6 ur5e ur10e] [--hold 600] [--quick]
"""

from __future__ import annotations

import argparse
import time

import figures
import joint_torques as jt
import numpy as np

from payload_estimator.core.tracking import PayloadTracker
from payload_estimator.pipeline.arm_dynamics import calibrate_arm, joint_recording
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.pipeline.sources.joint_effort import JointEfforts
from payload_estimator.robots import ROBOT_NAMES
from payload_estimator.settings import WrenchSource
from payload_estimator.sim.arm_residual import WRIST_JOINTS, ArmResidual
from payload_estimator.sim.efforts import ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import known_payload_recording, recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import make_trajectory

CALIBRATION_S = 30.0
IDENTIFY_S = 60.0
MASS_PAYLOAD = "vise"
HOLD_PAYLOAD = "claw_hammer"
IRREGULAR = {"rate_hz": 100.0, "irregular_stamps": True}


def _efforts(robot: str, seed: int) -> EffortModel:
    return EffortModel.for_robot(robot).with_residual(ArmResidual(seed=seed))


def calibration(robot: str, seed: int, stamps: dict) -> tuple:
    """The real arm ``seed``'s calibration with a known payload; (calibration, fit, held-out fit)."""
    arm = ArmMismatch(seed=seed)
    motion = jt._calibration_motion(robot, CALIBRATION_S, seed)
    common = {"robot": robot, "trajectory": motion, "duration": CALIBRATION_S, "noise": "moderate", "imu": False,
              "efforts": _efforts(robot, seed), "arm_mismatch": arm, **stamps}
    unloaded = simulate(payload=NO_PAYLOAD, seed=1000 + seed, **common)
    known = simulate(payload=jt._payload(jt.KNOWN_PAYLOAD), seed=2000 + seed, **common)
    other = simulate(payload=NO_PAYLOAD, seed=3000 + seed, **{**common, "trajectory": "thesis"})
    kin = SensorKinematics(unloaded.urdf, unloaded.sensor_frame, unloaded.joint_names)
    rec = joint_recording(unloaded.joint_t, unloaded.joint_q, unloaded.joint_effort)
    held_out = joint_recording(other.joint_t, other.joint_q, other.joint_effort)
    currents = bool(jt.get_robot(robot).efforts.scale)  # a driver reporting motor currents: scales needed
    options = known_payload_recording(known, kin) if currents else {}
    cal, fit = calibrate_arm(kin, rec, robot=robot, effort_scale=currents, held_out=held_out, **options)
    return cal, fit


def mass(robot: str, seed: int, cal, stamps: dict) -> tuple[float, float]:
    """(mass error %, reported std %) of the club hammer on ~/identify's joint-torque motion, WLS."""
    payload = jt._payload(MASS_PAYLOAD)
    run = simulate(robot=robot, payload=payload, trajectory=jt._motion(robot, "designed-jt", IDENTIFY_S),
                   duration=IDENTIFY_S, noise="moderate", seed=seed, imu=False, efforts=_efforts(robot, seed),
                   arm_mismatch=ArmMismatch(seed=seed), **stamps)
    stream = stream_for_run(run, None, estimator="wls", track_payload=False,
                            wrench_source=WrenchSource.JOINT_TORQUES, wrench=JointEfforts(cal))
    play(stream, recording_from_run(run, wrench=False))
    est = stream.last.estimate
    std = float(np.sqrt(est.covariance[0, 0])) if est.covariance is not None else float("nan")
    return 100.0 * (est.mass / payload.mass - 1.0), 100.0 * std / payload.mass


def hold(robot: str, seed: int, cal, seconds: float) -> dict:
    """The claw hammer held for ``seconds`` of Lambert's sinusoids: events and masses, tracker on and off."""
    payload = get_payload(HOLD_PAYLOAD)
    run = simulate(robot=robot, payload=payload, trajectory=make_trajectory("thesis", jt.get_robot(robot),
                                                                            duration=seconds, seed=seed),
                   duration=seconds, noise="moderate", seed=seed, imu=False, efforts=_efforts(robot, seed),
                   arm_mismatch=ArmMismatch(seed=seed))
    out: dict = {}
    for track in (True, False):
        stream = stream_for_run(run, None, estimator="wls", track_payload=track,
                                wrench_source=WrenchSource.JOINT_TORQUES, wrench=JointEfforts(cal))
        play(stream, recording_from_run(run, wrench=False))
        est = stream.last.estimate
        key = "on" if track else "off"
        out[key] = 100.0 * (est.mass / payload.mass - 1.0)
        out[key + "_std"] = 100.0 * float(np.sqrt(est.covariance[0, 0])) / payload.mass
        if isinstance(stream.estimator, PayloadTracker):
            out["changes"], out["contacts"] = stream.estimator.counts.changes, stream.estimator.counts.contacts
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="+", default=list(ROBOT_NAMES))
    ap.add_argument("--seed", type=int, default=0, help="which arm (default 0)")
    ap.add_argument("--hold", type=float, default=600.0, help="seconds of the held payload (default 600)")
    ap.add_argument("--quick", action="store_true", help="the Panda and the xArm 7, 120 s held")
    figures.add_option(ap)
    args = ap.parse_args()
    if args.quick:
        args.robots, args.hold = ["panda", "xarm7"], 120.0
    t0 = time.perf_counter()
    key: dict[str, float] = {}
    print("Real arms' joint torques (sim.arm_residual), calibrated unloaded (UR: with a known 0.65 kg box too); "
          "residual RMS N·m per joint after calibration (own recording / another motion), the 3 kg vise's mass "
          "from 60 s of "
          f"~/identify's motion (WLS; error and reported std, %), and {args.hold:g} s holding the claw hammer "
          "(tracker on: changes, contacts; mass % with the tracker on and off)\n")
    print("| robot | residual RMS, shoulder+elbow | residual RMS, wrist | mass % (std) 1 kHz | mass % (std) 100 Hz "
          "irregular | changes | contacts | mass % tracker on / off (std) |")
    print("|---|---|---|---|---|---|---|---|")
    for robot in args.robots:
        cal, fit = calibration(robot, args.seed, {})
        cal_irr, _ = calibration(robot, args.seed, IRREGULAR)
        m1, s1 = mass(robot, args.seed, cal, {})
        m2, s2 = mass(robot, args.seed, cal_irr, IRREGULAR)
        held = hold(robot, args.seed, cal, args.hold)
        own, other = np.asarray(fit.rms_calibrated), np.asarray(fit.rms_calibrated_held_out)

        def rms(values: np.ndarray, wrist: bool) -> str:
            part = values[-WRIST_JOINTS:] if wrist else values[:-WRIST_JOINTS]
            return " ".join(f"{v:.1f}" for v in part)

        print(f"| {robot} | {rms(own, False)} / {rms(other, False)} | {rms(own, True)} / {rms(other, True)} "
              f"| {m1:+.2f} ({s1:.2f}) | {m2:+.2f} ({s2:.2f}) | {held['changes']} | {held['contacts']} "
              f"| {held['on']:+.2f} / {held['off']:+.2f} ({held['off_std']:.2f}) |")
        at = ("real_arm", robot)
        key[figures.name(*at, "mass_1khz_pct")] = abs(m1)
        key[figures.name(*at, "mass_100hz_irregular_pct")] = abs(m2)
        key[figures.name(*at, "false_changes_count")] = held["changes"]
        key[figures.name(*at, "false_contacts_count")] = held["contacts"]
    figures.write(args.figures, key)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
