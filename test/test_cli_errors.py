"""Bad input on the command line: one line on stderr, ``payload-estimator <command>: error: ...``,
exit status 2, never a traceback; outputs checked before the work; a missing extra named."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.cli import build_parser, main
from payload_estimator.commands.common import default_out_dir

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "examples" / "samples.csv"
HAMMER_SHAPE = "box:0.25,0.05,0.04@0.06,0,0.02"  # the envelope of the object in examples/samples.csv


def run_cli(argv: list[str]) -> int:
    """``main(argv)``'s exit status, whether it returns it or argparse exits."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def assert_one_line_error(capsys, argv: list[str], command: str, *words: str) -> str:
    status = run_cli(argv)
    captured = capsys.readouterr()
    err = captured.err
    assert status == 2, (argv, status, err)
    assert err.endswith("\n") and err.count("\n") == 1, f"not one line: {err!r}"
    prefix = f"payload-estimator {command}: error: " if command else "payload-estimator: error: "
    assert err.startswith(prefix), err
    assert "Traceback" not in err and captured.out == ""
    for word in words:
        assert word in err, (word, err)
    return err


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """Default outputs go to $XDG_CACHE_HOME: keep them in the test's directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def binary_file(tmp_path):
    def make(name: str) -> Path:
        path = tmp_path / name
        path.write_bytes(bytes(range(256)) * 8 + b"\x00\xff\xfe" * 100)  # no text, no NPZ
        return path
    return make


# ------------------------------------------------------------------ estimate
@pytest.mark.parametrize("name", ["samples.csv", "samples.npz", "samples"])
def test_estimate_on_a_binary_file(capsys, binary_file, name):
    path = binary_file(name)
    assert_one_line_error(capsys, ["estimate", str(path), "--method", "ols"], "estimate", str(path))


@pytest.mark.parametrize("options, words", [
    (["--max-points", "0"], ["--max-points", "at least 1"]),
    (["--max-points", "ten"], ["--max-points", "not a whole number"]),
    (["--c1", "0"], ["--c1", "positive"]),
    (["--c1", "-3"], ["--c1", "positive"]),
    (["--lambda", "-1"], ["--lambda", "zero or positive"]),
    (["--lambda", "nan"], ["--lambda", "finite"]),
    (["--lambda", "inf"], ["--lambda", "finite"]),
    (["--density", "0"], ["--density", "positive"]),
    (["--forgetting", "1.5"], ["--forgetting", "(0, 1]"]),
    (["--method", "ransac"], ["--method", "invalid choice", "pmd"]),
    (["--shape", "pyramid:1"], ["pyramid"]),
])
def test_estimate_rejects_bad_options(capsys, options, words):
    argv = ["estimate", str(SAMPLES), "--shape", HAMMER_SHAPE, *options]
    if options[0] == "--shape":
        argv = ["estimate", str(SAMPLES), *options]
    assert_one_line_error(capsys, argv, "estimate", *words)


def test_estimate_on_a_missing_file(capsys, tmp_path):
    assert_one_line_error(capsys, ["estimate", str(tmp_path / "nope.csv")], "estimate", "no such file")


def test_estimate_on_a_directory_says_so(capsys, tmp_path):
    assert_one_line_error(capsys, ["estimate", str(tmp_path)], "estimate", "a directory", "replay")


def test_estimate_on_an_npz_of_python_objects_does_not_pass_on_numpys_advice(capsys, tmp_path):
    path = tmp_path / "objects.npz"
    from payload_estimator.io.samples_file import COLUMNS

    np.savez(path, **{c: np.array([{"a": 1}], dtype=object) for c in COLUMNS})
    err = assert_one_line_error(capsys, ["estimate", str(path)], "estimate", "not an NPZ file of arrays")
    assert "allow_pickle" not in err and "pickle" not in err


@pytest.mark.parametrize("argv, words", [
    (["demo", "--ft-noise", "-0.1,0.01"], ["--ft-noise", "two positive numbers"]),
    (["demo", "--payload", "-1@0,0,0.1"], ["--payload", "invalid choice"]),
])
def test_a_value_that_starts_with_a_minus_is_a_value(capsys, tmp_path, argv, words):
    """argparse took "-0.1,0.01" for an unknown option ("expected one argument"): it is a bad value."""
    err = assert_one_line_error(capsys, [a.format(tmp=tmp_path) for a in argv], argv[0], *words)
    assert "expected one argument" not in err


def test_a_missing_argument_and_an_unknown_command_are_one_line(capsys):
    assert_one_line_error(capsys, ["estimate"], "estimate", "required", "samples")
    assert_one_line_error(capsys, ["recalibrate"], "", "invalid choice", "estimate")


def test_help_is_still_complete(capsys):
    assert run_cli(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--robot", "--payload", "--estimator", "--c1", "--duration", "--wrench-rate", "--seed",
                   "--out DIR"):
        assert option in out, option
    assert str(default_out_dir("demo")) in "".join(out.split())  # the default, however the help wraps it


# ------------------------------------------------------ demo and simulate options
@pytest.mark.parametrize("command", ["demo", "simulate"])
@pytest.mark.parametrize("options, words", [
    (["--duration", "inf"], ["--duration", "finite"]),
    (["--duration", "nan"], ["--duration", "finite"]),
    (["--duration", "-1"], ["--duration", "positive"]),
    (["--duration", "1e9"], ["--duration", "at most"]),
    (["--wrench-rate", "0"], ["--wrench-rate", "positive"]),
    (["--wrench-rate", "-100"], ["--wrench-rate", "positive"]),
    (["--wrench-rate", "333"], ["--wrench-rate", "must divide", "1000 Hz"]),
    (["--wrench-rate", "2000"], ["--wrench-rate", "must divide"]),
    (["--seed", "-1"], ["--seed", "zero or positive"]),
    (["--seed", "1.5"], ["--seed", "whole number"]),
    (["--robot", "ur5"], ["--robot", "invalid choice", "panda"]),
    (["--payload", "anvil"], ["--payload", "invalid choice", "drill"]),
    (["--trajectory", "zigzag"], ["--trajectory", "neither one of", "wrist", "CSV"]),
])
def test_simulation_options_are_checked(capsys, tmp_path, command, options, words):
    target = ["--out", str(tmp_path / ("d" if command == "demo" else "run.npz"))]
    assert_one_line_error(capsys, [command, *target, *options], command, *words)


def test_demo_rejects_an_unknown_method_and_a_bad_c1(capsys, tmp_path):
    assert_one_line_error(capsys, ["demo", "--method", "ransac"], "demo", "--method", "invalid choice")
    assert_one_line_error(capsys, ["demo", "--c1", "0"], "demo", "--c1", "positive")


def test_demo_duration_below_the_minimum(capsys, tmp_path):
    assert_one_line_error(capsys, ["demo", "--duration", "0.2", "--out", str(tmp_path)], "demo", "0.5 s")


# ------------------------------------------------------------------ outputs
def _unwritable_dirs(tmp_path: Path) -> list[Path]:
    """Directories no process here can create files in: /proc on Linux (even for root), and a
    read-only directory when not running as root (root ignores permission bits)."""
    dirs = []
    if Path("/proc/self").is_dir():
        dirs.append(Path("/proc/payload_estimator_out"))
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        dirs += [locked, locked / "sub"]
    return dirs


def test_demo_out_must_be_a_writable_directory_checked_before_the_work(capsys, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory\n")
    bad = [(a_file, "not a directory"), (a_file / "sub", "not a directory")]
    bad += [(d, "not writable") for d in _unwritable_dirs(tmp_path)]
    for path, words in bad:
        # rejected while the options are parsed: before anything is simulated
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(["demo", "--out", str(path)])
        assert exc.value.code == 2
        capsys.readouterr()
        assert_one_line_error(capsys, ["demo", "--out", str(path)], "demo", "--out", str(path), words)
    assert a_file.read_text() == "not a directory\n"


def test_simulate_out_is_checked_before_the_work(capsys, tmp_path):
    assert_one_line_error(capsys, ["simulate", "--out", str(tmp_path / "missing" / "run.npz")], "simulate",
                          "--out", "no such directory")
    assert_one_line_error(capsys, ["simulate", "--out", str(tmp_path)], "simulate", "--out", "is a directory")
    (tmp_path / "bag").mkdir()
    assert_one_line_error(capsys, ["simulate", "--bag", str(tmp_path / "bag")], "simulate", "--bag", "exists")
    for path in _unwritable_dirs(tmp_path):
        assert_one_line_error(capsys, ["simulate", "--out", str(path / "run.npz")], "simulate", "--out")
    assert not (tmp_path / "missing").exists()


def test_demo_writes_to_the_per_user_cache_by_default_and_says_where(capsys, tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert main(["demo", "--duration", "1", "--no-plot", "--json"]) == 0
    captured = capsys.readouterr()
    out_dir = tmp_path / "cache" / "payload_estimator" / "demo"
    assert default_out_dir("demo") == out_dir
    assert json.loads(captured.out)["out_dir"] == str(out_dir)
    assert f"in {out_dir}" in captured.err
    assert "<inertial>" in (out_dir / "payload_inertial.urdf.xml").read_text()
    assert list(cwd.iterdir()) == []  # nothing in the current directory


def test_default_out_dir_follows_xdg_and_ignores_a_relative_value(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_out_dir("replay") == tmp_path / "payload_estimator" / "replay"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec: only absolute paths count
    assert default_out_dir("replay") == Path.home() / ".cache" / "payload_estimator" / "replay"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_out_dir("demo") == Path.home() / ".cache" / "payload_estimator" / "demo"


# --------------------------------------------------------- core-only install
# A stand-in for `pip install .` without the sim extra: the sim extra's modules are made
# unimportable in a fresh interpreter (CI also checks a real core-only venv, .ci/run).
_WITHOUT_SIM_EXTRA = """
import sys
BLOCKED = {"pinocchio", "mujoco", "matplotlib", "rosbags"}
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
from payload_estimator.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as exc:
    status = exc.code
