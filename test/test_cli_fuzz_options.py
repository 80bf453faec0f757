"""Every command's options and files, fuzzed: no traceback, ever.

Every numeric option of every command (found in the parser itself, so a new option is fuzzed too) is
given huge (1e12, 1e308, a 13-digit whole number), tiny (1e-300), zero, negative, NaN and infinite
values; the options that carry numbers in a specification (``--shape``, ``--payload``, ``--start``,
``--known-payload``) get them inside it; every file argument is given a binary file, an empty file, a
directory, ``/dev/null`` and a missing file; an arm calibration and a parameter file miss each of their
keys in turn. The invariant: exit status 0, or 2 with exactly one line on stderr,
``payload-estimator <command>: error: ...``, that names the option or the file; no exception and no
warning. The runs are short: every command gets a bounded base (a 0.6 s simulation, a 0.6 s bag, a
2 s motion), and what would run long is refused before it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from payload_estimator.cli import build_parser, main

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "examples" / "samples.csv"
HAMMER_SHAPE = "box:0.25,0.05,0.04@0.06,0,0.02"

NUMBERS = ("1e12", "1e308", "1e-300", "0", "-1", "nan", "inf", "-inf", "1000000000000")
"""What every numeric option is given."""
FILE_KINDS = ("binary", "empty", "directory", "dev_null", "missing")
"""What every file argument is given."""

BASE = {
    "estimate": [str(SAMPLES), "--shape", HAMMER_SHAPE, "--max-points", "30", "--json", "--track"],
    "demo": ["--duration", "0.6", "--no-plot", "--json", "--out", "{tmp}/demo"],
    "simulate": ["--duration", "0.6", "--out", "{tmp}/run.npz"],
    "excite": ["--json", "--duration", "2"],
    "replay": ["{bag}", "--json", "--no-plot", "--out", "{tmp}/replay"],
    "calibrate": ["{bag}", "--out", "{tmp}/cal.yaml"],
}
"""Each command's options around the fuzzed one: short runs."""


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def bag(tmp_path_factory) -> Path:
    """A 0.6 s simulated Panda bag (the sim extra)."""
    pytest.importorskip("mujoco")
    from payload_estimator.sim.bag_writer import write_simulated_bag
    from payload_estimator.sim.mujoco_sim import simulate

    return write_simulated_bag(simulate(robot="panda", payload="claw_hammer", duration=0.6, seed=1),
                               tmp_path_factory.mktemp("bag") / "bag")


def run(argv: list[str]) -> tuple[int, str, str, list[str]]:
    """(exit status, stdout, stderr, warnings) of ``payload-estimator ARGV``; an exception fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue(), [f"{w.category.__name__}: {w.message}" for w in caught]


def check(argv: list[str], names: list[str], expect_error: bool = False) -> str:
    """The invariant on one command line; ``names``: one of them must be in the error line."""
    code, _, err, caught = run(argv)
    assert not caught, f"{argv}: warnings {caught}"
    assert "Traceback" not in err, err
    assert code in (0, 2), (argv, code, err)
    if expect_error:
        assert code == 2, (argv, "accepted")
    if code == 2:
        assert err.endswith("\n") and err.count("\n") == 1, f"{argv}: not one line: {err!r}"
        assert err.startswith(f"payload-estimator {argv[0]}: error: "), err
        assert any(name in err for name in names), f"{argv}: names none of {names}: {err!r}"
    return err


def _fill(argv: list[str], **values: object) -> list[str]:
    return [a.format(**values) for a in argv]


# ------------------------------------------------------------------ numeric options


def _numeric_options() -> list[tuple[str, str, str]]:
    """(command, option, kind) of every option with a type (numbers), found in the parser."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for command, p in sub.choices.items():
        for action in p._actions:
            if not action.option_strings or action.type is None or action.choices or action.dest == "out":
                continue
            kind = "list" if action.metavar and "," in str(action.metavar) else "number"
            found.append((command, action.option_strings[0], kind))
    return found


NUMERIC_OPTIONS = _numeric_options()


