"""``payload-estimator excite``: design a safe, short, information-rich identification motion.

From a start configuration (default: the robot's home pose) and the robot's limits, designs a
joint trajectory that starts and ends at rest at the start, keeps every joint inside its
position, speed, acceleration and jerk limits, the TCP and the payload's farthest point below
``--max-tcp-speed`` (the tip of a ``--tool-length`` tool, 0.15 m by default, or the outermost
corner of ``--shape`` or point of ``--points``) and the payload clear of the floor and the robot's
base, and maximises the information the wrench gives about the payload's ten inertial parameters
(and the F/T offsets). Every constraint is checked on the sampled result. The same ``--seed``
gives the same motion.

It prints the duration, the peak joint speed, acceleration and jerk as fractions of the limits,
the peak speed and the point that reached it, the clearances, the scaled condition number of the information matrix and
the predicted standard deviations of mass, COM and inertia for a nominal payload (1 kg, a 10 cm
cube 5 cm out; and with ``--payload`` for that one), beside Nadeau et al.'s wrist sinusoids of the
same duration where they are admissible. ``--out FILE.csv`` writes the motion (header
``t,<joint names>``, positions in rad, uniform step ``--dt``) for ``demo --trajectory FILE`` or
your own controller. Any arm: ``--urdf FILE --tcp-frame FRAME`` (with ``--start``; accelerations
and jerks then get conservative defaults).

``--for joint-torques`` designs for a robot without an F/T sensor (the node's ``wrench_source:
joint_torques``): every joint moves in a slow sinusoid of its own frequency (0.4 to 2.3 rad/s, as
Lambert's all-joint sinusoids once scaled to the TCP speed limit), the payload's information as
the joint torques see it (through the Jacobian's transpose, each joint weighted by its effort noise
and the uncertainty of its friction: ``--arm-calibration FILE``, the calibration's residual and
friction, else the robot's effort table) picking which joint gets which frequency. A motion
optimised for that information alone brings out the calibrated arm model's own errors.

``--shake 0.5`` (or ``1``) designs a short shake instead: the same kind of motion, half a second
(or one second) long, within the same limits, at rest at both ends; for an F/T sensor or, with
``--for joint-torques``, for the joint torques. The documentation (designed-motion page) shows what it gives.

``--for calibration`` designs the motion for calibrating the unloaded arm instead (``payload-estimator
calibrate``, the node's ``~/calibrate``): longer (30 s by default), every joint through both
directions and a wide range of speeds, poses spread, maximising what the calibration learns about
the arm's inertial parameters and joint friction beyond the robot description, under the same
limits. It prints the peaks, each joint's speed range and the predicted std of its viscous and
Coulomb friction (for ``--effort-std`` of effort noise), beside Lambert's all-joint sinusoids of
the same duration. Run it on the arm without payload and record the joint states.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import (
    at_most,
    check_out_file,
    file_error,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    read_urdf,
    sim_duration,
)

__all__ = ["add_parser", "run", "PURPOSES"]

PURPOSES = ("payload", "joint-torques", "calibration")
"""What ``--for`` designs a motion for: the payload's parameters with an F/T sensor or through the joint torques,
or a calibration of the unloaded arm."""
SHAKES = ("0.5", "1")
"""The lengths of ``--shake``, s."""

MAX_DT_S = 0.01
"""Largest time step of a written trajectory, s."""
MIN_DT_S = 1e-4
"""Smallest time step of a written trajectory, s (10 kHz: finer than any controller takes)."""


def _dt(text: str) -> float:
    value = positive_float(text)
    if value > MAX_DT_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_DT_S} s, got {text!r}")
    if value < MIN_DT_S:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_DT_S:g} s, got {text!r}")
    return value


MAX_LENGTH_M = 10.0
"""The largest distance about the robot an option takes, m (no arm reaches that far)."""
MIN_PAYLOAD_KG, MAX_PAYLOAD_KG = 0.001, 1000.0
"""The lightest and the heaviest ``--payload``, kg."""


def _length(text: str) -> float:
    """A distance about the robot, m: finite, within :data:`MAX_LENGTH_M` either way."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not abs(value) <= MAX_LENGTH_M:  # NaN and inf too
        raise argparse.ArgumentTypeError(f"must be within {MAX_LENGTH_M:g} m, got {text!r}")
    return value


