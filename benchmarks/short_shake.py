"""What half a second (and one second) of shaking gives: mass and COM, F/T sensor and joint torques.

Baek et al. ("Online Learning-Based Inertial Parameter Identification of Unknown Object for Model-Based
Control of Wheeled Humanoids") shake an object for 0.5 s and map the joint history to its mass with a
learned model; on their real robot the mass is 0.18-0.29 kg off on average (mean absolute error). Here
the physics-based estimate gets the same half second (and one second): the shake ``excite --shake 0.5``
(``--shake 1``) designs from home, within the arm's limits, at rest at both ends, simulated by MuJoCo,
estimated by the whole pipeline (filters, kinematics; WLS, no shape prior) from the shake's data (each run
lasts the shake plus the pipeline's lag, :data:`PIPELINE_LAG_S`, at rest).

Modes:

* ``F/T``: a wrist F/T sensor at Nadeau et al.'s Table II moderate noise (the FT-300's), with an unknown
  offset (drawn per run) estimated with the payload: only the *change* of the wrench over the shake tells
  the mass;
* ``F/T tared``: the same sensor zeroed before the payload was picked up (offsets known);
* ``joint torques``: no sensor; the simulated arm is unlike its URDF (every link's mass off by up to 15 %,
  its COM by up to 1 cm), its efforts carry the robot's noise and friction (Franka's tau_J: 0.05-0.08 N·m,
  Gaz et al.'s friction; the xArm's currents: 0.3-0.6 N·m, 1-3 N·m of Coulomb, Stribeck and viscous
  friction in a law the calibration does not fit) and, with ``--effort-scale-error e``, a
  torque-constant error of up to ``e`` per joint (the calibration then fits the scales too); the arm was
  calibrated unloaded beforehand (``--calibration-s`` of Lambert's sinusoids), and the shake is the one
  designed ``--for joint-torques``.

Payloads: the workshop's file (0.22 kg, steel blade in a wooden handle), club hammer (1.08 kg, steel head
on a wooden handle) and the catalogue's drill (1.55 kg). Mean absolute mass error (kg, and %), mean
and worst COM distance (mm), over payloads and seeds.

``--identify`` also runs the ``~/identify`` motion (``--identify-s``, 15 s by default, from home) in joint-torque
mode on each of ``--identify-robots`` (``--identify-only``: without the shakes): designed for an F/T sensor (what
``~/identify`` ran before), the motion it runs now with ``wrench_source: joint_torques`` (all-joint sinusoids,
the joint-torque criterion picking the frequencies' assignment) and Lambert's own sinusoids, ``--identify-seeds``
calibrated arms, ``--identify-payloads`` (the club hammer by default), from home or ``--identify-starts``
starts drawn around it. ``--identify-calibration designed`` calibrates each arm on ``--calibration-s`` of the
motion ``excite --for calibration`` designs from home instead of Lambert's sinusoids (whose wrist moves at most
0.13-0.25 rad/s, slower than ``~/identify``'s motion: the friction is then extrapolated); ``identify`` on the
identification motion itself recorded unloaded from the same start, ``both`` on Lambert's and that one.

Run:  python benchmarks/short_shake.py [--seeds 3] [--robots panda xarm7] [--quick] [--identify]
          [--identify-only --identify-seeds 6 --identify-robots xarm6 panda xarm7]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.excitation import (
    ArmLimits,
    ExcitationError,
    MotionLimits,
    design_excitation,
    flange_kinematics,
)
from payload_estimator.excitation.calibration import calibration_limits, design_calibration_motion
from payload_estimator.excitation.design import design_shake
from payload_estimator.excitation.information import JointTorqueNoise
from payload_estimator.pipeline.arm_dynamics import calibrate_arm, joint_recording
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.pipeline.sources.joint_effort import JointEfforts
from payload_estimator.robots import get_robot
from payload_estimator.settings import WrenchSource
from payload_estimator.sim.efforts import ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import make_trajectory
from payload_estimator.sim.workshop import get_tool

ROBOTS = ("panda", "xarm7")
PAYLOADS = ("ws_file", "ws_club_hammer", "drill")
DURATIONS = (0.5, 1.0)
MODES = ("ft", "ft_tared", "joint_torques")
LABELS = {"ft": "F/T, offsets estimated", "ft_tared": "F/T, tared", "joint_torques": "joint torques, calibrated"}
PIPELINE_LAG_S = 0.3
"""The pipeline's filters and alignment hold the newest samples back this long: each run lasts the shake plus
this much at rest, so that the estimate has taken in the shake's samples (and hardly any of the rest's)."""
BAEK_MASS_MAE_KG = (0.18, 0.29)
"""Baek et al.'s real-robot mean absolute mass errors after their 0.5 s shake (learned model), kg."""


