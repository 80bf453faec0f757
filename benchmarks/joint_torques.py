"""The payload from joint torques alone (no F/T sensor), with and without the unloaded arm's calibration.

For each robot, MuJoCo simulates an arm that is *not* its URDF (every link's mass off by up to 15 %,
its COM by up to 1 cm: ``ArmMismatch``), with realistic joint-torque readings (``EffortModel.for_robot``:
Franka's link-side tau_J, 0.05-0.08 N·m noise and Gaz et al.'s friction; the xArm's current-based
efforts, 0.3-0.6 N·m noise, 1-3 N·m Coulomb friction, viscous and Stribeck terms; the friction law is
deliberately not the one the calibration fits). Per arm (mismatch seed):

1. calibration: the arm *without* payload runs ``--calibration-s`` seconds of a calibration motion
   (all joints, Lambert's sinusoids ``q_i = A sin(f_i t)`` with their own frequencies), and
   ``calibrate_arm`` fits it;
2. estimation: the arm *with* the payload runs ``--duration`` seconds of a *different* motion
   (Lambert's sinusoids on all joints with other frequencies, the identification motion ``excite`` designs
   from home for an F/T sensor or, ``designed-jt``, for the joint torques, or Nadeau et al.'s wrist
   sinusoids), and the whole
   pipeline (filters, kinematics, the joint torques through the Jacobian) estimates the payload in
   the flange frame, without a shape prior (WLS) and with the payload's outer box (PMD).

Rows: the description alone (the URDF's inertias, no friction: what one gets without calibrating),
calibrated, and, for reference, an F/T sensor at the flange (Nadeau et al.'s Table II moderate noise) on the
same motion. Errors: mass %, COM distance (mm), and inertia (Nadeau et al.'s eq. 12, %).

``--singular`` instead runs the estimation around a nearly singular pose (the arm stretched, the wrist
axes nearly aligned) and compares the joint-space rows (``SensorSamples.wrench_information_sqrt``) with
the plain pseudo-inverse wrench ``pinv(J^T) dtau`` fed to the same estimator as if a sensor had measured it.

Targets: xArm 7, current-based efforts, 1 kg payload (the workshop's 1.08 kg club hammer: a
steel head on a wooden handle), 15 s: mass <= 2 %, COM <= 8 mm; better on the Panda.

``--effort-scale-error E`` simulates efforts whose scale is off by up to ``E`` per joint (a torque constant that
is off) and calibrates the scales with the arm (``calibrate --effort-scale``); ``--load-friction MU`` adds
Coulomb friction growing with the joints' load (Hamon, Gautier and Garrec's law) to the simulator, and
``--fit-load-friction`` fits its term in the calibration (``calibrate --load-friction``;
``benchmarks/load_friction.py`` compares the four combinations).

``--every-condition`` runs every condition at once on every built-in arm (panda, fr3, xarm7, xarm6, ur5e,
ur10e): scales off by up to 15 % (``--effort-scale-error``, default 0.15), load-dependent friction
(``--load-friction``, default 0.05) fitted, the calibration on the motion ``excite --for calibration`` designs
with three options (effort scales with a known 0.65 kg payload's recording, scales from the unloaded arm alone,
no scales), payloads from 0.10 to 3.0 kg estimated on ~/identify's joint-torque motion; it prints each
payload's mass and COM error and whether the target (mass <= 2 %, COM <= 8 mm from 0.3 kg) is met per robot
and estimator (about 15 min).

Run:  python benchmarks/joint_torques.py [--seeds 3] [--robots xarm7 panda ...] [--quick] [--singular]
          [--effort-scale-error 0.05] [--load-friction 0.05 [--fit-load-friction]] [--every-condition]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import figures
import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.metrics import mean_and_worst, paper_errors
from payload_estimator.excitation import (
    ArmLimits,
    MotionLimits,
    calibration_limits,
    design_calibration_motion,
    design_excitation,
    flange_kinematics,
)
from payload_estimator.excitation.information import JointTorqueNoise
from payload_estimator.pipeline.arm_dynamics import ArmPrior, calibrate_arm, joint_recording
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.pipeline.sources.joint_effort import JointEfforts
from payload_estimator.robots import ROBOT_NAMES, get_robot
from payload_estimator.settings import WrenchSource
from payload_estimator.sim.efforts import ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import known_payload_recording, recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import PaperWristSinusoids, make_trajectory
from payload_estimator.sim.workshop import get_tool

ROBOTS = ("xarm7", "xarm6", "panda", "fr3")
PAYLOADS = ("ws_club_hammer", "claw_hammer")
TARGET = {"xarm7": (2.0, 8.0)}
"""Targets: mass error (%) and COM error (mm) on the xArm 7 with a 1 kg payload after 15 s."""


def _payload(name: str):
    return get_tool(name) if name.startswith("ws_") else get_payload(name)


FRICTION_PRIOR = ArmPrior().friction
CONSISTENT = False
CALIBRATION_MOTION = "thesis"
SCALE_ERROR = 0.0
LOAD_FRICTION = 0.0
FIT_LOAD_FRICTION = False


def _efforts(robot: str, seed: int) -> EffortModel:
    """The simulated arm's joint-torque sensor: the robot's, its scales and load friction as the options say."""
    return EffortModel.for_robot(robot, effort_scale_error=SCALE_ERROR, seed=seed, load_friction=LOAD_FRICTION)


def _calibration_motion(robot: str, seconds: float, seed: int):
    spec = get_robot(robot)
    if CALIBRATION_MOTION == "designed":  # what `excite --for calibration` designs from home
        return design_calibration_motion(flange_kinematics(robot), ArmLimits.from_robot(spec),
                                         np.asarray(spec.q_home), calibration_limits(duration=seconds),
                                         seed=seed).trajectory
    return make_trajectory("thesis", spec, duration=seconds, seed=1000 + seed)


def _calibrate(robot: str, mismatch: ArmMismatch, seconds: float, seed: int, known_payload: str = "",
               effort_scale: bool | None = None):
    """Calibration of the arm ``mismatch`` on its own unloaded run; returns (calibration, fit, seconds).

    ``known_payload``: also a run of the same motion holding that payload (``calibrate --known-payload-bag``);
    ``effort_scale``: fit the effort scales (default: when the simulated scales are off)."""
    motion = _calibration_motion(robot, seconds, seed)
    run = simulate(robot=robot, payload=NO_PAYLOAD, trajectory=motion, duration=seconds, noise="moderate",
                   seed=1000 + seed, imu=False, efforts=_efforts(robot, mismatch.seed), arm_mismatch=mismatch)
    kin = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
    options: dict = {}
    if known_payload:
        known_run = simulate(robot=robot, payload=_payload(known_payload), trajectory=motion, duration=seconds,
                             noise="moderate", seed=2000 + seed, imu=False, efforts=_efforts(robot, mismatch.seed),
                             arm_mismatch=mismatch)
        options.update(known_payload_recording(known_run, kin))
    started = time.perf_counter()
    cal, fit = calibrate_arm(kin, joint_recording(run.joint_t, run.joint_q, run.joint_effort), robot=robot,
                             prior=ArmPrior(friction=FRICTION_PRIOR), consistent=CONSISTENT,
                             effort_scale=SCALE_ERROR > 0.0 if effort_scale is None else effort_scale,
                             load_friction=FIT_LOAD_FRICTION, **options)
    return cal, fit, time.perf_counter() - started


def _estimate(run, payload, method: str, source: str, calibration, joint_space_rows: bool = True) -> dict:
    shape = payload.envelope if method == "pmd" else None
    if source == "ft":
        stream = stream_for_run(run, shape, estimator=method, track_payload=False)
    else:
        stream = stream_for_run(run, shape, estimator=method, track_payload=False,
                                wrench_source=WrenchSource.JOINT_TORQUES,
                                wrench=JointEfforts(calibration, joint_space_rows=joint_space_rows))
    play(stream, recording_from_run(run))  # (a joint-torque stream takes no wrench, an F/T one no efforts)
    final = stream.last
    if final is None:
        return {"mass": np.nan, "com_mm": np.nan, "inertia": np.nan}
    truth = InertialParameters(run.payload_phi)
    err = paper_errors(final.estimate.params, truth, payload.bbox_lengths)
    return {"mass": err.mass, "com_mm": 1000.0 * float(np.linalg.norm(final.estimate.params.com - truth.com)),
            "inertia": err.inertia}


def _motion(robot: str, kind: str, duration: float, q_start: np.ndarray | None = None):
    spec = get_robot(robot)
    if kind == "wrist":
        return PaperWristSinusoids(spec, duration=duration)
    if kind == "thesis":  # Lambert's excitation, other frequencies than the calibration's
        return make_trajectory("thesis", spec, duration=duration, seed=7)
    start = spec.q_home if q_start is None else q_start
    if kind == "designed-jt":  # what `excite --for joint-torques` designs (the robot's effort noise and friction)
        return design_excitation(flange_kinematics(robot), ArmLimits.from_robot(spec), np.asarray(start),
                                 MotionLimits(duration=duration), seed=0, estimate_offsets=False,
                                 joint_torques=JointTorqueNoise.for_robot(spec)).trajectory
    return design_excitation(flange_kinematics(robot), ArmLimits.from_robot(spec), np.asarray(start),
                             MotionLimits(duration=duration), seed=0).trajectory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="arms (mismatch and noise seeds) per robot (default 3)")
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS))
    ap.add_argument("--payloads", nargs="+", default=list(PAYLOADS))
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of estimation motion (default 15)")
    ap.add_argument("--calibration-s", type=float, default=30.0, help="seconds of calibration motion (default 30)")
    ap.add_argument("--motions", nargs="+", default=["thesis", "designed"],
                    help="estimation motions: thesis (Lambert's, all joints), designed (excite's, for an F/T "
                         "sensor), designed-jt (excite --for joint-torques), wrist (Nadeau et al.'s, wrist)")
    ap.add_argument("--methods", nargs="+", default=["wls", "pmd"])
    ap.add_argument("--quick", action="store_true", help="xArm 7 and Panda, the club hammer, one seed, thesis, WLS")
    ap.add_argument("--singular", action="store_true", help="near a singular pose: joint-space rows vs pseudo-inverse")
    ap.add_argument("--friction-prior", type=float, default=ArmPrior().friction,
                    help="std of the calibration's friction prior, N·m (default: ArmPrior's)")
    ap.add_argument("--consistent", action="store_true", help="calibrate over real bodies only (slower)")
    ap.add_argument("--calibration-motion", choices=("thesis", "designed"), default="thesis",
                    help="thesis: Lambert's sinusoids (default); designed: what `excite --for calibration` designs")
    ap.add_argument("--effort-scale-error", type=float, default=0.0, metavar="E",
                    help="each joint's effort scale off by up to E in the simulator, then calibrated (default 0)")
    ap.add_argument("--load-friction", type=float, default=0.0, metavar="MU",
                    help="the simulator's load-dependent Coulomb coefficient, N·m per N·m of load (default 0: off)")
    ap.add_argument("--fit-load-friction", action="store_true", help="calibrate the load-dependent friction term")
    ap.add_argument("--every-condition", action="store_true",
                    help="every built-in arm, payloads 0.1-3 kg, scales off (0.15) and load friction (0.05) at once, "
                         "three calibrations")
    figures.add_option(ap)
    args = ap.parse_args()
    global FRICTION_PRIOR, CONSISTENT, CALIBRATION_MOTION, SCALE_ERROR, LOAD_FRICTION, FIT_LOAD_FRICTION
    FRICTION_PRIOR, CONSISTENT, CALIBRATION_MOTION = args.friction_prior, args.consistent, args.calibration_motion
    if not 0.0 <= args.effort_scale_error < 1.0 or not 0.0 <= args.load_friction < 1.0:
        ap.error("--effort-scale-error and --load-friction must be in [0, 1)")
    SCALE_ERROR, LOAD_FRICTION, FIT_LOAD_FRICTION = args.effort_scale_error, args.load_friction, args.fit_load_friction
    if args.quick:
        args.robots, args.payloads, args.seeds, args.motions, args.methods = (
            ["xarm7", "panda"], ["ws_club_hammer"], 1, ["thesis"], ["wls"])
    if args.singular:
        singular(args)
        return
    if args.every_condition:
        if args.robots == list(ROBOTS):
            args.robots = list(ROBOT_NAMES)
        if args.payloads == list(PAYLOADS):
            args.payloads = list(EVERY_PAYLOAD)
        every_condition(args)
        return

    what = "Lambert's sinusoids" if args.calibration_motion == "thesis" else "the designed calibration motion"
    if SCALE_ERROR or LOAD_FRICTION or FIT_LOAD_FRICTION:
        print(f"Simulated efforts: scales off by up to {100 * SCALE_ERROR:g} % (calibrated: {SCALE_ERROR > 0}), "
              f"load-dependent Coulomb friction mu {LOAD_FRICTION:g} (calibration term: {FIT_LOAD_FRICTION})\n")
    print(f"## Calibration ({args.calibration_s:g} s of the unloaded arm, {what}), effort RMS "
          "residual on it (N·m, mean over joints)\n")
    print("| robot | arm | description alone | calibrated | bodies consistent | fit time |")
    print("|---|---|---|---|---|---|")
    calibrations = {}
    for robot in args.robots:
        for seed in range(args.seeds):
            mismatch = ArmMismatch(seed=seed)
            cal, fit, seconds = _calibrate(robot, mismatch, args.calibration_s, seed)
            calibrations[robot, seed] = cal
            print(f"| {robot} | {seed} | {np.mean(fit.rms_description):.3f} | {np.mean(fit.rms_calibrated):.3f} | "
                  f"{sum(cal.consistent)}/{len(cal.consistent)} | {seconds:.1f} s |")

    results: dict[tuple, list] = defaultdict(list)
    for robot in args.robots:
        for motion in args.motions:
            trajectory = _motion(robot, motion, args.duration)
            for payload_name in args.payloads:
                payload = _payload(payload_name)
                for seed in range(args.seeds):
                    run = simulate(robot=robot, payload=payload, trajectory=trajectory, duration=args.duration,
                                   noise="moderate", seed=seed, imu=False, efforts=_efforts(robot, seed),
                                   arm_mismatch=ArmMismatch(seed=seed))
                    for method in args.methods:
                        for source, cal in (("description", None), ("calibrated", calibrations[robot, seed]),
                                            ("ft", None)):
                            results[robot, payload_name, motion, method, source].append(
                                _estimate(run, payload, method, source, cal))

    print(f"\n## Errors after {args.duration:g} s of estimation motion, {args.seeds} arm(s): mean (worst)\n")
    print("| robot | payload | motion | estimator | source | mass % | COM mm | inertia % |")
    print("|---|---|---|---|---|---|---|---|")
    labels = {"description": "joint torques, URDF only", "calibrated": "joint torques, calibrated",
              "ft": "F/T sensor (reference)"}
    verdicts = []
    key: dict[str, float] = {}
    for (robot, payload_name, motion, method, source), rows in results.items():
        mass, com, inertia = ([r[k] for r in rows] for k in ("mass", "com_mm", "inertia"))
        at = ("joint_torques", robot, payload_name, motion, method, source)
        key[figures.name(*at, "mass_pct")], key[figures.name(*at, "com_mm")] = np.mean(mass), np.mean(com)
        print(f"| {robot} | {payload_name} | {motion} | {method.upper()} | {labels[source]} | {mean_and_worst(mass)} | "
              f"{mean_and_worst(com)} | {mean_and_worst(inertia)} |")
        if robot in TARGET and source == "calibrated" and payload_name == "ws_club_hammer":
            m_max, c_max = TARGET[robot]
            worst_m, worst_c = float(np.nanmax(mass)), float(np.nanmax(com))
            ok = worst_m <= m_max and worst_c <= c_max
            verdicts.append(f"{robot} + club hammer, {motion}, {method.upper()}: worst mass {worst_m:.2f} % "
                            f"(<= {m_max}), worst COM {worst_c:.1f} mm (<= {c_max}): {'met' if ok else 'NOT met'}")
    if verdicts:
        print("\nTargets:")
        for line in verdicts:
            print(f"- {line}")
    figures.write(args.figures, key)


EVERY_PAYLOAD = ("ws_screwdriver", "ws_file", "hammer", "ws_claw_hammer", "ws_club_hammer", "drill", "vise")
"""``--every-condition``'s payloads, 0.10 to 3.0 kg (the catalogue's and the workshop's)."""
KNOWN_PAYLOAD = "offset_box"
"""The known payload of the calibration's second recording (0.65 kg: a carton with a block in one corner)."""
EVERY_TARGET = (0.3, 2.0, 8.0)
"""From this mass (kg) up, the worst mass error (%) and COM error (mm) after 15 s, every built-in arm."""
CALIBRATIONS = {
    "scales + known payload": {"effort_scale": True, "known_payload": KNOWN_PAYLOAD},
    "scales, unloaded arm": {"effort_scale": True},
    "no scales": {"effort_scale": False},
}
"""``--every-condition``'s calibrations (``calibrate --effort-scale --known-payload-bag``, ``--effort-scale``,
neither); all with ``--load-friction``, on the motion ``excite --for calibration`` designs."""


