"""Pieces the commands share: validated option types, trajectories, where outputs go, and the console.

Only the core is imported here at module level (a core-only install runs ``--help`` and
``estimate``); the pipeline's kinematics (pinocchio) and the simulator come in with the
functions that need them.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from payload_estimator.commands import CommandError
from payload_estimator.robots import ROBOT_NAMES, RobotSpec, resolve_robot

__all__ = [
    "console_and_progress",
    "make_console",
    "read_urdf",
    "SIM_RATE_HZ",
    "MAX_SIM_DURATION_S",
    "MIN_SIM_DURATION_S",
    "positive_float",
    "nonnegative_float",
    "nonnegative_int",
    "sim_duration",
    "ft_drift",
    "at_most",
    "wrench_rate",
    "default_out_dir",
    "check_out_dir",
    "out_dir_type",
    "add_out_dir_argument",
    "check_out_file",
    "TRAJECTORY_NAMES",
    "DEFAULT_DURATION_S",
    "DEFAULT_TRAJECTORY",
    "add_trajectory_arguments",
    "resolve_trajectory",
    "parse_override",
    "config_error",
    "file_error",
    "one_line",
    "add_effort_arguments",
    "add_real_arm_arguments",
    "joint_stamps",
    "real_arm_residual",
    "IRREGULAR_RATE_HZ",
    "effort_model",
]

SIM_RATE_HZ = 1000.0
"""Joint-state (and IMU) rate of the runs ``demo`` and ``simulate`` make, Hz; the F/T rate divides it."""

MAX_SIM_DURATION_S = 3600.0
"""Longest run ``demo`` and ``simulate`` accept, s (an hour at 1 kHz is about 2 GB of recording)."""
MIN_SIM_DURATION_S = 0.1
"""Shortest motion the commands accept, s (a hundred joint states at 1 kHz)."""
MIN_WRENCH_RATE_HZ = 10.0
"""Slowest simulated F/T rate, Hz."""
MAX_FT_DRIFT = 1000.0
"""Largest ``--ft-drift`` factor: a thousand times the simulator's drift moves the offset by the payload's
weight every second."""


# ------------------------------------------------------------- option types
# argparse calls these on the option's text; ArgumentTypeError becomes one line,
# "payload-estimator CMD: error: argument --OPT: MESSAGE", exit status 2.


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or positive, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    """A whole number >= 0 (a random seed)."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or positive, got {text!r}")
    return value


def at_most(parse: Callable[[str], float], most: float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: the number ``parse`` reads, at most ``most`` (``unit`` said after it, e.g. ``" m"``)."""
    def check(text: str) -> float:
        value = parse(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:g}{unit}, got {text!r}")
        return value
    return check


def sim_duration(text: str) -> float:
    """Seconds of motion (simulated or designed): from :data:`MIN_SIM_DURATION_S` to :data:`MAX_SIM_DURATION_S`."""
    value = at_most(positive_float, MAX_SIM_DURATION_S, " s")(text)
    if value < MIN_SIM_DURATION_S:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_SIM_DURATION_S:g} s, got {text!r}")
    return value


ft_drift = at_most(nonnegative_float, MAX_FT_DRIFT)
"""A factor of the simulator's F/T offset drift: from 0 to :data:`MAX_FT_DRIFT`."""


def wrench_rate(text: str) -> float:
    """An F/T rate, Hz, that divides :data:`SIM_RATE_HZ` (every F/T sample falls on a joint sample)."""
    value = positive_float(text)
    if value < MIN_WRENCH_RATE_HZ:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_WRENCH_RATE_HZ:g} Hz, got {text!r}")
    ratio = SIM_RATE_HZ / value
    if ratio < 1.0 - 1e-9 or abs(ratio - round(ratio)) > 1e-9 * ratio:
        raise argparse.ArgumentTypeError(
            f"must divide the simulation's {SIM_RATE_HZ:g} Hz joint-state rate (e.g. 1000, 500, 250, 100), "
            f"got {text!r}")
    return value


def read_urdf(path: str | os.PathLike[str]) -> str:
    """The text of the URDF file ``--urdf`` names; a missing, unreadable or binary file is a CommandError."""
    from payload_estimator.errors import InputError
    from payload_estimator.files import read_text_file

    try:
        return read_text_file(path, "a URDF (XML)")
    except InputError as exc:
        raise file_error("--urdf", path, exc) from None


