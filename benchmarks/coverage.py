"""Does the reported uncertainty match the error? Coverage of the ±1σ and ±2σ intervals, per estimator.

Two kinds of data, both made without our regressor:

* sensor level (what ``payload-estimator estimate`` reads): Nadeau et al.'s
  wrist moved slowly (mean |ω| 0.6 and 1.5 rad/s), 10 s at 100 Hz, wrench
  and kinematics from pinocchio's RNEA, Table II noise added to the wrench and
  to the measured linear and angular accelerations (errors in variables);
* robot pipeline (what ``demo``, ``replay`` and the node run): MuJoCo
  simulates a Panda and an xArm 7 along Nadeau et al.'s excitation at cobot speed
  for 10 s, with encoder noise, Table II wrench noise, an F/T offset and its
  drift; the raw joint states and wrench go through alignment, the matched
  low-pass (correlated samples) and pinocchio kinematics, F/T offsets estimated;
* joint torques (``--joint-torques-seeds``): no F/T sensor. The simulated arm is unlike its URDF (links
  ±15 % mass, ±1 cm COM) and its joints' friction unlike the calibration's model; it is calibrated
  unloaded on 30 s of Lambert's all-joint sinusoids, then holds the payload through 15 s of another
  such motion: the residuals carry the arm's unmodelled dynamics, correlated with the motion.

For every run and every quantity (mass, COM x/y/z, inertia about the COM
xx/yy/zz/xy/xz/yz) the error is divided by the reported standard deviation.
A calibrated estimator has 68.3 % of |z| <= 1 and 95.4 % of |z| <= 2; the
tables print both per quantity, and ``RMS z`` (1 when calibrated; above 1:
overconfident, below: conservative). ``ident.`` is the share of runs in
which the data (or, for PMD, the shape) determined the quantity; only those
runs count, as only those values are handed over.

Run:  python benchmarks/coverage.py [--seeds 20] [--pipeline-seeds 4] [--joint-torques-seeds 3] [--c1 1]
      [--skip-pipeline]
"""

from __future__ import annotations

import argparse
import time

import figures
import numpy as np

from payload_estimator.core.estimators import C1_DEFAULT, METHODS, make_estimator
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import get_noise
from payload_estimator.core.results import NOT_IDENTIFIED, Estimate
from payload_estimator.core.shapes import sample_points
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

QUANTITIES = ("mass", "cx", "cy", "cz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")
SENSOR_PAYLOADS = ("claw_hammer", "drill", "offset_box", "hammer")
PIPELINE_PAYLOADS = ("claw_hammer", "drill", "offset_box")
SPEEDS = (0.6, 1.5)
WINDOW: dict[str, float] = {}
"""The offset model's window of the pipeline runs (``--offset-window-s``; empty: the settings')."""


def _values(params: InertialParameters) -> np.ndarray:
    I = params.inertia_com
    return np.r_[params.mass, params.com, I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]


def z_scores(est: Estimate, truth: InertialParameters) -> tuple[np.ndarray, np.ndarray]:
    """(10,) error over reported std, and (10,) whether the quantity was determined (data or prior)."""
    std = np.r_[est.mass_std, est.com_std, est.inertia_com_std]
    ident = est.identification
    known = np.r_[ident.mass != NOT_IDENTIFIED, [c != NOT_IDENTIFIED for c in ident.com],
                  np.full(6, ident.inertia != NOT_IDENTIFIED)]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (_values(est.params) - _values(truth)) / std
    return z, known & np.isfinite(z)


def sensor_level(seeds: int, c1: float) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for name in SENSOR_PAYLOADS:
        payload = get_payload(name)
        points = sample_points(payload.envelope)
        for speed in SPEEDS:
            for seed in range(seeds):
                noisy, _ = simulate_wrist(payload.params, WristTrajectory(mean_ang_vel=speed), duration=10.0,
                                          rate_hz=100.0, noise=get_noise("moderate"),
                                          rng=np.random.default_rng(1000 * seed + 7))
                for method in METHODS:
                    options = {"c1": c1} if method == "pmd" else {"forgetting": 1.0} if method == "rls" else {}
                    est = make_estimator(method, points, **options)
                    est.update(noisy)
                    out.setdefault(method, []).append(z_scores(est.estimate(), payload.params))
    return out


def pipeline(seeds: int, c1: float) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.mujoco_sim import simulate
    from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

    out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for robot in ("panda", "xarm7"):
        for name in PIPELINE_PAYLOADS:
            payload = get_payload(name)
            for seed in range(seeds):
                run = simulate(robot=robot, payload=name, trajectory="wrist", duration=10.0,
                               noise="moderate", seed=100 + seed)
                recording = recording_from_run(run)
                for method in METHODS:
                    stream = stream_for_run(run, payload.envelope, estimator=method, c1=c1, track_payload=False,
                                            **WINDOW)
                    play(stream, recording)
                    last = stream.last
                    if last is not None:
                        out.setdefault(method, []).append(z_scores(last.estimate, payload.params))
    return out