def every_condition(args: argparse.Namespace) -> None:
    """Every condition at once, every built-in arm, payloads from 0.1 to 3 kg (module docstring)."""
    global CALIBRATION_MOTION, SCALE_ERROR, LOAD_FRICTION, FIT_LOAD_FRICTION
    CALIBRATION_MOTION, FIT_LOAD_FRICTION = "designed", True
    SCALE_ERROR = args.effort_scale_error or 0.15
    LOAD_FRICTION = args.load_friction or 0.05
    print(f"Every condition at once: arms unlike their URDF, friction unlike the calibration's model and growing "
          f"with the load (mu {LOAD_FRICTION:g}), the vendors' effort noise, every joint's effort scale off by up to "
          f"±{100 * SCALE_ERROR:g} %; {args.calibration_s:g} s of the motion `excite --for calibration` designs "
          f"(unloaded, and holding the 0.65 kg {KNOWN_PAYLOAD} for the known-payload calibration), all calibrations "
          f"with --load-friction; then {args.duration:g} s of ~/identify's joint-torque motion "
          f"(`excite --for joint-torques`) with each payload; {args.seeds} arm(s) per robot; mean (worst)\n")
    print("| robot | payload | kg | calibration | estimator | mass % | COM mm |")
    print("|---|---|---|---|---|---|---|")
    verdicts = []
    for robot in args.robots:
        currents = bool(get_robot(robot).efforts.scale)  # a driver that reports motor currents
        calibrations = {}
        for label, options in CALIBRATIONS.items():
            if currents and not options["effort_scale"]:
                continue  # currents without torque constants: the scales are the only way to torques
            for seed in range(args.seeds):
                calibrations[label, seed] = _calibrate(robot, ArmMismatch(seed=seed), args.calibration_s, seed,
                                                       **options)[0]
        trajectory = _motion(robot, "designed-jt", args.duration)
        worst: dict[str, list] = defaultdict(list)
        for payload_name in args.payloads:
            payload = _payload(payload_name)
            results: dict[tuple, list] = defaultdict(list)
            for seed in range(args.seeds):
                run = simulate(robot=robot, payload=payload, trajectory=trajectory, duration=args.duration,
                               noise="moderate", seed=seed, imu=False, efforts=_efforts(robot, seed),
                               arm_mismatch=ArmMismatch(seed=seed))
                for (label, cal_seed), cal in calibrations.items():
                    if cal_seed == seed:
                        for method in args.methods:
                            results[label, method].append(_estimate(run, payload, method, "calibrated", cal))
            for (label, method), rows in results.items():
                mass, com = [r["mass"] for r in rows], [r["com_mm"] for r in rows]
                print(f"| {robot} | {payload_name} | {payload.mass:.2f} | {label} | {method.upper()} | "
                      f"{mean_and_worst(mass)} | {mean_and_worst(com)} |")
                if label == "scales + known payload" and payload.mass >= EVERY_TARGET[0]:
                    worst[method].append((float(np.nanmax(mass)), float(np.nanmax(com)), payload_name))
        for method, cells in worst.items():
            m = max(cells)
            c = max(cells, key=lambda cell: cell[1])
            ok = m[0] <= EVERY_TARGET[1] and c[1] <= EVERY_TARGET[2]
            verdicts.append(f"{robot}, {method.upper()}, payloads of {EVERY_TARGET[0]:g} kg and more: worst mass "
                            f"{m[0]:.2f} % ({m[2]}), worst COM {c[1]:.1f} mm ({c[2]}): "
                            f"{'met' if ok else 'NOT met'} (<= {EVERY_TARGET[1]:g} %, <= {EVERY_TARGET[2]:g} mm)")
    print("\nTargets (scales + known payload):")
    for line in verdicts:
        print(f"- {line}")