loaded = sorted(m for m in BLOCKED if m in sys.modules)
assert not loaded, loaded
sys.exit(status)
"""


def _without_sim_extra(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _WITHOUT_SIM_EXTRA, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "XDG_CACHE_HOME": str(cwd / "cache")})


@pytest.mark.slow
def test_core_only_help_and_estimate(tmp_path):
    for args in (["--help"], ["estimate", "--help"], ["demo", "--help"], ["replay", "--help"]):
        done = _without_sim_extra(args, tmp_path)
        assert done.returncode == 0 and "usage: payload-estimator" in done.stdout, (args, done.stderr)
    done = _without_sim_extra(["estimate", str(SAMPLES), "--shape", HAMMER_SHAPE, "--bias", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    estimate = json.loads(done.stdout)
    assert estimate["mass"] == pytest.approx(0.316, rel=0.05) and estimate["physically_consistent"] is True


@pytest.mark.parametrize("args", [
    ["demo", "--duration", "1"],
    ["simulate", "--out", "run.npz"],
    ["replay", "no_such_bag"],
    ["excite", "--robot", "panda"],
])
@pytest.mark.slow
def test_core_only_commands_that_need_the_sim_extra_say_so_in_one_line(tmp_path, args):
    done = _without_sim_extra(args, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"payload-estimator {args[0]}: error: ")
    assert 'pip install "payload_estimator[sim]"' in done.stderr
    assert not (tmp_path / "run.npz").exists()


@pytest.mark.parametrize("argv", [
    ["replay", "{bag}", "--urdf", "{urdf}"],
    ["calibrate", "{bag}", "--urdf", "{urdf}", "--out", "{tmp}/cal.yaml"],
    ["excite", "--urdf", "{urdf}", "--tcp-frame", "tool", "--start", "0,0,0", "--out", "{tmp}/m.csv"],
    ["demo", "--urdf", "{urdf}", "--flange-frame", "link7", "--out", "{tmp}"],
])
def test_a_binary_file_given_as_urdf_is_one_line(capsys, tmp_path, binary_file, argv):
    """Every command that reads ``--urdf`` says the file is not a URDF, instead of a decoding traceback."""
    bag = tmp_path / "bag"
    bag.mkdir()
    values = {"bag": str(bag), "urdf": str(binary_file("arm.urdf")), "tmp": str(tmp_path)}
    assert_one_line_error(capsys, [a.format(**values) for a in argv], argv[0], "not a text file")


@pytest.mark.parametrize("command", ["", "estimate", "excite", "demo", "simulate", "replay", "calibrate"])
def test_help_is_plain_text(capsys, command):
    """The commands' descriptions are their docstrings: their reStructuredText stays out of ``--help``."""
    assert run_cli([command, "--help"] if command else ["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: payload-estimator" in out
    assert "`" not in out and not re.search(r":(class|func|meth|mod|data|attr):", out), out


def test_plain_text_keeps_the_words():
    from payload_estimator.cli import plain_text

    assert plain_text("the :class:`~a.b.Stream` of :func:`a.build` at ``rate_hz`` (`excite`)") == \
        "the Stream of a.build at rate_hz (excite)"
    assert plain_text(":ref:`the layout <layout>`") == "the layout"


# ------------------------------------------------------------------ shape and points files


def _ascii_stl(*triangles) -> str:
    facets = "".join("facet normal 0 0 1\n outer loop\n" + "".join(f"  vertex {x} {y} {z}\n" for x, y, z in tri)
                     + " endloop\nendfacet\n" for tri in triangles)
    return f"solid t\n{facets}endsolid t\n"


MESH_FILES = {
    "random.stl": np.random.default_rng(3).bytes(5000),  # neither a binary STL nor text
    "empty.stl": b"",
    "solid_without_facets.stl": b"solid t\nfacet normal 0 0 1\n  outer loop\n",
    "one_triangle.stl": _ascii_stl([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0)]).encode(),
    "flat_square.stl": _ascii_stl([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0)],
                                  [(0.1, 0.1, 0), (0.1, 0, 0), (0, 0.1, 0)]).encode(),
    "random.obj": np.random.default_rng(4).bytes(3000),
    "points.xyz": b"0 0 0\n1 1 1\n",
    "part.step": b"ISO-10303-21;\n",
}