_clearance = at_most(nonnegative_float, MAX_LENGTH_M, " m")
"""A distance kept, m: zero or positive, at most :data:`MAX_LENGTH_M`."""


def _start(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated joint positions in rad, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected comma-separated joint positions in rad")
    return values


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``excite`` command and its options to ``sub``; return its parser."""
    from payload_estimator.excitation.calibration import CALIBRATION_DURATION_S, DESIGN_EFFORT_STD
    from payload_estimator.excitation.limits import DEFAULT_TOOL_LENGTH as TOOL_LENGTH_M
    from payload_estimator.excitation.limits import MotionLimits  # no pinocchio: --help works core-only
    from payload_estimator.robots import ROBOT_NAMES

    d = MotionLimits()
    p = sub.add_parser(
        "excite",
        help="design an identification motion for a robot (limits checked; CSV out)",
        description=__doc__,
    )
    p.add_argument("--for", dest="purpose", choices=PURPOSES, default="payload",
                   help="payload: a short motion for the payload's parameters, seen by an F/T sensor (default); "
                        "joint-torques: the same, seen through the joint torques (no F/T sensor); calibration: a "
                        "long one for calibrating the unloaded arm (inertial parameters, joint friction)")
    p.add_argument("--shake", choices=SHAKES, metavar="SECONDS",
                   help=f"a short shake of {' or '.join(SHAKES)} s instead of a motion of --duration "
                        "(--for payload or joint-torques)")
    p.add_argument("--arm-calibration", metavar="FILE",
                   help="--for joint-torques: the arm's calibration (payload-estimator calibrate): its residual "
                        "and friction weigh the joints (default: the robot's effort noise and friction)")
    p.add_argument("--robot", choices=ROBOT_NAMES, default="panda", help="a built-in robot (default panda)")
    p.add_argument("--urdf", metavar="FILE", help="any arm's URDF instead of a built-in robot (needs --tcp-frame "
                                                  "and --start)")
    p.add_argument("--tcp-frame", metavar="FRAME", help="with --urdf: the flange or sensor frame")
    p.add_argument("--start", type=_start, metavar="Q1,Q2,...",
                   help="start (and end) joint positions, rad, in the robot's joint order (default: home)")
    p.add_argument("--duration", type=sim_duration, default=None,
                   help=f"s (default {d.duration:g}; --for calibration: {CALIBRATION_DURATION_S:g})")
    p.add_argument("--max-tcp-speed", type=positive_float, default=d.max_tcp_speed,
                   help=f"m/s (default {d.max_tcp_speed:g}, ISO/TS 15066 cobot practice)")
    p.add_argument("--max-excursion", type=positive_float, default=d.max_excursion,
                   help=f"largest move of any joint from the start, rad (default {d.max_excursion:g})")
    p.add_argument("--floor-height", type=_length, default=d.floor_height,
                   help=f"the payload stays above this height of the base frame, m (default {d.floor_height:g})")
    p.add_argument("--base-clearance", type=_clearance, default=d.base_clearance,
                   help=f"distance kept from the base's vertical axis, m (default {d.base_clearance:g})")
    p.add_argument("--payload-radius", type=_clearance, default=d.payload_radius,
                   help=f"the payload lies within this distance of the TCP, m (default {d.payload_radius:g})")
    reach = p.add_mutually_exclusive_group()
    reach.add_argument("--tool-length", type=_clearance, metavar="M",
                       help="the tool and payload reach this far beyond the TCP along its z axis, m: "
                            f"--max-tcp-speed holds at that point too (default {TOOL_LENGTH_M:g}; 0: the TCP alone)")
    reach.add_argument("--shape", metavar="SPEC",
                       help="instead, the payload's shape in the TCP frame (as estimate --shape, m and rad): "
                            "--max-tcp-speed holds at the corners of the box about each solid")
    reach.add_argument("--points", metavar="FILE",
                       help="instead, the payload's points in the TCP frame (as estimate --points): "
                            "--max-tcp-speed holds at the outermost ones")
    p.add_argument("--payload", metavar="SPEC",
                   help="also predict for this payload: a catalogue name (e.g. claw_hammer, drill) or "
                        "MASS@X,Y,Z (kg; COM in the TCP frame, m)")
    p.add_argument("--no-bias", action="store_true", help="design for known F/T offsets (not estimated)")
    p.add_argument("--effort-std", type=positive_float, default=DESIGN_EFFORT_STD,
                   help=f"--for calibration: joint effort noise the design and its prediction assume, N·m "
                        f"(default {DESIGN_EFFORT_STD:g})")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the design (default 0)")
    p.add_argument("--dt", type=_dt, default=0.005, help=f"time step of --out, s, at most {MAX_DT_S} (default 0.005)")
    p.add_argument("--out", metavar="FILE.csv", help="write the motion as a CSV (t,<joint names>)")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of a table")
    return p


def _payload(spec: str) -> tuple[str, Any]:
    """(label, InertialParameters about the TCP) from a catalogue name or ``MASS@X,Y,Z``."""
    import numpy as np

    from payload_estimator.core.inertia import InertialParameters

    if "@" in spec:
        mass_text, _, com_text = spec.partition("@")
        try:
            mass = float(mass_text)
            com = np.array([float(v) for v in com_text.split(",")])
        except ValueError:
            raise CommandError(f"--payload {spec!r}: expected MASS@X,Y,Z (kg, m)") from None
        if (com.shape != (3,) or not np.all(np.abs(com) <= MAX_LENGTH_M)
                or not MIN_PAYLOAD_KG <= mass <= MAX_PAYLOAD_KG):
            raise CommandError(f"--payload {spec!r}: expected a mass of {MIN_PAYLOAD_KG:g} to {MAX_PAYLOAD_KG:g} kg "
                               f"and three COM coordinates within {MAX_LENGTH_M:g} m")
        side = 0.05  # a compact body: a uniform 5 cm cube
        return spec, InertialParameters.from_mass_com_inertia(mass, com, np.eye(3) * mass * side**2 / 6.0)
    from payload_estimator.sim.payloads import get_payload

    try:
        return spec, get_payload(spec).params
    except ValueError as exc:
        raise CommandError(f"--payload: {exc}") from None


def _arm(args: argparse.Namespace) -> tuple[str, Any, Any, Any]:
    """(name, kinematics, arm limits, start) from the options."""
    import numpy as np

    from payload_estimator.excitation.limits import ArmLimits, flange_kinematics
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.robots import get_robot

    if args.urdf:
        if not args.tcp_frame or args.start is None:
            raise CommandError("--urdf needs --tcp-frame and --start")
        text = read_urdf(args.urdf)
        try:
            kin = SensorKinematics(text, args.tcp_frame)
            arm = ArmLimits.from_kinematics(kin)
        except ValueError as exc:
            raise CommandError(f"--urdf {args.urdf}: {exc}") from None
        name = Path(args.urdf).stem
    else:
        spec = get_robot(args.robot)
        kin, arm, name = flange_kinematics(args.robot), ArmLimits.from_robot(spec), args.robot
    start = np.array(args.start if args.start is not None else get_robot(args.robot).q_home, dtype=float)
    if start.shape != (arm.n_joints,):
        raise CommandError(f"--start has {start.size} joint positions; {name} has {arm.n_joints} "
                           f"({', '.join(arm.joint_names)})")
    return name, kin, arm, start


def _limits(args: argparse.Namespace, default_duration: float, payload: bool = True) -> Any:
    """The motion's limits from the options (``payload``: at the payload's points too)."""
    from payload_estimator.excitation.limits import ExcitationError, MotionLimits

    points, label = _reach(args) if payload else ((), "the payload")
    try:
        return MotionLimits(duration=default_duration if args.duration is None else args.duration,
                            max_tcp_speed=args.max_tcp_speed, max_excursion=args.max_excursion,
                            floor_height=args.floor_height, base_clearance=args.base_clearance,
                            payload_radius=args.payload_radius, payload_points=points, payload_label=label)
    except ExcitationError as exc:
        raise CommandError(str(exc)) from None


def _reach(args: argparse.Namespace) -> tuple[Any, str]:
    """The payload's farthest points in the TCP frame (m), and what they are (``--shape``, ``--points``, a tool)."""
    from payload_estimator.core.shapes import POINTS_PREFIX, outermost_points
    from payload_estimator.errors import ShapeError
    from payload_estimator.excitation.limits import DEFAULT_TOOL_LENGTH

    if args.shape or args.points:
        option, spec = ("--shape", args.shape) if args.shape else ("--points", POINTS_PREFIX + args.points)
        try:
            return tuple(map(tuple, outermost_points(spec))), f"the payload ({option})"
        except ShapeError as exc:
            raise CommandError(f"{option}: {exc}") from None
    length = DEFAULT_TOOL_LENGTH if args.tool_length is None else args.tool_length
    return (((0.0, 0.0, length),) if length > 0 else ()), f"the tip of the tool (--tool-length {length:g} m)"


