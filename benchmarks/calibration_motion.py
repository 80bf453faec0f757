"""A calibration of the unloaded arm from the designed calibration motion against Lambert's sinusoids.

For each robot, MuJoCo simulates the unloaded arm, with the joint-effort model of ``sim.efforts``
(friction with Stribeck bump and asymmetric Coulomb levels the calibration model does not have,
effort noise: the Panda's link-side tau_J, the xArm's current-based estimate) and an arm whose
links differ from its URDF (masses +-15 %, COMs +-1 cm; the same physical arm for every motion
of a seed), along

* ``designed``: what ``payload-estimator excite --for calibration`` designs from home
  (:func:`~payload_estimator.excitation.calibration.design_calibration_motion`, design seed 0),
* ``thesis``: Lambert's all-joint sinusoids (every joint ``q_home + 0.3 sin(w_i t)``, ``w_i ~ U[1, 5]``
  rad/s, scaled to the TCP and joint speed limits), of the same duration,

and ``calibrate_arm`` fits each recording. The figure is the effort residual RMS (N·m, mean over
the joints) on held-out recordings of the same arm along *other* motions: another draw of
Lambert's sinusoids, a pick-and-place cycle, and the payload identification motion ``excite``
designs (10 s). "URDF" is the description alone without friction (what the payload estimate
would subtract without calibration). The predicted figures (:func:`arm_information`: log det
gain, directions determined better than the description) are printed beside.

Run:  python benchmarks/calibration_motion.py [--robots panda xarm7] [--seeds 2] [--duration 30]
      [--max-tcp-speed 0.25]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from payload_estimator.excitation import ArmLimits, MotionLimits, check_trajectory, design_excitation, flange_kinematics
from payload_estimator.excitation.calibration import arm_information, calibration_limits, design_calibration_motion
from payload_estimator.pipeline.arm_dynamics import ArmDynamics, calibrate_arm, joint_recording, residual_rms
from payload_estimator.robots import get_robot
from payload_estimator.sim.efforts import ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.trajectories import PickAndPlace, ThesisSinusoids


def _record(robot: str, trajectory, duration: float, seed: int, arm_seed: int):
    run = simulate(robot, payload="none", trajectory=trajectory, duration=duration,
                   efforts=EffortModel.for_robot(robot), arm_mismatch=ArmMismatch(seed=arm_seed), seed=seed, imu=False)
    return joint_recording(run.joint_t, run.joint_q, run.joint_effort)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="+", default=["panda", "xarm7"])
    ap.add_argument("--seeds", type=int, default=2, help="simulated arms (mismatch and noise draws)")
    ap.add_argument("--duration", type=float, default=30.0, help="calibration motion, s")
    ap.add_argument("--max-tcp-speed", type=float, default=None, help="m/s (default: the settings')")
    args = ap.parse_args()

    print(f"{'robot':6} {'seed':>4} {'motion':9} {'limits':6} {'logdet':>7} {'dirs':>5} "
          f"{'held-out RMS N·m (thesis / pick&place / payload motion)':>58}")
    for robot in args.robots:
        spec = get_robot(robot)
        kin, arm = flange_kinematics(robot), ArmLimits.from_robot(robot)
        q_home = np.array(spec.q_home)
        limits = calibration_limits(duration=args.duration, max_tcp_speed=args.max_tcp_speed)
        started = time.perf_counter()
        designed = design_calibration_motion(kin, arm, q_home, limits, seed=0)
        design_s = time.perf_counter() - started
        payload_motion = design_excitation(kin, arm, q_home, MotionLimits(duration=10.0), seed=0).trajectory
        motions = {"designed": designed.trajectory,
                   "thesis": ThesisSinusoids(spec, seed=0, duration=args.duration)}
        held_out = {"thesis": (ThesisSinusoids(spec, seed=11, duration=20.0), 20.0),
                    "pick&place": (PickAndPlace(spec), None),
                    "payload": (payload_motion, 10.0)}
        nominal = ArmDynamics(kin)
        for seed in range(args.seeds):
            tests = {name: _record(robot, traj, float(d if d is not None else traj.duration), 100 + seed, seed)
                     for name, (traj, d) in held_out.items()}
            urdf_rms = [float(np.mean(residual_rms(nominal, rec))) for rec in tests.values()]
            print(f"{robot:6} {seed:4d} {'URDF':9} {'':6} {'':>7} {'':>5} "
                  + " / ".join(f"{v:6.3f}" for v in urdf_rms))
            for name, traj in motions.items():
                rec = _record(robot, traj, args.duration, seed, seed)
                calibration, _ = calibrate_arm(kin, rec, robot=robot)
                calibrated = ArmDynamics(kin, calibration)
                rms = [float(np.mean(residual_rms(calibrated, r))) for r in tests.values()]
                info = arm_information(traj, kin, arm=arm)
                ok = check_trajectory(traj, kin, arm, q_home, limits).ok
                print(f"{robot:6} {seed:4d} {name:9} {'kept' if ok else 'broken':6} {info.log_det_gain:7.1f} "
                      f"{info.better_than_prior:5d} " + " / ".join(f"{v:6.3f}" for v in rms))
        print(f"{robot}: calibration motion designed in {design_s:.1f} s; peak TCP speed "
              f"{designed.check.peak_tcp_speed:.3f} m/s (limit {limits.max_tcp_speed:g})")


if __name__ == "__main__":
    main()