@pytest.fixture(scope="module")
def small_bag(tmp_path_factory):
    """A short simulated Panda bag (the sim extra)."""
    pytest.importorskip("mujoco")
    from payload_estimator.sim.bag_writer import write_simulated_bag
    from payload_estimator.sim.mujoco_sim import simulate

    run = simulate(robot="panda", payload="claw_hammer", duration=0.5, seed=1)
    return write_simulated_bag(run, tmp_path_factory.mktemp("bag") / "bag")


@pytest.mark.parametrize("command", ["estimate", "replay"])
@pytest.mark.parametrize("name", sorted(MESH_FILES))
def test_an_unreadable_mesh_is_one_line_naming_the_file(capsys, tmp_path, monkeypatch, small_bag, command, name):
    """Before: a junk .stl said "No module named 'charset_normalizer'" (trimesh decodes bytes it takes for
    text with it, an optional dependency: it is made missing here, as in the user's installation), a
    flat mesh gave a Qhull traceback."""
    monkeypatch.setitem(sys.modules, "charset_normalizer", None)  # import charset_normalizer fails
    mesh = tmp_path / name
    mesh.write_bytes(MESH_FILES[name])
    target = [str(SAMPLES)] if command == "estimate" else [str(small_bag), "--out", str(tmp_path / "out")]
    err = assert_one_line_error(capsys, [command, *target, "--shape", f"mesh:{mesh}"], command, name)
    assert "charset_normalizer" not in err and "module" not in err
    assert ("expected a triangle mesh file" in err) or ("encloses no volume" in err), err