def _write_csv(out: Path, trajectory: Any, joint_names: tuple[str, ...], dt: float) -> None:
    """The motion's positions on a uniform grid of step ``dt`` (ending on a whole step)."""
    from payload_estimator.excitation.check import trajectory_grid
    from payload_estimator.excitation.trajectory import write_trajectory_csv

    t = trajectory_grid(trajectory.duration, 1.0 / dt)
    if len(t) > 1 and t[-1] - t[-2] < 0.5 * dt:  # keep the grid uniform: end on a whole step
        t = t[:-1]
    write_trajectory_csv(out, joint_names, t, trajectory(t)[0])


def _joint_torque_noise(args: argparse.Namespace, arm: Any) -> Any:
    """``--for joint-torques``: the noise per joint (``--arm-calibration``, the robot's effort table or a default)."""
    from payload_estimator.errors import CalibrationError
    from payload_estimator.excitation.information import JointTorqueNoise
    from payload_estimator.robots import get_robot

    if args.arm_calibration:
        from payload_estimator.pipeline.arm_model import ArmCalibration

        try:
            cal = ArmCalibration.load(args.arm_calibration)
            cal.check_matches("" if args.urdf else args.robot, arm.joint_names)
        except CalibrationError as exc:
            raise file_error("--arm-calibration", args.arm_calibration, exc) from None
        return JointTorqueNoise.from_calibration(cal)
    if args.urdf:
        return JointTorqueNoise.default(arm.n_joints)
    return JointTorqueNoise.for_robot(get_robot(args.robot))