def singular(args: argparse.Namespace) -> None:
    """Estimation around a nearly singular pose: joint-space rows against the pseudo-inverse wrench."""
    print(f"## Near a singular pose ({args.duration:g} s, calibrated arm): joint-space rows vs the pseudo-inverse "
          "wrench; mean (worst)\n")
    print("| robot | start | smallest singular value of J (min over the run) | rows | mass % | COM mm | inertia % |")
    print("|---|---|---|---|---|---|---|")
    payload = _payload("ws_club_hammer")
    for robot in args.robots:
        spec = get_robot(robot)
        starts = {"home": np.array(spec.q_home, dtype=float)}
        # the elbow nearly straight and the wrist's axes nearly aligned (as close to 0 as the limits' margin allows)
        near = np.array(spec.q_home, dtype=float)
        elbow, wrist = (3, 5) if len(near) == 7 else (2, 4)
        for j in (elbow, wrist):
            near[j] = np.clip(0.05, spec.q_min[j] + 0.12, spec.q_max[j] - 0.12)
        starts["near singular"] = near
        for label, q0 in starts.items():
            trajectory = _motion(robot, "designed", args.duration, q0)
            res = defaultdict(list)
            sv_min = []
            for seed in range(args.seeds):
                cal, _, _ = _calibrate(robot, ArmMismatch(seed=seed), args.calibration_s, seed)
                run = simulate(robot=robot, payload=payload, trajectory=trajectory, duration=args.duration,
                               noise="moderate", seed=seed, imu=False, efforts=_efforts(robot, seed),
                               arm_mismatch=ArmMismatch(seed=seed))
                kin = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
                J = kin.frame_jacobian(run.true_q[::50])
                sv_min.append(float(np.min(np.linalg.svd(J, compute_uv=False)[:, -1])))
                for rows in (True, False):
                    res[rows].append(_estimate(run, payload, "wls", "calibrated", cal, joint_space_rows=rows))
            for rows, name in ((True, "joint-space rows"), (False, "pseudo-inverse wrench")):
                r = res[rows]
                print(f"| {robot} | {label} | {min(sv_min):.3f} | {name} | {mean_and_worst([x['mass'] for x in r])} | "
                      f"{mean_and_worst([x['com_mm'] for x in r])} | {mean_and_worst([x['inertia'] for x in r])} |")


if __name__ == "__main__":
    main()