def _payload(name: str):
    return get_tool(name) if name.startswith("ws_") else get_payload(name)


def _efforts(robot: str, scale_error: float, seed: int) -> EffortModel:
    return EffortModel.for_robot(robot, effort_scale_error=scale_error, seed=seed)


_DESIGNED_CALIBRATION: dict = {}


def _calibration_motion(robot: str, seconds: float, seed: int, designed: bool):
    """Lambert's sinusoids (``seed``), or what ``excite --for calibration`` designs from home (design seed 0)."""
    spec = get_robot(robot)
    if not designed:
        return make_trajectory("thesis", spec, duration=seconds, seed=1000 + seed)
    if (robot, seconds) not in _DESIGNED_CALIBRATION:
        _DESIGNED_CALIBRATION[robot, seconds] = design_calibration_motion(
            flange_kinematics(robot), ArmLimits.from_robot(spec), np.asarray(spec.q_home, dtype=float),
            calibration_limits(duration=seconds), seed=0).trajectory
    return _DESIGNED_CALIBRATION[robot, seconds]


def _calibrate(robot: str, seconds: float, seed: int, scale_error: float, also=None, designed: bool = False):
    """The unloaded arm ``seed``'s calibration on ``seconds`` of Lambert's sinusoids (``designed``: of the motion
    ``excite --for calibration`` designs).

    ``also``: ``(trajectory, seconds)`` recorded unloaded too (its own noise draw) and fitted with them; with
    ``seconds`` 0, that recording alone."""
    efforts, mismatch = _efforts(robot, scale_error, seed), ArmMismatch(seed=seed)
    runs = []
    if seconds > 0.0:
        motion = _calibration_motion(robot, seconds, seed, designed)
        runs.append(simulate(robot=robot, payload=NO_PAYLOAD, trajectory=motion, duration=seconds,
                             noise="moderate", seed=1000 + seed, imu=False, efforts=efforts, arm_mismatch=mismatch))
    if also is not None:
        runs.append(simulate(robot=robot, payload=NO_PAYLOAD, trajectory=also[0], duration=also[1],
                             noise="moderate", seed=2000 + seed, imu=False, efforts=efforts, arm_mismatch=mismatch))
    run = runs[0]
    kin = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
    # the recordings one after the other, a gap between them (joint_recording filters each piece alone)
    t = np.concatenate([r.joint_t + 1000.0 * i for i, r in enumerate(runs)])
    q = np.concatenate([r.joint_q for r in runs])
    effort = np.concatenate([r.joint_effort for r in runs])
    cal, _ = calibrate_arm(kin, joint_recording(t, q, effort), robot=robot, effort_scale=scale_error > 0.0)
    return cal


def _run(robot: str, trajectory, duration: float, payload, mode: str, seed: int, calibration, scale_error: float,
         method: str) -> dict:
    """Simulate ``duration`` s of ``trajectory`` with ``payload`` and estimate it in ``mode``."""
    kwargs: dict = {}
    if mode == "joint_torques":
        kwargs = {"efforts": _efforts(robot, scale_error, seed), "arm_mismatch": ArmMismatch(seed=seed)}
    elif mode == "ft_tared":
        kwargs = {"ft_bias": np.zeros(6), "ft_drift": False}
    run = simulate(robot=robot, payload=payload, trajectory=trajectory, duration=duration + PIPELINE_LAG_S,
                   noise="moderate", seed=seed, imu=False, **kwargs)
    shape = payload.envelope if method == "pmd" else None
    if mode == "joint_torques":
        stream = stream_for_run(run, shape, estimator=method, track_payload=False,
                                wrench_source=WrenchSource.JOINT_TORQUES, wrench=JointEfforts(calibration))
    else:
        stream = stream_for_run(run, shape, estimator=method, track_payload=False,
                                estimate_bias=mode != "ft_tared")
    play(stream, recording_from_run(run))
    truth = InertialParameters(run.payload_phi)
    final = stream.last
    if final is None:
        return {"mass_kg": np.nan, "mass_pct": np.nan, "com_mm": np.nan}
    params = final.estimate.params
    return {"mass_kg": abs(params.mass - truth.mass), "mass_pct": 100.0 * abs(params.mass - truth.mass) / truth.mass,
            "com_mm": 1000.0 * float(np.linalg.norm(params.com - truth.com))}


def _shake(robot: str, seconds: float, joint_torques: bool):
    spec = get_robot(robot)
    noise = JointTorqueNoise.for_robot(spec) if joint_torques else None
    return design_shake(flange_kinematics(robot), ArmLimits.from_robot(spec), np.asarray(spec.q_home), seconds,
                        estimate_offsets=not joint_torques, joint_torques=noise).trajectory