def run(args: argparse.Namespace) -> int:
    """Run ``excite`` with the parsed ``args``; return the exit status."""
    if args.purpose == "calibration":
        return _run_calibration(args)
    from payload_estimator.excitation.check import fastest_point_text
    from payload_estimator.excitation.design import design_excitation, design_shake, predict_uncertainty
    from payload_estimator.excitation.limits import ExcitationError, MotionLimits
    from payload_estimator.outputs.report import excitation_table

    joint_torques = args.purpose == "joint-torques"
    if args.arm_calibration and not joint_torques:
        raise CommandError("--arm-calibration applies to --for joint-torques")
    if joint_torques and args.no_bias:
        raise CommandError("--no-bias applies to an F/T sensor: through the joint torques the calibration knows "
                           "the offsets")
    if args.shake and args.duration is not None:
        raise CommandError("--shake sets the duration: leave out --duration")
    out = check_out_file(args.out) if args.out else None
    payload = _payload(args.payload) if args.payload else None
    name, kin, arm, start = _arm(args)
    noise = _joint_torque_noise(args, arm) if joint_torques else None
    offsets = not args.no_bias and not joint_torques
    limits = _limits(args, MotionLimits().duration)
    try:
        if args.shake:
            design = design_shake(kin, arm, start, float(args.shake), limits, seed=args.seed, estimate_offsets=offsets,
                                  joint_torques=noise)
        else:
            design = design_excitation(kin, arm, start, limits, seed=args.seed, estimate_offsets=offsets,
                                       joint_torques=noise)
    except ExcitationError as exc:
        raise CommandError(str(exc)) from None
    summary: dict[str, Any] = {"robot": name, **design.summary(),
                               "fastest": fastest_point_text(design.check, args.tcp_frame if args.urdf else "flange")}
    if payload is not None:
        label, params = payload
        summary["predicted_payload"] = {"payload": label, **predict_uncertainty(
            design.trajectory, kin, params, estimate_offsets=offsets, joint_torques=noise).summary()}
    summary["wrist"] = _wrist(args, name, kin, arm, start, design.limits, payload, noise)
    return _emit(args, out, summary, design, excitation_table)