def file_error(option: str, path: str | os.PathLike[str], exc: BaseException) -> CommandError:
    """One line for the file ``option`` names that cannot be used: the option, the file, what is wrong.

    ``exc``'s message is made one line; the file is named once, whether or not the message starts with it."""
    text = one_line(exc)
    named = f"{path}: "
    return CommandError(f"{option} {text}" if text.startswith(named) else f"{option} {path}: {text}")


# ----------------------------------------------------------------- outputs


def default_out_dir(command: str) -> Path:
    """Return where ``command`` writes when given no ``--out``: ``$XDG_CACHE_HOME/payload_estimator/<command>``.

    ``~/.cache`` when the variable is unset or not an absolute path, as the XDG spec says."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "payload_estimator" / command


def _probe_writable(directory: Path) -> None:
    """A file can really be created in ``directory`` (permissions, read-only file systems, root)."""
    with tempfile.TemporaryFile(dir=directory, prefix=".payload_estimator-probe-"):
        pass


def check_out_dir(path: str | os.PathLike[str]) -> Path:
    """Check that ``path`` can be an output directory; return it.

    An existing writable directory, or one that can be created (its nearest existing ancestor is a
    writable directory). Nothing is created here; ``OSError`` with a clear message otherwise."""
    target = Path(path).expanduser()
    if target.exists():
        if not target.is_dir():
            raise NotADirectoryError(f"{target} exists and is not a directory")
        try:
            _probe_writable(target)
        except OSError as exc:
            raise PermissionError(f"{target} is not writable ({exc.strerror or exc})") from None
        return target
    ancestor = target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise NotADirectoryError(f"cannot create {target}: {ancestor} is not a directory")
    try:
        _probe_writable(ancestor)
    except OSError as exc:
        raise PermissionError(f"cannot create {target}: {ancestor} is not writable ({exc.strerror or exc})") from None
    return target


def out_dir_type(command: str) -> Callable[[str], Path]:
    """Return the argparse type of ``--out DIR``.

    The directory is checked by :func:`check_out_dir` while the options are parsed, before any
    work; ``""`` (the default) is :func:`default_out_dir` of ``command``."""

    def out_dir(text: str) -> Path:
        path = Path(text).expanduser() if text else default_out_dir(command)
        try:
            return check_out_dir(path)
        except OSError as exc:  # the messages of check_out_dir name the path
            raise argparse.ArgumentTypeError(str(exc)) from None

    return out_dir


def add_out_dir_argument(p: argparse.ArgumentParser, command: str,
                         what: str = "the plot and the URDF fragment") -> None:
    """Add ``--out DIR`` to a command that writes files (``demo``, ``replay``).

    Default :func:`default_out_dir` of ``command`` (never the current directory), checked before
    the work. The command reads ``args.out``, a :class:`~pathlib.Path` (created when written to)."""
    # a str default goes through `type` too, so the default directory is resolved and checked alike
    p.add_argument("--out", metavar="DIR", type=out_dir_type(command), default="",
                   help=f"directory for {what} (default {default_out_dir(command)})")


def check_out_file(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Check, before the work, that ``path`` can be written as a file; return it.

    Its directory exists and is writable, and it is no directory itself (an existing file is
    replaced atomically)."""
    target = Path(path).expanduser()
    parent = target.parent
    if target.is_dir():
        raise CommandError(f"{option} {target}: is a directory, expected a file name")
    if target.exists() and not target.is_file():
        raise CommandError(f"{option} {target}: not a regular file (a device or a pipe), expected a file name")
    if not parent.is_dir():
        raise CommandError(f"{option} {target}: no such directory {parent}")
    try:
        _probe_writable(parent)
    except OSError as exc:
        raise CommandError(f"{option} {target}: cannot write in {parent} ({exc.strerror or exc})") from None
    return target


# ------------------------------------------------------------------ output


PIPED_WIDTH = 200
"""Columns of the output when it is not a terminal (a file, another program): rich would wrap at 80,
splitting a URDF line in two and cutting names in tables."""


def make_console(stderr: bool = False, quiet: bool = False, min_width: int = 0) -> Any:
    """The one console every command prints through.

    On a terminal, its width (at least ``min_width`` columns); piped, :data:`PIPED_WIDTH` columns and lines
    never wrapped."""
    from rich.console import Console

    console = Console(stderr=stderr, quiet=quiet)
    if not console.is_terminal:
        return Console(stderr=stderr, quiet=quiet, width=max(PIPED_WIDTH, min_width), soft_wrap=True)
    return Console(stderr=stderr, quiet=quiet, width=max(console.width, min_width)) if min_width else console