def test_a_directory_given_as_a_mesh_says_so(capsys, tmp_path):
    (tmp_path / "part.stl").mkdir()
    assert_one_line_error(capsys, ["estimate", str(SAMPLES), "--shape", f"mesh:{tmp_path / 'part.stl'}"],
                          "estimate", "part.stl: a directory, not a mesh file")


POINTS_FILES = {
    "empty.csv": (b"", "empty file"),
    "empty.npy": (b"", "empty file"),
    "random.csv": (np.random.default_rng(5).bytes(300) + b"\xff", "not a text file"),
    "random.npy": (np.random.default_rng(6).bytes(300), "not a NumPy array file of numbers"),
    "text.npy": (b"1,2,3\n4,5,6\n", "not a NumPy array file of numbers"),
    "words.csv": (b"x,y,z\n0,0,0\nnorth,east,up\n", "line 3 is not numbers"),
    "header_only.csv": (b"x,y,z\n", "no rows of numbers"),
    "two_columns.csv": (b"x,y\n0,0\n1,1\n", "expected rows of x y z"),
    "ragged.csv": (b"0,0,0\n1,1\n", "rows of 2 to 3 numbers"),
    "mesh.stl": (_ascii_stl([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0)]).encode(), "no rows of numbers"),
}


@pytest.mark.parametrize("name", sorted(POINTS_FILES))
def test_an_unreadable_points_file_is_one_line_naming_the_file(capsys, tmp_path, name):
    data, words = POINTS_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    err = assert_one_line_error(capsys, ["estimate", str(SAMPLES), "--estimator", "pmd", "--points", str(path)],
                                "estimate", f"{path}: ", words)
    assert "allow_pickle" not in err and "codec" not in err