def _run_calibration(args: argparse.Namespace) -> int:
    """``--for calibration``: the motion for calibrating the unloaded arm (module docstring)."""
    from payload_estimator.excitation.calibration import CALIBRATION_DURATION_S, design_calibration_motion
    from payload_estimator.excitation.limits import ExcitationError

    for option, given in (("--payload", args.payload), ("--no-bias", args.no_bias), ("--shake", args.shake),
                          ("--arm-calibration", args.arm_calibration), ("--tool-length", args.tool_length is not None),
                          ("--shape", args.shape), ("--points", args.points)):
        if given:
            raise CommandError(f"{option} applies to --for payload: a calibration motion is for the unloaded arm")
    out = check_out_file(args.out) if args.out else None
    name, kin, arm, start = _arm(args)
    limits = _limits(args, CALIBRATION_DURATION_S, payload=False)
    try:
        motion = design_calibration_motion(kin, arm, start, limits, seed=args.seed, effort_std=args.effort_std)
    except ExcitationError as exc:
        raise CommandError(str(exc)) from None
    summary: dict[str, Any] = {"robot": name, **motion.summary()}
    summary["thesis"] = _thesis(args, name, kin, arm, start, limits)
    from payload_estimator.outputs.report import calibration_motion_table

    return _emit(args, out, summary, motion, calibration_motion_table)


def _emit(args: argparse.Namespace, out: Any, summary: dict[str, Any], motion: Any, table: Any) -> int:
    """Write the designed ``motion`` to ``out`` (CSV, when given), then print ``summary``; return 0.

    ``summary`` is printed as JSON or as ``table(summary)`` with the motion's violations."""
    if out is not None:
        _write_csv(out, motion.trajectory, motion.joint_names, args.dt)
        summary["csv"] = str(out)
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    from payload_estimator.commands.common import make_console

    console = make_console()
    console.print(table(summary))
    if "fastest" in summary:
        console.print(f"fastest: {summary['fastest']}", markup=False, highlight=False)
    for line in motion.check.violations:
        console.print(f"violation: {line}", markup=False)
    if out is not None:
        console.print(f"wrote {out}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _thesis(args: argparse.Namespace, name: str, kin: Any, arm: Any, start: Any, limits: Any) -> dict[str, Any] | None:
    """Return Lambert's all-joint sinusoids (seed 0) of the same duration from home, for comparison.

    Built-in robots at home only: that is where they are defined."""
    import numpy as np

    from payload_estimator.excitation.calibration import arm_information
    from payload_estimator.excitation.check import check_trajectory
    from payload_estimator.robots import get_robot

    if args.urdf or not np.allclose(start, get_robot(name).q_home):
        return None
    from payload_estimator.sim.trajectories import ThesisSinusoids

    try:
        thesis = ThesisSinusoids(get_robot(name), duration=limits.duration, ramp=min(1.0, 0.2 * limits.duration))
    except (RuntimeError, ValueError):
        return None
    check = check_trajectory(thesis, kin, arm, start, limits)
    return {"ok": check.ok, "violations": list(check.violations),
            "information": arm_information(thesis, kin, args.effort_std, arm=arm).summary()}


def _wrist(args: argparse.Namespace, name: str, kin: Any, arm: Any, start: Any, limits: Any,
              payload: tuple[str, Any] | None, joint_torques: Any = None) -> dict[str, Any] | None:
    """Return Nadeau et al.'s wrist sinusoids of the same duration from the same start, for comparison.

    Built-in robots at home only: that is where they are defined."""
    import numpy as np

    from payload_estimator.excitation.check import check_trajectory
    from payload_estimator.excitation.design import predict_uncertainty
    from payload_estimator.robots import get_robot

    if args.urdf or not np.allclose(start, get_robot(name).q_home) or limits.duration < 2.0:
        return None
    from payload_estimator.sim.trajectories import PaperWristSinusoids

    try:
        paper = PaperWristSinusoids(get_robot(name), duration=limits.duration)
    except (RuntimeError, ValueError):
        return None
    check = check_trajectory(paper, kin, arm, start, limits)
    offsets = not args.no_bias and joint_torques is None
    out: dict[str, Any] = {"ok": check.ok, "violations": list(check.violations),
                           "predicted_nominal": predict_uncertainty(paper, kin, estimate_offsets=offsets,
                                                                    joint_torques=joint_torques).summary()}
    if payload is not None:
        out["predicted_payload"] = predict_uncertainty(paper, kin, payload[1], estimate_offsets=offsets,
                                                       joint_torques=joint_torques).summary()
    return out
