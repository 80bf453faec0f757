"""``payload-estimator calibrate BAG --out CAL.yaml``: the unloaded arm's calibration from a recording.

Without a wrist force/torque sensor the payload is what is left of the joint torques once the arm's
own are taken away (``wrench_source: joint_torques``); a robot description's inertias are off and
its friction is not in it. This command fits them to a rosbag2 recording (mcap or sqlite3) of the
arm moving without payload:
the inertial parameters that matter (the description as prior), viscous and Coulomb friction and
an offset per joint, and with ``--effort-scale`` each joint's effort scale. The result, CAL.yaml,
is what ``arm_calibration`` names (``replay --set wrench_source=joint_torques --set
arm_calibration=CAL.yaml``, the node's parameter).

What it reads: ``sensor_msgs/JointState`` (positions and efforts) on the joint-state topic of the
robot's joint-torque preset (``config/<robot>_joint_torques.yaml``: Franka's
``measured_joint_states`` with the link-side torques, the xArm's ``/xarm/joint_states`` with its
current-based efforts), or ``--joint-states-topic``. The robot: ``--robot``, ``--config``, else
recognised from the bag's ``/robot_description`` or topics; an arm that is no preset works from
``--urdf FILE`` (or the recorded description) with ``--set flange_frame=...``.

Record a motion that moves every joint both ways, at several speeds, across its range: ``excite --for
calibration`` designs one, and so does ``simulate --payload none --efforts`` in simulation. ``--validate BAG2``
(another recording of the unloaded arm, another motion) gives held-out figures: a calibration
that only fits its own data shows there.

Effort scales (``--effort-scale``): each joint's factor from the effort as reported to N·m (a torque
constant that is off; with ``effort_unit: current`` and no ``torque_constants``, the torque constant
itself). An unloaded arm tells the scales relative to each other only where its own links load a joint
beyond friction and noise; their common factor is anchored on the description's gravity torques, so it is
as good as the URDF's masses. ``--known-payload-bag BAG2`` (the same arm holding a known payload, e.g. a
weight of known mass at a known point: ``--known-payload MASS@X,Y,Z``) is fitted together with BAG and
fixes them (measured in simulation: 1-3 % against 6-9 % from the unloaded arm alone; see the
documentation's joint-torques page).
Each scale's std and whether the recording determined it are in the file; a joint it did not determine is
kept at its first guess and named in a warning.

The efforts are checked against the torques the description predicts (the slower half of the samples,
where gravity dominates): efforts that look like currents, have the wrong sign, or are scaled more than
30 % from the model are named in one line with the setting to change (``effort_unit``,
``torque_constants``); exit status 2, unless ``--effort-scale`` fits the scales (then a warning; a wrong
sign is refused either way).

A joint that did not move enough to tell its friction from its inertia (less than 0.2 rad of range, or
fewer than two reversals at 0.1 rad/s both ways) is refused: one line names it and what it lacks, exit
status 2, no file written (its friction, 1-3 N·m on an xArm, would otherwise be a payload's torque).

Printed per joint: how fast it moved, the effort residual (RMS, N·m) with the description alone and calibrated (and
on BAG2), the friction found, and whether each body's fitted inertial parameters are physically
consistent. A bag without the topic, joint states without efforts (or not one per joint), too
little motion, an unreadable bag: one line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import check_out_file, config_error, one_line, parse_override, read_urdf

if TYPE_CHECKING:
    from payload_estimator.pipeline.arm_dynamics import ArmCalibration, ArmDynamics, CalibrationFit, JointRecording
    from payload_estimator.settings import Settings

__all__ = ["add_parser", "run", "MOVING_SPEED", "MIN_MOTION_S", "MIN_RANGE_RAD", "MIN_REVERSALS", "speed_reversals",
           "motion_refusal", "FIT_RATE_HZ", "Coverage", "motion_coverage",
           "calibration_table", "calibration_summary", "consistency_line", "coulomb_level",
           "friction_warnings", "known_payload",
           "EXTRAPOLATION"]

MOVING_SPEED = 0.1
"""rad/s: a joint whose speed never reaches this, both ways, has its friction left unidentified (a warning);
the recording is refused when no joint reaches it."""
MIN_RANGE_RAD = 0.2
"""rad: a joint that moved over less than this, or reversed at speed (:data:`MOVING_SPEED` each way) fewer than
:data:`MIN_REVERSALS` times, cannot have its friction told from its inertia: ``calibrate`` refuses the recording."""
MIN_REVERSALS = 2
MIN_MOTION_S = 3.0
"""s: the least motion (usable joint states, after the filters' edges are cut) a calibration accepts."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``calibrate`` command and its options to ``sub``; return its parser."""
    from payload_estimator.robots import ROBOT_NAMES

    p = sub.add_parser(
        "calibrate",
        help="calibrate the unloaded arm's joint torques (inertias, friction) from a rosbag2 recording",
        description=__doc__,
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 of the arm moving without payload (directory, .mcap or .db3)")
    p.add_argument("--out", metavar="CAL.yaml", required=True, help="the calibration file to write")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--robot", choices=ROBOT_NAMES, metavar="NAME",
                        help=f"robot preset: {', '.join(ROBOT_NAMES)} (default: recognised from the robot "
                             "description, else from the topics)")
    source.add_argument("--config", metavar="YAML", help="ROS 2 parameter file, e.g. config/xarm7_joint_torques.yaml")
    p.add_argument("--urdf", metavar="FILE", help="robot description (default: the bag's /robot_description, else "
                                                 "the preset's)")
    p.add_argument("--joint-states-topic", metavar="TOPIC",
                   help="sensor_msgs/JointState topic with the efforts (default: the joint-torque preset's)")
    p.add_argument("--set", metavar="NAME=VALUE", action="append", default=[], dest="overrides",
                   help="override a parameter (repeatable), e.g. --set cutoff_hz=8 or --set flange_frame=tool0")
    p.add_argument("--effort-scale", action="store_true",
                   help="also fit each joint's effort scale (a current-to-torque constant that is off); needs "
                        "a rich motion")
    p.add_argument("--known-payload-bag", metavar="BAG2",
                   help="a recording of the same arm holding a known payload (another motion): fitted with BAG, so the "
                        "known mass fixes the effort scales (--effort-scale) that an unloaded arm cannot tell")
    p.add_argument("--known-payload", metavar="SPEC", default="truth",
                   help="the payload of --known-payload-bag: MASS@X,Y,Z (kg, a point mass at X,Y,Z m in the flange "
                        "frame), or truth (default: the payload BAG2 records as ground truth, a simulated bag)")
    p.add_argument("--load-friction", action="store_true",
                   help="also fit each joint's Coulomb friction growing with its load, as in gearboxes (Hamon, "
                        "Gautier and Garrec, 'Dynamic identification of robots with a dry friction model depending "
                        "on load and velocity'): mu N·m per N·m of the torque the joint transmits; with "
                        "--known-payload-bag the payload's load helps tell it")
    p.add_argument("--consistent", action="store_true",
                   help="fit over physically consistent bodies only (an arm model for a simulator; slower, and the "
                        "payload estimate does not need it)")
    p.add_argument("--validate", metavar="BAG2",
                   help="another recording of the unloaded arm (another motion): residuals on it, held out")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of tables")
    return p


# ------------------------------------------------------------------- settings


def _settings(args: argparse.Namespace, urdf: str | None, bag: Path) -> tuple[Settings, str]:
    """(settings for the joint-torque path, where they came from)."""
    import yaml

    from payload_estimator.commands.bag_topics import find_inputs
    from payload_estimator.commands.replay import detect_robot, robot_from_joint_names, robot_from_topics
    from payload_estimator.io.bag import BagError, bag_info
    from payload_estimator.settings import (
        PRESET_VARIANTS,
        Settings,
        WrenchSource,
        load_parameters_yaml,
        settings_for_robot,
    )

    if args.config:
        try:
            base, origin = load_parameters_yaml(args.config), f"config {args.config}"
        except (ValueError, TypeError, OSError, yaml.YAMLError) as exc:
            raise config_error(args.config, exc) from None
    else:
        robot = args.robot or detect_robot(urdf)
        how = "given by --robot" if args.robot else "from the robot description"
        if robot is None and urdf is None:
            try:
                topics = bag_info(bag).topics
            except BagError as exc:
                raise CommandError(one_line(exc)) from None
            robot = robot_from_topics(bag, topics, wrench=False)
            how = "from the topics recorded"
            if robot is None:
                robot, how = robot_from_joint_names(bag, topics), "from the joint names recorded"
            if robot is None:
                raise CommandError(f"{bag}: no robot description, and neither a preset's joint-state topic nor "
                                   "its joint names recorded: name the robot with --robot, or give its URDF with "
                                   "--urdf FILE")
        elif robot is None:
            robot, how = "", "an arm known from its robot description"
        base = settings_for_robot(robot, PRESET_VARIANTS[1])
        origin = f"{robot} joint-torque preset ({how})" if robot else f"no preset ({how})"
    overrides = dict(parse_override(text) for text in args.overrides)
    for name, value in overrides.items():  # one at a time, so an error names the setting
        try:
            Settings.from_dict({name: value})
        except (ValueError, TypeError) as exc:
            raise CommandError(one_line(exc) if name in str(exc) else f"{name}={value!r}: {one_line(exc)}") from None
    # the calibration is made here: no file to load, and the efforts are the wrench source
    overrides.update(wrench_source=WrenchSource.JOINT_TORQUES, arm_calibration="")
    if args.joint_states_topic:
        overrides["joint_states_topic"] = args.joint_states_topic
    try:
        settings = Settings.from_dict({**base.to_dict(), **overrides})
        if not args.config:  # the configured joint states not recorded: the bag's, by their type
            found, _ = find_inputs(bag, bag_info(bag).topics, settings, set(overrides), urdf)
            if found:
                settings = Settings.from_dict({**base.to_dict(), **overrides, **found})
                origin += f", joint states found by their type on {settings.joint_states_topic}"
        return settings, origin
    except BagError as exc:
        raise CommandError(one_line(exc)) from None
    except (ValueError, TypeError) as exc:
        raise CommandError(one_line(exc)) from None


# ------------------------------------------------------------------- motion


FIT_RATE_HZ = 100.0
"""Hz: the rate the calibration keeps of the filtered joint states (``joint_recording``'s ``fit_rate_hz``)."""


@dataclass(frozen=True, eq=False)
class Coverage:
    """How a recording moved each joint (:func:`motion_coverage`).

    Attributes:
        speed_min, speed_max: (n,) the most negative and the most positive joint speed, rad/s.
        q_min, q_max: (n,) the positions' range, rad.
        samples: usable samples. duration_s: usable motion, s.
    """

    speed_min: np.ndarray
    speed_max: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray
    samples: int
    duration_s: float
    reversals: np.ndarray | None = None

    @property
    def identifiable(self) -> np.ndarray:
        """(n,) whether each joint moved enough to separate its friction from its inertia.

        Both ways at :data:`MOVING_SPEED`, over :data:`MIN_RANGE_RAD` at least, reversing at speed
        :data:`MIN_REVERSALS` times or more: friction (odd in the speed, a step at each reversal) and inertia
        (the acceleration's sign, which turns between reversals) are then different columns."""
        turns = self.reversals if self.reversals is not None else np.full(len(self.q_min), MIN_REVERSALS)
        return self.moved & (self.q_max - self.q_min >= MIN_RANGE_RAD) & (turns >= MIN_REVERSALS)

    @property
    def moved(self) -> np.ndarray:
        """(n,) whether each joint reached :data:`MOVING_SPEED` both ways (its friction can be identified)."""
        return (self.speed_max >= MOVING_SPEED) & (self.speed_min <= -MOVING_SPEED)


def motion_coverage(rec: JointRecording, fit_rate_hz: float = FIT_RATE_HZ) -> Coverage:
    """The speed and position range per joint of a :class:`JointRecording` kept at ``fit_rate_hz``."""
    if len(rec) == 0:
        z = np.zeros(rec.q.shape[1])
        return Coverage(z, z, z, z, 0, 0.0)
    return Coverage(rec.dq.min(axis=0), rec.dq.max(axis=0), rec.q.min(axis=0), rec.q.max(axis=0), len(rec),
                    len(rec) / fit_rate_hz, speed_reversals(rec.dq))


def speed_reversals(dq: np.ndarray, speed: float = MOVING_SPEED) -> np.ndarray:
    """(n,) how many times each joint's speed ``dq`` (N, n) turned from above ``speed`` one way to the other."""
    out = np.zeros(dq.shape[1], dtype=int)
    for j in range(dq.shape[1]):
        signs = np.sign(dq[np.abs(dq[:, j]) >= speed, j])
        out[j] = int(np.count_nonzero(np.diff(signs) != 0)) if signs.size else 0
    return out


def motion_refusal(joints: Sequence[str], coverage: Coverage) -> str | None:
    """One line naming the joints that did not move enough to be calibrated (:attr:`Coverage.identifiable`), or None."""
    bad = [j for j, ok in enumerate(coverage.identifiable) if not ok]
    if not bad:
        return None
    turns = coverage.reversals if coverage.reversals is not None else np.zeros(len(joints), dtype=int)
    parts = [f"{joints[j]} (range {coverage.q_max[j] - coverage.q_min[j]:.2f} rad, speed {coverage.speed_min[j]:+.2f}"
             f"/{coverage.speed_max[j]:+.2f} rad/s, {turns[j]} reversals)" for j in bad]
    return (f"{len(bad)} of {len(joints)} joints moved too little to tell their friction from their inertia: "
            f"{', '.join(parts)}; each joint needs {MIN_RANGE_RAD:g} rad of range and {MIN_REVERSALS} reversals at "
            f"{MOVING_SPEED:g} rad/s or more both ways (excite --for calibration designs such a motion)")


def _recording(bag: Path, settings: Settings, joint_names: tuple[str, ...],
               option: str, scale_calibrated: bool = False) -> tuple[JointRecording, Coverage, list[str]]:
    """(JointRecording, its coverage, notes) of one bag; CommandError for a bag that cannot give one.

    The efforts in N·m (:func:`~payload_estimator.pipeline.joint_torques.torques_from_efforts`)."""
    from payload_estimator.io.bag import BagError, read_joint_states
    from payload_estimator.pipeline.arm_dynamics import joint_recording
    from payload_estimator.pipeline.joint_torques import torques_from_efforts

    if not bag.exists():
        raise CommandError(f"{option}{bag}: no such bag")
    try:
        arrays = read_joint_states(bag, settings.joint_states_topic, joint_names)
    except BagError as exc:
        raise CommandError(option + one_line(exc)) from None
    try:
        effort = torques_from_efforts(arrays.effort, settings.effort_unit, settings.torque_constants,
                                      scale_calibrated=scale_calibrated)
    except ValueError as exc:
        raise CommandError(one_line(exc)) from None
    rec = joint_recording(arrays.t, arrays.q, effort, rate_hz=settings.grid_rate_hz,
                          cutoff_hz=settings.cutoff_hz, order=settings.filter_order, fit_rate_hz=FIT_RATE_HZ)
    coverage = motion_coverage(rec)
    span = float(arrays.t[-1] - arrays.t[0]) if len(arrays.t) else 0.0
    if coverage.duration_s < MIN_MOTION_S:
        raise CommandError(f"{option}{bag}: too little motion: {coverage.duration_s:.1f} s of usable joint states "
                           f"({len(arrays.t)} messages over {span:.1f} s on {settings.joint_states_topic}); a "
                           f"calibration needs at least {MIN_MOTION_S:g} s, better 15 s or more, of the arm moving")
    fastest = np.maximum(np.abs(coverage.speed_min), np.abs(coverage.speed_max))
    if not np.any(fastest >= MOVING_SPEED):
        raise CommandError(f"{option}{bag}: too little motion: no joint moved faster than {MOVING_SPEED:g} rad/s "
                           f"(fastest {fastest.max():.3f} rad/s); record the unloaded arm moving every joint")
    return rec, coverage, list(arrays.notes)


def known_payload(spec: str, bag: Path, kinematics: Any) -> Any:
    """The known payload of ``--known-payload`` in the kinematics' sensor frame (the flange), as InertialParameters.

    ``MASS@X,Y,Z``: a point mass; ``truth``: the payload ``bag`` records as ground truth."""
    from payload_estimator.core.inertia import InertialParameters
    from payload_estimator.io.bag import BagError, bag_ground_truth

    if spec.strip() == "truth":
        try:
            truth = bag_ground_truth(bag)
        except BagError as exc:
            raise CommandError(f"--known-payload-bag {one_line(exc)}") from None
        if truth is None:
            raise CommandError(f"--known-payload truth: {bag} records no payload's ground truth; give the payload "
                               "as --known-payload MASS@X,Y,Z (kg, m in the flange frame)")
        sensor = kinematics.sensor_frame
        if truth.frame_id in ("", sensor):
            return truth.params
        try:
            R, p = kinematics.rigid_pose(truth.frame_id, sensor)
        except ValueError:
            raise CommandError(f"--known-payload truth: the truth's frame {truth.frame_id!r} is not rigidly attached "
                               f"to {sensor} in the robot description") from None
        return truth.params.transformed(R, p)
    try:
        mass_text, _, xyz = spec.partition("@")
        mass = float(mass_text)
        com = np.array([float(v) for v in xyz.split(",")], dtype=float)
        if com.shape != (3,) or not (np.isfinite(mass) and mass > 0.0 and np.all(np.isfinite(com))):
            raise ValueError
    except ValueError:
        raise CommandError(f"--known-payload must be MASS@X,Y,Z (kg > 0, m) or truth, got {spec!r}") from None
    return InertialParameters.point_mass(mass, com)


def _fastest(coverage: Coverage) -> np.ndarray:
    return np.maximum(np.abs(coverage.speed_min), np.abs(coverage.speed_max))


EXTRAPOLATION = 2.0
"""The fitted friction is checked up to this multiple of the fastest speed each joint was calibrated at."""


def friction_warnings(dynamics: ArmDynamics, coverage: Coverage) -> list[str]:
    """Return one line per moving joint whose calibrated friction does not oppose the motion at some speed.

    The friction less its offset, at speeds up to :data:`EXTRAPOLATION` times the fastest the joint
    was calibrated at: a fit that does not separate friction from the rest, or will not hold for
    faster motions."""
    out = []
    n = len(dynamics.kinematics.joint_names)
    offset = dynamics.friction(np.zeros((1, n)))[0]
    for j, (name, moved, fastest) in enumerate(zip(dynamics.kinematics.joint_names, coverage.moved,
                                                   _fastest(coverage))):
        if not moved:
            continue
        v = np.linspace(0.0, EXTRAPOLATION * fastest, 41)[1:]
        dq = np.zeros((2 * len(v), n))
        dq[:, j] = np.concatenate([v, -v])
        f = dynamics.friction(dq)[:, j] - offset[j]
        bad = np.flatnonzero(np.sign(dq[:, j]) * f < 0.0)
        if bad.size:
            at = abs(dq[bad, j]).min()
            where = ("within the speeds calibrated" if at <= fastest
                     else f"beyond the {fastest:.2f} rad/s calibrated")
            out.append(f"{name}: the friction found drives the joint instead of braking it at {at:.2f} rad/s "
                       f"({where}): the motion did not separate friction from the rest; calibrate with that joint "
                       "moving faster and at several speeds")
    return out


# ---------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    """Calibrate the arm from the bag, write the calibration, print what it found; warnings on stderr."""
    from payload_estimator.pipeline.arm_dynamics import ArmDynamics, calibrate_arm
    from payload_estimator.pipeline.effort_check import check_efforts, joint_ratios

    bag = Path(args.bag)
    if not bag.exists():
        raise CommandError(f"{bag}: no such bag")
    out = check_out_file(args.out)
    for option, other in (("--validate", args.validate), ("--known-payload-bag", args.known_payload_bag)):
        if other:  # the other bags checked before the fit, not after it
            from payload_estimator.io.bag import BagError, bag_info

            try:
                bag_info(Path(other))
            except BagError as exc:
                raise CommandError(f"{option} {one_line(exc)}") from None
    settings, origin, kinematics = _arm(args, bag)
    joints = kinematics.joint_names
    rec, coverage, notes = _recording(bag, settings, joints, "", args.effort_scale)
    warnings = list(notes)
    # currents without torque constants (the UR presets): their scales are what --effort-scale finds
    checked = check_efforts(ArmDynamics(kinematics), rec,
                            currents=settings.effort_unit == "current" and not settings.torque_constants)
    if checked.refusal and (not args.effort_scale or checked.flipped):
        raise CommandError(f"{bag}: {checked.refusal}")
    if checked.refusal:
        warnings.append(checked.refusal + " (the effort scales are fitted: --effort-scale)")
    held_out = held_coverage = None
    if args.validate:
        held_out, held_coverage, notes = _recording(Path(args.validate), settings, joints, "--validate ",
                                                    args.effort_scale)
        warnings += [f"--validate: {n}" for n in notes]
    refusal = motion_refusal(joints, coverage)
    if refusal:
        raise CommandError(f"{bag}: {refusal}")
    warnings += _recording_warnings(args, bag, joints, coverage)
    info = {"source": str(bag), "joint_states_topic": settings.joint_states_topic, "settings": origin,
            "duration_s": round(coverage.duration_s, 3), "effort_unit": settings.effort_unit,
            "torque_constants": [float(v) for v in settings.torque_constants]}
    if args.validate:
        info["validation"] = str(args.validate)
    loaded = loaded_torques = None
    if args.known_payload_bag:
        loaded_bag = Path(args.known_payload_bag)
        loaded, _, notes = _recording(loaded_bag, settings, joints, "--known-payload-bag ", args.effort_scale)
        warnings += [f"--known-payload-bag: {n}" for n in notes]
        payload = known_payload(args.known_payload, loaded_bag, kinematics)
        from payload_estimator.pipeline.joint_torques import payload_torques

        loaded_torques = payload_torques(kinematics, loaded.q, loaded.dq, loaded.ddq, payload.phi)
        info.update(known_payload_bag=str(loaded_bag), known_payload_mass=round(float(payload.mass), 6),
                    known_payload_com=[round(float(v), 6) for v in payload.com])
    try:
        calibration, fit = calibrate_arm(kinematics, rec, robot=settings.robot, effort_scale=args.effort_scale,
                                         held_out=held_out, info=info, consistent=args.consistent, loaded=loaded,
                                         loaded_torques=loaded_torques, load_friction=args.load_friction)
    except ValueError as exc:  # a fit that cannot be made of this recording (degenerate, diverged)
        raise CommandError(f"{bag}: the calibration failed: {one_line(exc)}") from None
    if checked.noted:  # the joints whose description is off: their ratios against the calibrated model
        after = joint_ratios(ArmDynamics(kinematics, calibration), held_out if held_out is not None else rec)
        warnings.append(checked.warning(after, " on --validate" if held_out is not None else "") or "")
    warnings += friction_warnings(ArmDynamics(kinematics, calibration), coverage)
    warnings += calibration.caveats()
    warnings += _validation_warnings(joints, coverage, held_coverage, fit)
    try:
        calibration.save(out)
    except OSError as exc:
        raise CommandError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    if args.json:
        json.dump(_summary(bag, out, settings, origin, calibration, fit, coverage, held_coverage, warnings),
                  sys.stdout)
        sys.stdout.write("\n")
    else:
        _print(bag, out, settings, origin, calibration, fit, coverage, args.validate)
    sys.stdout.flush()
    for line in warnings:
        print(f"payload-estimator calibrate: warning: {line}", file=sys.stderr)
    return 0


def _arm(args: argparse.Namespace, bag: Path) -> tuple[Settings, str, Any]:
    """(settings, where they came from, the arm's kinematics) from the options and the bag's description."""
    from payload_estimator.io.bag import BagError, bag_robot_description
    from payload_estimator.pipeline.build import builtin_description, sensor_kinematics

    given_urdf = None
    if args.urdf:
        given_urdf = read_urdf(args.urdf)
    try:
        recorded_urdf = bag_robot_description(bag) if given_urdf is None else None
    except BagError as exc:
        raise CommandError(one_line(exc)) from None
    settings, origin = _settings(args, given_urdf or recorded_urdf, bag)
    description = given_urdf or (recorded_urdf if not settings.use_builtin_description else None)
    if description is None and not settings.robot:
        raise CommandError(f"{bag} has no /robot_description and the settings name no built-in robot: give the "
                           "arm's URDF with --urdf FILE")
    try:
        urdf = description if description is not None else builtin_description(settings)
        return settings, origin, sensor_kinematics(settings, urdf)
    except ValueError as exc:
        raise CommandError(f"cannot build the arm's model: {one_line(exc)}") from None


def _recording_warnings(args: argparse.Namespace, bag: Path, joints: Sequence[str], coverage: Coverage) -> list[str]:
    """Joints that hardly moved, and recordings that hold a payload."""
    from payload_estimator.io.bag import BagError, bag_ground_truth

    warnings = []
    for path, option in ((bag, ""), (Path(args.validate or ""), "--validate ")):
        try:
            truth = bag_ground_truth(path) if str(path) not in ("", ".") else None
        except BagError:
            truth = None
        if truth is not None and truth.params.mass > 0.0:
            warnings.append(f"{option}{path} records a payload of {truth.params.mass:.3f} kg: a calibration needs "
                            "the arm unloaded (a payload becomes part of the arm, or spoils the held-out figures)")
    return warnings


def _validation_warnings(joints: Sequence[str], coverage: Coverage, held_coverage: Coverage | None,
                         fit: CalibrationFit) -> list[str]:
    """Speeds the validation motion reaches beyond the calibration's, joints the calibration made worse."""
    warnings = []
    if held_coverage is not None:
        for name, seen, used in zip(joints, _fastest(coverage), _fastest(held_coverage)):
            if used > 1.1 * seen:
                warnings.append(f"--validate moves {name} at up to {used:.2f} rad/s, the calibration saw {seen:.2f} "
                                "rad/s: its friction there is extrapolated")
    if fit.rms_calibrated_held_out is not None and fit.rms_description_held_out is not None:
        worse = [j for j, a, b in zip(joints, fit.rms_calibrated_held_out, fit.rms_description_held_out) if a > b]
        if worse:
            warnings.append(f"on --validate the calibration does worse than the description on {', '.join(worse)}: "
                            "the calibration motion did not cover what the validation motion does")
    return warnings


def _summary(bag: Path, out: Path, settings: Settings, origin: str, cal: ArmCalibration, fit: CalibrationFit,
             coverage: Coverage, held_coverage: Coverage | None, warnings: list[str]) -> dict[str, Any]:
    return {
        "bag": str(bag), "out": str(out), "robot": settings.robot, "settings": origin,
        "joint_states_topic": settings.joint_states_topic,
        **calibration_summary(cal, fit, coverage, held_coverage),
        "warnings": warnings,
    }


def calibration_summary(cal: ArmCalibration, fit: CalibrationFit, coverage: Coverage,
                        held_coverage: Coverage | None = None) -> dict[str, Any]:
    """The JSON of a calibration: samples, per-joint figures (:func:`calibration_table`'s) and the bodies."""
    coulomb = coulomb_level(cal)
    joints = []
    for i, name in enumerate(cal.joint_names):
        row: dict[str, Any] = {
            "name": name,
            "speed_range": [float(coverage.speed_min[i]), float(coverage.speed_max[i])],
            "position_range": [float(coverage.q_min[i]), float(coverage.q_max[i])],
            "friction_identified": bool(coverage.identifiable[i]),
            "speed_reversals": None if coverage.reversals is None else int(coverage.reversals[i]),
            "rms_description": float(fit.rms_description[i]),
            "rms_calibrated": float(fit.rms_calibrated[i]),
            "viscous": float(cal.viscous[i]), "coulomb": float(coulomb[i]), "offset": float(cal.offset[i]),
            "effort_scale": float(cal.effort_scale[i]), "residual_std": float(cal.residual_std[i]),
            "load_friction": float(np.sum(cal.load_friction[i])),
        }
        if "effort_scale_std" in cal.info:
            row["effort_scale_std"] = float(cal.info["effort_scale_std"][i])
        if fit.rms_description_held_out is not None and fit.rms_calibrated_held_out is not None:
            row["rms_description_held_out"] = float(fit.rms_description_held_out[i])
            row["rms_calibrated_held_out"] = float(fit.rms_calibrated_held_out[i])
        joints.append(row)
    return {
        "samples": fit.samples, "duration_s": coverage.duration_s, "held_out_samples": fit.held_out_samples,
        "held_out_duration_s": None if held_coverage is None else held_coverage.duration_s,
        "effort_scale_calibrated": bool(cal.info.get("effort_scale_calibrated", False)),
        "joints": joints,
        "bodies": [{"joint": j, "consistent": bool(ok)} for j, ok in zip(cal.body_joints, cal.consistent)],
    }


def coulomb_level(cal: ArmCalibration) -> np.ndarray:
    """Return (n,) each joint's Coulomb friction once sliding, N·m.

    The sum of its Coulomb terms (one or several smoothed steps)."""
    return np.asarray(cal.coulomb, dtype=float).reshape(len(cal.joint_names), -1).sum(axis=1)


def calibration_table(cal: ArmCalibration, fit: CalibrationFit, coverage: Coverage) -> Any:
    """Return a rich table of a calibration, one row per joint.

    Speed range, effort residual RMS with the description alone and calibrated (and held out), the
    friction found, whether the joint's body is physically consistent."""
    from rich.table import Table

    held = fit.rms_calibrated_held_out is not None
    scale = bool(cal.info.get("effort_scale_calibrated", False))
    load = bool(np.any(cal.load_friction != 0.0))
    held_note = ", also on --validate (held)" if held else ""
    table = Table(title="per joint: speed range (rad/s, ! if too slow for friction); effort residual RMS (N·m) with "
                  f"the description alone (descr) and calibrated (calib){held_note}"
                  "; friction found: viscous (N·m·s/rad), Coulomb, offset (N·m)"
                  + (", load-dependent Coulomb at speed (N·m per N·m of load)" if load else "")
                  + "; body physically consistent",
                  title_justify="left")
    columns = ["joint", "speed", "descr", "calib"] + (["held descr", "held calib"] if held else [])
    columns += ["viscous", "Coulomb", "offset"] + (["load mu"] if load else []) + (["scale"] if scale else [])
    columns += ["body ok"]
    for title in columns:
        table.add_column(title, justify="left" if title in ("joint", "body ok") else "right", no_wrap=True)
    consistent = dict(zip(cal.body_joints, cal.consistent))
    coulomb = coulomb_level(cal)
    for i, name in enumerate(cal.joint_names):
        lo, hi = coverage.speed_min[i], coverage.speed_max[i]
        speed = f"±{hi:.2f}" if abs(hi + lo) < 0.01 else f"{lo:+.2f}/{hi:+.2f}"
        row = [name, speed + ("" if coverage.moved[i] else " !"), f"{fit.rms_description[i]:.3f}",
               f"{fit.rms_calibrated[i]:.3f}"]
        if held and fit.rms_description_held_out is not None and fit.rms_calibrated_held_out is not None:
            row += [f"{fit.rms_description_held_out[i]:.3f}", f"{fit.rms_calibrated_held_out[i]:.3f}"]
        row += [f"{cal.viscous[i]:.2f}", f"{coulomb[i]:.2f}", f"{cal.offset[i]:+.2f}"]
        if load:
            row.append(f"{np.sum(cal.load_friction[i]):.3f}")
        if scale:
            row.append(f"{cal.effort_scale[i]:.3f}")
        body = consistent.get(name)
        row.append("" if body is None else ("yes" if body else "no"))
        table.add_row(*row)
    return table


def consistency_line(cal: ArmCalibration) -> str:
    """One line: how many of the fitted bodies are physically consistent, and what the others mean."""
    ok = [j for j, c in zip(cal.body_joints, cal.consistent) if c]
    line = f"bodies physically consistent: {len(ok)} of {len(cal.body_joints)}"
    if len(ok) < len(cal.body_joints):
        line += ((f" ({', '.join(ok)})" if ok else "") + "; the others' parameters are the combinations the motion "
                 "excites, not a real body: harmless for the joint torques, meaningless one by one")
    return line


def _print(bag: Path, out: Path, settings: Settings, origin: str, cal: ArmCalibration, fit: CalibrationFit,
           coverage: Coverage, validate: str | None) -> None:
    from payload_estimator.commands.common import make_console

    console = make_console(min_width=120)  # eleven columns: a narrow terminal wraps lines, not cells
    console.print(f"{bag}: {fit.samples} samples ({coverage.duration_s:.1f} s of motion) on "
                  f"{settings.joint_states_topic}; settings: {origin}", markup=False, highlight=False, soft_wrap=True)
    console.print(calibration_table(cal, fit, coverage))
    console.print(consistency_line(cal), markup=False, highlight=False, soft_wrap=True)
    if validate:
        console.print(f"held out: {validate}, {fit.held_out_samples} samples", markup=False, highlight=False,
                      soft_wrap=True)
    console.print(f"wrote {out}; use it with --set wrench_source=joint_torques --set arm_calibration={out} "
                  "(replay) or the node's arm_calibration parameter", markup=False, highlight=False, soft_wrap=True)