def _cell(values: list, fmt: str = "{:.3f}") -> str:
    v = np.asarray(values, dtype=float)
    if np.all(np.isnan(v)):
        return "no estimate"
    return fmt.format(np.nanmean(v)) + " (" + fmt.format(np.nanmax(v)) + ")"


def shakes(args: argparse.Namespace) -> None:
    """The table of the short shakes."""
    calibrations = {}
    if "joint_torques" in args.modes:
        for robot in args.robots:
            for seed in range(args.seeds):
                calibrations[robot, seed] = _calibrate(robot, args.calibration_s, seed, args.effort_scale_error)
    results: dict[tuple, list] = defaultdict(list)
    for robot in args.robots:
        for seconds in args.durations:
            motions = {False: _shake(robot, seconds, False), True: _shake(robot, seconds, True)}
            for mode in args.modes:
                trajectory = motions[mode == "joint_torques"]
                for payload_name in args.payloads:
                    payload = _payload(payload_name)
                    for seed in range(args.seeds):
                        results[robot, seconds, mode, payload_name].append(
                            _run(robot, trajectory, seconds, payload, mode, seed, calibrations.get((robot, seed)),
                                 args.effort_scale_error, args.method))
    names = ", ".join(f"{p} {_payload(p).params.mass:.2f} kg" for p in args.payloads)
    print(f"## After a {' s / '.join(f'{d:g}' for d in args.durations)} s shake from home "
          f"({args.method.upper()}, {args.seeds} seed(s)): mass error kg, mean absolute over the payloads (worst); "
          f"per payload ({names}): mass % / COM mm, mean over the seeds\n")
    print("| robot | shake | mode | mass error kg | " + " | ".join(args.payloads) + " |")
    print("|---|---|---|---|" + "---|" * len(args.payloads))
    for robot in args.robots:
        for seconds in args.durations:
            for mode in args.modes:
                rows = {p: results[robot, seconds, mode, p] for p in args.payloads}
                every = [r for p in args.payloads for r in rows[p]]
                cells = [f"{np.nanmean([r['mass_pct'] for r in rows[p]]):.1f} / "
                         f"{np.nanmean([r['com_mm'] for r in rows[p]]):.1f}" for p in args.payloads]
                print(f"| {robot} | {seconds:g} s | {LABELS[mode]} | {_cell([r['mass_kg'] for r in every])} | "
                      + " | ".join(cells) + " |")
    lo, hi = BAEK_MASS_MAE_KG
    print(f"| Baek et al. (real robot, learned model) | 0.5 s | joint positions and velocities | {lo:.2f}-{hi:.2f} "
          "(mean absolute) |" + " - |" * len(args.payloads))


IDENTIFY_MOTIONS = ("ft", "jt", "thesis")
"""``--identify-motions``: designed for an F/T sensor (what ``~/identify`` ran before), what ``~/identify`` runs with
``wrench_source: joint_torques`` now, and Lambert's all-joint sinusoids from home (other frequencies than the
calibration's)."""
_IDENTIFY_LABELS = {"ft": "designed for an F/T sensor (before)", "jt": "designed for the joint torques",
                    "thesis": "Lambert's all-joint sinusoids"}


def _identify_starts(robot: str, count: int, seconds: float) -> list[np.ndarray]:
    """Home (``count`` 0), or ``count`` starts up to 0.5 rad per joint from it (those the F/T design can leave)."""
    spec = get_robot(robot)
    home = np.asarray(spec.q_home, dtype=float)
    if count == 0:
        return [home]
    kin, arm, rng, starts = flange_kinematics(robot), ArmLimits.from_robot(spec), np.random.default_rng(5), []
    while len(starts) < count:
        q0 = home + rng.uniform(-0.5, 0.5, home.size)
        try:
            design_excitation(kin, arm, q0, MotionLimits(duration=seconds))
        except ExcitationError:
            continue
        starts.append(q0)
    return starts


def _identify_motion(robot: str, kind: str, seconds: float, start: np.ndarray | None = None):
    """The ``kind`` (:data:`IDENTIFY_MOTIONS`) of ``seconds`` from ``start`` (default home) on ``robot``."""
    spec = get_robot(robot)
    kin, arm = flange_kinematics(robot), ArmLimits.from_robot(spec)
    start = np.asarray(spec.q_home if start is None else start, dtype=float)
    limits = MotionLimits(duration=seconds)
    if kind == "ft":
        return design_excitation(kin, arm, start, limits).trajectory
    if kind == "thesis":  # (from home only)
        return make_trajectory("thesis", spec, duration=seconds, seed=7)
    return design_excitation(kin, arm, start, limits, estimate_offsets=False,  # what ~/identify runs for them
                             joint_torques=JointTorqueNoise.for_robot(spec)).trajectory