def console_and_progress(json_output: bool):
    """The console for tables (stderr when stdout carries JSON) and a live progress display.

    The progress display, with a free ``status`` field per task, is silent
    under ``--json`` and when neither stream is a terminal (logs, CI).
    """
    import sys

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = make_console(stderr=json_output)
    quiet = json_output or (not sys.stderr.isatty() and not sys.stdout.isatty())
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[status]}"), TimeElapsedColumn(), disable=quiet,
        # rich < 14.3 still prints a blank line when a disabled display stops: a silent console then
        console=make_console(stderr=json_output, quiet=True) if quiet else console,
    )
    return console, progress


# -------------------------------------------------------------- trajectories
TRAJECTORY_NAMES = ("wrist", "thesis", "pickplace", "optimal")
"""``--trajectory`` names of ``demo`` and ``simulate``; anything else is a CSV file (``excite --out``)."""
DEFAULT_DURATION_S = 10.0
"""Seconds of a named trajectory's run when ``--duration`` is not given (a designed motion's default
is :class:`~payload_estimator.excitation.limits.MotionLimits`'s, a file's its own)."""


DEFAULT_TRAJECTORY = "wrist"
"""``--trajectory`` when not given."""


def add_trajectory_arguments(p: argparse.ArgumentParser, default: str | None = DEFAULT_TRAJECTORY,
                             default_note: str = "default") -> None:
    """Add ``--trajectory`` (a name or a CSV file) and ``--duration`` to ``demo`` and ``simulate``.

    ``default`` None leaves ``args.trajectory`` None when not given (the command chooses,
    :data:`DEFAULT_TRAJECTORY` or another as ``default_note`` says in the help)."""
    p.add_argument("--trajectory", default=default, metavar="NAME|FILE.csv",
                   help=f"wrist: Nadeau et al.'s wrist sinusoids ({default_note}); thesis: Lambert's all-joint "
                        "sinusoids; pickplace: a "
                        "pick-and-place move; optimal: a motion designed for the payload's parameters from the "
                        "home pose (as `excite` and the node's ~/identify do); or a CSV file t,<joint names> "
                        "(positions, rad; `excite --out`)")
    p.add_argument("--duration", type=sim_duration, default=None,
                   help=f"seconds of motion, at most {MAX_SIM_DURATION_S:g} (default {DEFAULT_DURATION_S:g}; "
                        "optimal: 5; a file: its own length; a shorter trajectory's last pose is held)")


def resolve_trajectory(robot: str | RobotSpec, trajectory: str, duration: float | None,
                       seed: int = 0) -> tuple[str, Any, float, Any]:
    """``(label, trajectory for simulate, duration s, check or None)`` from the options.

    A name of the simulator's kinds is passed on as it is; ``optimal`` is designed from the robot's
    home pose for ``duration`` (default :class:`MotionLimits`'s); a CSV file is read, its columns
    mapped to the robot's joints, and checked against the default motion limits (the check is
    returned, not enforced: a simulation may show what an unsafe motion would do).
    """
    import numpy as np

    from payload_estimator.excitation.check import check_trajectory
    from payload_estimator.excitation.limits import ArmLimits, ExcitationError, MotionLimits, flange_kinematics

    spec = resolve_robot(robot)
    if trajectory in TRAJECTORY_NAMES[:-1]:
        return trajectory, trajectory, DEFAULT_DURATION_S if duration is None else duration, None
    arm, kin = ArmLimits.from_robot(spec), flange_kinematics(robot)
    if trajectory == "optimal":
        from payload_estimator.excitation.design import design_excitation

        limits = MotionLimits() if duration is None else MotionLimits(duration=duration)
        try:
            design = design_excitation(kin, arm, spec.q_home, limits, seed=seed)
        except ExcitationError as exc:
            raise CommandError(f"--trajectory optimal: {exc}") from None
        return "optimal", design.trajectory, limits.duration, design.check
    from payload_estimator.excitation.trajectory import from_positions, read_trajectory_csv

    path = Path(trajectory)
    if not path.exists():
        raise CommandError(f"--trajectory {trajectory}: neither one of {', '.join(TRAJECTORY_NAMES)} "
                           "nor a readable CSV file")
    try:
        names, t, q = read_trajectory_csv(path)
    except (OSError, ValueError) as exc:
        raise file_error("--trajectory", trajectory, exc) from None
    missing = [n for n in spec.joint_names if n not in names]
    if missing:
        raise CommandError(f"--trajectory {trajectory}: no column for {', '.join(missing)} of {spec.name} "
                           f"(the file has {', '.join(names)})")
    columns = [names.index(n) for n in spec.joint_names]
    traj = from_positions(t, np.asarray(q)[:, columns], spec.joint_names)
    q0 = traj(np.zeros(1))[0][0]
    try:
        check = check_trajectory(traj, kin, arm, q0, MotionLimits(duration=max(traj.duration, 1.0)))
    except ExcitationError as exc:
        raise CommandError(f"--trajectory {trajectory}: {exc}") from None
    return path.name, traj, traj.duration if duration is None else duration, check


