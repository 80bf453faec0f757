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
  friction in a law the calibration does not fit; the UR arms' motor currents) and, with
  ``--effort-scale-error e``, a torque-constant error of up to ``e`` per joint (the calibration then fits the
  scales too; ``--known-payload NAME``: with a second recording holding that payload, ``calibrate
  --known-payload-bag``), with ``--load-friction mu`` Coulomb friction growing with the joints' load
  (``--fit-load-friction``: ``calibrate --load-friction``); the arm was calibrated unloaded beforehand on
  ``--calibration-s`` of the motion ``excite --for calibration`` designs from home (the documented workflow;
  ``--calibration-motion thesis``: Lambert's sinusoids, as before), and the shake is the one designed ``--for
  joint-torques``.

Payloads: the workshop's file (0.22 kg, steel blade in a wooden handle), club hammer (1.08 kg, steel head
on a wooden handle) and the catalogue's drill (1.55 kg). Mean absolute mass error (kg, and %), mean
and worst COM distance (mm), over payloads and seeds.

``--every-condition``: every condition at once, as ``benchmarks/joint_torques.py --every-condition``: every
built-in arm (the UR arms' motor currents need their scales calibrated), payloads from 0.10 to 3.0 kg (the
workshop's screwdriver and file, the hammer, the club hammer, the drill, the vise), effort scales off by up to
±15 % calibrated with the known 0.65 kg ``offset_box``, load-dependent friction (mu 0.05) with its term fitted;
the F/T modes on the same arms, payloads and shakes. Over several robots a second table sums up every robot.

``--identify`` also runs the ``~/identify`` motion (``--identify-s``, 15 s by default, from home) in joint-torque
mode on each of ``--identify-robots`` (``--identify-only``: without the shakes): designed for an F/T sensor (what
``~/identify`` ran before), the motion it runs now with ``wrench_source: joint_torques`` (all-joint sinusoids,
the joint-torque criterion picking the frequencies' assignment) and Lambert's own sinusoids, ``--identify-seeds``
calibrated arms, ``--identify-payloads`` (the club hammer by default), from home or ``--identify-starts``
starts drawn around it. Each arm is calibrated (``--identify-calibration``) on ``--calibration-s`` of the motion
``excite --for calibration`` designs from home (``designed``, the default), of Lambert's sinusoids (``thesis``:
their wrist moves at most 0.13-0.25 rad/s, slower than ``~/identify``'s motion, so the friction is
extrapolated), on the identification motion itself recorded unloaded from the same start (``identify``), or on
Lambert's and that one (``both``). The arms' conditions are the shakes' options.

Run:  python benchmarks/short_shake.py [--seeds 3] [--robots panda xarm7] [--quick] [--every-condition]
          [--calibration-motion thesis] [--effort-scale-error 0.15 --known-payload offset_box]
          [--load-friction 0.05 --fit-load-friction] [--identify]
          [--identify-only --identify-seeds 6 --identify-robots xarm6 panda xarm7]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import ConfigurationError
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
from payload_estimator.robots import ROBOT_NAMES, get_robot
from payload_estimator.settings import WrenchSource
from payload_estimator.sim.efforts import ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import known_payload_recording, recording_from_run, stream_for_run
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


def _efforts(robot: str, scale_error: float, seed: int, load_friction: float = 0.0) -> EffortModel:
    """The simulated arm ``seed``'s joint-torque sensor: the robot's, its scales off by up to ``scale_error``,
    Coulomb friction growing with the load by ``load_friction``."""
    return EffortModel.for_robot(robot, effort_scale_error=scale_error, seed=seed, load_friction=load_friction)


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


def _calibrate(robot: str, seconds: float, seed: int, scale_error: float, also=None, designed: bool = True,
               load_friction: float = 0.0, fit_load_friction: bool = False, known_payload: str = ""):
    """The unloaded arm ``seed``'s calibration on ``seconds`` of the motion ``excite --for calibration`` designs
    (``designed`` False: of Lambert's sinusoids).

    The simulated arm's effort scales are off by up to ``scale_error`` (then fitted: ``calibrate
    --effort-scale``) and its Coulomb friction grows with the load by ``load_friction`` (``fit_load_friction``:
    ``calibrate --load-friction``). ``known_payload``: also a recording of the same motion holding that payload
    (``calibrate --known-payload-bag``). ``also``: ``(trajectory, seconds)`` recorded unloaded too (its own
    noise draw) and fitted with them; with ``seconds`` 0, that recording alone."""
    efforts, mismatch = _efforts(robot, scale_error, seed, load_friction), ArmMismatch(seed=seed)
    runs = []
    motion = _calibration_motion(robot, seconds, seed, designed) if seconds > 0.0 else None
    if motion is not None:
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
    options: dict = {}
    if known_payload:
        if motion is None:
            raise ValueError("a known payload's recording needs the calibration motion (seconds > 0)")
        known_run = simulate(robot=robot, payload=_payload(known_payload), trajectory=motion, duration=seconds,
                             noise="moderate", seed=3000 + seed, imu=False, efforts=efforts, arm_mismatch=mismatch)
        options.update(known_payload_recording(known_run, kin))
    cal, _ = calibrate_arm(kin, joint_recording(t, q, effort), robot=robot, effort_scale=scale_error > 0.0,
                           load_friction=fit_load_friction, **options)
    return cal


def _run(robot: str, trajectory, duration: float, payload, mode: str, seed: int, calibration, scale_error: float,
         method: str, load_friction: float = 0.0) -> dict:
    """Simulate ``duration`` s of ``trajectory`` with ``payload`` and estimate it in ``mode``.

    Joint-torque mode: the arm ``seed`` (its mismatch, effort scales and noise as :func:`_calibrate`'s)."""
    kwargs: dict = {}
    if mode == "joint_torques":
        kwargs = {"efforts": _efforts(robot, scale_error, seed, load_friction), "arm_mismatch": ArmMismatch(seed=seed)}
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


def _conditions(args: argparse.Namespace) -> str:
    """The joint-torque mode's conditions, in words."""
    motion = ("the motion `excite --for calibration` designs" if args.calibration_motion == "designed"
              else "Lambert's sinusoids")
    scales = (f"effort scales off by up to ±{100 * args.effort_scale_error:g} % (fitted"
              + (f", with a recording holding the known {_payload(args.known_payload).params.mass:.2f} kg "
                 f"{args.known_payload}" if args.known_payload else ", unloaded arm only") + ")"
              if args.effort_scale_error > 0.0 else "exact effort scales")
    friction = (f"Coulomb friction growing with the load (mu {args.load_friction:g}; "
                + ("its term fitted" if args.fit_load_friction else "not fitted") + ")"
                if args.load_friction > 0.0 or args.fit_load_friction else "no load-dependent friction")
    return (f"joint torques: arms unlike their URDF, the vendors' effort noise and friction, {scales}, {friction}; "
            f"calibrated unloaded on {args.calibration_s:g} s of {motion}")


def shakes(args: argparse.Namespace) -> dict[tuple, list]:
    """The table of the short shakes (and, over several robots, the table over all of them); returns the rows."""
    calibrations = {}
    if "joint_torques" in args.modes:
        for robot in args.robots:
            for seed in range(args.seeds):
                calibrations[robot, seed] = _calibrate(
                    robot, args.calibration_s, seed, args.effort_scale_error,
                    designed=args.calibration_motion == "designed", load_friction=args.load_friction,
                    fit_load_friction=args.fit_load_friction, known_payload=args.known_payload)
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
                                 args.effort_scale_error, args.method, args.load_friction))
    names = ", ".join(f"{p} {_payload(p).params.mass:.2f} kg" for p in args.payloads)
    print(f"## After a {' s / '.join(f'{d:g}' for d in args.durations)} s shake from home "
          f"({args.method.upper()}, {args.seeds} seed(s)): mass error kg and %, COM mm, mean (worst) over the payloads "
          f"and seeds; per payload ({names}): mass % / COM mm, mean over the seeds\n")
    if "joint_torques" in args.modes:
        print(f"({_conditions(args)})\n")
    print("| robot | shake | mode | mass error kg | mass % | COM mm | " + " | ".join(args.payloads) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(args.payloads))
    lo, hi = BAEK_MASS_MAE_KG
    baek = (f"| Baek et al. (real robot, learned model) | 0.5 s | joint positions and velocities | {lo:.2f}-{hi:.2f} "
            "(mean absolute) | - | - |")
    for robot in args.robots:
        for seconds in args.durations:
            for mode in args.modes:
                rows = {p: results[robot, seconds, mode, p] for p in args.payloads}
                every = [r for p in args.payloads for r in rows[p]]
                cells = [f"{np.nanmean([r['mass_pct'] for r in rows[p]]):.1f} / "
                         f"{np.nanmean([r['com_mm'] for r in rows[p]]):.1f}" for p in args.payloads]
                print(f"| {robot} | {seconds:g} s | {LABELS[mode]} | {_cell([r['mass_kg'] for r in every])} | "
                      f"{_cell([r['mass_pct'] for r in every], '{:.1f}')} | "
                      f"{_cell([r['com_mm'] for r in every], '{:.1f}')} | " + " | ".join(cells) + " |")
    print(baek + " - |" * len(args.payloads))
    if len(args.robots) > 1:
        print(f"\n## Over every robot ({', '.join(args.robots)}), every payload and seed: mean (worst)\n")
        print("| shake | mode | mass error kg | mass % | COM mm |")
        print("|---|---|---|---|---|")
        for seconds in args.durations:
            for mode in args.modes:
                every = [r for robot in args.robots for p in args.payloads for r in results[robot, seconds, mode, p]]
                print(f"| {seconds:g} s | {LABELS[mode]} | {_cell([r['mass_kg'] for r in every])} | "
                      f"{_cell([r['mass_pct'] for r in every], '{:.1f}')} | "
                      f"{_cell([r['com_mm'] for r in every], '{:.1f}')} |")
        print(f"| 0.5 s | Baek et al. (real robot, learned model; joint positions and velocities) | {lo:.2f}-{hi:.2f} "
              "(mean absolute) | - | - |")
    return results