def test_a_points_file_of_objects_is_refused_without_numpys_advice(capsys, tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"x": 1}, None], dtype=object), allow_pickle=True)
    err = assert_one_line_error(capsys, ["estimate", str(SAMPLES), "--points", str(path)], "estimate",
                                "not a NumPy array file of numbers")
    assert "pickle" not in err


def test_a_good_points_file_is_still_read(tmp_path):
    from payload_estimator.core.shapes import load_points

    path = tmp_path / "p.npy"
    grid = np.stack(np.meshgrid(*[np.linspace(0, 0.1, 3)] * 3), axis=-1).reshape(-1, 3)
    np.save(path, grid)
    np.testing.assert_array_equal(load_points(path), grid)
    csv = tmp_path / "p.csv"
    csv.write_text("\ufeffx,y,z\n" + "".join(f"{x},{y} {z}\n" for x, y, z in grid))
    np.testing.assert_allclose(load_points(csv), grid)


def test_a_directory_given_as_points_says_so(capsys, tmp_path):
    assert_one_line_error(capsys, ["estimate", str(SAMPLES), "--points", str(tmp_path)], "estimate",
                          f"{tmp_path}: a directory, not a points file")


@pytest.mark.parametrize("command", ["replay", "calibrate"])
def test_a_device_given_as_a_bag_is_one_line(capsys, tmp_path, command):
    """Before: os.listdir's NotADirectoryError traceback."""
    pytest.importorskip("rosbags")
    device = Path(os.devnull)
    if not device.exists() or device.is_file() or device.is_dir():
        pytest.skip("no device file here")
    assert_one_line_error(capsys, [command, str(device), "--out", str(tmp_path / "out.yaml")], command,
                          f"{device}: not a readable rosbag2: neither a file nor a directory")


@pytest.mark.parametrize("command", ["replay", "calibrate"])
@pytest.mark.parametrize("name, content, words", [
    ("text.mcap", b"this is not a recording\n", "text.mcap: not a readable rosbag2: not an MCAP file"),
    ("text.db3", b"this is not a recording\n", "text.db3: not a readable rosbag2: not a readable SQLite database"),
    ("notes", None, "notes: not a readable rosbag2: no metadata.yaml, and no .mcap or .db3 file"),
])
def test_a_file_or_directory_that_is_not_a_bag_is_one_line(capsys, tmp_path, command, name, content, words):
    pytest.importorskip("rosbags")
    path = tmp_path / name
    if content is None:
        path.mkdir()
        (path / "readme.txt").write_text("the robot's notes\n")
    else:
        path.write_bytes(content)
    assert_one_line_error(capsys, [command, str(path), "--out", str(tmp_path / "out.yaml")], command, words)