def identify(args: argparse.Namespace) -> None:
    """~/identify's motion in joint-torque mode on each robot: the F/T design, the joint-torque one, Lambert's."""
    seeds = range(args.identify_seeds)
    print(f"\n## ~/identify's motion, joint torques (calibrated), {args.identify_s:g} s, "
          f"{args.identify_seeds} arms, WLS: mean (worst)\n")
    print("| robot | start - home, rad | payload | motion | mass % | COM mm |")
    print("|---|---|---|---|---|---|")
    for robot in args.identify_robots:
        designed = args.identify_calibration == "designed"
        calibrations = {seed: _calibrate(robot, args.calibration_s, seed, 0.0, designed=designed) for seed in seeds} \
            if args.identify_calibration in ("thesis", "designed") else {}
        home = np.asarray(get_robot(robot).q_home)
        for start in _identify_starts(robot, args.identify_starts, args.identify_s):
            kinds = [k for k in args.identify_motions if k != "thesis" or args.identify_starts == 0]
            motions = {kind: _identify_motion(robot, kind, args.identify_s, start) for kind in kinds}
            where = "home" if args.identify_starts == 0 else str(np.round(start - home, 2).tolist())
            for name in args.identify_payloads:
                payload = _payload(name)
                for kind, trajectory in motions.items():
                    if args.identify_calibration in ("identify", "both"):  # this motion recorded unloaded, this start
                        lambert = args.calibration_s if args.identify_calibration == "both" else 0.0
                        calibrations = {seed: _calibrate(robot, lambert, seed, 0.0, (trajectory, args.identify_s))
                                        for seed in seeds}
                    rows = [_run(robot, trajectory, args.identify_s, payload, "joint_torques", seed,
                                 calibrations[seed], 0.0, "wls") for seed in seeds]
                    print(f"| {robot} | {where} | {name} {payload.params.mass:.2f} kg | {_IDENTIFY_LABELS[kind]} | "
                          f"{_cell([r['mass_pct'] for r in rows], '{:.2f}')} | "
                          f"{_cell([r['com_mm'] for r in rows], '{:.2f}')} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="arms and noise seeds per robot and payload (default 3)")
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS))
    ap.add_argument("--payloads", nargs="+", default=list(PAYLOADS))
    ap.add_argument("--durations", nargs="+", type=float, default=list(DURATIONS), help="shakes, s (0.5 and/or 1)")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--method", default="wls", help="the estimator (default wls)")
    ap.add_argument("--calibration-s", type=float, default=30.0, help="s of the unloaded arm's calibration motion")
    ap.add_argument("--effort-scale-error", type=float, default=0.0,
                    help="joint-torque mode: each joint's effort scale is 1 + U(-e, e), calibrated with the arm "
                         "(default 0: exact torque constants)")
    ap.add_argument("--quick", action="store_true",
                    help="Panda and xArm 7, the club hammer, one seed, 15 s calibration")
    ap.add_argument("--identify", action="store_true", help="also ~/identify's motion on the xArm 6 (joint torques)")
    ap.add_argument("--identify-s", type=float, default=15.0, help="s of ~/identify's motion (default 15)")
    ap.add_argument("--identify-seeds", type=int, default=3, help="arms for --identify (default 3)")
    ap.add_argument("--identify-robots", nargs="+", default=["xarm6", "panda", "xarm7"],
                    help="robots for --identify (default xarm6 panda xarm7)")
    ap.add_argument("--identify-motions", nargs="+", choices=IDENTIFY_MOTIONS, default=list(IDENTIFY_MOTIONS),
                    help="motions for --identify (default all)")
    ap.add_argument("--identify-payloads", nargs="+", default=["ws_club_hammer"],
                    help="payloads for --identify (default ws_club_hammer)")
    ap.add_argument("--identify-starts", type=int, default=0,
                    help="--identify from this many starts up to 0.5 rad per joint off home (default 0: home)")
    ap.add_argument("--identify-calibration", choices=("thesis", "designed", "identify", "both"), default="thesis",
                    help="--identify's calibration recording: --calibration-s of Lambert's sinusoids (default), of "
                         "the motion excite --for calibration designs from home, the identification motion itself "
                         "recorded unloaded from the same start (its own noise), or Lambert's and that one")
    ap.add_argument("--identify-only", action="store_true", help="--identify without the shakes' table")
    args = ap.parse_args()
    if args.quick:
        args.robots, args.payloads, args.seeds, args.calibration_s = ["panda", "xarm7"], ["ws_club_hammer"], 1, 15.0
    started = time.perf_counter()
    if not args.identify_only:
        shakes(args)
    if args.identify or args.identify_only:
        identify(args)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