# -------------------------------------------------------------------- robots


def add_robot_arguments(p: argparse.ArgumentParser, default: str = "panda") -> None:
    """Add ``--robot`` (a built-in robot) or ``--urdf FILE --flange-frame LINK`` (any arm from its URDF).

    The options of the commands that simulate an arm; :func:`robot_from_args` reads them."""
    p.add_argument("--robot", choices=ROBOT_NAMES, default=default,
                   help=f"a built-in robot (default {default})")
    p.add_argument("--urdf", metavar="FILE",
                   help="any arm from its URDF instead: simulated with the URDF's inertias and joint limits "
                        "(acceleration and jerk limits of our own), with an F/T sensor on --flange-frame")
    p.add_argument("--flange-frame", metavar="LINK", help="with --urdf: the link the F/T sensor is mounted on")


def robot_from_args(args: argparse.Namespace) -> str | RobotSpec:
    """Return the arm :func:`add_robot_arguments` names: a built-in robot's name, or a URDF arm's spec.

    A URDF arm's name becomes ``args.robot``, for titles; a URDF that cannot be used is one line and
    exit status 2."""
    if not getattr(args, "urdf", None):
        if getattr(args, "flange_frame", None):
            raise CommandError("--flange-frame goes with --urdf (a built-in robot has its own flange)")
        return str(args.robot)
    from payload_estimator.errors import ConfigurationError
    from payload_estimator.excitation.limits import DEFAULT_ACCELERATION_LIMIT, DEFAULT_JERK_LIMIT

    if not args.flange_frame:
        raise CommandError("--urdf needs --flange-frame LINK: the link of the arm the F/T sensor is mounted on")
    text = read_urdf(args.urdf)
    try:
        spec = RobotSpec.from_urdf(text, args.flange_frame, acceleration=DEFAULT_ACCELERATION_LIMIT,
                                   jerk=DEFAULT_JERK_LIMIT)
    except ConfigurationError as exc:
        raise CommandError(f"--urdf {args.urdf}: {one_line(exc)}") from None
    args.robot = spec.name or Path(args.urdf).stem
    return spec


# ------------------------------------------------------------- settings options


def one_line(text: object) -> str:
    """``text`` with its whitespace runs (newlines included) made single spaces."""
    return " ".join(str(text).split())


