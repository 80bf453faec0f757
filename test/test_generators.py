"""``python -m payload_estimator.settings`` and ``python -m payload_estimator.robots.generate``:
``--help`` writes nothing, ``--check`` compares, ``--out DIR`` writes elsewhere, and an installed
package (no checkout) is never written to; ``examples/samples.csv`` is what its script makes."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.io.samples_file import read_samples
from payload_estimator.robots import ROBOT_NAMES
from payload_estimator.robots.generate import checkout_root, default_urdf
from payload_estimator.settings import PRESET_VARIANTS, preset_file_name, render_parameters_yaml

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "payload_estimator"

GENERATORS = {
    "payload_estimator.settings": (REPO / "config",
                                   lambda robot: (preset_file_name(robot), render_parameters_yaml(robot))),
    "payload_estimator.robots.generate": (PACKAGE / "robots" / "urdf",
                                          lambda robot: (f"{robot}.urdf", default_urdf(robot))),
}


def run_module(module: str, *args: str, pythonpath: Path | None = None, cwd: Path | None = None):
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(directory.iterdir())}


def test_this_checkout_is_recognised():
    assert checkout_root() == REPO


@pytest.mark.parametrize("module", GENERATORS)
@pytest.mark.slow
def test_help_and_check_write_nothing(module):
    directory, _ = GENERATORS[module]
    before = snapshot(directory)
    done = run_module(module, "--help")
    assert done.returncode == 0 and "--check" in done.stdout and "--out DIR" in done.stdout
    done = run_module(module, "--check")
    assert done.returncode == 0, done.stderr  # the repository's files are up to date
    assert snapshot(directory) == before


@pytest.mark.parametrize("module", GENERATORS)
@pytest.mark.slow
def test_out_writes_there_and_check_finds_a_stale_file(module, tmp_path):
    _, expected = GENERATORS[module]
    out = tmp_path / "generated"
    done = run_module(module, "--out", str(out))
    assert done.returncode == 0, done.stderr
    for robot in ROBOT_NAMES:
        name, text = expected(robot)
        assert (out / name).read_text(encoding="utf-8") == text
    assert run_module(module, "--check", "--out", str(out)).returncode == 0
    name, _ = expected(ROBOT_NAMES[-1])
    (out / name).write_text("edited by hand\n")
    done = run_module(module, "--check", "--out", str(out))
    assert done.returncode == 1 and name in done.stderr and "--out" in done.stderr
    assert (out / name).read_text() == "edited by hand\n"  # --check writes nothing


@pytest.mark.parametrize("module", GENERATORS)
@pytest.mark.slow
def test_an_installed_package_is_never_written_to(module, tmp_path):
    # an installed copy: the package alone in a site-packages directory, no package.xml beside it
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "payload_estimator", ignore=shutil.ignore_patterns("__pycache__"))
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    done = run_module(module, pythonpath=site, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "installed" in done.stderr and "--out DIR" in done.stderr
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file() and "__pycache__" not in p.parts} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site-packages"]
    # an explicit --out is fine
    done = run_module(module, "--out", str(tmp_path / "mine"), pythonpath=site, cwd=tmp_path)
    per_robot = len(PRESET_VARIANTS) if module == "payload_estimator.settings" else 1
    assert done.returncode == 0 and len(list((tmp_path / "mine").iterdir())) == per_robot * len(ROBOT_NAMES)


@pytest.mark.parametrize("module", GENERATORS)
def test_out_that_is_a_file_is_one_line_and_exit_2(module, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x\n")
    done = run_module(module, "--out", str(a_file))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and str(a_file) in done.stderr


def test_the_shipped_sample_table_is_what_its_script_makes(tmp_path):
    script = runpy.run_path(str(REPO / "examples" / "make_samples.py"), run_name="make_samples")
    made = read_samples(script["main"](tmp_path / "samples.csv")).samples
    shipped = read_samples(REPO / "examples" / "samples.csv").samples
    assert len(shipped) == len(made) == 300
    np.testing.assert_allclose(shipped.t, made.t, rtol=0, atol=1e-12)  # s
    # written with 10 significant digits: the rounding of the file, in the signals' own units
    for name in ("lin_acc_in_sensor", "ang_vel_in_sensor", "ang_acc_in_sensor", "gravity_in_sensor",
                 "wrench_in_sensor"):
        np.testing.assert_allclose(getattr(shipped, name), getattr(made, name), rtol=1e-9, atol=1e-9, err_msg=name)