def joint_torques(seeds: int, c1: float) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """z-scores of estimates from joint torques on arms unlike their URDF (module docstring)."""
    from payload_estimator.pipeline.arm_dynamics import calibrate_arm, joint_recording
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.pipeline.playback import play
    from payload_estimator.pipeline.sources.joint_effort import JointEfforts
    from payload_estimator.robots import get_robot
    from payload_estimator.settings import WrenchSource
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
    from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
    from payload_estimator.sim.trajectories import make_trajectory

    out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for robot in ("xarm7", "panda"):
        spec = get_robot(robot)
        for seed in range(seeds):
            arm, efforts = ArmMismatch(seed=seed), EffortModel.for_robot(robot)
            cal_run = simulate(robot=robot, payload=NO_PAYLOAD, trajectory=make_trajectory("thesis", spec,
                               duration=30.0, seed=1000 + seed), duration=30.0, noise="moderate", seed=1000 + seed,
                               imu=False, efforts=efforts, arm_mismatch=arm)
            kin = SensorKinematics(cal_run.urdf, cal_run.sensor_frame, cal_run.joint_names)
            calibration, _ = calibrate_arm(kin, joint_recording(cal_run.joint_t, cal_run.joint_q,
                                                                 cal_run.joint_effort), robot=robot)
            for name in PIPELINE_PAYLOADS:
                payload = get_payload(name)
                run = simulate(robot=robot, payload=name, trajectory=make_trajectory("thesis", spec, duration=15.0,
                               seed=2000 + seed), duration=15.0, noise="moderate", seed=2000 + seed, imu=False,
                               efforts=efforts, arm_mismatch=arm)
                for method in ("wls", "pmd"):
                    stream = stream_for_run(run, payload.envelope, estimator=method, c1=c1, track_payload=False,
                                            wrench_source=WrenchSource.JOINT_TORQUES, wrench=JointEfforts(calibration),
                                            **WINDOW)
                    play(stream, recording_from_run(run, wrench=False))
                    last = stream.last
                    if last is not None:
                        out.setdefault(method, []).append(z_scores(last.estimate, payload.params))
    return out


def key_figures(table: str, results: dict[str, list[tuple[np.ndarray, np.ndarray]]]) -> dict[str, float]:
    """Per estimator, over every determined quantity of every run: the share within ±2σ and the RMS z."""
    out = {}
    for method, rows in results.items():
        z = np.abs(np.concatenate([r[0][r[1]] for r in rows]))
        if z.size:
            out[figures.name("coverage", table, method, "within_2sd_pct")] = 100.0 * np.mean(z <= 2.0)
            out[figures.name("coverage", table, method, "z_rms")] = float(np.sqrt(np.mean(z**2)))
    return out


def print_table(title: str, results: dict[str, list[tuple[np.ndarray, np.ndarray]]]) -> None:
    print(f"\n{title}\n")
    print("| estimator | runs | " + " | ".join(QUANTITIES) + " |")
    print("|---|---|" + "---|" * len(QUANTITIES))
    for method, rows in results.items():
        z = np.array([r[0] for r in rows])
        known = np.array([r[1] for r in rows])
        cells = []
        for k in range(len(QUANTITIES)):
            zk = np.abs(z[known[:, k], k])
            if len(zk) == 0:
                cells.append("not identified")
                continue
            share = 100.0 * len(zk) / len(z)
            c1, c2 = 100.0 * np.mean(zk <= 1.0), 100.0 * np.mean(zk <= 2.0)
            rms = float(np.sqrt(np.mean(zk**2)))
            cells.append(f"{c1:.0f}/{c2:.0f} ({rms:.1f})" + ("" if share == 100.0 else f" {share:.0f}%"))
        print(f"| {method} | {len(z)} | " + " | ".join(cells) + " |")
    print("\nCells: % within ±1σ / ±2σ (calibrated: 68 / 95), (RMS z: 1 calibrated, >1 overconfident, "
          "<1 conservative), and the share of runs that determined the quantity when not all did.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20, help="noise seeds per payload and speed, sensor level")
    ap.add_argument("--pipeline-seeds", type=int, default=4, help="seeds per robot and payload, pipeline")
    ap.add_argument("--joint-torques-seeds", type=int, default=3,
                    help="mismatched arms per robot, joint torques (0: skip that table)")
    ap.add_argument("--c1", type=float, default=C1_DEFAULT, help=f"PMD c1 (default {C1_DEFAULT:g})")
    ap.add_argument("--skip-pipeline", action="store_true", help="sensor-level table only")
    ap.add_argument("--skip-sensor-level", action="store_true", help="no sensor-level table")
    ap.add_argument("--offset-window-s", type=float, default=None,
                    help="the offset model's window in the pipeline runs, s (default: the settings'; 0: constant)")
    figures.add_option(ap)
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.offset_window_s is not None:
        WINDOW["offset_window_s"] = args.offset_window_s
    key: dict[str, float] = {}
    if not args.skip_sensor_level:
        results = sensor_level(args.seeds, args.c1)
        print_table(f"Sensor level: Nadeau et al.'s wrist, mean |ω| {' and '.join(f'{s:g}' for s in SPEEDS)} "
                    f"rad/s, 10 s at 100 Hz, Table II moderate noise (wrench and accelerations), "
                    f"payloads {', '.join(SENSOR_PAYLOADS)}, {args.seeds} seeds each; PMD c1 = {args.c1:g}.", results)
        key |= key_figures("sensor_level", results)
    if not args.skip_pipeline:
        results = pipeline(args.pipeline_seeds, args.c1)
        print_table(f"Robot pipeline: MuJoCo Panda and xArm 7, Nadeau et al.'s excitation at cobot speed, 10 s, "
                    f"moderate noise, F/T offset and drift (estimated), payloads {', '.join(PIPELINE_PAYLOADS)}, "
                    f"{args.pipeline_seeds} seeds each; PMD c1 = {args.c1:g}.", results)
        key |= key_figures("pipeline", results)
    if args.joint_torques_seeds > 0:
        results = joint_torques(args.joint_torques_seeds, args.c1)
        print_table(f"Joint torques: MuJoCo xArm 7 and Panda unlike their URDFs, friction unlike the calibration's "
                    f"model, calibrated unloaded on 30 s, then 15 s holding {', '.join(PIPELINE_PAYLOADS)}; "
                    f"{args.joint_torques_seeds} arms each.", results)
        key |= key_figures("joint_torques", results)
    figures.write(args.figures, key)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