def parse_override(text: str) -> tuple[str, Any]:
    """``--set NAME=VALUE`` -> (name, value read as YAML: ``8`` a number, ``true`` a bool, else the text)."""
    import yaml

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise CommandError(f"--set expects NAME=VALUE, got {text!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return name.strip(), "" if parsed is None else parsed


def config_error(path: str, exc: BaseException) -> CommandError:
    """One line for a ``--config`` parameter file that cannot be used (PyYAML's own messages span several lines)."""
    import yaml

    from payload_estimator.errors import InputError

    if isinstance(exc, FileNotFoundError):
        return CommandError(f"--config: {exc.filename or path}: no such file")
    if isinstance(exc, InputError):
        return file_error("--config", path, exc)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return CommandError(f"--config {path}: not valid YAML: {exc.problem or exc.context}{where}")
    if isinstance(exc, yaml.YAMLError):
        return CommandError(f"--config {path}: not valid YAML: {one_line(exc)}")
    if isinstance(exc, OSError):
        return CommandError(f"--config {path}: {exc.strerror or exc}")
    if isinstance(exc, UnicodeDecodeError):
        return CommandError(f"--config {path}: not a text file")
    return CommandError(f"--config {path}: {one_line(exc)}")


# ------------------------------------------------------------ simulated efforts


def add_effort_arguments(p: argparse.ArgumentParser, switch: bool = True) -> None:
    """Add the options of a command that simulates joint torques.

    ``--efforts``, ``--arm-seed``, ``--effort-scale-error``, ``--load-friction``, and
    :func:`add_real_arm_arguments`' ``--real-arm`` and ``--irregular-stamps``.

    Without ``switch``, ``--efforts`` is not offered: always on. See :func:`effort_model`."""
    if switch:
        p.add_argument("--efforts", action="store_true",
                       help="realistic joint efforts, as the wrench-less joint-torque path reads them: the robot's "
                            "friction (compensated by the controller) and effort noise (Franka tau_J, xArm "
                            "current-based), and an arm whose links differ from its URDF (masses +-15 %%, COMs "
                            "+-1 cm); default: the applied torques with a little noise, the arm exactly its URDF")
    p.add_argument("--arm-seed", type=nonnegative_int, default=0,
                   help="which simulated arm (its links' deviation from the URDF, its effort scales): a "
                        "calibration run and the runs it is used on must share it (default 0)")
    p.add_argument("--effort-scale-error", type=nonnegative_float, default=0.0, metavar="FRACTION",
                   help="each joint's effort scale off by up to this fraction, e.g. 0.03 (default 0: exact)")
    p.add_argument("--load-friction", type=nonnegative_float, default=0.0, metavar="COEFF",
                   help="Coulomb friction that grows with the load, as in real gearboxes: each joint's Coulomb "
                        "level rises by COEFF N·m per N·m of the torque it transmits (Hamon, Gautier and Garrec, "
                        "'Dynamic identification of robots with a dry friction model depending on load and "
                        "velocity'), e.g. 0.03 (default 0: off)")
    add_real_arm_arguments(p)


def add_real_arm_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--real-arm`` and ``--irregular-stamps``: a joint-torque stream shaped like a real arm's."""
    p.add_argument("--real-arm", action="store_true",
                   help="the joint torques of a real arm: beyond its links and friction law, what a calibrated "
                        "model leaves (torques that depend on the pose and the speed, friction and zero drifting "
                        "over minutes, torque ripple; 1.5-4 N·m on the shoulder and elbow, 0.3-1 N·m on the "
                        "wrist, after a calibration)")
    p.add_argument("--irregular-stamps", action="store_true",
                   help="joint states at 100 Hz on average at irregular intervals (2-30 ms), as a driver "
                        "publishing from a non-real-time loop delivers them; default: 1 kHz, regular")


IRREGULAR_RATE_HZ = 100.0
"""Hz: the mean joint-state rate of ``--irregular-stamps``."""


def joint_stamps(args: argparse.Namespace) -> dict[str, Any]:
    """The simulator's joint-state keywords: ``rate_hz`` and ``irregular_stamps`` (:func:`add_real_arm_arguments`).

    :data:`SIM_RATE_HZ`, regular; with ``--irregular-stamps`` :data:`IRREGULAR_RATE_HZ` at irregular intervals."""
    irregular = bool(getattr(args, "irregular_stamps", False))
    return {"rate_hz": IRREGULAR_RATE_HZ if irregular else SIM_RATE_HZ, "irregular_stamps": irregular}


def real_arm_residual(args: argparse.Namespace, seed: int) -> Any:
    """The arm residual of ``--real-arm`` for the physical arm ``seed`` (None without it)."""
    if not getattr(args, "real_arm", False):
        return None
    from payload_estimator.sim.arm_residual import ArmResidual

    return ArmResidual(seed=seed)


def effort_model(robot: str | RobotSpec, args: argparse.Namespace) -> tuple[Any, Any]:
    """Return (EffortModel, ArmMismatch) of the options of :func:`add_effort_arguments`.

    Both None without ``--efforts``: the robot's default effort model and a mismatched arm, both
    drawn from ``--arm-seed``."""
    if not getattr(args, "efforts", True):
        if getattr(args, "load_friction", 0.0) > 0.0:
            raise CommandError("--load-friction needs --efforts (the friction is part of the effort model)")
        if getattr(args, "real_arm", False):
            raise CommandError("--real-arm needs --efforts (what the arm leaves is part of its efforts)")
        return None, None
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel

    if args.effort_scale_error >= 1.0:
        raise CommandError(f"--effort-scale-error must be below 1, got {args.effort_scale_error:g}")
    if args.load_friction >= 1.0:
        raise CommandError(f"--load-friction must be below 1, got {args.load_friction:g}")
    model = EffortModel.for_robot(robot, effort_scale_error=args.effort_scale_error, seed=args.arm_seed,
                                  load_friction=args.load_friction)
    return model.with_residual(real_arm_residual(args, args.arm_seed)), ArmMismatch(seed=args.arm_seed)