EVERY_ROBOT = tuple(ROBOT_NAMES)
"""``--every-condition``'s robots: every built-in arm (the UR arms' drivers publish motor currents: their scales
are calibrated)."""
EVERY_PAYLOAD = ("ws_screwdriver", "ws_file", "hammer", "ws_club_hammer", "drill", "vise")
"""``--every-condition``'s payloads, 0.10 to 3.0 kg (the workshop's and the catalogue's)."""
KNOWN_PAYLOAD = "offset_box"
"""``--every-condition``'s known payload of the calibration's second recording (0.65 kg: a carton with a block in
one corner)."""
EVERY_SCALE_ERROR = 0.15
EVERY_LOAD_FRICTION = 0.05


def every_condition(args: argparse.Namespace) -> None:
    """Set ``args`` to every condition at once (module docstring), keeping what the command line set otherwise."""
    if args.robots == list(ROBOTS):
        args.robots = list(EVERY_ROBOT)
    if args.payloads == list(PAYLOADS):
        args.payloads = list(EVERY_PAYLOAD)
    args.effort_scale_error = args.effort_scale_error or EVERY_SCALE_ERROR
    args.load_friction = args.load_friction or EVERY_LOAD_FRICTION
    args.known_payload = args.known_payload or KNOWN_PAYLOAD
    args.fit_load_friction = True


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
    """~/identify's motion in joint-torque mode on each robot: the F/T design, the joint-torque one, Lambert's.

    The arms as the shakes' (``--effort-scale-error``, ``--load-friction``, ``--fit-load-friction``,
    ``--known-payload``; the known payload only with a calibration motion)."""
    seeds = range(args.identify_seeds)
    scale, mu = args.effort_scale_error, args.load_friction
    print(f"\n## ~/identify's motion, joint torques (calibrated), {args.identify_s:g} s, "
          f"{args.identify_seeds} arms, WLS: mean (worst)\n")
    if scale or mu or args.fit_load_friction:
        print(f"(effort scales off by up to ±{100 * scale:g} %, load-dependent friction mu {mu:g}, its term "
              f"{'fitted' if args.fit_load_friction else 'not fitted'}; known payload: {args.known_payload or '-'})\n")
    print("| robot | start - home, rad | payload | motion | mass % | COM mm |")
    print("|---|---|---|---|---|---|")
    conditions = {"load_friction": mu, "fit_load_friction": args.fit_load_friction}
    for robot in args.identify_robots:
        designed = args.identify_calibration == "designed"
        calibrations = {seed: _calibrate(robot, args.calibration_s, seed, scale, designed=designed,
                                         known_payload=args.known_payload, **conditions) for seed in seeds} \
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
                        known = args.known_payload if lambert > 0.0 else ""
                        calibrations = {seed: _calibrate(robot, lambert, seed, scale, (trajectory, args.identify_s),
                                                         designed=False, known_payload=known, **conditions)
                                        for seed in seeds}
                    rows = [_run(robot, trajectory, args.identify_s, payload, "joint_torques", seed,
                                 calibrations[seed], scale, "wls", mu) for seed in seeds]
                    print(f"| {robot} | {where} | {name} {payload.params.mass:.2f} kg | {_IDENTIFY_LABELS[kind]} | "
                          f"{_cell([r['mass_pct'] for r in rows], '{:.2f}')} | "
                          f"{_cell([r['com_mm'] for r in rows], '{:.2f}')} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="arms and noise seeds per robot and payload (default 3)")
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS))
    ap.add_argument("--payloads", nargs="+", default=list(PAYLOADS))
    ap.add_argument("--durations", nargs="+", type=float, default=list(DURATIONS), help="shakes, s (0.5 and/or 1)")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--method", default="wls", help="the estimator (default wls)")
    ap.add_argument("--calibration-s", type=float, default=30.0, help="s of the unloaded arm's calibration motion")
    ap.add_argument("--calibration-motion", choices=("designed", "thesis"), default="designed",
                    help="joint-torque mode's calibration motion: what `excite --for calibration` designs from home "
                         "(default), or Lambert's sinusoids")
    ap.add_argument("--effort-scale-error", type=float, default=0.0, metavar="E",
                    help="joint-torque mode: each joint's effort scale is 1 + U(-E, E), calibrated with the arm "
                         "(default 0: exact torque constants)")
    ap.add_argument("--known-payload", default="", metavar="NAME",
                    help="with --effort-scale-error: the calibration also records the calibration motion holding "
                         f"this payload (calibrate --known-payload-bag; e.g. {KNOWN_PAYLOAD})")
    ap.add_argument("--load-friction", type=float, default=0.0, metavar="MU",
                    help="joint-torque mode: the simulator's Coulomb friction grows with the joints' load by MU N·m "
                         "per N·m (default 0: off)")
    ap.add_argument("--fit-load-friction", action="store_true",
                    help="calibrate the load-dependent friction term (calibrate --load-friction)")
    ap.add_argument("--every-condition", action="store_true",
                    help="every built-in arm, payloads 0.1-3 kg, effort scales off by up to 15 %% calibrated with "
                         f"the known {KNOWN_PAYLOAD}, load-dependent friction (mu 0.05) fitted, all at once")
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
    ap.add_argument("--identify-calibration", choices=("designed", "thesis", "identify", "both"), default="designed",
                    help="--identify's calibration recording: --calibration-s of the motion excite --for calibration "
                         "designs from home (default), of Lambert's sinusoids, the identification motion itself "
                         "recorded unloaded from the same start (its own noise), or Lambert's and that one")
    ap.add_argument("--identify-only", action="store_true", help="--identify without the shakes' table")
    args = ap.parse_args(argv)
    if not 0.0 <= args.effort_scale_error < 1.0 or not 0.0 <= args.load_friction < 1.0:
        ap.error("--effort-scale-error and --load-friction must be in [0, 1)")
    if args.quick:
        args.robots, args.payloads, args.seeds, args.calibration_s = ["panda", "xarm7"], ["ws_club_hammer"], 1, 15.0
    if args.every_condition:
        every_condition(args)
    unknown = sorted(set(args.robots + args.identify_robots) - set(ROBOT_NAMES))
    if unknown:
        ap.error(f"unknown robot(s) {', '.join(unknown)}; choose among {', '.join(ROBOT_NAMES)}")
    for name in args.payloads + args.identify_payloads:
        try:
            _payload(name)
        except ConfigurationError as exc:
            ap.error(str(exc))
    if args.known_payload:
        if not args.effort_scale_error:
            ap.error("--known-payload fixes the effort scales: it needs --effort-scale-error")
        try:
            _payload(args.known_payload)
        except ConfigurationError as exc:
            ap.error(f"--known-payload: {exc}")
    started = time.perf_counter()
    if not args.identify_only:
        shakes(args)
    if args.identify or args.identify_only:
        identify(args)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