def test_the_parser_walk_finds_the_numeric_options():
    options = {(c, o) for c, o, _ in NUMERIC_OPTIONS}
    for expected in [("estimate", "--point-density"), ("estimate", "--every"), ("demo", "--duration"),
                     ("simulate", "--wrench-rate"), ("excite", "--dt"), ("excite", "--start"), ("replay", "--c1")]:
        assert expected in options, expected
    assert len(options) > 50


def _names(parser_option: str, command: str) -> list[str]:
    """The ways an error line may name an option: as given, its other spellings, its setting in words."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if parser_option in a.option_strings)
    dest = action.dest
    aliases = [a.option_strings[0] for a in sub.choices[command]._actions if a.dest == dest and a.option_strings]
    return [*aliases, dest, dest.replace("_", " ")]


def _text(option: str, kind: str, value: str) -> str:
    if option == "--start":
        return ",".join([value] * 7)  # the Panda's joints
    return f"{value},{value}" if kind == "list" else value


@pytest.mark.parametrize("command, option, kind", NUMERIC_OPTIONS, ids=[f"{c}{o}" for c, o, _ in NUMERIC_OPTIONS])
def test_every_numeric_option_takes_any_number_without_a_traceback(tmp_path, bag, command, option, kind):
    names = _names(option, command)
    for value in NUMBERS:
        check([command, *_fill(BASE[command], tmp=tmp_path, bag=bag), option, _text(option, kind, value)], names)


SPECS = [
    ("estimate", "--shape", ["box:{v},0.05,0.04@0.06,0,0.02", "sphere:{v}", "cylinder:0.02,{v}",
                             "box:0.1,0.1,0.1@{v},0,0"]),
    ("excite", "--payload", ["{v}@0,0,0.05", "1@{v},0,0.05"]),
    ("excite", "--shape", ["box:{v},0.05,0.04@0,0,0.05", "sphere:0.05@0,0,{v}"]),
    ("calibrate", "--known-payload", ["{v}@0,0,0.05", "1@0,{v},0.05"]),
]
"""Options whose specification carries numbers: each number fuzzed in turn."""


@pytest.mark.parametrize("command, option, specs", SPECS, ids=[f"{c}{o}" for c, o, _ in SPECS])
def test_numbers_inside_a_specification(tmp_path, bag, command, option, specs):
    base = _fill(BASE[command], tmp=tmp_path, bag=bag)
    if option == "--shape" and command == "estimate":
        base = [str(SAMPLES), "--max-points", "30", "--json"]
    extra = ["--known-payload-bag", str(bag)] if option == "--known-payload" else []
    for spec in specs:
        for value in NUMBERS:
            check([command, *base, *extra, option, spec.format(v=value)], [option, "shape", "payload"])


def test_the_known_failures_are_one_line(tmp_path, capsys):
    """What a user met: a 3.5 PiB allocation, a numpy broadcast error, a shape of 1 km."""
    err = check(["estimate", str(SAMPLES), "--shape", HAMMER_SHAPE, "--point-density", "1e12"], ["--point-density"],
                expect_error=True)
    assert "1,000,000" in err and "point density" in err
    err = check(["estimate", str(SAMPLES), "--shape", "box:1e6,1e6,1e6"], ["--shape"], expect_error=True)
    assert "beyond 100" in err and "in m" in err and "broadcast" not in err
    err = check(["estimate", str(SAMPLES), "--shape", "box:50,50,50"], ["--shape"], expect_error=True)  # 1e10 cells
    assert "1,000,000" in err and "metres" in err


# ------------------------------------------------------------------ files


def _file(tmp_path: Path, kind: str, name: str) -> str:
    path = tmp_path / f"{kind}_{name}"
    if kind == "binary":
        path.write_bytes(bytes(range(256)) * 8 + b"\x00\xff\xfe" * 100)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "directory":
        path.mkdir()
    elif kind == "dev_null":
        return "/dev/null"
    return str(path)


FILE_ARGUMENTS = [
    ("estimate", ["{file}", "--method", "ols"], "samples.csv"),
    ("estimate", [str(SAMPLES), "--estimator", "pmd", "--points", "{file}"], "points.csv"),
    ("estimate", [str(SAMPLES), "--shape", "mesh:{file}"], "part.stl"),
    ("demo", [*BASE["demo"], "--trajectory", "{file}"], "motion.csv"),
    ("demo", [*BASE["demo"], "--urdf", "{file}", "--flange-frame", "link7"], "arm.urdf"),
    ("simulate", [*BASE["simulate"], "--trajectory", "{file}"], "motion.csv"),
    ("simulate", [*BASE["simulate"], "--urdf", "{file}", "--flange-frame", "link7"], "arm.urdf"),
    ("excite", [*BASE["excite"], "--for", "joint-torques", "--arm-calibration", "{file}"], "cal.yaml"),
    ("excite", [*BASE["excite"], "--urdf", "{file}", "--tcp-frame", "tool", "--start", "0,0,0"], "arm.urdf"),
    ("excite", [*BASE["excite"], "--points", "{file}"], "points.csv"),
    ("excite", [*BASE["excite"], "--shape", "mesh:{file}"], "part.stl"),
    ("replay", ["{file}", "--out", "{tmp}/replay"], "bag"),
    ("replay", [*BASE["replay"], "--config", "{file}"], "params.yaml"),
    ("replay", [*BASE["replay"], "--urdf", "{file}"], "arm.urdf"),
    ("replay", [*BASE["replay"], "--set", "wrench_source=joint_torques", "--set", "arm_calibration={file}"],
     "cal.yaml"),
    ("calibrate", ["{file}", "--out", "{tmp}/cal.yaml"], "bag"),
    ("calibrate", [*BASE["calibrate"], "--config", "{file}"], "params.yaml"),
    ("calibrate", [*BASE["calibrate"], "--urdf", "{file}"], "arm.urdf"),
    ("calibrate", [*BASE["calibrate"], "--validate", "{file}"], "bag2"),
    ("calibrate", [*BASE["calibrate"], "--known-payload-bag", "{file}"], "bag2"),
]
"""(command, arguments with {file}, the file's name): every file a command reads."""


@pytest.mark.parametrize("command, argv, name", FILE_ARGUMENTS,
                         ids=[f"{c}-{n}-{i}" for i, (c, _, n) in enumerate(FILE_ARGUMENTS)])
@pytest.mark.parametrize("kind", FILE_KINDS)
def test_every_file_argument_refuses_a_bad_file_in_one_line(tmp_path, bag, command, argv, name, kind):
    path = _file(tmp_path, kind, name)
    err = check([command, *_fill(argv, tmp=tmp_path, bag=bag, file=path)], [path], expect_error=True)
    assert "codec" not in err and "Errno" not in err, err


OUTPUTS = [
    ("demo", [*BASE["demo"][:-2], "--out", "{file}"]),
    ("replay", [*BASE["replay"][:-2], "--out", "{file}"]),
    ("simulate", ["--duration", "0.6", "--out", "{file}"]),
    ("simulate", ["--duration", "0.6", "--bag", "{file}"]),
    ("excite", [*BASE["excite"], "--out", "{file}"]),
    ("calibrate", ["{bag}", "--out", "{file}"]),
]
"""(command, arguments with {file}): every output a command writes."""


@pytest.mark.parametrize("command, argv", OUTPUTS, ids=[f"{c}-{a[a.index('{file}') - 1]}" for c, a in OUTPUTS])
@pytest.mark.parametrize("kind", ["directory", "missing_parent", "under_a_file"])
def test_every_output_refuses_a_bad_place_in_one_line(tmp_path, bag, command, argv, kind):
    takes_directory = command in ("demo", "replay")
    if kind == "directory":
        path = _file(tmp_path, "directory", "out")
        if takes_directory or "--bag" in argv:
            path = _file(tmp_path, "binary", "out")  # a file where a directory is to be
    elif kind == "missing_parent":
        if takes_directory:
            return  # created, parents and all
        path = str(tmp_path / "no" / "such" / "out")
    else:
        path = str(Path(_file(tmp_path, "binary", "out")) / "out")
    check([command, *_fill(argv, tmp=tmp_path, bag=bag, file=path)], [path], expect_error=True)


def test_an_output_that_is_a_device_is_refused_before_anything_is_written():
    """``/dev/null`` as ``--out``: renaming a finished file over it would replace the device (checked without
    writing: were the check wrong, a command line here would replace /dev/null)."""
    from payload_estimator.commands import CommandError
    from payload_estimator.commands.common import check_out_file
    from payload_estimator.files import atomic_path

    with pytest.raises(CommandError, match="/dev/null: not a regular file"):
        check_out_file("/dev/null")
    with pytest.raises(OSError, match="not a regular file"), atomic_path("/dev/null"):
        pass
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize("command, argv", [("demo", ["--out", "/dev/null"]),
                                           ("replay", ["{bag}", "--out", "/dev/null"])])
def test_an_output_directory_that_is_a_device_is_refused(tmp_path, bag, command, argv):
    check([command, *_fill(argv, bag=bag)], ["/dev/null"], expect_error=True)


# ------------------------------------------------------------------ YAML files missing a key


def _keys(data: object, path: tuple = ()) -> list[tuple]:
    """Every key path of nested dicts (a list of dicts: its first element's)."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((*path, k))
            out += _keys(v, (*path, k))
    elif isinstance(data, list) and data and isinstance(data[0], dict):
        out += _keys(data[0], (*path, 0))
    return out


def _without(data: object, key: tuple) -> object:
    import copy

    data = copy.deepcopy(data)
    node = data
    for k in key[:-1]:
        node = node[k]  # type: ignore[index]
    del node[key[-1]]  # type: ignore[index, union-attr]
    return data


@pytest.fixture(scope="module")
def calibration() -> dict:
    """An xArm 6 calibration as ``calibrate`` writes it (the description's bodies, some friction)."""
    pytest.importorskip("pinocchio")
    from payload_estimator.excitation.limits import flange_kinematics
    from payload_estimator.pipeline.arm_dynamics import ArmCalibration, ArmDynamics
    from payload_estimator.robots import get_robot

    spec = get_robot("xarm6")
    dynamics = ArmDynamics(flange_kinematics("xarm6"))
    n = len(spec.joint_names)
    cal = ArmCalibration("xarm6", spec.joint_names, dynamics.body_joints, dynamics.nominal, np.zeros(n),
                         np.full((n, 3), 0.5), np.zeros(n), np.ones(n), np.full(n, 0.3),
                         speed_range=np.array([[-1.0] * n, [1.0] * n]))
    return cal.to_dict()


def test_an_arm_calibration_missing_any_key_is_one_line(tmp_path, calibration):
    keys = _keys(calibration)
    assert ("friction", "viscous") in keys and ("bodies", 0, "parameters") in keys
    refused = []
    for key in keys:
        path = tmp_path / f"cal_without_{'_'.join(map(str, key))}.yaml"
        path.write_text(yaml.safe_dump(_without(calibration, key)))
        err = check(["excite", "--robot", "xarm6", "--shake", "0.5", "--json", "--for", "joint-torques",
                     "--arm-calibration", str(path)], [str(path)])
        if err:
            refused.append(key)
            assert str(key[-1]) in err or "format" in err, err
    assert ("friction",) in refused and ("format",) in refused and ("bodies", 0, "parameters") in refused


def test_the_missing_key_names_it_and_what_to_do(tmp_path, calibration):
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(_without(calibration, ("friction",))))
    err = check(["excite", "--robot", "xarm6", "--for", "joint-torques", "--arm-calibration", str(path)], [str(path)],
                expect_error=True)
    assert "'friction'" in err and "calibrate" in err
    assert err.count(str(path)) == 1, err  # named once


def test_a_parameter_file_missing_any_key(tmp_path, bag):
    """A parameter left out takes its default; the file's structure left out is one line naming the file."""
    data = yaml.safe_load((REPO / "config" / "panda.yaml").read_text())
    parameters = sorted(data["payload_estimator"]["ros__parameters"])
    keys = [("payload_estimator",), ("payload_estimator", "ros__parameters")]
    for key in keys:
        path = tmp_path / f"params_without_{key[-1]}.yaml"
        path.write_text(yaml.safe_dump(_without(data, key)))
        check(["replay", str(bag), "--no-plot", "--json", "--out", str(tmp_path / "r"), "--config", str(path)],
              [str(path)], expect_error=True)
    # each parameter, settings only (every one a replay would take minutes): what replay loads first
    from payload_estimator.settings import load_parameters_yaml

    for name in parameters:
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(_without(data, ("payload_estimator", "ros__parameters", name))))
        assert load_parameters_yaml(path).to_dict()[name] is not None
