"""What the calibrated arm model's error costs ~/identify in joint-torque mode, against noise alone.

The same arms (unlike their URDF: masses +-15 %, COMs +-1 cm; the robots' friction, which the calibration's
model does not fit exactly; effort noise at the vendors' levels), the same motion (what ``~/identify`` runs
with ``wrench_source: joint_torques``, 15 s) and payload, estimated (WLS) with the unloaded arm's torques
taken away by:

* ``calibrated``: the calibration on ``--calibration-s`` of Lambert's sinusoids (as ``short_shake.py``);
* ``exact arm``: the simulated arm itself: the efforts less the same arm's noise-free efforts, unloaded, on
  the same motion (the model's error is zero; the noise, the filters and the information are the same);
* ``friction removed``: the simulator's friction taken out of the efforts exactly, in the calibration's
  recording and the payload's, so the calibration's only error is its rigid-body fit (where the motion goes).

``exact arm`` against ``calibrated`` splits the model's error from noise and information; ``friction removed``
splits the rigid-body fit from the friction law.

Run:  python benchmarks/arm_model_error.py [--robot panda] [--payload hammer] [--seeds 6] [--starts 0]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import short_shake as ss

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.pipeline.arm_dynamics import ArmDynamics, calibrate_arm, joint_recording
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.pipeline.sources.joint_effort import JointEfforts
from payload_estimator.robots import get_robot
from payload_estimator.settings import WrenchSource
from payload_estimator.sim.efforts import ArmMismatch
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import make_trajectory


class _NoArm(ArmDynamics):
    """The efforts are already the payload's (the exact arm's taken away): nothing more to take away."""

    def torques(self, q, dq, ddq, effort=None):  # noqa: D102
        return np.zeros(np.shape(np.atleast_2d(q)))

    def corrected_effort(self, effort):  # noqa: D102
        return np.asarray(effort, dtype=float)


def _estimate(run, calibration, exact: bool) -> tuple[float, float]:
    source = JointEfforts(calibration)
    stream = stream_for_run(run, None, estimator="wls", track_payload=False,
                            wrench_source=WrenchSource.JOINT_TORQUES, wrench=source)
    if exact:  # the same weights (the calibration's residuals), no arm model
        wrench = stream.wrench_input.torque_wrench
        wrench.dynamics = _NoArm(wrench.dynamics.kinematics, calibration)
    play(stream, recording_from_run(run))
    truth, params = InertialParameters(run.payload_phi), stream.last.estimate.params
    return 100.0 * abs(params.mass - truth.mass) / truth.mass, 1000.0 * float(np.linalg.norm(params.com - truth.com))


def _calibration(robot: str, seconds: float, seed: int, without_friction: bool):
    spec = get_robot(robot)
    motion = make_trajectory("thesis", spec, duration=seconds, seed=1000 + seed)
    run = simulate(robot=robot, payload=NO_PAYLOAD, trajectory=motion, duration=seconds, noise="moderate",
                   seed=1000 + seed, imu=False, efforts=ss._efforts(robot, 0.0, seed),
                   arm_mismatch=ArmMismatch(seed=seed))
    effort = run.joint_effort - run.true_joint_friction if without_friction else run.joint_effort
    kin = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
    return calibrate_arm(kin, joint_recording(run.joint_t, run.joint_q, effort), robot=robot)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", default="panda")
    ap.add_argument("--payload", default="hammer")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--starts", type=int, default=0, help="starts up to 0.5 rad per joint off home (0: home)")
    ap.add_argument("--calibration-s", type=float, default=30.0)
    args = ap.parse_args()
    robot, payload = args.robot, ss._payload(args.payload)
    home = np.asarray(get_robot(robot).q_home)
    print("| robot | start - home, rad | payload | arm model | mass % | COM mm |\n|---|---|---|---|---|---|")
    for start in ss._identify_starts(robot, args.starts, 15.0):
        motion = ss._identify_motion(robot, "jt", 15.0, start)
        rows: dict[str, list] = {"calibrated": [], "exact arm": [], "friction removed": []}
        for seed in range(args.seeds):
            efforts = ss._efforts(robot, 0.0, seed)
            same = {"robot": robot, "trajectory": motion, "duration": 15.0 + ss.PIPELINE_LAG_S, "seed": seed,
                    "imu": False, "arm_mismatch": ArmMismatch(seed=seed), "noise": "moderate"}
            loaded = simulate(payload=payload, efforts=efforts, **same)
            calibration = _calibration(robot, args.calibration_s, seed, False)
            rows["calibrated"].append(_estimate(loaded, calibration, False))
            unloaded = simulate(payload=NO_PAYLOAD, efforts=efforts.without_noise(), **same)
            rows["exact arm"].append(_estimate(dataclasses.replace(
                loaded, joint_effort=loaded.joint_effort - unloaded.joint_effort), calibration, True))
            rows["friction removed"].append(_estimate(dataclasses.replace(
                loaded, joint_effort=loaded.joint_effort - loaded.true_joint_friction),
                _calibration(robot, args.calibration_s, seed, True), False))
        where = "home" if args.starts == 0 else str(np.round(start - home, 2).tolist())
        for name, values in rows.items():
            v = np.asarray(values)
            print(f"| {robot} | {where} | {args.payload} {payload.params.mass:.2f} kg | {name} | "
                  f"{v[:, 0].mean():.2f} ({v[:, 0].max():.2f}) | {v[:, 1].mean():.2f} ({v[:, 1].max():.2f}) |",
                  flush=True)


if __name__ == "__main__":
    main()
